"""speculative.py: greedy speculative decoding gives the target's greedy output, token for token, for any draft."""

import math

import pytest
import torch

from llmparts import speculative as sp
from llmparts.model import GPT, ModelConfig
from llmparts.quantize import quantize_model

torch.set_num_threads(1)
PROMPT = torch.tensor([[1, 7, 3, 12, 5]])


def make(ordinary_scale, seed, **overrides):
    base = dict(vocab_size=23, block_size=96, n_layer=2, n_head=4, n_embd=16)
    base.update(overrides)
    return ordinary_scale(GPT(ModelConfig(**base)), seed=seed)


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8])
def test_speculative_output_equals_the_targets_greedy_output_with_an_unrelated_draft(k, variant, ordinary_scale):
    target = make(ordinary_scale, 0, **variant)
    draft = make(ordinary_scale, 1, n_layer=1, n_embd=8, n_head=2, n_kv_head=1)  # random: it guesses badly
    out, stats = sp.speculative_generate(target, draft, PROMPT, 60, k)
    assert torch.equal(out, target.generate(PROMPT, 60, temperature=0))
    assert stats.accepted <= stats.proposed and stats.target_passes >= math.ceil(60 / (k + 1))


@pytest.mark.parametrize("k", [1, 4, 7])
def test_the_target_as_its_own_draft_accepts_everything_and_needs_one_pass_per_k_plus_1_tokens(k, ordinary_scale):
    target = make(ordinary_scale, 0, use_rmsnorm=True, use_swiglu=True, use_rope=True, n_kv_head=2)
    out, stats = sp.speculative_generate(target, target, PROMPT, 60, k)
    assert torch.equal(out, target.generate(PROMPT, 60, temperature=0))
    assert stats.acceptance_rate == 1.0
    assert stats.target_passes == math.ceil(60 / (k + 1))


def test_a_quantized_copy_of_the_target_is_a_draft_that_agrees_more_than_a_random_one(ordinary_scale):
    target = make(ordinary_scale, 0, use_rmsnorm=True, use_swiglu=True, use_rope=True, n_kv_head=2)
    random_draft = make(ordinary_scale, 3, use_rmsnorm=True, use_swiglu=True, use_rope=True, n_kv_head=2)
    int8_draft = quantize_model(target, bits=8)
    expected = target.generate(PROMPT, 80, temperature=0)
    close, close_stats = sp.speculative_generate(target, int8_draft, PROMPT, 80, 4)
    far, far_stats = sp.speculative_generate(target, random_draft, PROMPT, 80, 4)
    assert torch.equal(close, expected) and torch.equal(far, expected)
    assert close_stats.acceptance_rate > 0.5 > far_stats.acceptance_rate
    assert close_stats.target_passes < far_stats.target_passes


def test_speculation_stops_exactly_at_max_new_tokens_and_at_block_size(ordinary_scale):
    target = make(ordinary_scale, 0, block_size=12)
    out, _ = sp.speculative_generate(target, target, PROMPT, 7, 4)  # 5 + 7 = 12 = block_size
    assert out.shape == (1, 12) and torch.equal(out, target.generate(PROMPT, 7, temperature=0))
    out, stats = sp.speculative_generate(target, target, PROMPT, 0, 4)
    assert torch.equal(out, PROMPT) and stats.target_passes == 0


@pytest.mark.parametrize("kwargs, message", [
    (dict(k=0), "k (0) must be a positive integer (draft tokens per target pass)"),
    (dict(max_new_tokens=92), "prompt (5) + max_new_tokens (92) = 97 exceeds block_size (96), "
                              "the smaller KV cache's capacity"),
    (dict(draft_vocab=24), "draft vocab_size (24) must equal the target's (23): the two models must share one tokenizer"),
])
def test_invalid_speculative_arguments_name_the_value_and_the_rule(kwargs, message, ordinary_scale):
    target = make(ordinary_scale, 0)
    draft = make(ordinary_scale, 1, vocab_size=kwargs.pop("draft_vocab", 23))
    args = dict(max_new_tokens=10, k=3)
    args.update(kwargs)
    with pytest.raises(ValueError) as e:
        sp.speculative_generate(target, draft, PROMPT, **args)
    assert str(e.value) == message


@pytest.mark.slow
def test_a_draft_trained_by_the_books_pipeline_agrees_often_with_the_books_model_and_changes_nothing():
    from llmparts.data import load_dataset
    from llmparts.export import from_npz

    target, _ = from_npz("results/weights/char_llama.npz")
    draft = sp.train_draft(target, load_dataset(), iters=200, seed=0)
    assert draft.num_params() < target.num_params() / 10
    prompt = torch.tensor([[30, 27, 25, 17, 27, 10, 0]])  # "ROMEO:\n"
    out, stats = sp.speculative_generate(target, draft, prompt, 50, k=3)
    assert torch.equal(out, target.generate(prompt, 50, temperature=0))
    assert stats.acceptance_rate > 0.1  # 0.26 measured; a random draft agrees about 1 time in 65
