"""The LLaMA2 preset by the numbers: parameters per component, KV-cache bytes, FLOPs per token, and what one
decoding step reads from memory. Counted from model.py's shapes (on the meta device: no memory, no time),
never typed in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .. import recipes
from ..config import ModelConfig
from ..model import GPT, kv_cache_bytes_per_token
from ..strings import STRINGS
from ..tables import count, gflop, mib, pipe_table, times
from .base import Context, Experiment, Report, Result

CONTEXT = 512            # the preset's block_size: the context most numbers are given at
LENGTHS = [512, 4096]    # how attention's cost grows from the preset's context to a long one
BATCHES = [1, 8, 16, 32]  # sequences decoded together
BYTES_PER_PARAM = 4       # float32 weights


@dataclass
class Params:
    embedding: int
    attention: int
    feed_forward: int
    norms: int
    total: int
    total_untied: int


@dataclass
class KVCacheRow:
    attention: str
    n_kv_head: int
    bytes_per_token: int
    bytes_at_context: int


@dataclass
class Flops:
    """Forward FLOPs for the token at position `context`."""
    formula: str
    context: int
    matmul_params: int
    matmul_flops: int
    attention_flops: int
    per_token: int


@dataclass
class CostRow:
    length: int
    scores: int            # attention scores per layer per head: T x T
    cached_positions: int  # keys (and values) per layer per head: T
    kv_bytes: int
    flops_per_token: int


@dataclass
class AttentionCost:
    rows: list[CostRow]


@dataclass
class DecodeRow:
    batch: int
    context: int
    cache_bytes: int
    weights_bytes: int
    cache_over_weights: float


@dataclass
class DecodeMemory:
    """What one decoding step reads from memory: every weight once, plus the whole KV cache."""
    bytes_per_param: int
    weights_bytes: int
    kv_bytes_per_token: int
    crossover_tokens: float  # cached tokens (summed over the batch) at which the cache outweighs the weights
    crossover_context_batch_1: int
    crossover_batch_at_context: int
    context: int
    rows: list[DecodeRow]


@dataclass
class Llama2Record:
    params: Params
    kv_cache: list[KVCacheRow]
    flops: Flops
    attention_cost: AttentionCost
    decode_memory: DecodeMemory


def count_params(config: ModelConfig) -> dict:
    """Parameters per component; a tied output head appears once, as the token embedding."""
    with torch.device("meta"):
        model = GPT(config)
    groups = {"embedding": 0, "attention": 0, "feed_forward": 0, "norms": 0}
    for name, p in model.named_parameters():
        if name.startswith(("tok_emb", "pos_emb", "lm_head")):
            groups["embedding"] += p.numel()
        elif ".attn." in name:
            groups["attention"] += p.numel()
        elif ".mlp." in name:
            groups["feed_forward"] += p.numel()
        elif "norm" in name:
            groups["norms"] += p.numel()
        else:
            raise ValueError(f"parameter {name} belongs to no component group")
    return groups


def decode_memory(params: int, kv_bytes_per_token: int, context: int, batches: list[int],
                  bytes_per_param: int = BYTES_PER_PARAM) -> DecodeMemory:
    """The weights cost the same at every step; the cache grows with batch x context."""
    weights = params * bytes_per_param
    crossover = weights / kv_bytes_per_token
    rows = [DecodeRow(batch=b, context=context, cache_bytes=b * context * kv_bytes_per_token, weights_bytes=weights,
                      cache_over_weights=b * context * kv_bytes_per_token / weights) for b in batches]
    return DecodeMemory(bytes_per_param=bytes_per_param, weights_bytes=weights, kv_bytes_per_token=kv_bytes_per_token,
                        crossover_tokens=crossover, crossover_context_batch_1=math.ceil(crossover),
                        crossover_batch_at_context=math.ceil(crossover / context), context=context, rows=rows)


def count_llama2(context: int, lengths: list[int], batches: list[int]) -> Llama2Record:
    config = recipes.LLAMA2
    groups = count_params(config)
    total = sum(groups.values())
    untied = sum(count_params(ModelConfig.llama2(tie_embeddings=False)).values())
    kv = []
    for attention, n_kv_head in (("MHA", config.n_head), ("GQA", config.n_kv_head), ("MQA", 1)):
        per_token = kv_cache_bytes_per_token(ModelConfig.llama2(n_kv_head=n_kv_head))
        kv.append(KVCacheRow(attention=attention, n_kv_head=n_kv_head, bytes_per_token=per_token,
                             bytes_at_context=per_token * context))
    # 2 FLOPs per weight of every matmul (the tied embedding counts once, as the output head; norms are not
    # matmuls), plus attention's q.k and w.v, 2 * T * n_embd each per layer.
    matmul_params = total - groups["norms"]

    def attention_flops(T):
        return 4 * config.n_layer * T * config.n_embd

    gqa_bytes = kv_cache_bytes_per_token(config)
    return Llama2Record(
        params=Params(**groups, total=total, total_untied=untied),
        kv_cache=kv,
        flops=Flops(formula="2 * N_matmul + 4 * n_layer * T * n_embd", context=context, matmul_params=matmul_params,
                    matmul_flops=2 * matmul_params, attention_flops=attention_flops(context),
                    per_token=2 * matmul_params + attention_flops(context)),
        attention_cost=AttentionCost(rows=[CostRow(length=T, scores=T * T, cached_positions=T, kv_bytes=gqa_bytes * T,
                                                   flops_per_token=2 * matmul_params + attention_flops(T))
                                           for T in lengths]),
        decode_memory=decode_memory(total, gqa_bytes, context, batches),
    )


class Llama2(Experiment):
    name = "llama2"
    record_type = Llama2Record
    needs_data = False

    def seeds(self, config):
        return []  # counted, not trained: no randomness

    def config(self, scale):
        return {"preset": recipes.LLAMA2.to_dict(), "context": CONTEXT, "lengths": LENGTHS, "batches": BATCHES,
                "weights_dtype": "float32"}

    def run(self, config, outputs, context: Context) -> Llama2Record:
        return count_llama2(config["context"], config["lengths"], config["batches"])

    def report(self, result: Result) -> Report:
        r = result.record
        kv = {row.attention: row for row in r.kv_cache}
        mem = r.decode_memory
        at_context = {row.batch: row for row in mem.rows}
        variables = {
            "params": count(r.params.total), "params_untied": count(r.params.total_untied),
            "kv_bytes_per_token": count(kv["GQA"].bytes_per_token),
            "kv_bytes_per_token_mha": count(kv["MHA"].bytes_per_token),
            "kv_mib_512": mib(kv["GQA"].bytes_at_context), "kv_mib_512_mha": mib(kv["MHA"].bytes_at_context),
            "flops_per_token": gflop(r.flops.per_token), "flops_matmul": gflop(r.flops.matmul_flops),
            "flops_attention": gflop(r.flops.attention_flops), "flops_context": str(r.flops.context),
            "decode": {"weights_mib": mib(mem.weights_bytes),
                       "weights_over_cache": times(1 / at_context[1].cache_over_weights),
                       "crossover_tokens": count(mem.crossover_tokens),
                       "crossover_batch": str(mem.crossover_batch_at_context), "context": str(mem.context)},
        }
        tables = {"llama2_params": report_params, "llama2_kv_cache": report_kv_cache,
                  "attention_cost": report_attention_cost, "decode_memory": report_decode_memory}
        return Report(variables={"llama2": variables},
                      tables={name: {lang: table(result, lang) for lang in STRINGS} for name, table in tables.items()})


def report_params(result: Result, lang: str) -> str:
    t, p = STRINGS[lang]["llama2_params"], result.record.params
    rows = [[t[part], count(getattr(p, part)), f"{100 * getattr(p, part) / p.total:.2f}%"]
            for part in ("embedding", "attention", "feed_forward", "norms")]
    rows.append([t["total"], f"**{count(p.total)}**", "100.00%"])
    rows.append([t["untied"], count(p.total_untied), "—"])
    return pipe_table(t["header"], rows, t["caption"], "llama2_params")


def report_kv_cache(result: Result, lang: str) -> str:
    t = STRINGS[lang]["llama2_kv_cache"]
    rows = [[r.attention, str(r.n_kv_head), count(r.bytes_per_token), mib(r.bytes_at_context)]
            for r in result.record.kv_cache]
    header = [h.format(context=result.config["context"]) for h in t["header"]]
    return pipe_table(header, rows, t["caption"], "llama2_kv_cache")


def report_attention_cost(result: Result, lang: str) -> str:
    t, cost = STRINGS[lang]["attention_cost"], result.record.attention_cost.rows
    rows = [[count(r.length), count(r.scores), count(r.cached_positions), mib(r.kv_bytes), gflop(r.flops_per_token)]
            for r in cost]
    first, last = cost[0], cost[-1]
    rows.append([f"{count(last.length)} / {count(first.length)}", times(last.scores / first.scores),
                 times(last.cached_positions / first.cached_positions), times(last.kv_bytes / first.kv_bytes),
                 times(last.flops_per_token / first.flops_per_token)])
    return pipe_table(t["header"], rows, t["caption"], "attention_cost")


def report_decode_memory(result: Result, lang: str) -> str:
    t, mem = STRINGS[lang]["decode_memory"], result.record.decode_memory
    rows = [[str(r.batch), count(r.context), mib(r.cache_bytes), mib(r.weights_bytes), f"{r.cache_over_weights:.2f}",
             t["cache" if r.cache_bytes > r.weights_bytes else "weights"]] for r in mem.rows]
    caption = t["caption"].format(crossover=count(mem.crossover_tokens))
    return pipe_table(t["header"], rows, caption, "decode_memory")


EXPERIMENT = Llama2()
