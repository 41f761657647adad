"""memorization.py: the membership test's AUC, the probe sets, per-line losses and greedy regurgitation."""

import math

import numpy as np
import pytest
import torch

from llmparts.config import ModelConfig
from llmparts.memorization import distinct_lines, line_losses, passages, probe_lines, regurgitated, roc_auc
from llmparts.model import GPT
from llmparts.tokenizer import CharTokenizer

torch.set_num_threads(1)


# ---------------------------------------------------------------- roc_auc

def test_auc_is_one_when_every_positive_outscores_every_negative_and_zero_when_none_does():
    assert roc_auc([3, 4, 5], [0, 1, 2]) == 1.0
    assert roc_auc([0, 1], [2, 3, 4]) == 0.0


def test_auc_counts_the_pairs_by_hand():
    # pairs (pos, neg): (1,0) win, (1,2) loss, (3,0) win, (3,2) win -> 3 of 4
    assert roc_auc([1, 3], [0, 2]) == 0.75


def test_auc_counts_a_tie_as_one_half():
    assert roc_auc([1], [1]) == 0.5
    # (2,1) win, (2,2) tie, (2,3) loss, (2,2) tie -> (1 + 0.5 + 0 + 0.5) / 4
    assert roc_auc([2], [1, 2, 3, 2]) == 0.5
    # (5,5) tie, (5,1) win, (7,5) win, (7,1) win -> 3.5 / 4
    assert roc_auc([5, 7], [5, 1]) == 0.875


def test_auc_equals_the_pairwise_definition_on_random_scores_with_ties():
    rng = np.random.default_rng(0)
    pos, neg = rng.integers(0, 6, 40), rng.integers(0, 5, 30)  # small integers: many ties
    pairs = (pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean()
    assert math.isclose(roc_auc(pos, neg), pairs, rel_tol=1e-12)


def test_auc_of_the_same_distribution_is_near_one_half_and_order_free():
    rng = np.random.default_rng(1)
    pos, neg = rng.normal(size=2000), rng.normal(size=2000)
    assert abs(roc_auc(pos, neg) - 0.5) < 0.03
    assert roc_auc(pos[::-1], neg[::-1]) == roc_auc(pos, neg)


@pytest.mark.parametrize("pos, neg, words", [([], [1.0], "non-empty"), ([1.0], [[1.0]], "1-D"),
                                             ([float("nan")], [1.0], "finite")])
def test_auc_refuses_empty_nested_or_nan_scores(pos, neg, words):
    with pytest.raises(ValueError, match=words):
        roc_auc(pos, neg)


# ---------------------------------------------------------------- probes

def test_distinct_lines_keep_the_length_range_once_in_order():
    assert distinct_lines("abc\nab\nabcd\nabc\nabcdefg", 3, 5) == ["abc", "abcd"]


def test_probe_lines_never_call_a_line_of_the_member_text_held_out():
    members = "\n".join(f"line number {i:03d}" for i in range(50))
    others = "\n".join([f"line number {i:03d}" for i in range(40, 60)] + [f"other line {i:03d}" for i in range(30)])
    m, h = probe_lines(members, others, 20, 5, 30, seed=0)
    assert len(m) == len(h) == 20 and set(m) <= set(members.split("\n"))
    assert not set(h) & set(members.split("\n"))


def test_probe_lines_say_how_many_lines_there_are_when_too_few():
    with pytest.raises(ValueError, match="holds? 2 .*members"):
        probe_lines("aaaa\nbbbb", "cccc\ndddd\neeee", 3, 1, 10, seed=0)


def test_passages_have_the_length_and_come_from_the_text():
    text = "".join(chr(97 + i % 26) for i in range(500))
    got = passages(text, 10, 50, seed=3)
    assert len(got) == 10 and all(len(p) == 50 and p in text for p in got)
    assert got == passages(text, 10, 50, seed=3)


# ---------------------------------------------------------------- the model probes

def tiny_model():
    torch.manual_seed(0)
    return GPT(ModelConfig(vocab_size=5, block_size=16, n_layer=1, n_head=2, n_embd=8)).eval()


def test_line_losses_equal_the_models_own_loss_on_each_line_padded_or_not():
    model, tok = tiny_model(), CharTokenizer("\nabcd")
    lines = ["abca", "dd", "abcdabcd"]
    got = line_losses(model, tok, lines, batch=2)  # two batches, the first padded
    for line, value in zip(lines, got):
        ids = torch.tensor([tok.encode("\n" + line)])
        _, want = model(ids[:, :-1], ids[:, 1:])
        assert math.isclose(value, want.item(), rel_tol=1e-5)


def test_regurgitated_is_true_exactly_when_greedy_decoding_writes_the_rest():
    model, tok = tiny_model(), CharTokenizer("\nabcd")
    prefix = "ab"
    out = model.generate(torch.tensor([tok.encode(prefix)]), 4, temperature=0)
    greedy = tok.decode(out[0].tolist())
    wrong = greedy[:-1] + ("a" if greedy[-1] != "a" else "b")
    assert regurgitated(model, tok, [greedy, wrong], prefix=2) == [True, False]
