"""The `llmparts` command: train, sample, reproduce, bench."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from .data import CharTokenizer
from .model import GPT, ModelConfig
from .train import ArgumentParser, CheckpointError, load_checkpoint

USAGE = """usage: llmparts {train,sample,reproduce,bench} [options]

  train      train one model (python -m llmparts.train; --help for its flags)
  sample     print text from a trained run: --run runs/NAME --prompt "ROMEO:"
  reproduce  run the experiments behind the book's tables and figures
  bench      training and generation speed, side by side with a plain eager reference
"""


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
        from .train import main as train_main
        return train_main(rest, prog="llmparts train")
    if command == "sample":
        return sample_main(rest)
    if command == "reproduce":
        from .experiments import main as experiments_main
        return experiments_main(rest)
    if command == "bench":
        from .bench import main as bench_main
        return bench_main(rest)
    print(f"llmparts: error: unknown command {command!r}; choose train, sample, reproduce or bench",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
