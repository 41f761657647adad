"""batching.py: a batch of prompts of different lengths decodes exactly as each prompt alone; NumPy twin equal."""

import numpy as np
import pytest
import torch

from llmparts import batching as tb
from llmparts import model as tm
from llmparts import numpy_model as nm
from llmparts import numpy_serving as ns
from twins import small_kwargs, twins

torch.set_num_threads(1)

PROMPTS = [[3], [1, 7, 3, 12, 5], [9, 9, 2, 0, 4, 11, 6, 8, 1], [2, 14, 20]]


def alone(model, prompt, new_tokens):
    return model.generate(torch.tensor([prompt]), new_tokens, temperature=0)[0].tolist()


def test_greedy_batch_with_left_padding_equals_each_prompt_alone(variant, ordinary_scale):
    model, _ = twins(ordinary_scale, **variant)
    batched = tb.generate_batch(model, PROMPTS, 30, temperature=0, padding="left")
    assert batched == [alone(model, p, 30) for p in PROMPTS]


@pytest.mark.parametrize("modern", [False, True])
def test_right_padding_and_any_pad_id_give_the_same_tokens_as_left_padding(modern, ordinary_scale):
    model, _ = twins(ordinary_scale, use_rmsnorm=modern, use_swiglu=modern, use_rope=modern, n_kv_head=2)
    left = tb.generate_batch(model, PROMPTS, 25, temperature=0, padding="left", pad_id=0)
    assert tb.generate_batch(model, PROMPTS, 25, temperature=0, padding="right", pad_id=0) == left
    assert tb.generate_batch(model, PROMPTS, 25, temperature=0, padding="left", pad_id=17) == left


def test_pad_prompts_marks_padding_with_position_minus_1_on_the_chosen_side():
    idx, positions = tb.pad_prompts([[5], [6, 7, 8]], padding="left", pad_id=0)
    assert idx.tolist() == [[0, 0, 5], [6, 7, 8]] and positions.tolist() == [[-1, -1, 0], [0, 1, 2]]
    idx, positions = tb.pad_prompts([[5], [6, 7, 8]], padding="right", pad_id=0)
    assert idx.tolist() == [[5, 0, 0], [6, 7, 8]] and positions.tolist() == [[0, -1, -1], [0, 1, 2]]


def test_a_row_stops_at_its_own_eos_while_the_others_go_on(ordinary_scale):
    model, _ = twins(ordinary_scale, use_rope=True, n_kv_head=2)
    free = [alone(model, p, 20) for p in PROMPTS]
    eos = free[1][len(PROMPTS[1]) + 3]  # the 4th token row 1 generates
    batched = tb.generate_batch(model, PROMPTS, 20, temperature=0, eos_id=eos)
    for prompt, full, out in zip(PROMPTS, free, batched):
        new = full[len(prompt):]
        expected = new[:new.index(eos) + 1] if eos in new else new
        assert out == prompt + expected
    assert len(batched[1]) <= len(PROMPTS[1]) + 4 and any(len(o) == len(p) + 20 for o, p in zip(batched, PROMPTS))


def test_numpy_batch_equals_the_torch_batch_and_numpy_alone(variant, ordinary_scale):
    torch_model, numpy_model = twins(ordinary_scale, **variant)
    numpy_batched = ns.generate_batch(numpy_model, PROMPTS, 15, temperature=0)
    assert numpy_batched == tb.generate_batch(torch_model, PROMPTS, 15, temperature=0)
    assert numpy_batched == [numpy_model.generate(np.array([p]), 15, temperature=0)[0].tolist() for p in PROMPTS]


def test_numpy_forward_batch_logits_equal_torch_within_1e_5(ordinary_scale):
    torch_model, numpy_model = twins(ordinary_scale, use_rmsnorm=True, use_swiglu=True, use_rope=True, n_kv_head=2)
    idx, positions = tb.pad_prompts(PROMPTS)
    torch_logits = tb.forward_batch(torch_model, idx, positions, tb.SlotKVCache(torch_model.config, 4)).numpy()
    numpy_logits = ns.forward_batch(numpy_model, idx.numpy(), positions.numpy(), ns.SlotKVCache(numpy_model.config, 4))
    real = positions.numpy() >= 0
    assert np.abs(torch_logits[real] - numpy_logits[real]).max() <= 1e-5


def test_batched_generation_refuses_to_run_past_block_size_and_names_the_numbers(ordinary_scale):
    model, numpy_model = twins(ordinary_scale, block_size=48)
    message = "longest prompt (9) + max_new_tokens (40) = 49 exceeds block_size (48), the KV cache's capacity"
    for generate, m in ((tb.generate_batch, model), (ns.generate_batch, numpy_model)):
        with pytest.raises(ValueError) as e:
            generate(m, PROMPTS, 40, temperature=0)
        assert str(e.value) == message


@pytest.mark.parametrize("kwargs, message", [
    (dict(padding="middle"), "padding ('middle') must be 'left' or 'right'"),
    (dict(top_p=2.0), "top_p (2.0) must be in (0, 1]"),
    (dict(max_new_tokens=-1), "max_new_tokens (-1) must be a non-negative integer"),
])
def test_invalid_batch_arguments_name_the_value_and_the_rule(kwargs, message, ordinary_scale):
    model, numpy_model = twins(ordinary_scale)
    args = dict(max_new_tokens=5, temperature=0)
    args.update(kwargs)
    for generate, m in ((tb.generate_batch, model), (ns.generate_batch, numpy_model)):
        with pytest.raises(ValueError) as e:
            generate(m, PROMPTS, **args)
        assert str(e.value) == message
    with pytest.raises(ValueError, match="every prompt must hold at least one token"):
        tb.generate_batch(model, [[1], []], 5)


def test_numpy_stream_yields_the_tokens_of_batched_generation_one_at_a_time(ordinary_scale):
    _, numpy_model = twins(ordinary_scale, use_rmsnorm=True, use_swiglu=True, use_rope=True, n_kv_head=2)
    prompt = PROMPTS[1]
    greedy = list(ns.stream_tokens(numpy_model, prompt, 20, temperature=0))
    assert prompt + greedy == ns.generate_batch(numpy_model, [prompt], 20, temperature=0)[0]
    sampled = list(ns.stream_tokens(numpy_model, prompt, 20, 0.8, top_p=0.9, rng=np.random.default_rng(3)))
    again = ns.generate_batch(numpy_model, [prompt], 20, 0.8, top_p=0.9, rng=np.random.default_rng(3))[0]
    assert prompt + sampled == again


def test_the_benchmarks_report_one_row_per_setting_and_refuse_a_context_past_block_size(ordinary_scale):
    model, _ = twins(ordinary_scale, use_rope=True, block_size=48)
    rows = tb.step_time_vs_context(model, [4, 48], repeats=1)
    assert [r["context"] for r in rows] == [4, 48] and all(r["cached_ms"] > 0 for r in rows)
    assert [r["batch"] for r in tb.throughput_vs_batch_size(model, (1, 3), new_tokens=4, repeats=1)] == [1, 3]
    with pytest.raises(ValueError) as e:
        tb.step_time_vs_context(model, [49])
    assert str(e.value) == "context (49) must be between 2 and block_size (48)"
