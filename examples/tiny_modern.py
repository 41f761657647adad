"""Hands-on: switch LLaMA's parts on one at a time and see which buy accuracy and which buy economy.

    python examples/tiny_modern.py              # five configs x 2500 steps: minutes on a laptop CPU
    python examples/tiny_modern.py --steps 300  # a quicker, noisier look

Before you run it, write down a prediction for each row: RMSNorm is economy (same loss, cheaper),
SwiGLU and RoPE are accuracy (lower loss). Then check the table. One seed on a small model is noisy:
a delta of a few thousandths may be noise, not a verdict.
"""

import argparse
import json
import time
from dataclasses import replace

from llmparts.checks import check_cli_ints
from llmparts.config import TrainConfig
from llmparts.recipes import BASELINE
from llmparts.train import train

STEPS = 2500
SMALL_MODEL = replace(BASELINE, n_layer=3)  # the book's baseline with 3 layers instead of 4: about 0.6M parameters

# One dict of switches per config, all on the same GPT skeleton: GPT-2's recipe <-> LLaMA's.
OFF = {"rmsnorm": False, "swiglu": False, "rope": False}
CONFIGS = {
    "baseline (LayerNorm, GELU, learned positions)": {**OFF},
    "+RMSNorm  (predict: economy, loss flat)": {**OFF, "rmsnorm": True},
    "+SwiGLU   (predict: accuracy, loss down)": {**OFF, "swiglu": True},
    "+RoPE     (predict: accuracy, loss down)": {**OFF, "rope": True},
    "all three (the LLaMA recipe)": {"rmsnorm": True, "swiglu": True, "rope": True},
}


def train_switches(switches: dict, steps: int = STEPS, seed: int = 0, threads: int | None = None):
    """Train the small model with these switches; return (validation loss, parameter count)."""
    model_config = replace(SMALL_MODEL, use_rmsnorm=switches["rmsnorm"], use_swiglu=switches["swiglu"],
                           use_rope=switches["rope"])
    train_config = TrainConfig(max_iters=steps, eval_interval=steps, seed=seed, threads=threads, quiet=True)
    result = train(model_config, train_config)
    return result.final_val_loss, result.num_params


def main(argv=None):
    parser = argparse.ArgumentParser(description="Five configs, one table: accuracy or economy?")
    parser.add_argument("--steps", type=int, default=STEPS, help=f"training steps per config (default {STEPS})")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--json", help="also write the table here, as JSON (llmparts reproduce reads it)")
    args = parser.parse_args(argv)
    check_cli_ints(parser, args, ["steps", "threads"])  # exit 2 with one line naming the bad count

    start = time.perf_counter()
    print(f"{'config':<46} {'val loss':>9} {'params':>7}")
    print("-" * 72)
    rows = []
    for name, switches in CONFIGS.items():
        val_loss, params = train_switches(switches, args.steps, args.seed, args.threads)
        delta = f"({val_loss - rows[0]['val_loss']:+.4f})" if rows else ""
        rows.append({"name": name, "switches": switches, "val_loss": val_loss, "params": params})
        print(f"{name:<46} {val_loss:>9.4f} {params / 1e6:>6.2f}M  {delta}", flush=True)
    print(f"{len(CONFIGS)} configs x {args.steps} steps in {(time.perf_counter() - start) / 60:.1f} minutes")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"steps": args.steps, "seed": args.seed, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
