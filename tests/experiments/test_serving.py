"""experiments/serving.py (chapter 06): the runs it asks for, a smoke-scale run of its measurements and its
report, and what the chapter says about the committed results/serving.json."""

import json

import pytest

import booklib as B
from llmparts import recipes, serve
from llmparts.experiments import REGISTRY
from llmparts.experiments.base import Context, Result
from llmparts.experiments.serving import DRAFT, EXPERIMENT
from llmparts.model import GPT
from llmparts.strings import STRINGS


def test_the_served_model_is_the_ablations_llama_run_and_each_draft_seed_trains_once():
    config = EXPERIMENT.config("full")
    target, *drafts = EXPERIMENT.tasks(config, "full")
    ablation = REGISTRY["ablation"]
    assert target.key in {t.key for t in ablation.tasks(ablation.config("full"), "full")}
    assert target.key in {t.key for t in REGISTRY["weights"].tasks(REGISTRY["weights"].config("full"), "full")}
    assert [d.kwargs["seed"] for d in drafts] == config["draft_seeds"] and len(config["draft_seeds"]) >= 3
    assert len({d.key for d in drafts}) == len(drafts)


def test_the_draft_is_the_llama_recipe_at_one_layer_and_a_small_fraction_of_the_target():
    draft, target = GPT(recipes.llama(**DRAFT)), GPT(recipes.llama())
    assert draft.config.vocab_size == target.config.vocab_size and draft.config.block_size == target.config.block_size
    assert draft.config.n_layer == 1 and draft.num_params() < target.num_params() / 10


@pytest.fixture(scope="module")
def smoke_result(tmp_path_factory):
    """The experiment at smoke scale, in this process: its training runs, then run() (two real servers)."""
    config = EXPERIMENT.config("smoke")
    outputs = {t.label: t.fn(**t.kwargs, threads=1) for t in EXPERIMENT.tasks(config, "smoke")}
    record = EXPERIMENT.run(config, outputs, Context("smoke", 1, tmp_path_factory.mktemp("serving")))
    return Result("serving", config, {"wall_time_s": 30.0}, record), outputs


def test_the_quantization_tables_float32_row_is_the_served_models_own_validation_loss(smoke_result):
    result, outputs = smoke_result
    float32 = next(r for r in result.record.quant if r["variant"] == "float32")
    assert float32["val_loss"] == pytest.approx(outputs["ablation llama seed 0"].run.val_loss, abs=1e-5)
    assert float32["loss_delta"] == 0


def test_speculative_output_is_greedy_output_for_every_k_and_draft(smoke_result):
    result, _ = smoke_result
    assert [r["k"] for r in result.record.spec] == result.config["spec_ks"]
    assert all(r["identical"] for r in result.record.spec)


def test_the_simulator_predicts_the_real_engines_decode_steps_within_ten_percent(smoke_result):
    result, _ = smoke_result
    for row in result.record.load:
        assert row["tokens"] == sum(serve.request_lengths(result.config["sim_requests"], 0))
        assert abs(row["engine_steps"] - row["sim_steps"]) <= 0.1 * row["sim_steps"], row


def test_report_has_its_tables_figures_and_variables_in_both_languages(smoke_result):
    result, _ = smoke_result
    report = EXPERIMENT.report(result)
    assert set(report.tables) == {"serving_cache", "serving_batch", "serving_simulation", "serving_load",
                                  "serving_quant", "serving_spec", "serving_memory"}
    for name, by_lang in report.tables.items():
        assert set(by_lang) == set(STRINGS)
        assert by_lang["en"].count("\n|") == by_lang["zh"].count("\n|") and "{#tbl-" + name + "}" in by_lang["en"]
    for lang in STRINGS:
        assert len(report.figures["serving_cache"](lang).axes[0].lines) == 2
        assert report.figures["serving_batching"](lang).axes[0].get_legend() is not None
    variables = report.variables["serving"]
    assert variables["minutes"] == "0.5" and variables["requests"] == str(result.config["sim_requests"])


# ---------------------------------------------------------------- chapter 06's claims about results/serving.json

def committed() -> dict:
    return json.loads((B.ROOT / "results" / "serving.json").read_text(encoding="utf-8"))
