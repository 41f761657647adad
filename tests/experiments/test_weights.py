"""experiments/weights.py: the browser's char model is the ablation's LLaMA run with seed 0, trained once."""

from llmparts.experiments import REGISTRY
from llmparts.experiments.weights import EXPERIMENT


def test_weights_ask_for_the_same_run_as_the_ablation():
    ablation = REGISTRY["ablation"]
    (task,) = EXPERIMENT.tasks(EXPERIMENT.config("smoke"), "smoke")
    shared = [t for t in ablation.tasks(ablation.config("smoke"), "smoke") if t.key == task.key]
    assert len(shared) == 1 and shared[0].kwargs == {"name": "llama", "seed": 0, "scale": "smoke"}


def test_weights_are_trained_with_the_ablations_settings():
    config, ablation = EXPERIMENT.config("full"), REGISTRY["ablation"].config("full")
    assert config["train"] == ablation["train"] and config["iters"] == ablation["iters"]
    assert config["config"] in ablation["configs"] and config["seed"] in ablation["seeds"]
