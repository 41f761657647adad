"""A training run on disk: its folder (config.json, log.jsonl, ckpt.pt), checkpoints that resume to the exact
same weights, and the signal handling that turns Ctrl-C into a checkpoint instead of lost work."""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path

import torch

from .atomic import atomic_write
from .config import TRAJECTORY_KEYS, ModelConfig, TrainConfig

CHECKPOINT_FORMAT = "llmparts-checkpoint-v1"
CHECKPOINT_KEYS = ("format", "model_config", "train_config", "iter", "model", "optimizer", "scaler", "torch_rng",
                   "batch_rng", "history", "loss_sum", "loss_count", "tokenizer_chars")


class CheckpointError(Exception):
    """A checkpoint is missing, unreadable, or belongs to another configuration."""


def save_checkpoint(state: dict, path: Path):
    """Write atomically: a crash never leaves half a checkpoint, and the previous one survives a failed write."""
    with atomic_write(path, "wb") as f:
        torch.save(state, f)


def load_checkpoint(path: Path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"no checkpoint at {path}: train a model into {path.parent} first")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises many types for a damaged zip/pickle
        raise CheckpointError(f"checkpoint {path} is corrupt or not a checkpoint ({type(e).__name__}): "
                              f"delete it and train again without --resume") from None
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{path} is not a {CHECKPOINT_FORMAT} file: delete it and train again")
    missing = [k for k in CHECKPOINT_KEYS if k not in state]
    if missing:
        raise CheckpointError(f"checkpoint {path} lacks {missing}: delete it and train again")
    return state


def check_resumable(state: dict, path, model_config: ModelConfig, cfg: TrainConfig):
    """Refuse to continue a checkpoint under different model or trajectory settings."""
    saved_model = state["model_config"]
    saved_train = TrainConfig(**state["train_config"])
    diffs = [f"{k}={saved_model.get(k)!r} (now {v!r})" for k, v in model_config.to_dict().items()
             if saved_model.get(k) != v]
    diffs += [f"{k}={getattr(saved_train, k)!r} (now {getattr(cfg, k)!r})" for k in TRAJECTORY_KEYS
              if getattr(saved_train, k) != getattr(cfg, k)]
    if diffs:
        raise CheckpointError(f"checkpoint {path} was trained with {', '.join(diffs)}: "
                              f"resume with the same settings or use a new out_dir")


class RunDir:
    """The out_dir of a run: config.json, log.jsonl (one line per evaluation) and ckpt.pt.

    With no out_dir, or in a process other than rank 0, every write is skipped.
    """

    def __init__(self, out_dir: str | None, is_main: bool = True):
        self.path = Path(out_dir) if out_dir else None
        self.writes = self.path is not None and is_main
        self.ckpt = self.path / "ckpt.pt" if self.path else None

    def load(self) -> dict:
        return load_checkpoint(self.ckpt)

    def start(self, model_config: ModelConfig, cfg: TrainConfig, world_size: int, history: list):
        """Write config.json; rewrite log.jsonl from the checkpoint's history (evals logged after it are dropped)."""
        if self.writes:
            self.path.mkdir(parents=True, exist_ok=True)
            config = {"model": model_config.to_dict(), "train": cfg.to_dict(), "world_size": world_size}
            (self.path / "config.json").write_text(json.dumps(config, indent=2) + "\n")
            (self.path / "log.jsonl").write_text("".join(json.dumps(h) + "\n" for h in history))

    def log(self, record: dict):
        if self.writes:
            with open(self.path / "log.jsonl", "a") as f:
                f.write(json.dumps(record) + "\n")

    def save(self, state: dict):
        if self.writes:
            save_checkpoint(state, self.ckpt)


class TrainingInterrupted(Exception):
    def __init__(self, signum: int, iter: int, path):
        self.signum, self.iter, self.path = signum, iter, path
        where = f"checkpoint saved to {path}; continue with --resume" if path else "no out_dir, nothing saved"
        super().__init__(f"interrupted by {signal.Signals(signum).name} after iter {iter}: {where}")


class SignalCatcher:
    """Turn the first SIGINT/SIGTERM into a flag the loop checks after each step; a second one kills."""

    def __init__(self):
        self.signum = None
        self.previous = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        self.signum = signum
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)

    def __exit__(self, *exc):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
