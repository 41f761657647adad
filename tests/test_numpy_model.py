"""numpy_model.py is model.py without torch: same names, same numbers, same messages."""

import math
import subprocess
import sys

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from llmparts import model as tm
from llmparts.checks import check_generate_args
from llmparts import numpy_model as nm
from twins import small_kwargs, twins

torch.set_num_threads(1)


def torch_logits(model, idx):
    with torch.no_grad():
        return model(torch.from_numpy(idx))[0].numpy()


def test_importing_numpy_model_does_not_import_torch():
    code = "import sys, llmparts.numpy_model; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------- equal to PyTorch

def test_numpy_logits_equal_torch_within_1e_5(variant, ordinary_scale):
    torch_model, numpy_model = twins(ordinary_scale, **variant)
    idx = np.random.default_rng(0).integers(0, 23, size=(2, 12))
    logits = numpy_model.forward(idx)
    assert logits.dtype == np.float32 and logits.shape == (2, 12, 23)
    assert np.abs(logits - torch_logits(torch_model, idx)).max() <= 1e-5


@pytest.mark.parametrize("modern", [False, True])
def test_numpy_logits_equal_torch_with_biases_and_untied_head(modern, ordinary_scale):
    parts = dict(use_rmsnorm=modern, use_swiglu=modern, use_rope=modern, n_kv_head=2)
    torch_model, numpy_model = twins(ordinary_scale, bias=True, tie_embeddings=False, **parts)
    idx = np.random.default_rng(1).integers(0, 23, size=(2, 12))
    assert np.abs(numpy_model.forward(idx) - torch_logits(torch_model, idx)).max() <= 1e-5


def test_the_equality_check_catches_a_rope_that_rotates_halves(ordinary_scale, monkeypatch):
    def rotate_halves(x, cos, sin, offset=0):  # the other RoPE convention: pairs (i, i + d/2)
        T, half = x.shape[-2], x.shape[-1] // 2
        cos, sin = cos[offset:offset + T], sin[offset:offset + T]
        x1, x2 = x[..., :half], x[..., half:]
        return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)

    torch_model, numpy_model = twins(ordinary_scale, use_rope=True, use_rmsnorm=True, use_swiglu=True)
    monkeypatch.setattr(nm, "apply_rope", rotate_halves)
    idx = np.random.default_rng(0).integers(0, 23, size=(2, 12))
    assert np.abs(numpy_model.forward(idx) - torch_logits(torch_model, idx)).max() > 1e-2


def test_numpy_cached_and_uncached_generation_agree_and_match_torch(variant, ordinary_scale):
    torch_model, numpy_model = twins(ordinary_scale, **variant)
    prompt = np.array([[1, 7, 3, 12]])
    cached = numpy_model.generate(prompt, 100, temperature=0, use_cache=True)
    uncached = numpy_model.generate(prompt, 100, temperature=0, use_cache=False)
    assert cached.shape == (1, 104)
    assert np.array_equal(cached, uncached)
    assert np.array_equal(cached, torch_model.generate(torch.from_numpy(prompt), 100, temperature=0).numpy())

    cache = nm.KVCache(numpy_model.config, 1)
    step_logits = [numpy_model.forward(cached[:, :4], cache=cache)]
    step_logits += [numpy_model.forward(cached[:, t:t + 1], cache=cache) for t in range(4, 103)]
    full_logits = numpy_model.forward(cached[:, :103])
    assert np.abs(np.concatenate(step_logits, axis=1) - full_logits).max() <= 1e-5


@pytest.mark.parametrize("n_kv_head", [4, 2, 1])
def test_numpy_kv_cache_holds_n_kv_head_heads(n_kv_head):
    config = nm.ModelConfig(**small_kwargs(n_kv_head=n_kv_head))
    cache = nm.KVCache(config, batch_size=3)
    assert all(a.shape == (3, n_kv_head, 128, 4) and a.dtype == np.float32 for a in cache.k + cache.v)
    assert cache.num_bytes() == 3 * 128 * nm.kv_cache_bytes_per_token(config) == 3 * 128 * 2 * 2 * n_kv_head * 4 * 4
    assert nm.kv_cache_bytes_per_token(nm.ModelConfig.llama2()) == 36_864
    assert nm.kv_cache_bytes_per_token(nm.ModelConfig.llama2(n_kv_head=16)) == 73_728


def test_numpy_generation_crops_without_cache_and_refuses_past_block_size_with_cache(ordinary_scale):
    torch_model, numpy_model = twins(ordinary_scale, block_size=8)
    prompt = np.array([[1, 2, 3, 4, 5, 6]])
    out = numpy_model.generate(prompt, 20, temperature=0, use_cache=False)
    assert np.array_equal(out, torch_model.generate(torch.from_numpy(prompt), 20, temperature=0,
                                                    use_cache=False).numpy())
    with pytest.raises(ValueError) as np_err:
        numpy_model.generate(prompt, 3)
    with pytest.raises(ValueError) as torch_err:
        torch_model.generate(torch.from_numpy(prompt), 3)
    assert str(np_err.value) == str(torch_err.value)
    assert "= 9 exceeds block_size (8)" in str(np_err.value)


def test_numpy_generation_stops_at_eos_and_reproduces_with_the_same_rng(ordinary_scale):
    _, numpy_model = twins(ordinary_scale)
    prompt = np.array([[1, 2, 3], [4, 5, 6]])
    a = numpy_model.generate(prompt, 30, temperature=1.0, top_k=5, rng=np.random.default_rng(7))
    b = numpy_model.generate(prompt, 30, temperature=1.0, top_k=5, rng=np.random.default_rng(7))
    assert a.shape == (2, 33) and np.array_equal(a, b)
    first = numpy_model.generate(prompt[:1], 1, temperature=0)[0, -1]
    assert numpy_model.generate(prompt[:1], 50, temperature=0, eos_id=first).tolist() == [[1, 2, 3, first]]


# ---------------------------------------------------------------- components

def test_numpy_norms_give_the_worked_numbers_of_3_m1_2_2():
    x = np.array([3.0, -1.0, 2.0, 2.0], dtype=np.float32)
    assert np.allclose(nm.RMSNorm(4)(x), [1.41, -0.47, 0.94, 0.94], atol=0.005)
    assert np.allclose(nm.LayerNorm(4)(x), [1.00, -1.67, 0.33, 0.33], atol=0.005)


def test_numpy_rope_rotates_0_80_0_60_by_60_degrees_and_matches_torch_rope():
    angle = np.array([[math.radians(60)]], dtype=np.float32)
    y = nm.apply_rope(np.array([0.80, 0.60], dtype=np.float32).reshape(1, 1, 1, 2), np.cos(angle), np.sin(angle))
    assert [round(float(v), 2) for v in y.flatten()] == [-0.12, 0.99]
    x = np.random.default_rng(0).normal(size=(2, 3, 10, 8)).astype(np.float32)
    cos, sin = nm.precompute_rope(8, 20, theta=500.0)
    t_cos, t_sin = tm.precompute_rope(8, 20, theta=500.0)
    assert np.allclose(cos, t_cos.numpy(), atol=1e-6) and np.allclose(sin, t_sin.numpy(), atol=1e-6)
    expected = tm.apply_rope(torch.from_numpy(x), t_cos, t_sin, offset=7).numpy()
    assert np.abs(nm.apply_rope(x, cos, sin, offset=7) - expected).max() <= 1e-6


def test_numpy_activations_equal_torch():
    x = np.linspace(-8, 8, 1001, dtype=np.float32)
    assert np.abs(nm.gelu(x) - torch.nn.functional.gelu(torch.from_numpy(x)).numpy()).max() <= 1e-6
    assert np.abs(nm.silu(x) - torch.nn.functional.silu(torch.from_numpy(x)).numpy()).max() <= 1e-6
    probs = nm.softmax(np.array([5.0, 3.0, 1.0]) / 2.0)
    assert probs.tolist() == pytest.approx([0.665, 0.245, 0.090], abs=0.001)


def test_numpy_repeat_kv_and_causal_mask_equal_torch():
    x = np.random.default_rng(0).normal(size=(2, 2, 5, 4)).astype(np.float32)
    assert np.array_equal(nm.repeat_kv(x, 3), tm.repeat_kv(torch.from_numpy(x), 3).numpy())
    assert np.array_equal(nm.causal_mask(3, 7, 4), tm.causal_mask(3, 7, 4).numpy())


def test_numpy_config_and_parameter_counts_equal_torch(variant):
    numpy_config, torch_config = nm.ModelConfig(**small_kwargs(**variant)), tm.ModelConfig(**small_kwargs(**variant))
    assert numpy_config.to_dict() == torch_config.to_dict()
    numpy_model = nm.NumpyGPT(numpy_config)
    torch_model = tm.GPT(torch_config)
    assert numpy_model.num_params() == torch_model.num_params()
    assert {k: v.shape for k, v in numpy_model.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in torch_model.state_dict().items()}


def test_numpy_llama2_preset_and_swiglu_hidden_equal_torch():
    assert nm.ModelConfig.llama2().to_dict() == tm.ModelConfig.llama2().to_dict()
    assert nm.ModelConfig.llama2().swiglu_hidden == 2048
    assert nm.ModelConfig(n_embd=128).swiglu_hidden == 341


def test_numpy_seeded_init_follows_model_py():
    config = nm.ModelConfig(**small_kwargs(n_embd=64, n_layer=8, use_rmsnorm=True, use_rope=True))
    model = nm.NumpyGPT(config, seed=0)
    sd = model.state_dict()
    assert np.std(sd["tok_emb.weight"]) == pytest.approx(0.02, rel=0.1)
    assert np.std(np.concatenate([sd[f"blocks.{i}.attn.wq.weight"].ravel() for i in range(8)])) == \
        pytest.approx(0.02, rel=0.05)
    assert np.std(np.concatenate([sd[f"blocks.{i}.attn.wo.weight"].ravel() for i in range(8)])) == \
        pytest.approx(0.02 / math.sqrt(16), rel=0.05)
    assert np.all(sd["norm_f.weight"] == 1.0)
    assert model.lm_head.weight is model.tok_emb.weight
    assert np.array_equal(nm.NumpyGPT(config, seed=0).tok_emb.weight, sd["tok_emb.weight"])
    assert not np.array_equal(nm.NumpyGPT(config, seed=1).tok_emb.weight, sd["tok_emb.weight"])


# ---------------------------------------------------------------- sampling

def test_numpy_temperature_0_and_top_k_1_are_greedy():
    logits = np.random.default_rng(0).normal(size=(300, 23)).astype(np.float32)
    best = logits.argmax(-1)[:, None]
    assert np.array_equal(nm.sample_next(logits, temperature=0), best)
    assert np.array_equal(nm.sample_next(logits, 1.5, top_k=1, rng=np.random.default_rng(1)), best)


def test_numpy_samples_never_leave_the_top_k_set_and_follow_the_temperature():
    logits = np.random.default_rng(0).normal(size=(2000, 23)).astype(np.float32)
    picks = nm.sample_next(logits, temperature=2.0, top_k=3, rng=np.random.default_rng(1))
    ranks = (-logits).argsort(-1).argsort(-1)  # rank 0 = highest logit
    assert set(np.take_along_axis(ranks, picks, -1).ravel().tolist()) == {0, 1, 2}

    rows = np.tile(np.array([5.0, 3.0, 1.0], dtype=np.float32), (20000, 1))
    for temperature, probs in {0.5: [0.982, 0.018, 0.0], 2.0: [0.665, 0.245, 0.090]}.items():
        freq = np.bincount(nm.sample_next(rows, temperature, rng=np.random.default_rng(0)).ravel(), minlength=3)
        assert (freq / len(rows)).tolist() == pytest.approx(probs, abs=0.015)


# ---------------------------------------------------------------- bad input: the same messages as torch

def _message(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except ValueError as err:
        return str(err)
    return None


@settings(max_examples=80, deadline=None)
@given(n_embd=st.integers(-2, 48), n_head=st.integers(1, 8), n_kv_head=st.one_of(st.none(), st.integers(0, 9)),
       use_rope=st.booleans(), dropout=st.floats(-0.5, 1.5), attn_impl=st.sampled_from(["sdpa", "manual", "x"]))
def test_numpy_config_accepts_and_rejects_exactly_like_torch(n_embd, n_head, n_kv_head, use_rope, dropout, attn_impl):
    kwargs = dict(n_embd=n_embd, n_head=n_head, n_kv_head=n_kv_head, use_rope=use_rope, dropout=dropout,
                  attn_impl=attn_impl)
    assert _message(nm.ModelConfig, **kwargs) == _message(tm.ModelConfig, **kwargs)


@settings(max_examples=60, deadline=None)
@given(temperature=st.one_of(st.floats(), st.integers(-3, 3), st.booleans(), st.just("hot")),
       top_k=st.one_of(st.none(), st.integers(-3, 3), st.floats(-3, 3), st.booleans()),
       max_new_tokens=st.one_of(st.integers(-2, 140), st.just(1.0)), prompt_len=st.integers(0, 3),
       use_cache=st.booleans())
def test_numpy_generate_refuses_exactly_what_torch_refuses(temperature, top_k, max_new_tokens, prompt_len, use_cache):
    expected = _message(check_generate_args, prompt_len, max_new_tokens, temperature, top_k, 128, use_cache)
    assume(expected is not None)  # valid arguments start a generation, which the tests above compare
    prompt = np.zeros((1, prompt_len), dtype=np.int64)
    kwargs = dict(temperature=temperature, top_k=top_k, use_cache=use_cache)
    torch_model = tm.GPT(tm.ModelConfig(**small_kwargs())).eval()
    numpy_model = nm.NumpyGPT(nm.ModelConfig(**small_kwargs()), seed=0)
    assert _message(torch_model.generate, torch.from_numpy(prompt), max_new_tokens, **kwargs) == expected
    assert _message(numpy_model.generate, prompt, max_new_tokens, **kwargs) == expected


def test_numpy_forward_rejects_bad_token_ids_and_shapes():
    model = nm.NumpyGPT(nm.ModelConfig(**small_kwargs()), seed=0)
    with pytest.raises(ValueError, match=r"token ids must be in \[0, 23\), got -1 \.\. 23"):
        model.forward(np.array([[-1, 5, 23]]))
    with pytest.raises(ValueError, match=r"idx \(shape \(3,\), dtype int64\) must be a 2-D integer array"):
        model.forward(np.array([1, 2, 3]))
    with pytest.raises(ValueError, match=r"sequence length 129 exceeds block_size \(128\)"):
        model.forward(np.zeros((1, 129), dtype=np.int64))


def test_numpy_load_state_dict_names_missing_unexpected_and_misshapen_keys():
    model = nm.NumpyGPT(nm.ModelConfig(**small_kwargs()), seed=0)
    state = model.state_dict()
    with pytest.raises(ValueError, match=r"missing keys \['norm_f.weight'\], unexpected keys \['x'\]"):
        model.load_state_dict({**{k: v for k, v in state.items() if not k.startswith("norm_f")}, "x": 0})
    with pytest.raises(ValueError, match=r"tok_emb.weight has shape \(23, 8\), this config needs \(23, 16\)"):
        model.load_state_dict({**state, "tok_emb.weight": np.zeros((23, 8))})
