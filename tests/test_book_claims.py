"""Properties the chapters state in words, checked against the code and the committed results.

Each test names the claim it backs. Numbers that vary with training live in _variables.yml and are
checked by test_results.py; the claims here are about counts, bytes and behaviour that follow from
the code itself.
"""

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import booklib as B
from llmparts.config import ModelConfig
from llmparts.model import GPT, kv_cache_bytes_per_token
from llmparts.recipes import BASELINE_SETTINGS as BASE


def params(**switches) -> int:
    return GPT(ModelConfig(**{**BASE, **switches})).num_params()


# ---------------------------------------------------------------- chapter 02

def test_rope_drops_exactly_the_position_table_795904_vs_804096():
    assert params() == 804_096 and params(use_rope=True) == 795_904
    assert params() - params(use_rope=True) == BASE["block_size"] * BASE["n_embd"] == 64 * 128


def test_rmsnorm_saves_parameters_only_against_a_layernorm_with_a_shift():
    assert ModelConfig().bias is False  # the default the chapters mean by "bias=False"
    assert params() == params(use_rmsnorm=True) == 804_096  # no shift vectors: equal counts
    n_norms = 2 * BASE["n_layer"] + 1  # two per block and the final one
    assert params(bias=True) - params(bias=True, use_rmsnorm=True) == n_norms * BASE["n_embd"]


def test_gqa_caches_twice_what_mqa_caches_and_half_of_mha():
    mha, gqa, mqa = (kv_cache_bytes_per_token(ModelConfig(**{**BASE, "n_kv_head": h})) for h in (4, 2, 1))
    assert (mha, gqa, mqa) == (4096, 2048, 1024)
    assert gqa == 2 * mqa and gqa * 2 == mha


def test_learned_rows_beyond_the_training_length_stay_at_their_initial_direction():
    data = json.loads((B.ROOT / "results" / "extrapolation.json").read_text(encoding="utf-8"))
    assert data["config"]["block_size"] > data["config"]["train_len"] == 64
    for rows in data["position_rows"]:
        assert rows["unseen_min_cosine"] > 0.9999 and rows["unseen_norm_ratio"] <= 1.0  # only weight decay
        assert rows["seen_cosine"] < 0.9  # the trained rows moved


@pytest.mark.parametrize("lang", B.LANGS)
def test_gate_cell_shows_channels_both_nearly_closed_and_open(lang, capsys):
    ns = B.run_cells_until(lang, "02-modern-parts", "gates = {")
    for gate in ns["gates"].values():
        assert (np.abs(gate) < 0.3).sum() >= 3, "the cell promises nearly closed channels (SiLU of a negative input)"
        assert (gate > 1).sum() >= 3, "the cell promises open channels"
    shown = slice(0, 8)  # the rows the cell prints: each input must show both kinds there too
    for gate in ns["gates"].values():
        assert (np.abs(gate[shown]) < 0.3).any() and (gate[shown] > 1).any()


# ---------------------------------------------------------------- chapter 03

def test_two_flops_per_weight_is_0_165_gflop_and_attention_adds_the_rest_at_512():
    data = json.loads((B.ROOT / "results" / "llama2.json").read_text(encoding="utf-8"))
    flops = data["flops"]
    assert f"{flops['matmul_flops'] / 1e9:.3f}" == "0.165"
    assert f"{flops['per_token'] / 1e9:.3f}" == "0.184" and flops["context"] == 512
    assert flops["per_token"] == flops["matmul_flops"] + flops["attention_flops"]


def test_at_batch_1_the_weights_outweigh_the_cache_and_the_crossover_is_beyond_the_context():
    mem = json.loads((B.ROOT / "results" / "llama2.json").read_text(encoding="utf-8"))["decode_memory"]
    preset = ModelConfig.llama2()
    assert mem["weights_bytes"] == 4 * GPT(preset).num_params()
    batch_1 = next(r for r in mem["rows"] if r["batch"] == 1)
    assert batch_1["weights_bytes"] / batch_1["cache_bytes"] > 17
    assert mem["crossover_tokens"] > preset.block_size  # one sequence never gets there within the preset
    assert mem["crossover_batch_at_context"] == 18


@pytest.mark.parametrize("lang", B.LANGS)
def test_tiled_attention_cell_agrees_to_rounding_but_not_bit_for_bit(lang):
    ns = B.run_cells_until(lang, "03-llama2", "def tiled(")
    a, b = ns["a"], ns["b"]
    assert a.dtype == b.dtype == np.float32
    assert np.allclose(a, b, rtol=1e-5, atol=1e-6) and not np.array_equal(a, b)


def test_sdpa_math_and_flash_kernels_agree_to_rounding_but_not_bit_for_bit():
    from torch.nn.attention import SDPBackend, sdpa_kernel
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 4, 64, 48) for _ in range(3))
    outputs = {}
    for backend in (SDPBackend.MATH, SDPBackend.FLASH_ATTENTION):
        try:
            with sdpa_kernel(backend):
                outputs[backend] = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        except RuntimeError as e:
            pytest.skip(f"{backend} is not available here: {e}")
    math_out, flash_out = outputs[SDPBackend.MATH], outputs[SDPBackend.FLASH_ATTENTION]
    difference = (math_out - flash_out).abs().max().item()
    assert 0 < difference < 1e-5, f"math vs flash kernel: largest difference {difference}"


# ---------------------------------------------------------------- every generated artefact is read

@pytest.mark.parametrize("lang", B.LANGS)
def test_every_generated_table_and_figure_is_shown_in_the_edition(lang):
    from llmparts import report
    text = "\n".join(B.read_page(lang, p) for p in B.existing_pages(lang))
    included = {inc.rsplit("/", 1)[-1] for inc in B.includes(text)}
    shown = {img.rsplit("/", 1)[-1] for img in B.images(text)}
    reports = report.collect_reports(report.load_results(B.ROOT / "results")).values()
    missing = [f"{t}.{lang}.md" for r in reports for t in r.tables if f"{t}.{lang}.md" not in included]
    missing += [f"{f}.{lang}.png" for r in reports for f in r.figures if f"{f}.{lang}.png" not in shown]
    assert not missing, f"generated but never shown in the {lang} edition (include it or stop generating it): {missing}"
