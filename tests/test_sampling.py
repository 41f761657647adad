"""sampling.py: top-p beside temperature and top-k, and its NumPy twin in numpy_serving.py."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from llmparts import numpy_serving as ns
from llmparts import sampling as ts

torch.set_num_threads(1)


def probs_after_filter(logits, **kwargs):
    return torch.softmax(ts.filter_logits(torch.tensor(logits, dtype=torch.float32), **kwargs), -1).numpy()


def test_top_p_keeps_the_smallest_set_whose_mass_reaches_p():
    logits = np.log([[0.5, 0.3, 0.15, 0.05]])
    assert np.flatnonzero(probs_after_filter(logits, top_p=0.7)[0]).tolist() == [0, 1]
    assert np.flatnonzero(probs_after_filter(logits, top_p=0.81)[0]).tolist() == [0, 1, 2]
    assert np.flatnonzero(probs_after_filter(logits, top_p=0.96)[0]).tolist() == [0, 1, 2, 3]
    kept = probs_after_filter(logits, top_p=0.7)[0]
    assert np.allclose(kept, [0.5 / 0.8, 0.3 / 0.8, 0, 0], atol=1e-6)  # renormalised over the nucleus


def test_top_p_1_changes_nothing_and_a_tiny_top_p_is_greedy():
    logits = torch.randn(5, 30, generator=torch.Generator().manual_seed(0))
    assert torch.equal(ts.filter_logits(logits, top_p=1.0), logits)
    tiny = ts.filter_logits(logits, top_p=1e-9)
    assert torch.equal(torch.isfinite(tiny).sum(-1), torch.ones(5, dtype=torch.long))
    assert torch.equal(tiny.argmax(-1), logits.argmax(-1))


def test_top_p_is_applied_after_temperature_and_top_k():
    logits = np.log([[0.4, 0.35, 0.25]])
    # alone: 0.4 < 0.5, so the second token joins; after top-k 2 the first holds 0.4/0.75 = 0.53 >= 0.5 alone
    assert np.flatnonzero(probs_after_filter(logits, top_p=0.5)[0]).tolist() == [0, 1]
    assert np.flatnonzero(probs_after_filter(logits, top_k=2, top_p=0.5)[0]).tolist() == [0]
    # temperature 0.25 sharpens 0.4 : 0.35 : 0.25 to 0.58 : 0.34 : 0.09, so top-p 0.5 keeps one token
    assert np.flatnonzero(probs_after_filter(logits, temperature=0.25, top_p=0.5)[0]).tolist() == [0]


def test_samples_never_leave_the_nucleus():
    logits = torch.log(torch.tensor([[0.45, 0.25, 0.2, 0.1]])).repeat(2000, 1)
    picks = ts.sample_next(logits, temperature=1.0, top_p=0.6, generator=torch.Generator().manual_seed(0))
    counts = torch.bincount(picks.ravel(), minlength=4).tolist()
    assert counts[2] == counts[3] == 0 and counts[0] > counts[1] > 0
    np_picks = ns.sample_next(logits.numpy(), temperature=1.0, top_p=0.6, rng=np.random.default_rng(0))
    np_counts = np.bincount(np_picks.ravel(), minlength=4).tolist()
    assert np_counts[2] == np_counts[3] == 0 and np_counts[0] > np_counts[1] > 0


def test_temperature_0_is_greedy_whatever_top_p_says():
    logits = torch.randn(4, 10, generator=torch.Generator().manual_seed(1))
    assert torch.equal(ts.sample_next(logits, temperature=0, top_p=0.3), logits.argmax(-1, keepdim=True))
    assert np.array_equal(ns.sample_next(logits.numpy(), temperature=0, top_p=0.3),
                          logits.numpy().argmax(-1)[:, None])


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), temperature=st.floats(0.2, 3.0), top_k=st.one_of(st.none(), st.integers(1, 40)),
       top_p=st.one_of(st.none(), st.floats(0.05, 1.0)))
def test_numpy_and_torch_keep_the_same_tokens_with_the_same_probabilities(seed, temperature, top_k, top_p):
    logits = np.random.default_rng(seed).normal(0, 3, size=(3, 40)).astype(np.float32)
    torch_probs = probs_after_filter(logits, temperature=temperature, top_k=top_k, top_p=top_p)
    numpy_probs = ns.softmax(ns.filter_logits(logits, temperature, top_k, top_p), axis=-1)
    assert np.array_equal(torch_probs > 0, numpy_probs > 0)
    assert np.abs(torch_probs - numpy_probs).max() <= 1e-6


@pytest.mark.parametrize("temperature, top_k, top_p, message", [
    (1.0, None, 1.5, "top_p (1.5) must be in (0, 1]"),
    (1.0, None, 0, "top_p (0) must be in (0, 1]"),
    (1.0, None, -0.2, "top_p (-0.2) must be in (0, 1]"),
    (1.0, None, "0.9", "top_p ('0.9') must be a number in (0, 1] or None"),
    (1.0, None, True, "top_p (True) must be a number in (0, 1] or None"),
    (1.0, None, math.nan, "top_p (nan) must be a number in (0, 1] or None"),
    (-1.0, None, 0.9, "temperature (-1.0) must be a number >= 0 (0 means greedy)"),
    (1.0, 0, 0.9, "top_k (0) must be a positive integer or None"),
])
def test_invalid_sampling_arguments_name_the_value_and_the_rule_in_both_twins(temperature, top_k, top_p, message):
    for check in (ts.check_sampling_args, ns.check_sampling_args):
        with pytest.raises(ValueError) as e:
            check(temperature, top_k, top_p)
        assert str(e.value) == message
