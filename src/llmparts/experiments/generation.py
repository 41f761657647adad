"""Generation with and without the KV cache: tokens per second, cache bytes, and identical greedy outputs.

The LLaMA recipe with 4, 2 and 1 key/value heads (MHA, GQA, MQA) in PyTorch, and the GQA model again in
the NumPy twin. The weights are untrained: speed and the cache's equality do not depend on training.
Measured in the main process, after the training runs, so no worker competes for the cores.
`make bench` times generation with the same function.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from .. import numpy_model, recipes
from ..model import GPT, kv_cache_bytes_per_token
from ..strings import STRINGS
from ..tables import count, pipe_table, times
from .base import Context, Experiment, Report, Result, dataset

SETTINGS = {"full": dict(prompt_len=64, new_tokens=256, timing_repeats=3),
            "smoke": dict(prompt_len=16, new_tokens=48, timing_repeats=1)}


@dataclass
class GenerationRow:
    attention: str
    n_kv_head: int
    kv_bytes_per_token: int
    cache_bytes: int  # the whole cache: prompt and new tokens
    tokens_per_sec_cache: float
    tokens_per_sec_no_cache: float
    speedup: float
    identical: bool  # the greedy outputs with and without the cache, token for token


@dataclass
class GenerationRecord:
    torch: list[GenerationRow]
    numpy: GenerationRow


def timed(fn, repeats: int):
    """fn's output and its best time over repeats runs."""
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return out, best


def measure_row(model, attention: str, prompt, new_tokens: int, repeats: int) -> GenerationRow:
    """Greedy generation after prompt with the cache, then without it; model is a GPT or a NumpyGPT."""
    cached, t_cached = timed(lambda: model.generate(prompt, new_tokens, temperature=0, use_cache=True), repeats)
    uncached, t_uncached = timed(lambda: model.generate(prompt, new_tokens, temperature=0, use_cache=False), repeats)
    per_token = kv_cache_bytes_per_token(model.config)
    return GenerationRow(attention=attention, n_kv_head=model.config.n_kv_head, kv_bytes_per_token=per_token,
                         cache_bytes=per_token * (prompt.shape[1] + new_tokens),
                         tokens_per_sec_cache=new_tokens / t_cached, tokens_per_sec_no_cache=new_tokens / t_uncached,
                         speedup=t_uncached / t_cached,
                         identical=bool(np.array_equal(np.asarray(cached), np.asarray(uncached))))


def measure(prompt: torch.Tensor, new_tokens: int, repeats: int) -> GenerationRecord:
    """Every attention variant of the LLaMA recipe in PyTorch, then GQA in NumPy with the same weights."""
    block_size = prompt.shape[1] + new_tokens
    rows, models = [], {}
    for attention, n_kv_head in recipes.ATTENTION.items():
        torch.manual_seed(0)
        models[attention] = GPT(recipes.llama(n_kv_head=n_kv_head, block_size=block_size)).eval()
        rows.append(measure_row(models[attention], attention, prompt, new_tokens, repeats))
    gqa = models["GQA"]
    twin = numpy_model.NumpyGPT(numpy_model.ModelConfig.from_dict(gqa.config.to_dict()))
    twin.load_state_dict({k: v.numpy() for k, v in gqa.state_dict().items()})
    return GenerationRecord(torch=rows, numpy=measure_row(twin, "GQA", prompt.numpy(), new_tokens, repeats))


class Generation(Experiment):
    name = "generation"
    sources = ("src/llmparts/numpy_model.py",)
    record_type = GenerationRecord

    def config(self, scale):
        return {**SETTINGS[scale], "model": {**recipes.BASELINE_SETTINGS, **recipes.LLAMA_PARTS},
                "n_kv_heads": recipes.ATTENTION, "weights": "untrained, torch.manual_seed(0)", "decoding": "greedy"}

    def run(self, config, outputs, context: Context) -> GenerationRecord:
        torch.set_num_threads(context.threads)
        prompt = dataset().val[:config["prompt_len"]].view(1, -1)
        return measure(prompt, config["new_tokens"], config["timing_repeats"])

    def report(self, result: Result) -> Report:
        record = result.record
        rows = {row.attention: row for row in record.torch}
        identical = all(r.identical for r in record.torch) and record.numpy.identical
        variables = {"new_tokens": str(result.config["new_tokens"]),
                     **{f"speedup_{a.lower()}": times(rows[a].speedup) for a in recipes.ATTENTION},
                     "numpy_speedup": times(record.numpy.speedup),
                     **{f"identical_{lang}": STRINGS[lang]["identical" if identical else "different"]
                        for lang in ("en", "zh")}}
        return Report(variables={"generation": variables},
                      tables={"generation": {lang: report_table(result, lang) for lang in STRINGS}})


def report_table(result: Result, lang: str) -> str:
    s, record, cfg = STRINGS[lang], result.record, result.config
    rows = []
    for implementation, r in [*(("PyTorch", row) for row in record.torch), ("NumPy", record.numpy)]:
        rows.append([f"{implementation} {r.attention}", str(r.n_kv_head), count(r.kv_bytes_per_token),
                     count(r.cache_bytes), count(r.tokens_per_sec_no_cache), count(r.tokens_per_sec_cache),
                     times(r.speedup), s["identical" if r.identical else "different"]])
    caption = s["generation"]["caption"].format(prompt_len=cfg["prompt_len"], new_tokens=cfg["new_tokens"])
    return pipe_table(s["generation"]["header"], rows, caption, "generation")


EXPERIMENT = Generation()
