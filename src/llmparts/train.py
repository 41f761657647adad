"""Train one model on tinyshakespeare, the way nanoGPT does: a learning-rate schedule, a fixed yardstick for
evaluation, one optimizer step, and the loop that repeats it.

Read top to bottom. The settings are TrainConfig's (config.py); the run folder and its checkpoints live in
checkpoint.py, tokens/s and MFU in flops.py, and the command line in cli.py:
`python -m llmparts.train --use_rope` is `llmparts train --use_rope`.
"""

from __future__ import annotations

import math
import os
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm

from .checkpoint import CHECKPOINT_FORMAT, RunDir, SignalCatcher, TrainingInterrupted, check_resumable
from .config import ModelConfig, TrainConfig
from .data import Dataset, fixed_batches, get_batch, load_dataset
from .flops import SpeedMeter, peak_flops
from .model import GPT

VAL_SEED = 0  # validation batches do not depend on the training seed: every run is scored on the same text
TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


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


# ---------------------------------------------------------------- one step

def make_optimizer(model: GPT, cfg: TrainConfig, fused: bool = True):
    """AdamW; matrices decay, gains and biases do not (as in GPT-2 and nanoGPT)."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": cfg.weight_decay},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    # The fused kernel updates every tensor in one pass instead of a dozen small ops per tensor.
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), fused=fused or None)


def precision_context(device_type: str, dtype: str, cpu_attention=SDPBackend.MATH):
    """float32 runs as is. bfloat16/float16 autocast the matmuls (weights and optimizer stay float32);
    on CPU, attention then takes SDPA's plain math path, because the fused CPU flash kernel's bfloat16
    backward is the slower of the two at this model size (`make bench` times both)."""
    stack = ExitStack()
    if dtype != "float32":
        stack.enter_context(torch.autocast(device_type=device_type, dtype=TORCH_DTYPES[dtype]))
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


# ---------------------------------------------------------------- the loop

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
    run_dir = RunDir(cfg.out_dir, is_main)

    torch.manual_seed(cfg.seed)
    model = GPT(model_config).to(device)
    torch.manual_seed(cfg.seed + rank)  # dropout masks differ across ranks; rank 0 matches a single process
    optimizer = make_optimizer(model, cfg)
    device_type = device.split(":")[0]
    scaler = torch.amp.GradScaler(device_type, enabled=cfg.dtype == "float16")
    batch_gen = torch.Generator().manual_seed(cfg.seed)
    history, loss_sum, loss_count, start_iter = [], torch.zeros((), device=device), 0, 0
    if cfg.resume:  # continue exactly where the checkpoint stopped: weights, optimizer, both random generators
        ckpt = run_dir.load()
        check_resumable(ckpt, run_dir.ckpt, model_config, cfg)
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        scaler.load_state_dict(ckpt["scaler"])
        torch.set_rng_state(ckpt["torch_rng"])
        batch_gen.set_state(ckpt["batch_rng"])
        history, start_iter = ckpt["history"], ckpt["iter"]
        loss_sum, loss_count = ckpt["loss_sum"].to(device), ckpt["loss_count"]
    run_dir.start(model_config, cfg, world_size, history)

    compiled = torch.compile(model) if cfg.compile else model
    runner = DDP(compiled) if world_size > 1 else compiled
    val_batches = fixed_batches(data.val, cfg.eval_batches, cfg.batch_size, cfg.seq_len, seed=VAL_SEED)
    local_batch = cfg.batch_size // world_size
    speed = SpeedMeter(model_config, cfg.batch_size * cfg.seq_len, cfg.seq_len,
                       peak_flops(device, torch.get_num_threads() * world_size), steps=cfg.max_iters - start_iter)
    bar = tqdm(total=cfg.max_iters, initial=start_iter, disable=cfg.quiet or not is_main, dynamic_ncols=True,
               desc=run_dir.path.name if run_dir.path else "train")
    with SignalCatcher() as signals:
        for it in range(start_iter, cfg.max_iters):
            speed.start()
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
            speed.stop()

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
                    run_dir.log(record)
                    if not cfg.quiet:
                        bar.write(f"iter {done}: train {record['train_loss']:.4f}, val {val_loss:.4f}")
                loss_sum, loss_count = torch.zeros((), device=device), 0
            if is_main and (done % 10 == 0 or done == cfg.max_iters) and speed.steps:
                bar.set_postfix(loss=f"{loss.item():.4f}", tok_s=f"{speed.tokens_per_sec:,.0f}",
                                mfu=f"{100 * speed.mfu:.1f}%")
            bar.update(1)
            stopping = signals.signum is not None  # SIGINT or SIGTERM arrived: checkpoint, then stop
            if run_dir.writes and (done % cfg.checkpoint_interval == 0 or done == cfg.max_iters or stopping):
                run_dir.save({
                    "format": CHECKPOINT_FORMAT, "model_config": model_config.to_dict(),
                    "train_config": cfg.to_dict(), "iter": done, "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(), "scaler": scaler.state_dict(),
                    "torch_rng": torch.get_rng_state(), "batch_rng": batch_gen.get_state(), "history": history,
                    "loss_sum": loss_sum.cpu(), "loss_count": loss_count, "tokenizer_chars": data.tokenizer.chars,
                })
            if stopping:
                bar.close()
                raise TrainingInterrupted(signals.signum, done, run_dir.ckpt if run_dir.writes else None)
    bar.close()

    final_batches = fixed_batches(data.val, cfg.final_eval_batches, cfg.batch_size, cfg.seq_len, seed=VAL_SEED)
    with precision_context(device_type, cfg.dtype):
        final_val_loss = evaluate(compiled, final_batches) if is_main else float("nan")
    if world_size > 1:
        # Leave together: a gloo rank that exits while rank 0 still evaluates can abort ("terminate called
        # without an active exception"), failing the whole torchrun job.
        dist.barrier()
    return TrainResult(model=model, history=history, final_val_loss=final_val_loss,
                       tokens_per_sec=speed.tokens_per_sec, wall_time_s=time.perf_counter() - start_time,
                       num_params=model.num_params(), mfu=speed.mfu)


if __name__ == "__main__":
    from .cli import train_main

    sys.exit(train_main())
