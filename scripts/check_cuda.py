"""The CUDA paths of llmparts on a machine with an NVIDIA GPU (CI has none, so they run only here, by hand).

    PYTHONPATH=src python3 scripts/check_cuda.py [--iters 300] [--json OUT.json]

Checks, printing one line each and failing (exit 1) on the first that does not hold:
1. the LLaMA recipe trains on cuda in bfloat16 and in float32 and reaches about the same validation loss as
   the same run on the CPU in float32 (a short run, so "about" is 0.05);
2. a cuda run stopped half way and resumed ends with the same loss as one run straight through;
3. cached and uncached greedy generation on cuda give the same tokens;
4. attention through SDPA's flash and memory-efficient kernels differs from its math kernel by rounding only:
   the same function, not the same bits (the size of the difference is printed).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from llmparts.config import TrainConfig
from llmparts.data import load_dataset
from llmparts.model import GPT
from llmparts.recipes import llama
from llmparts.train import train


def check(name: str, ok: bool, detail: str, results: dict):
    results[name] = {"ok": bool(ok), "detail": detail}
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}", flush=True)
    if not ok:
        raise SystemExit(1)


def run(dataset, device, dtype, iters, out_dir=None, resume=False, stop_at=None):
    model_config = llama(vocab_size=dataset.tokenizer.vocab_size)
    cfg = TrainConfig(device=device, dtype=dtype, max_iters=stop_at or iters, lr_decay_iters=iters,
                      eval_interval=iters, final_eval_batches=50, out_dir=out_dir, resume=resume,
                      checkpoint_interval=max(1, iters // 2), quiet=True)
    return train(model_config, cfg, dataset)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iters", type=int, default=300)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("check_cuda.py: torch.cuda.is_available() is False: run this on a machine with an NVIDIA GPU",
              file=sys.stderr)
        return 2
    results = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name()}
    print(f"torch {results['torch']} on {results['gpu']}", flush=True)
    dataset = load_dataset()

    cpu = run(dataset, "cpu", "float32", args.iters)
    for dtype in ("bfloat16", "float32"):
        gpu = run(dataset, "cuda", dtype, args.iters)
        gap = abs(gpu.final_val_loss - cpu.final_val_loss)
        on = next(gpu.model.parameters()).device.type
        check(f"train cuda {dtype}", gap < 0.05 and on == "cuda",
              f"weights on {on}, val loss {gpu.final_val_loss:.6f} vs cpu float32 {cpu.final_val_loss:.6f}, "
              f"{gpu.tokens_per_sec:,.0f} tok/s vs cpu {cpu.tokens_per_sec:,.0f}", results)

    with tempfile.TemporaryDirectory() as tmp:
        straight = run(dataset, "cuda", "float32", args.iters)
        run(dataset, "cuda", "float32", args.iters, out_dir=tmp, stop_at=args.iters // 2)
        resumed = run(dataset, "cuda", "float32", args.iters, out_dir=tmp, resume=True)
        gap = abs(resumed.final_val_loss - straight.final_val_loss)
        check("resume on cuda", gap < 1e-4,
              f"resumed {resumed.final_val_loss:.6f} vs straight {straight.final_val_loss:.6f}", results)

    model = straight.model.eval()
    prompt = torch.tensor([dataset.tokenizer.encode("ROMEO:")], device="cuda")
    new_tokens = model.config.block_size - prompt.shape[1]  # as many as the cache holds
    with torch.no_grad():
        cached = model.generate(prompt, new_tokens, temperature=0.0, use_cache=True)
        uncached = model.generate(prompt, new_tokens, temperature=0.0, use_cache=False)
    check("greedy generation, cache vs none", torch.equal(cached, uncached),
          f"{(cached != uncached).sum().item()} of {cached.numel()} tokens differ", results)

    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(4, 16, 512, 64, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
    outputs = {}
    for backend in (SDPBackend.MATH, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION):
        with sdpa_kernel(backend):
            outputs[backend.name] = F.scaled_dot_product_attention(q, k, v, is_causal=True).float()
    math_out = outputs["MATH"]
    for name in ("FLASH_ATTENTION", "EFFICIENT_ATTENTION"):
        diff = (outputs[name] - math_out).abs().max().item()
        same_bits = torch.equal(outputs[name], math_out)
        check(f"sdpa {name.lower()} vs math (bf16)", diff < 2e-2,
              f"max |diff| {diff:.2e}, bit-identical: {same_bits}", results)

    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
