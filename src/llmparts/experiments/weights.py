"""The char model the book's pages run in the reader's browser: the ablation's LLaMA variant (seed 0),
exported to results/weights/char_llama.npz for the NumPy twin.

It asks for the same training run as the ablation, so `llmparts reproduce` trains that model once.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from .. import recipes
from ..export import to_npz
from ..model import GPT
from .ablation import variant_task
from .base import TRAINING, Context, Experiment, dataset, numeric_train_settings

FILE = "results/weights/char_llama.npz"


@dataclass
class WeightsRecord:
    file: str  # relative to the output root
    bytes: int
    sha256: str
    val_loss: float
    params: int


class Weights(Experiment):
    name = "weights"
    sources = ("src/llmparts/export.py", "src/llmparts/experiments/ablation.py")
    record_type = WeightsRecord

    def config(self, scale):
        return {"from": "ablation", "config": "llama", "seed": 0, "iters": TRAINING[scale]["iters"],
                "model": {**recipes.BASELINE_SETTINGS, **recipes.LLAMA_PARTS}, "train": numeric_train_settings(scale)}

    def tasks(self, config, scale):
        return [variant_task(config["config"], config["seed"], scale)]

    def run(self, config, outputs, context: Context) -> WeightsRecord:
        (trained,) = outputs.values()
        model = GPT(recipes.ablation_variant(config["config"]))
        model.load_state_dict(trained.state_dict)
        path = context.root / FILE
        to_npz(model, path, chars=dataset().tokenizer.chars)
        data = path.read_bytes()
        return WeightsRecord(file=FILE, bytes=len(data), sha256=hashlib.sha256(data).hexdigest(),
                             val_loss=trained.run.val_loss, params=trained.run.params)

    def describe(self, task, output):
        return f"val {output.run.val_loss:.4f}"


EXPERIMENT = Weights()
