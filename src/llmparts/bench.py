"""`llmparts bench`: training and generation speed, measured side by side in one process.

Training: a plain eager reference of our own model (float32, no compile, for-loop AdamW, as nanoGPT
runs on a CPU) against the default TrainConfig path, with the steps in between so one sees where the
time goes (float32 attention backends run at the same speed, so the reference keeps torch's default).
Variants take turns, a few steps each, for several rounds; the median round is reported, so a burst of
load from other processes hurts every variant alike. Then generation tokens/s with and without the KV
cache (MHA, GQA, MQA, and the NumPy twin), measured as the generation experiment measures it, and the
NumPy twin's forward time.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import torch
from torch.nn.attention import SDPBackend

from .atomic import write_text
from .checks import ArgumentParser, check_cli_ints
from .config import ModelConfig, TrainConfig
from .data import get_batch, load_dataset
from .experiments.generation import measure
from .flops import flops_per_token, peak_flops
from .model import GPT
from .numpy_model import NumpyGPT
from .recipes import BASELINE
from .train import make_optimizer, train_step


def training_variants(default: TrainConfig, with_compile: bool) -> dict:
    """name -> (fused AdamW, CPU attention backend, TrainConfig): from the eager reference to the default
    path, one change at a time."""
    reference = replace(default, dtype="float32", compile=False)
    bf16 = replace(reference, dtype="bfloat16")
    variants = {
        "reference": (False, SDPBackend.MATH, reference),
        "fused_adamw": (True, SDPBackend.MATH, reference),
        "fused_adamw+bf16 flash_attn": (True, SDPBackend.FLASH_ATTENTION, bf16),
        "fused_adamw+bf16 math_attn": (True, SDPBackend.MATH, bf16),
    }
    if with_compile:
        variants["fused_adamw+bf16 math_attn+compile"] = (True, SDPBackend.MATH, replace(bf16, compile=True))
    variants["default"] = (True, SDPBackend.MATH, default if with_compile else replace(default, compile=False))
    return variants


def make_stepper(model_config: ModelConfig, fused: bool, cpu_attention, cfg: TrainConfig, train_ids):
    """A function that runs n training steps of a fresh model exactly as train() does."""
    torch.manual_seed(cfg.seed)
    model = GPT(model_config)
    optimizer = make_optimizer(model, cfg, fused=fused)
    scaler = torch.amp.GradScaler("cpu", enabled=cfg.dtype == "float16")
    runner = torch.compile(model) if cfg.compile else model
    generator = torch.Generator().manual_seed(cfg.seed)

    def run(n: int):
        for _ in range(n):
            x, y = get_batch(train_ids, cfg.batch_size, cfg.seq_len, generator)
            loss = train_step(runner, model, optimizer, scaler, x, y, cfg, cpu_attention)
        return loss.item()
    return run


def bench_training(variants: dict, model_config: ModelConfig, rounds: int, steps: int, train_ids) -> dict:
    steppers, warmup_s = {}, {}
    for name, (fused, cpu_attention, cfg) in variants.items():
        t0 = time.perf_counter()
        steppers[name] = make_stepper(model_config, fused, cpu_attention, cfg, train_ids)
        steppers[name](2)  # compilation and first-touch allocations happen here, not in the timing
        warmup_s[name] = time.perf_counter() - t0
    times = {name: [] for name in variants}
    for _ in range(rounds):
        for name, run in steppers.items():
            t0 = time.perf_counter()
            run(steps)
            times[name].append((time.perf_counter() - t0) / steps)
    any_cfg = next(iter(variants.values()))[2]
    tokens = any_cfg.batch_size * any_cfg.seq_len
    flops = flops_per_token(model_config, any_cfg.seq_len) * tokens
    peak = peak_flops("cpu", torch.get_num_threads())
    out = {}
    for name, ts in times.items():
        median = statistics.median(ts)
        out[name] = {"ms_per_iter": 1000 * median, "ms_per_iter_min": 1000 * min(ts),
                     "tokens_per_sec": tokens / median, "mfu": flops / median / peak,
                     "warmup_s": warmup_s[name], "compile": variants[name][2].compile,
                     "dtype": variants[name][2].dtype, "fused_adamw": variants[name][0],
                     "cpu_attention": "torch default" if variants[name][2].dtype == "float32"
                     else variants[name][1].name}
    for name in out:
        out[name]["speedup_vs_reference"] = out["reference"]["ms_per_iter"] / out[name]["ms_per_iter"]
    return out


def bench_generation(data, new_tokens: int) -> list:
    """Greedy generation after a one-character prompt, with and without the cache; the outputs must be identical."""
    record = measure(data.val[:1].view(1, 1), new_tokens, repeats=1)
    return [{"implementation": "PyTorch", **asdict(row)} for row in record.torch] + \
        [{"implementation": "NumPy", **asdict(record.numpy)}]


def bench_numpy_forward(repeats: int = 5) -> dict:
    """One forward pass of the baseline on a (1, 64) context: the NumPy port (as in the browser) vs torch."""
    idx = np.random.default_rng(0).integers(0, BASELINE.vocab_size, size=(1, BASELINE.block_size))
    np_model = NumpyGPT(BASELINE, seed=0)
    torch_model = GPT(BASELINE).eval()
    np_times, torch_times = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        np_model(idx)
        np_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        with torch.no_grad():
            torch_model(torch.from_numpy(idx))
        torch_times.append(time.perf_counter() - t0)
    return {"context": BASELINE.block_size, "numpy_ms": 1000 * statistics.median(np_times),
            "torch_ms": 1000 * statistics.median(torch_times)}


def main(argv=None) -> int:
    p = ArgumentParser(prog="llmparts bench", description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5, help="turns each training variant takes")
    p.add_argument("--steps", type=int, default=20, help="training steps per turn")
    p.add_argument("--new_tokens", type=int, default=256, help="tokens generated per generation benchmark")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--no_compile", action="store_true", help="skip the torch.compile variants (fast check)")
    p.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    args = p.parse_args(argv)
    check_cli_ints(p, args, ["rounds", "steps", "new_tokens", "threads"])
    if args.threads:
        torch.set_num_threads(args.threads)

    data = load_dataset()
    default = TrainConfig()
    variants = training_variants(default, with_compile=not args.no_compile)
    t0 = time.perf_counter()
    training = bench_training(variants, BASELINE, args.rounds, args.steps, data.train)
    result = {
        "machine": {"torch": torch.__version__, "threads": torch.get_num_threads(), "cpu": platform.processor()
                    or platform.machine(), "python": platform.python_version()},
        "model": BASELINE.to_dict(), "batch_size": default.batch_size, "seq_len": default.seq_len,
        "rounds": args.rounds, "steps_per_round": args.steps, "training": training,
        "generation": bench_generation(data, args.new_tokens), "numpy_forward": bench_numpy_forward(),
    }
    result["wall_time_s"] = time.perf_counter() - t0

    print(f"training, baseline model, batch {default.batch_size} x {default.seq_len}, "
          f"{torch.get_num_threads()} threads (median of {args.rounds} rounds of {args.steps} steps)")
    print(f"{'variant':36} {'ms/iter':>8} {'tokens/s':>9} {'MFU':>6} {'vs ref':>7} {'warmup s':>9}")
    for name, r in training.items():
        print(f"{name:36} {r['ms_per_iter']:8.1f} {r['tokens_per_sec']:9,.0f} {100 * r['mfu']:5.1f}% "
              f"{r['speedup_vs_reference']:6.2f}x {r['warmup_s']:9.1f}")
    print(f"\ngeneration, {args.new_tokens} new tokens, greedy")
    print(f"{'attention':16} {'cached tok/s':>12} {'uncached tok/s':>14} {'speedup':>8} {'cache KiB':>10} identical")
    for r in result["generation"]:
        print(f"{r['implementation'] + ' ' + r['attention']:16} {r['tokens_per_sec_cache']:12,.0f} "
              f"{r['tokens_per_sec_no_cache']:14,.0f} {r['speedup']:7.1f}x {r['cache_bytes'] / 1024:10.0f} "
              f"{r['identical']}")
    nf = result["numpy_forward"]
    print(f"\nforward of a ({1}, {nf['context']}) context: NumPy {nf['numpy_ms']:.2f} ms, torch {nf['torch_ms']:.2f} ms")
    if args.out:
        write_text(args.out, json.dumps(result, indent=2) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
