"""experiments/generation.py: the KV cache changes speed, never the greedy output, in PyTorch and NumPy alike."""

import torch

from llmparts.experiments.base import Result
from llmparts.experiments.generation import EXPERIMENT, GenerationRecord, GenerationRow, measure


def test_outputs_match_with_and_without_cache_in_torch_and_numpy():
    torch.set_num_threads(1)
    record = measure(torch.zeros((1, 8), dtype=torch.long), new_tokens=12, repeats=1)
    assert [r.attention for r in record.torch] == ["MHA", "GQA", "MQA"]
    assert all(r.identical for r in record.torch) and record.numpy.identical
    assert [r.kv_bytes_per_token for r in record.torch] == [4096, 2048, 1024]
    assert record.torch[1].cache_bytes == 2048 * 20 == record.numpy.cache_bytes
    assert all(r.speedup > 0 for r in record.torch)


def make_result(numpy_identical=True) -> Result:
    rows = [GenerationRow(a, h, 1024 * h, 1024 * h * 320, 900.0, 900.0 / s, s, True)
            for a, h, s in (("MHA", 4, 6.25), ("GQA", 2, 5.0), ("MQA", 1, 4.44))]
    numpy = GenerationRow("GQA", 2, 2048, 655_360, 300.0, 20.0, 15.0, numpy_identical)
    return Result("generation", EXPERIMENT.config("full"), {}, GenerationRecord(torch=rows, numpy=numpy))


def test_variables_say_the_speedups_and_whether_every_output_was_identical():
    v = EXPERIMENT.report(make_result()).variables["generation"]
    assert v == {"new_tokens": "256", "speedup_mha": "6.2×", "speedup_gqa": "5.0×", "speedup_mqa": "4.4×",
                 "numpy_speedup": "15.0×", "identical_en": "identical", "identical_zh": "完全相同"}
    g = EXPERIMENT.report(make_result(numpy_identical=False)).variables["generation"]
    assert (g["identical_en"], g["identical_zh"]) == ("different", "不同")


def test_table_has_a_row_per_implementation_and_attention():
    table = EXPERIMENT.report(make_result()).tables["generation"]["en"]
    assert "| PyTorch MHA | 4 | 4,096 | 1,310,720 | 144 | 900 | 6.2× | identical |" in table
    assert "| NumPy GQA | 2 | 2,048 | 655,360 | 20 | 300 | 15.0× | identical |" in table
