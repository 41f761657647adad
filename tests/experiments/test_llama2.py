"""experiments/llama2.py: the LLaMA2 preset's parameters, cache, FLOPs and decoding memory, counted by code."""

import pytest

from llmparts.experiments.base import Result
from llmparts.experiments.llama2 import EXPERIMENT, count_llama2


@pytest.fixture(scope="module")
def record():
    return count_llama2(context=512, lengths=[512, 4096], batches=[1, 16, 32])


def test_llama2_facts_are_counted_from_the_model(record):
    p = record.params
    assert p.total == 82_594_560 and p.total_untied == 87_313_152
    assert p.embedding == 6144 * 768
    assert p.attention == 12 * (2 * 768 * 768 + 2 * 768 * 384)  # wq, wo full; wk, wv for 8 of 16 heads
    assert p.feed_forward == 12 * 3 * 768 * 2048
    assert p.norms == 25 * 768
    kv = {row.attention: row for row in record.kv_cache}
    assert (kv["MHA"].bytes_per_token, kv["GQA"].bytes_per_token, kv["MQA"].bytes_per_token) == (73_728, 36_864, 4_608)
    assert kv["GQA"].bytes_at_context == 18 * 2**20
    first, last = record.attention_cost.rows
    assert last.scores / first.scores == 64 and last.cached_positions / first.cached_positions == 8


def test_flops_show_the_two_per_weight_rule_and_the_attention_term_separately(record):
    flops = record.flops
    assert flops.matmul_flops == 2 * (82_594_560 - 25 * 768) == 165_150_720  # 0.165 GFLOP: weights only
    assert flops.attention_flops == 4 * 12 * 512 * 768 == 18_874_368  # q.k and w.v over 512 positions
    assert flops.per_token == 184_025_088  # 0.184 GFLOP: what the rule of thumb leaves out at T = 512


def test_decode_memory_weights_outweigh_the_cache_until_the_crossover(record):
    mem = record.decode_memory
    assert mem.weights_bytes == 4 * 82_594_560 == 330_378_240  # float32 weights, read once per step
    assert mem.kv_bytes_per_token == 36_864
    assert mem.crossover_tokens == pytest.approx(330_378_240 / 36_864)  # 8,962.08 cached tokens
    assert mem.crossover_context_batch_1 == 8963 and mem.crossover_batch_at_context == 18
    b1, b16, b32 = mem.rows
    assert b1.cache_bytes == 18 * 2**20 and b1.weights_bytes / b1.cache_bytes > 17  # weights ~17.5x
    assert b16.cache_over_weights < 1 < b32.cache_over_weights


def test_variables_and_tables(record):
    result = Result("llama2", EXPERIMENT.config("full"), {}, record)
    report = EXPERIMENT.report(result)
    assert report.variables["llama2"] == {
        "params": "82,594,560", "params_untied": "87,313,152", "kv_bytes_per_token": "36,864",
        "kv_bytes_per_token_mha": "73,728", "kv_mib_512": "18.0 MiB", "kv_mib_512_mha": "36.0 MiB",
        # 2 FLOPs per weight alone, the attention term at T = 512, and their sum
        "flops_matmul": "0.165 GFLOP", "flops_attention": "0.019 GFLOP", "flops_per_token": "0.184 GFLOP",
        "flops_context": "512",
        "decode": {"weights_mib": "315.1 MiB", "weights_over_cache": "17.5×", "crossover_tokens": "8,962",
                   "crossover_batch": "18", "context": "512"}}
    tables = report.tables
    assert "| 4,096 / 512 | 64.0× | 8.0× | 8.0× | 1.7× |" in tables["attention_cost"]["en"]
    assert "| 4,096 | 16,777,216 | 4,096 | 144.0 MiB | 0.316 GFLOP |" in tables["attention_cost"]["en"]
    assert "| 1 | 512 | 18.0 MiB | 315.1 MiB | 0.06 | weights |" in tables["decode_memory"]["en"]
    assert "| 32 | 512 | 576.0 MiB | 315.1 MiB | 1.83 | cache |" in tables["decode_memory"]["en"]
    assert "about 8,962 cached tokens" in tables["decode_memory"]["en"]
    assert "| 32 | 512 | 576.0 MiB | 315.1 MiB | 1.83 | 快取 |" in tables["decode_memory"]["zh"]
    assert "| **total** | **82,594,560** | 100.00% |" in tables["llama2_params"]["en"]
    assert "Whole cache at 512 tokens" in tables["llama2_kv_cache"]["en"]
