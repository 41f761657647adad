"""The `llmparts` command: train, sample, reproduce, bench, serve, gate. `python -m llmparts.train` is `llmparts train`.

Usage errors print one line, `PROG: error: ...`, and exit 2; a traceback means a bug.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import fields
from pathlib import Path

import torch
import torch.distributed as dist

from .checkpoint import CheckpointError, TrainingInterrupted, load_checkpoint
from .checks import ArgumentParser
from .config import ATTN_IMPLS, DTYPES, ModelConfig, TrainConfig
from .data import DataError
from .model import GPT
from .tokenizer import CharTokenizer
from .train import train

USAGE = """usage: llmparts {train,sample,reproduce,bench,serve,gate} [options]

  train      train one model (python -m llmparts.train; --help for its flags)
  sample     print text from a trained run: --run runs/NAME --prompt "ROMEO:"
  reproduce  run the experiments behind the book's tables and figures
  bench      training and generation speed, side by side with a plain eager reference;
             --serve: a load test of the server, continuous vs static batching
  serve      the model behind an OpenAI-compatible HTTP API (pip install -e ".[serve]")
  gate       refuse a candidate whose metrics regress beyond the release's seed noise:
             --candidate metrics.json [--released results/governance/metrics.json]
"""


# ---------------------------------------------------------------- train

def train_parser(prog: str = "python -m llmparts.train") -> ArgumentParser:
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
    m.add_argument("--attn_impl", default=defaults.attn_impl, choices=ATTN_IMPLS)
    t = p.add_argument_group("training")
    tdefaults = TrainConfig()
    for f in fields(TrainConfig):
        if f.name in ("compile", "resume", "quiet", "dtype", "device"):
            continue
        kind = int if f.name in ("lr_decay_iters", "threads") else type(getattr(tdefaults, f.name))
        kind = str if f.name == "out_dir" else kind
        t.add_argument(f"--{f.name}", type=kind, default=getattr(tdefaults, f.name))
    t.add_argument("--device", default=tdefaults.device, help="cpu, cuda or mps")
    t.add_argument("--dtype", default=tdefaults.dtype, choices=DTYPES, help="float32, or autocast to bfloat16/float16")
    t.add_argument("--compile", action=argparse.BooleanOptionalAction, default=tdefaults.compile,
                   help="torch.compile the model")
    t.add_argument("--resume", action="store_true", help="continue from out_dir/ckpt.pt")
    t.add_argument("--quiet", action="store_true", help="no progress bar or eval lines")
    return p


def configs_from_args(args: argparse.Namespace) -> tuple[ModelConfig, TrainConfig]:
    values = vars(args)
    model_config = ModelConfig(**{f.name: values[f.name] for f in fields(ModelConfig) if f.name in values})
    return model_config, TrainConfig(**{f.name: values[f.name] for f in fields(TrainConfig) if f.name in values})


def train_main(argv=None, prog: str = "python -m llmparts.train") -> int:
    args = train_parser(prog).parse_args(argv)
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


# ---------------------------------------------------------------- sample

def sample_text(run: Path, prompt: str, max_new_tokens: int, temperature: float, top_k: int | None,
                seed: int) -> str:
    """Load run/ckpt.pt and continue prompt; beyond block_size the context is cropped instead of cached."""
    state = load_checkpoint(Path(run) / "ckpt.pt")
    model = GPT(ModelConfig.from_dict(state["model_config"]))
    model.load_state_dict(state["model"])
    model.eval()
    tokenizer = CharTokenizer(state["tokenizer_chars"])
    if not prompt:
        raise ValueError("prompt must hold at least one character")
    idx = torch.tensor([tokenizer.encode(prompt)], dtype=torch.long)
    fits = idx.shape[1] + max_new_tokens <= model.config.block_size
    out = model.generate(idx, max_new_tokens, temperature=temperature, top_k=top_k, use_cache=fits,
                         generator=torch.Generator().manual_seed(seed))
    return tokenizer.decode(out[0].tolist())


def sample_main(argv) -> int:
    p = ArgumentParser(prog="llmparts sample", description="Generate text from a trained run.")
    p.add_argument("--run", required=True, help="a run directory holding ckpt.pt, e.g. runs/modern")
    p.add_argument("--prompt", default="\n")
    p.add_argument("--max_new_tokens", type=int, default=300)
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--top_k", type=int, default=40)
    p.add_argument("--seed", type=int, default=1337)
    args = p.parse_args(argv)
    try:
        text = sample_text(Path(args.run), args.prompt, args.max_new_tokens, args.temperature, args.top_k,
                           args.seed)
    except (ValueError, CheckpointError) as e:
        print(f"llmparts sample: error: {e}", file=sys.stderr)
        return 2
    print(text)
    return 0


# ---------------------------------------------------------------- llmparts

def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:
        print(USAGE, end="", file=sys.stderr)
        return 2
    if argv[0] in ("-h", "--help"):
        print(USAGE, end="")
        return 0
    command, rest = argv[0], argv[1:]
    if command == "train":
        return train_main(rest, prog="llmparts train")
    if command == "sample":
        return sample_main(rest)
    if command == "reproduce":
        from .reproduce import main as reproduce_main
        return reproduce_main(rest)
    if command == "bench" and "--serve" in rest:
        from .serve import bench_main as serve_bench_main
        return serve_bench_main([a for a in rest if a != "--serve"])
    if command == "bench":
        from .bench import main as bench_main
        return bench_main(rest)
    if command == "serve":
        from .serve import main as serve_main
        return serve_main(rest)
    if command == "gate":
        from .gate import main as gate_main
        return gate_main(rest)
    print(f"llmparts: error: unknown command {command!r}; choose train, sample, reproduce, bench, serve or gate",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
