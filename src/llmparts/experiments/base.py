"""What every experiment is, and what the experiments share.

An experiment has a name (its results are results/NAME.json) and four parts:

- `config(scale)`: every setting that decides its numbers, at "full" or "smoke" scale; hashed into the
  results' fingerprint (provenance.py), so changed settings make committed results stale;
- `tasks(config, scale)`: the training runs it needs, each a `Task` that a worker process runs on its own;
  two experiments that ask for the same run share it;
- `run(config, outputs, context)`: the record it measured, from its tasks' outputs and whatever it measures
  in the main process; conclusions (verdicts, means, ratios) are computed here, once, and saved;
- `report(result)`: the record as the book shows it, a `Report` of variables, tables and figures; it only
  formats, so its wording lives in strings.py and its code is left out of the fingerprint.

A record is a dataclass; `to_json` and `from_json` move it to and from results/NAME.json.
"""

from __future__ import annotations

import dataclasses
import json
import math
import typing
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable

from ..atomic import write_text
from ..config import TrainConfig
from ..data import load_dataset

SCALES = ("full", "smoke")  # smoke: the whole pipeline in minutes, for CI; never committed


# ---------------------------------------------------------------- the training runs the experiments share

# The book's training recipe (nanoGPT's CPU shakespeare_char settings: batches of 12 windows of 64
# characters) and how long it runs at each scale; eval_batches is the size of the final yardstick.
TRAINING = {
    "full": dict(iters=2000, seeds=[0, 1, 2], eval_batches=200, batch_size=12, train_len=64),
    "smoke": dict(iters=12, seeds=[0, 1], eval_batches=4, batch_size=12, train_len=64),
}
# TrainConfig fields that do not change the numbers (threads, logging, where to write) stay out of configs.
NOT_NUMERIC = ("threads", "quiet", "out_dir", "resume", "device", "compile", "checkpoint_interval")


def train_config(scale: str, seed: int, threads: int) -> TrainConfig:
    t = TRAINING[scale]
    return TrainConfig(batch_size=t["batch_size"], seq_len=t["train_len"], max_iters=t["iters"],
                       eval_interval=t["iters"], final_eval_batches=t["eval_batches"], seed=seed, threads=threads,
                       quiet=True)


def numeric_train_settings(scale: str) -> dict:
    """The training settings that decide the numbers, as recorded in an experiment's config."""
    return {k: v for k, v in train_config(scale, 0, 1).to_dict().items() if k not in NOT_NUMERIC and k != "seed"}


def mean_std(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (n - 1); the std of a single value is 0."""
    m = sum(values) / len(values)
    if len(values) < 2:
        return m, 0.0
    return m, math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


@lru_cache(maxsize=1)
def dataset():
    """tinyshakespeare, loaded once per process."""
    return load_dataset()


# ---------------------------------------------------------------- tasks, records, reports

@dataclass
class Task:
    """One training run for a worker process: fn(**kwargs, threads=N), fn a module-level function so it pickles.

    cost (training steps, roughly) orders the runs longest first, so the workers finish together.
    """
    label: str
    fn: Callable
    kwargs: dict
    cost: int = 1

    @property
    def key(self) -> str:
        """Tasks with the same function and arguments are the same run."""
        return f"{self.fn.__module__}.{self.fn.__qualname__}:{json.dumps(self.kwargs, sort_keys=True)}"


@dataclass
class Context:
    """What run() may use besides its tasks' outputs."""
    scale: str
    threads: int
    root: Path  # results/, images/ and _variables.yml are written under it


@dataclass
class Result:
    """A results/NAME.json as the report reads it: the config, the provenance and the typed record."""
    name: str
    config: dict
    provenance: dict
    record: typing.Any


@dataclass
class Report:
    """What the book shows of one experiment: {{< var KEY >}} values, and tables and figures per language."""
    variables: dict = field(default_factory=dict)  # nested names -> strings, the same in both editions
    tables: dict = field(default_factory=dict)     # table name -> {lang: Markdown}
    figures: dict = field(default_factory=dict)    # figure name -> function(lang) drawing a matplotlib Figure


class Experiment:
    name: str = ""
    sources: tuple[str, ...] = ()  # files beyond the core and its own module that decide its numbers
    record_type: type | None = None
    needs_data: bool = True  # reads tinyshakespeare (checked before any run starts)

    def config(self, scale: str) -> dict:
        raise NotImplementedError

    def seeds(self, config: dict) -> list[int]:
        """The random seeds behind the record, for its provenance."""
        return config.get("seeds", [config.get("seed", 0)])

    def tasks(self, config: dict, scale: str) -> list[Task]:
        return []

    def run(self, config: dict, outputs: dict, context: Context):
        """outputs: task label -> what its function returned."""
        raise NotImplementedError

    def describe(self, task: Task, output) -> str:
        """One line of progress for a finished task."""
        return ""

    def report(self, result: Result) -> Report:
        return Report()

    def load(self, data: dict) -> Result:
        return Result(self.name, data["config"], data["provenance"], from_json(self.record_type, data))


def write_json(path: Path, data: dict):
    write_text(path, json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def to_json(record) -> dict:
    return dataclasses.asdict(record)


def from_json(cls, data):
    """Build record type cls from JSON data: dataclasses, and lists and dicts of them, field by field."""
    if dataclasses.is_dataclass(cls):
        hints = typing.get_type_hints(cls)
        return cls(**{f.name: from_json(hints[f.name], data[f.name]) for f in dataclasses.fields(cls)})
    origin, args = typing.get_origin(cls), typing.get_args(cls)
    if origin is list:
        return [from_json(args[0], item) for item in data]
    if origin is dict:
        return {key: from_json(args[1], value) for key, value in data.items()}
    return data
