"""config.py: ModelConfig and TrainConfig accept exactly the valid settings and name the value and the rule otherwise."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmparts.config import ModelConfig, TrainConfig


# ---------------------------------------------------------------- ModelConfig

@pytest.mark.parametrize("kwargs, message", [
    (dict(n_embd=130, n_head=4), r"n_embd \(130\) must be divisible by n_head \(4\)"),
    (dict(n_head=6, n_kv_head=4, n_embd=96), r"n_head \(6\) must be divisible by n_kv_head \(4\)"),
    (dict(n_head=4, n_kv_head=8), r"n_kv_head \(8\) must be between 1 and n_head \(4\)"),
    (dict(n_kv_head=0), r"n_kv_head \(0\) must be a positive integer"),
    (dict(n_embd=12, n_head=4, use_rope=True), r"head dim n_embd/n_head \(3\) must be even when use_rope is on"),
    (dict(vocab_size=0), r"vocab_size \(0\) must be a positive integer"),
    (dict(block_size=-3), r"block_size \(-3\) must be a positive integer"),
    (dict(n_layer=2.0), r"n_layer \(2.0\) must be a positive integer"),
    (dict(n_head=True), r"n_head \(True\) must be a positive integer"),
    (dict(multiple_of=0), r"multiple_of \(0\) must be a positive integer"),
    (dict(dropout=1.0), r"dropout \(1.0\) must be in \[0, 1\)"),
    (dict(dropout=-0.1), r"dropout \(-0.1\) must be in \[0, 1\)"),
    (dict(rope_theta=0.0), r"rope_theta \(0.0\) must be positive"),
    (dict(norm_eps=-1e-5), r"norm_eps \(-1e-05\) must be positive"),
    (dict(attn_impl="flash"), r"attn_impl \('flash'\) must be one of 'sdpa', 'manual'"),
])
def test_invalid_config_names_the_value_and_the_rule(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ModelConfig(**kwargs)


def test_from_dict_round_trips_and_rejects_unknown_keys():
    c = ModelConfig.llama2()
    assert ModelConfig.from_dict(c.to_dict()) == c
    with pytest.raises(ValueError, match=r"unknown config keys \['n_heads'\]"):
        ModelConfig.from_dict({"n_heads": 4})


@settings(max_examples=60, deadline=None)
@given(n_embd=st.integers(1, 64), n_head=st.integers(1, 8), n_kv_head=st.integers(1, 8), use_rope=st.booleans())
def test_head_arithmetic_is_accepted_exactly_when_the_rules_hold(n_embd, n_head, n_kv_head, use_rope):
    kwargs = dict(n_embd=n_embd, n_head=n_head, n_kv_head=n_kv_head, use_rope=use_rope)
    if n_embd % n_head:
        expected = f"n_embd ({n_embd}) must be divisible by n_head ({n_head})"
    elif n_kv_head > n_head:
        expected = f"n_kv_head ({n_kv_head}) must be between 1 and n_head ({n_head})"
    elif n_head % n_kv_head:
        expected = f"n_head ({n_head}) must be divisible by n_kv_head ({n_kv_head})"
    elif use_rope and (n_embd // n_head) % 2:
        expected = f"head dim n_embd/n_head ({n_embd // n_head}) must be even when use_rope is on"
    else:
        assert ModelConfig(**kwargs).head_dim * n_head == n_embd
        return
    with pytest.raises(ValueError) as err:
        ModelConfig(**kwargs)
    assert str(err.value) == expected


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(["vocab_size", "block_size", "n_layer", "n_head", "n_embd", "multiple_of"]),
       value=st.integers(-100, 0))
def test_non_positive_sizes_are_rejected_by_name(name, value):
    with pytest.raises(ValueError) as err:
        ModelConfig(**{name: value})
    assert str(err.value) == f"{name} ({value}) must be a positive integer"


@settings(max_examples=40, deadline=None)
@given(dropout=st.one_of(st.floats(max_value=-1e-9), st.floats(min_value=1.0)))
def test_dropout_outside_0_1_is_rejected(dropout):
    with pytest.raises(ValueError) as err:
        ModelConfig(dropout=dropout)
    rule = "must be in [0, 1)" if math.isfinite(dropout) else "must be a finite number"
    assert str(err.value) == f"dropout ({dropout!r}) {rule}"



@pytest.mark.parametrize("kwargs, message", [
    (dict(bias="false"), r"bias \('false'\) must be True or False"),
    (dict(use_rope="no"), r"use_rope \('no'\) must be True or False"),
    (dict(dropout=None), r"dropout \(None\) must be"),
    (dict(rope_theta="1e4"), r"rope_theta \('1e4'\) must be"),
])
def test_wrongly_typed_config_values_name_the_value_and_the_rule(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ModelConfig(**kwargs)


def test_model_config_defaults_are_the_books_baseline():
    from llmparts.recipes import BASELINE
    assert ModelConfig() == BASELINE


# ---------------------------------------------------------------- TrainConfig

@pytest.mark.parametrize("overrides, message", [
    (dict(batch_size=0), r"batch_size \(0\) must be a positive integer"),
    (dict(max_iters=2.5), r"max_iters \(2.5\) must be a positive integer"),
    (dict(warmup_iters=-1), r"warmup_iters \(-1\) must be a non-negative integer"),
    (dict(lr=0.0), r"lr \(0.0\) must be positive"),
    (dict(min_lr=0.1), r"min_lr \(0.1\) must be between 0 and lr \(0.001\)"),
    (dict(beta2=1.0), r"beta2 \(1.0\) must be in \[0, 1\)"),
    (dict(lr=float("nan")), r"lr \(nan\) must be a finite number"),
    (dict(dtype="fp8"), r"dtype \('fp8'\) must be one of 'float32', 'bfloat16', 'float16'"),
    (dict(device="tpu"), r"device \('tpu'\) must be one of 'cpu', 'cuda', 'mps'"),
    (dict(threads=0), r"threads \(0\) must be a positive integer"),
    (dict(quiet="yes"), r"quiet \('yes'\) must be True or False"),
    (dict(resume=True), r"resume \(True\) needs an out_dir holding ckpt.pt"),
])
def test_bad_train_config_names_the_value_and_the_rule(overrides, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**overrides)


def test_decay_iters_is_max_iters_unless_pinned():
    assert TrainConfig(max_iters=300).decay_iters == 300
    assert TrainConfig(max_iters=300, lr_decay_iters=1000).decay_iters == 1000
