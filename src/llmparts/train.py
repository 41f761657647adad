"""Train one model on tinyshakespeare: the loop, its checkpoints, and `python -m llmparts.train`.

Read top to bottom: the config, the learning-rate schedule, the FLOP count behind MFU, evaluation,
checkpoints (atomic, resumable to the exact same weights), distributed setup, the loop, the CLI.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import threading
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm

from .data import DataError, Dataset, fixed_batches, get_batch, load_dataset
from .model import GPT, ModelConfig

VAL_SEED = 0  # validation batches do not depend on the training seed: every run is scored on the same text
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
DEVICES = ("cpu", "cuda", "mps")


@dataclass
class TrainConfig:
    batch_size: int = 12
    seq_len: int = 64  # training length; may be shorter than the model's block_size
    max_iters: int = 2000
    lr: float = 1e-3
    min_lr: float = 1e-4
    warmup_iters: int = 100
    lr_decay_iters: int | None = None  # None = max_iters
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.99
    grad_clip: float = 1.0  # 0 turns clipping off
    eval_interval: int = 250
    eval_batches: int = 20
    final_eval_batches: int = 200
    seed: int = 1337
    device: str = "cpu"
    # bench.py on the 2-core Zen 5 CPU: bfloat16 autocast (with math attention, see precision_context) is
    # ~1.9x the float32 step; torch.compile adds little and costs 10-20 s of compilation per config.
    dtype: str = "bfloat16"
    compile: bool = False
    threads: int | None = None  # None = torch's default
    checkpoint_interval: int = 500
    out_dir: str | None = None  # None = keep nothing on disk
    resume: bool = False
    quiet: bool = False

    def __post_init__(self):
        positive = ("batch_size", "seq_len", "max_iters", "eval_interval", "eval_batches", "final_eval_batches",
                    "checkpoint_interval")
        for name in positive:
            check_int(name, getattr(self, name), minimum=1)
        check_int("warmup_iters", self.warmup_iters, minimum=0)
        check_int("seed", self.seed, minimum=0)
        if self.lr_decay_iters is not None:
            check_int("lr_decay_iters", self.lr_decay_iters, minimum=1)
        if self.threads is not None:
            check_int("threads", self.threads, minimum=1)
        for name in ("lr", "min_lr", "weight_decay", "beta1", "beta2", "grad_clip"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"{name} ({value!r}) must be a finite number")
        if not self.lr > 0:
            raise ValueError(f"lr ({self.lr}) must be positive")
        if not 0 <= self.min_lr <= self.lr:
            raise ValueError(f"min_lr ({self.min_lr}) must be between 0 and lr ({self.lr})")
        if self.weight_decay < 0 or self.grad_clip < 0:
            raise ValueError(f"weight_decay ({self.weight_decay}) and grad_clip ({self.grad_clip}) must be >= 0")
        for name in ("beta1", "beta2"):
            if not 0 <= getattr(self, name) < 1:
                raise ValueError(f"{name} ({getattr(self, name)}) must be in [0, 1)")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype ({self.dtype!r}) must be one of {', '.join(DTYPES)}")
        if not isinstance(self.device, str) or self.device.split(":")[0] not in DEVICES:
            raise ValueError(f"device ({self.device!r}) must be one of {', '.join(DEVICES)}")

    @property
    def decay_iters(self) -> int:
        return self.max_iters if self.lr_decay_iters is None else self.lr_decay_iters

    def to_dict(self) -> dict:
        return asdict(self)


def check_int(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} ({value!r}) must be an integer >= {minimum}")


# Settings that decide the sequence of weights; a resumed run must share them with the run it continues.
# The rest (max_iters when lr_decay_iters is pinned, eval and checkpoint cadence, device, quiet) may change.
TRAJECTORY_KEYS = ("batch_size", "seq_len", "lr", "min_lr", "warmup_iters", "decay_iters", "weight_decay",
                   "beta1", "beta2", "grad_clip", "seed", "dtype")


def get_lr(it: int, cfg: TrainConfig) -> float:
    """Linear warmup to lr, then cosine decay to min_lr at decay_iters, then min_lr."""
    if it < cfg.warmup_iters:
        return cfg.lr * (it + 1) / (cfg.warmup_iters + 1)
    if it >= cfg.decay_iters:
        return cfg.min_lr
    progress = (it - cfg.warmup_iters) / max(1, cfg.decay_iters - cfg.warmup_iters)
    return cfg.min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (cfg.lr - cfg.min_lr)


@dataclass
class TrainResult:
    model: GPT
    history: list = field(default_factory=list)  # one dict per eval: iter, train_loss, val_loss, lr
    final_val_loss: float = float("nan")
    tokens_per_sec: float = 0.0
    wall_time_s: float = 0.0
    num_params: int = 0
    mfu: float = 0.0


# ---------------------------------------------------------------- FLOPs and MFU

def flops_per_token(config: ModelConfig, seq_len: int) -> float:
    """Training FLOPs per token (forward + backward), as in the PaLM paper's appendix B.

    6 * N: every weight in a matmul costs 2 FLOPs forward and 4 backward per token; N leaves out the
    learned position table (a lookup) but keeps the tied embedding once, since it is the output matmul.
    12 * L * H * D * T: attention's scores (q.k) and weighted sum (w.v), each 2 * T * H * D per token
    forward, times 3 for backward, over L layers. H * D = n_embd for MHA, GQA and MQA alike.
    """
    n = sum(p.numel() for p in GPT(config).parameters())
    if not config.use_rope:
        n -= config.block_size * config.n_embd
    return 6 * n + 12 * config.n_layer * config.n_head * config.head_dim * seq_len


def peak_flops(device: str, threads: int) -> float:
    """Assumed peak FLOP/s of the hardware MFU is measured against.

    CPU: 64 float32 FLOPs per cycle per core (two 512-bit FMA pipes of 16 lanes, as on the AMD Zen 5
    EPYC this project is measured on) at its 2.6 GHz base clock, times the threads torch uses; bfloat16
    runs are measured against the same float32 peak, so their MFU says how much faster they got. CUDA: an A100's 312 TFLOP/s bf16 tensor-core peak.
    """
    if device.startswith("cuda"):
        return 312e12
    return threads * 64 * 2.6e9


# ---------------------------------------------------------------- evaluation

@torch.no_grad()
def evaluate(model, batches) -> float:
    """Mean loss over fixed (x, y) batches, in eval mode, without building a graph."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    losses = [model(x.to(device), y.to(device))[1].float() for x, y in batches]
    model.train(was_training)
    return torch.stack(losses).mean().item()


# ---------------------------------------------------------------- checkpoints

CHECKPOINT_FORMAT = "llmparts-checkpoint-v1"
CHECKPOINT_KEYS = ("format", "model_config", "train_config", "iter", "model", "optimizer", "scaler", "torch_rng",
                   "batch_rng", "history", "loss_sum", "loss_count", "tokenizer_chars")


class CheckpointError(Exception):
    """A checkpoint is missing, unreadable, or belongs to another configuration."""


class TrainingInterrupted(Exception):
    def __init__(self, signum: int, iter: int, path):
        self.signum, self.iter, self.path = signum, iter, path
        where = f"checkpoint saved to {path}; continue with --resume" if path else "no out_dir, nothing saved"
        super().__init__(f"interrupted by {signal.Signals(signum).name} after iter {iter}: {where}")


def save_checkpoint(state: dict, path: Path):
    """Write to a temporary file next to path, then rename: a crash never leaves half a checkpoint."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


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


# ---------------------------------------------------------------- distributed

def setup_distributed(device: str):
    """(rank, world_size, device): under torchrun, join the process group (gloo on CPU, NCCL on CUDA)."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size == 1 and not dist.is_initialized():
        return 0, 1, device
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if device.startswith("cuda") else "gloo")
    if device == "cuda":
        device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
        torch.cuda.set_device(device)
    return dist.get_rank(), dist.get_world_size(), device


def check_device(device: str):
    kind = device.split(":")[0]
    if kind == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device ({device!r}) is not available: torch.cuda.is_available() is False")
    if kind == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"device ({device!r}) is not available: torch.backends.mps.is_available() is False")


# ---------------------------------------------------------------- the loop

def make_optimizer(model: GPT, cfg: TrainConfig, fused: bool = True):
    """AdamW; matrices decay, gains and biases do not (as in GPT-2 and nanoGPT)."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": cfg.weight_decay},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    # The fused kernel updates every tensor in one pass instead of a dozen small ops per tensor (bench.py).
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), fused=fused or None)


def precision_context(device_type: str, dtype: str, cpu_attention=SDPBackend.MATH):
    """float32 runs as is. bfloat16/float16 autocast the matmuls (weights and optimizer stay float32);
    on CPU, attention then takes SDPA's plain math path: the fused CPU flash kernel's bfloat16 backward
    takes longer than the rest of the step at this size, the math path is ~1.4x faster overall (bench.py)."""
    stack = ExitStack()
    if dtype != "float32":
        stack.enter_context(torch.autocast(device_type=device_type, dtype=DTYPES[dtype]))
        if device_type == "cpu":
            stack.enter_context(sdpa_kernel(cpu_attention))
    return stack


def train_step(runner, model: GPT, optimizer, scaler, x, y, cfg: TrainConfig, cpu_attention=SDPBackend.MATH):
    """One optimizer step on batch (x, y); runner is the model, maybe compiled or wrapped in DDP."""
    with precision_context(x.device.type, cfg.dtype, cpu_attention):
        _, loss = runner(x, y)
    scaler.scale(loss).backward()
    if cfg.grad_clip > 0:
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    return loss.detach()


def train(model_config: ModelConfig, train_config: TrainConfig, dataset: Dataset | None = None) -> TrainResult:
    """Train a GPT from scratch (or resume one) and return it with its loss history and speed."""
    cfg = train_config
    start_time = time.perf_counter()
    if cfg.seq_len > model_config.block_size:
        raise ValueError(f"seq_len ({cfg.seq_len}) must be <= block_size ({model_config.block_size})")
    check_device(cfg.device)
    data = dataset or load_dataset()
    if model_config.vocab_size != data.tokenizer.vocab_size:
        raise ValueError(f"vocab_size ({model_config.vocab_size}) must equal the dataset's "
                         f"{data.tokenizer.vocab_size} characters")
    rank, world_size, device = setup_distributed(cfg.device)
    if cfg.batch_size % world_size != 0:
        raise ValueError(f"batch_size ({cfg.batch_size}) must be divisible by the number of processes ({world_size})")
    if cfg.threads is not None:
        torch.set_num_threads(cfg.threads)
    is_main = rank == 0
    out_dir = Path(cfg.out_dir) if cfg.out_dir else None
    ckpt_path = out_dir / "ckpt.pt" if out_dir else None
    if cfg.resume and out_dir is None:
        raise ValueError("resume needs an out_dir holding ckpt.pt")

    torch.manual_seed(cfg.seed)
    model = GPT(model_config).to(device)
    torch.manual_seed(cfg.seed + rank)  # dropout masks differ across ranks; rank 0 matches a single process
    optimizer = make_optimizer(model, cfg)
    device_type = device.split(":")[0]
    scaler = torch.amp.GradScaler(device_type, enabled=cfg.dtype == "float16")
    batch_gen = torch.Generator().manual_seed(cfg.seed)
    history, loss_sum, loss_count, start_iter = [], torch.zeros((), device=device), 0, 0

    if cfg.resume:
        state = load_checkpoint(ckpt_path)
        check_resumable(state, ckpt_path, model_config, cfg)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scaler.load_state_dict(state["scaler"])
        torch.set_rng_state(state["torch_rng"])
        batch_gen.set_state(state["batch_rng"])
        history, start_iter = state["history"], state["iter"]
        loss_sum, loss_count = state["loss_sum"].to(device), state["loss_count"]

    if out_dir and is_main:
        out_dir.mkdir(parents=True, exist_ok=True)
        config_json = {"model": model_config.to_dict(), "train": cfg.to_dict(), "world_size": world_size}
        (out_dir / "config.json").write_text(json.dumps(config_json, indent=2) + "\n")
        # Rewritten from the checkpoint's history: evals logged after the last checkpoint are dropped.
        (out_dir / "log.jsonl").write_text("".join(json.dumps(h) + "\n" for h in history))

    def checkpoint(done: int):
        if not (out_dir and is_main):
            return
        save_checkpoint({
            "format": CHECKPOINT_FORMAT, "model_config": model_config.to_dict(), "train_config": cfg.to_dict(),
            "iter": done, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
            "scaler": scaler.state_dict(), "torch_rng": torch.get_rng_state(), "batch_rng": batch_gen.get_state(),
            "history": history, "loss_sum": loss_sum.cpu(), "loss_count": loss_count,
            "tokenizer_chars": data.tokenizer.chars,
        }, ckpt_path)

    compiled = torch.compile(model) if cfg.compile else model
    runner = DDP(compiled) if world_size > 1 else compiled
    val_batches = fixed_batches(data.val, cfg.eval_batches, cfg.batch_size, cfg.seq_len, seed=VAL_SEED)
    local_batch = cfg.batch_size // world_size
    tokens_per_step = cfg.batch_size * cfg.seq_len
    flops_per_step = flops_per_token(model_config, cfg.seq_len) * tokens_per_step
    peak = peak_flops(device, torch.get_num_threads() * world_size)
    step_time, timed_steps = 0.0, 0

    bar = tqdm(total=cfg.max_iters, initial=start_iter, disable=cfg.quiet or not is_main, dynamic_ncols=True,
               desc=out_dir.name if out_dir else "train")
    with SignalCatcher() as signals:
        for it in range(start_iter, cfg.max_iters):
            t0 = time.perf_counter()
            lr = get_lr(it, cfg)
            for group in optimizer.param_groups:
                group["lr"] = lr
            # Every rank draws the same global batch from the same generator and keeps its own slice.
            x, y = get_batch(data.train, cfg.batch_size, cfg.seq_len, batch_gen)
            x = x[rank * local_batch:(rank + 1) * local_batch].to(device, non_blocking=True)
            y = y[rank * local_batch:(rank + 1) * local_batch].to(device, non_blocking=True)
            loss = train_step(runner, model, optimizer, scaler, x, y, cfg)
            loss_sum += loss.float()  # stays on the device: no per-step host sync
            loss_count += 1
            done = it + 1
            dt = time.perf_counter() - t0
            if done > start_iter + 1 or cfg.max_iters - start_iter == 1:  # the first step pays for compilation
                step_time, timed_steps = step_time + dt, timed_steps + 1

            if done % cfg.eval_interval == 0 or done == cfg.max_iters:
                if world_size > 1:
                    dist.all_reduce(loss_sum)
                    loss_sum /= world_size
                if is_main:
                    with precision_context(device_type, cfg.dtype):
                        val_loss = evaluate(compiled, val_batches)
                    record = {"iter": done, "train_loss": (loss_sum / loss_count).item(), "val_loss": val_loss,
                              "lr": lr}
                    history.append(record)
                    if out_dir:
                        with open(out_dir / "log.jsonl", "a") as f:
                            f.write(json.dumps(record) + "\n")
                    if not cfg.quiet:
                        bar.write(f"iter {done}: train {record['train_loss']:.4f}, val {val_loss:.4f}")
                loss_sum, loss_count = torch.zeros((), device=device), 0
            if done % cfg.checkpoint_interval == 0 or done == cfg.max_iters:
                checkpoint(done)
            if is_main and (done % 10 == 0 or done == cfg.max_iters) and timed_steps:
                tok_s = tokens_per_step * timed_steps / step_time
                bar.set_postfix(loss=f"{loss.item():.4f}", tok_s=f"{tok_s:,.0f}",
                                mfu=f"{100 * flops_per_step * timed_steps / step_time / peak:.1f}%")
            bar.update(1)
            if signals.signum is not None:
                checkpoint(done)
                bar.close()
                raise TrainingInterrupted(signals.signum, done, ckpt_path if out_dir and is_main else None)
    bar.close()

    final_batches = fixed_batches(data.val, cfg.final_eval_batches, cfg.batch_size, cfg.seq_len, seed=VAL_SEED)
    with precision_context(device_type, cfg.dtype):
        final_val_loss = evaluate(compiled, final_batches) if is_main else float("nan")
    if world_size > 1:
        # Leave together: a gloo rank that exits while rank 0 still evaluates can abort ("terminate called
        # without an active exception"), failing the whole torchrun job.
        dist.barrier()
    tokens_per_sec = tokens_per_step * timed_steps / step_time if timed_steps else 0.0
    return TrainResult(model=model, history=history, final_val_loss=final_val_loss, tokens_per_sec=tokens_per_sec,
                       wall_time_s=time.perf_counter() - start_time, num_params=model.num_params(),
                       mfu=flops_per_step * tokens_per_sec / tokens_per_step / peak)


# ---------------------------------------------------------------- command line

class ArgumentParser(argparse.ArgumentParser):
    """Usage errors print one line and exit 2, without the usage block."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser(prog: str = "python -m llmparts.train") -> ArgumentParser:
    p = ArgumentParser(prog=prog, description="Train a char-level GPT with switchable LLaMA parts on tinyshakespeare.")
    m = p.add_argument_group("model (the book's switches)")
    m.add_argument("--use_rmsnorm", action="store_true", help="RMSNorm instead of LayerNorm")
    m.add_argument("--use_swiglu", action="store_true", help="SwiGLU feed-forward instead of GELU MLP")
    m.add_argument("--use_rope", action="store_true", help="rotary positions instead of a learned table")
    m.add_argument("--n_kv_head", type=int, default=None, help="key/value heads: n_head = MHA, 1 = MQA")
    defaults = ModelConfig()
    for name in ("n_layer", "n_head", "n_embd", "block_size", "multiple_of"):
        m.add_argument(f"--{name}", type=int, default=getattr(defaults, name))
    m.add_argument("--dropout", type=float, default=defaults.dropout)
    m.add_argument("--bias", action="store_true", help="biases in linear layers and LayerNorm")
    m.add_argument("--attn_impl", default=defaults.attn_impl, choices=("sdpa", "manual"))
    t = p.add_argument_group("training")
    tdefaults = TrainConfig()
    for f in fields(TrainConfig):
        if f.name in ("compile", "resume", "quiet", "dtype", "device"):
            continue
        kind = int if f.name in ("lr_decay_iters", "threads") else type(getattr(tdefaults, f.name))
        kind = str if f.name == "out_dir" else kind
        t.add_argument(f"--{f.name}", type=kind, default=getattr(tdefaults, f.name))
    t.add_argument("--device", default=tdefaults.device, help="cpu, cuda or mps")
    t.add_argument("--dtype", default=tdefaults.dtype, choices=tuple(DTYPES),
                   help="float32, or autocast to bfloat16/float16")
    t.add_argument("--compile", action=argparse.BooleanOptionalAction, default=tdefaults.compile,
                   help="torch.compile the model")
    t.add_argument("--resume", action="store_true", help="continue from out_dir/ckpt.pt")
    t.add_argument("--quiet", action="store_true", help="no progress bar or eval lines")
    return p


def configs_from_args(args: argparse.Namespace) -> tuple[ModelConfig, TrainConfig]:
    model_names = {f.name for f in fields(ModelConfig)}
    train_names = {f.name for f in fields(TrainConfig)}
    values = vars(args)
    model_config = ModelConfig(**{k: v for k, v in values.items() if k in model_names})
    return model_config, TrainConfig(**{k: v for k, v in values.items() if k in train_names})


def main(argv=None, prog: str = "python -m llmparts.train") -> int:
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    try:
        model_config, train_config = configs_from_args(args)
        result = train(model_config, train_config)
    except (ValueError, DataError, CheckpointError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except TrainingInterrupted as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 128 + e.signum
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    if not math.isnan(result.final_val_loss):  # rank 0 reports; quiet only hides the progress
        print(f"final val loss {result.final_val_loss:.4f} | {result.num_params:,} parameters | "
              f"{result.tokens_per_sec:,.0f} tokens/s | MFU {100 * result.mfu:.1f}% | {result.wall_time_s:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
