"""model.py: the worked numbers of the book, RoPE's properties, attention paths, the KV cache, sampling, validation."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from llmparts.checks import check_sampling_args
from llmparts.config import ModelConfig
from llmparts.model import (GPT, MLP, KVCache, LayerNorm, RMSNorm, SwiGLU, apply_rope, kv_cache_bytes_per_token,
                            precompute_rope, sample_next)

torch.set_num_threads(1)


def small_config(**overrides) -> ModelConfig:
    base = dict(vocab_size=23, block_size=128, n_layer=2, n_head=4, n_embd=16)
    base.update(overrides)
    return ModelConfig(**base)


def num_weights(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


# ---------------------------------------------------------------- the book's numbers

def test_llama2_preset_has_82_594_560_parameters_tied_and_87_313_152_untied():
    assert GPT(ModelConfig.llama2()).num_params() == 82_594_560
    assert GPT(ModelConfig.llama2(tie_embeddings=False)).num_params() == 87_313_152


def test_llama2_preset_is_the_llama_recipe_with_swiglu_hidden_2048():
    c = ModelConfig.llama2()
    assert (c.n_embd, c.n_layer, c.n_head, c.n_kv_head, c.vocab_size, c.block_size) == (768, 12, 16, 8, 6144, 512)
    assert c.use_rmsnorm and c.use_swiglu and c.use_rope and not c.bias and c.tie_embeddings
    assert c.head_dim == 48 and c.swiglu_hidden == 2048


def test_swiglu_768_with_multiple_of_64_has_as_many_weights_as_the_gelu_mlp():
    c = ModelConfig(n_embd=768, n_head=16, multiple_of=64)
    assert num_weights(SwiGLU(c)) == 3 * 768 * 2048 == 4_718_592
    assert num_weights(MLP(c)) == 2 * 768 * 3072 == 4_718_592


def test_swiglu_hidden_is_341_for_n_embd_128_without_rounding():
    assert ModelConfig(n_embd=128, multiple_of=1).swiglu_hidden == 341
    assert ModelConfig(n_embd=128, multiple_of=64).swiglu_hidden == 384


def test_kv_cache_bytes_per_token_of_llama2_fp32_is_36_864_with_8_kv_heads_and_73_728_with_16():
    assert kv_cache_bytes_per_token(ModelConfig.llama2()) == 36_864
    assert kv_cache_bytes_per_token(ModelConfig.llama2(n_kv_head=16)) == 73_728
    assert kv_cache_bytes_per_token(ModelConfig.llama2(), dtype=torch.float16) == 18_432


def test_rmsnorm_of_3_m1_2_2_is_1_41_m0_47_0_94_0_94():
    y = RMSNorm(4)(torch.tensor([3.0, -1.0, 2.0, 2.0]))
    assert torch.allclose(y, torch.tensor([1.41, -0.47, 0.94, 0.94]), atol=0.005)
    assert y.pow(2).mean().item() == pytest.approx(1.0, abs=1e-5)  # unit root-mean-square


def test_layernorm_of_3_m1_2_2_is_1_00_m1_67_0_33_0_33():
    y = LayerNorm(4)(torch.tensor([3.0, -1.0, 2.0, 2.0]))
    assert torch.allclose(y, torch.tensor([1.00, -1.67, 0.33, 0.33]), atol=0.005)
    assert y.mean().item() == pytest.approx(0.0, abs=1e-6)


# ---------------------------------------------------------------- RoPE

def test_rope_rotates_the_pair_0_80_0_60_by_60_degrees_to_m0_12_0_99():
    angle = torch.tensor([[math.radians(60)]])
    x = torch.tensor([0.80, 0.60]).view(1, 1, 1, 2)
    y = apply_rope(x, torch.cos(angle), torch.sin(angle)).flatten()
    assert [round(v, 2) for v in y.tolist()] == [-0.12, 0.99]


def test_rope_preserves_vector_norms():
    x = torch.randn(2, 3, 40, 16, generator=torch.Generator().manual_seed(0))
    cos, sin = precompute_rope(16, 40)
    assert torch.allclose(apply_rope(x, cos, sin).norm(dim=-1), x.norm(dim=-1), atol=1e-5)


def test_rope_query_key_product_depends_only_on_the_offset_m_minus_n():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(16, generator=g), torch.randn(16, generator=g)
    cos, sin = precompute_rope(16, 32)
    q_at = apply_rope(q.expand(1, 1, 32, 16), cos, sin)[0, 0]  # row m: q placed at position m
    k_at = apply_rope(k.expand(1, 1, 32, 16), cos, sin)[0, 0]
    scores = q_at @ k_at.T  # scores[m, n] = q at m . k at n
    for shift in (1, 5, 20):
        assert torch.allclose(scores[shift:, shift:], scores[:-shift, :-shift], atol=1e-4)
    assert scores.diagonal(-3).std() < 1e-4 < scores[3].std()  # constant along m - n, not along n


def test_rope_with_an_offset_equals_the_same_positions_of_a_longer_sequence():
    x = torch.randn(1, 2, 10, 8, generator=torch.Generator().manual_seed(0))
    cos, sin = precompute_rope(8, 10)
    assert torch.allclose(apply_rope(x[:, :, 6:9], cos, sin, offset=6), apply_rope(x, cos, sin)[:, :, 6:9])


# ---------------------------------------------------------------- model structure and attention

def test_learned_position_table_exists_only_without_rope_and_the_head_is_tied():
    assert GPT(small_config(use_rope=True)).pos_emb is None
    assert GPT(small_config(use_rope=False)).pos_emb.weight.shape == (128, 16)
    tied = GPT(small_config())
    assert tied.lm_head.weight is tied.tok_emb.weight
    assert GPT(small_config(tie_embeddings=False)).num_params() == tied.num_params() + 23 * 16


def test_sdpa_and_manual_attention_agree_within_1e_6(variant):
    torch.manual_seed(0)
    sdpa = GPT(small_config(**variant, attn_impl="sdpa")).eval()
    manual = GPT(small_config(**variant, attn_impl="manual")).eval()
    manual.load_state_dict(sdpa.state_dict())
    idx = torch.randint(0, 23, (2, 40))
    with torch.no_grad():
        diff = (sdpa(idx)[0] - manual(idx)[0]).abs().max().item()
    assert diff <= 1e-6


def test_loss_is_the_mean_cross_entropy_near_log_vocab_at_init():
    torch.manual_seed(0)
    model = GPT(small_config())
    idx, targets = torch.randint(0, 23, (2, 30)), torch.randint(0, 23, (2, 30))
    logits, loss = model(idx, targets)
    log_probs = torch.log_softmax(logits, dim=-1)
    expected = -log_probs.gather(-1, targets[..., None]).mean()
    assert loss.item() == pytest.approx(expected.item(), rel=1e-6)
    assert loss.item() == pytest.approx(math.log(23), abs=0.1)
    assert model(idx)[1] is None


# ---------------------------------------------------------------- KV cache

def test_cached_and_uncached_generation_agree_for_100_greedy_steps(variant, ordinary_scale):
    model = ordinary_scale(GPT(small_config(**variant)))
    prompt = torch.tensor([[1, 7, 3, 12]])
    cached = model.generate(prompt, 100, temperature=0, use_cache=True)
    uncached = model.generate(prompt, 100, temperature=0, use_cache=False)
    assert cached.shape == (1, 104)
    assert torch.equal(cached, uncached)

    # The logits the cache produces one token at a time equal one full forward pass over the sequence.
    cache = KVCache(model.config, 1)
    with torch.no_grad():
        step_logits = [model(cached[:, :4], cache=cache)[0]]
        step_logits += [model(cached[:, t:t + 1], cache=cache)[0] for t in range(4, 103)]
        full_logits = model(cached[:, :103])[0]
    assert (torch.cat(step_logits, dim=1) - full_logits).abs().max().item() <= 1e-5


@pytest.mark.parametrize("n_kv_head", [4, 2, 1])
def test_kv_cache_holds_n_kv_head_heads_not_n_head(n_kv_head):
    config = small_config(n_kv_head=n_kv_head, use_rope=True)
    cache = KVCache(config, batch_size=3)
    assert len(cache.k) == len(cache.v) == config.n_layer
    assert all(t.shape == (3, n_kv_head, 128, 4) for t in cache.k + cache.v)
    assert cache.num_bytes() == 3 * 128 * kv_cache_bytes_per_token(config) == 3 * 128 * 2 * 2 * n_kv_head * 4 * 4
    with torch.no_grad():
        GPT(config)(torch.zeros(3, 5, dtype=torch.long), cache=cache)
    assert cache.pos == 5 and cache.k[0][:, :, :5].abs().sum() > 0 and cache.k[0][:, :, 5:].abs().sum() == 0


def test_generation_without_cache_crops_the_context_to_block_size(ordinary_scale):
    model = ordinary_scale(GPT(small_config(block_size=8)))
    out = model.generate(torch.tensor([[1, 2, 3, 4, 5, 6]]), 20, temperature=0, use_cache=False)
    assert out.shape == (1, 26)
    for t in range(8, 26):  # each token is the argmax given only the block_size tokens before it
        with torch.no_grad():
            assert out[0, t] == model(out[:, t - 8:t])[0][0, -1].argmax()


def test_generation_with_cache_refuses_to_run_past_block_size():
    model = GPT(small_config(block_size=8))
    with pytest.raises(ValueError, match=r"prompt \(6\) \+ max_new_tokens \(3\) = 9 exceeds block_size \(8\)"):
        model.generate(torch.tensor([[1, 2, 3, 4, 5, 6]]), 3)
    assert model.generate(torch.tensor([[1, 2, 3, 4, 5, 6]]), 2).shape == (1, 8)


def test_generation_stops_when_every_row_emits_eos(ordinary_scale):
    model = ordinary_scale(GPT(small_config()))
    prompt = torch.tensor([[1, 2, 3]])
    first = model.generate(prompt, 1, temperature=0)[0, -1].item()
    out = model.generate(prompt, 50, temperature=0, eos_id=first)
    assert out.tolist() == [[1, 2, 3, first]]


# ---------------------------------------------------------------- sampling

def test_temperature_0_and_top_k_1_are_greedy():
    logits = torch.randn(500, 23, generator=torch.Generator().manual_seed(0))
    best = logits.argmax(-1, keepdim=True)
    assert torch.equal(sample_next(logits, temperature=0), best)
    assert torch.equal(sample_next(logits, temperature=1.5, top_k=1, generator=torch.Generator().manual_seed(1)), best)


def test_samples_never_leave_the_top_k_set():
    logits = torch.randn(2000, 23, generator=torch.Generator().manual_seed(0))
    picks = sample_next(logits, temperature=2.0, top_k=3, generator=torch.Generator().manual_seed(1))
    top3 = logits.topk(3, dim=-1).indices
    assert (picks == top3).any(-1).all()
    assert set((picks == top3).float().argmax(-1).tolist()) == {0, 1, 2}  # and all three ranks do occur


def test_temperature_0_5_sharpens_and_2_0_flattens_softmax_of_5_3_1():
    logits = torch.tensor([[5.0, 3.0, 1.0]]).repeat(20000, 1)
    expected = {0.5: [0.982, 0.018, 0.000], 1.0: [0.867, 0.117, 0.016], 2.0: [0.665, 0.245, 0.090]}
    for temperature, probs in expected.items():
        assert torch.softmax(logits[0] / temperature, -1).tolist() == pytest.approx(probs, abs=0.001)
        picks = sample_next(logits, temperature, generator=torch.Generator().manual_seed(0))
        freq = torch.bincount(picks.flatten(), minlength=3) / len(picks)
        assert freq.tolist() == pytest.approx(probs, abs=0.015)


# ---------------------------------------------------------------- bad input: one clear message

@pytest.mark.parametrize("temperature, top_k, message", [
    (-0.5, None, r"temperature \(-0.5\) must be a number >= 0 \(0 means greedy\)"),
    (float("nan"), None, r"temperature \(nan\) must be a number >= 0"),
    (float("inf"), None, r"temperature \(inf\) must be finite"),
    ("hot", None, r"temperature \('hot'\) must be a number >= 0"),
    (True, None, r"temperature \(True\) must be a number >= 0"),
    (1.0, 0, r"top_k \(0\) must be a positive integer or None"),
    (1.0, 2.5, r"top_k \(2.5\) must be a positive integer or None"),
])
def test_invalid_sampling_arguments_name_the_value_and_the_rule(temperature, top_k, message):
    with pytest.raises(ValueError, match=message):
        check_sampling_args(temperature, top_k)
    with pytest.raises(ValueError, match=message):
        GPT(small_config()).generate(torch.tensor([[1]]), 1, temperature=temperature, top_k=top_k)


@pytest.mark.parametrize("bad", [-1, 2.0, True])
def test_invalid_max_new_tokens_is_rejected(bad):
    with pytest.raises(ValueError, match=rf"max_new_tokens \({bad!r}\) must be a non-negative integer"):
        GPT(small_config()).generate(torch.tensor([[1]]), bad)
