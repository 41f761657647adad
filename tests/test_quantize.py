"""quantize.py: absmax int8 per channel and int4 per group, on toy matrices and on the book's trained char model."""

import itertools
from pathlib import Path

import numpy as np
import pytest
import torch

from llmparts import numpy_serving as ns
from llmparts import quantize as q
from llmparts.data import fixed_batches, load_dataset
from llmparts.export import from_npz
from llmparts.numpy_model import NumpyGPT

torch.set_num_threads(1)
BOOK_WEIGHTS = Path("results/weights/char_llama.npz")


@pytest.fixture(scope="module")
def book_model():
    model, chars = from_npz(BOOK_WEIGHTS)
    data = load_dataset()
    assert "".join(data.tokenizer.chars) == chars
    return model, fixed_batches(data.val, 4, 16, model.config.block_size)


def test_int8_maps_each_rows_absmax_to_127_and_errs_by_at_most_half_a_step():
    w = torch.randn(16, 40, generator=torch.Generator().manual_seed(0))
    codes, scale = q.quantize_int8(w)
    assert codes.dtype == torch.int8 and scale.shape == (16, 1)
    assert torch.equal(codes.abs().amax(dim=1), torch.full((16,), 127, dtype=torch.int8))
    assert ((q.dequantize_int8(codes, scale) - w).abs() <= scale / 2 + 1e-7).all()


@pytest.mark.parametrize("in_features, group_size", [(64, 32), (41, 8)])
def test_int4_codes_stay_in_m7_7_and_err_by_at_most_half_a_step_of_their_group(in_features, group_size):
    w = torch.randn(6, in_features, generator=torch.Generator().manual_seed(1))
    w[0, 3] = 50.0  # an outlier widens only its own group's step
    packed, scale = q.quantize_int4(w, group_size)
    n_groups = -(-in_features // group_size)
    assert packed.dtype == torch.uint8 and packed.shape == (6, n_groups * group_size // 2)
    assert scale.shape == (6, n_groups, 1)
    codes = q.unpack_int4(packed)
    assert codes.min() >= -7 and codes.max() <= 7
    step = scale.expand(6, n_groups, group_size).reshape(6, -1)[:, :in_features]
    error = (q.dequantize_int4(packed, scale)[:, :in_features] - w).abs()
    assert (error <= step / 2 + 1e-6).all()
    assert step[0, 0] == pytest.approx(50.0 / 7) and step[0, -1] < 1.0  # the outlier's group only


def test_pack_int4_round_trips_every_pair_of_codes():
    pairs = torch.tensor(list(itertools.product(range(-7, 8), repeat=2)), dtype=torch.int8)  # (225, 2)
    codes = pairs.reshape(1, -1)
    assert torch.equal(q.unpack_int4(q.pack_int4(codes)), codes)
    assert np.array_equal(ns.unpack_int4(ns.pack_int4(codes.numpy())), codes.numpy())


def test_an_all_zero_row_quantizes_to_zeros_not_nan():
    w = torch.zeros(2, 8)
    w[1] = torch.arange(8.0)
    assert torch.equal(q.dequantize_int8(*q.quantize_int8(w))[0], torch.zeros(8))
    assert torch.equal(q.dequantize_int4(*q.quantize_int4(w, 4))[0], torch.zeros(8))


def test_quantized_linear_stores_1_byte_per_int8_weight_and_half_a_byte_per_int4_weight_plus_scales():
    linear = torch.nn.Linear(128, 96, bias=False)
    int8 = q.QuantizedLinear(linear, bits=8)
    int4 = q.QuantizedLinear(linear, bits=4, group_size=32)
    assert int8.codes.numel() * int8.codes.element_size() + 4 * int8.scale.numel() == 96 * 128 + 4 * 96
    assert int4.codes.numel() * int4.codes.element_size() + 4 * int4.scale.numel() == 96 * 64 + 4 * 96 * 4


def test_quantize_model_swaps_only_the_block_linears_and_leaves_the_original_untouched(book_model):
    model, _ = book_model
    before = {k: v.clone() for k, v in model.state_dict().items()}
    quantized = q.quantize_model(model, bits=4, group_size=32)
    swapped = [m for m in quantized.modules() if isinstance(m, q.QuantizedLinear)]
    assert len(swapped) == 4 * 7  # wq wk wv wo w_gate w_up w_down, 4 layers
    assert quantized.lm_head.weight is quantized.tok_emb.weight  # the tied head stays float32
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_on_the_books_char_model_int8_costs_under_0_001_of_val_loss_and_int4_under_0_02(book_model):
    model, batches = book_model
    rows = {r["variant"]: r for r in q.quantization_report(model, batches, group_sizes=(32,))}
    fp32, int8, int4, dynamic = (rows[n] for n in ("float32", "int8 per channel", "int4 group 32",
                                                   "torch dynamic int8"))
    assert fp32["val_loss"] < 1.8
    assert abs(int8["loss_delta"]) < 0.001
    assert 0 < int4["loss_delta"] < 0.02
    assert abs(dynamic["loss_delta"]) < 0.02
    assert int8["linear_bytes"] < 0.26 * fp32["linear_bytes"] and int4["linear_bytes"] < 0.16 * fp32["linear_bytes"]
    assert int4["state_bytes"] < int8["state_bytes"] < 0.3 * fp32["state_bytes"]
    assert dynamic["state_bytes"] < 0.35 * fp32["state_bytes"]


@pytest.mark.parametrize("bits", [8, 4])
def test_numpy_quantizers_give_the_same_codes_and_logits_as_torch(bits, book_model):
    model, batches = book_model
    numpy_model = NumpyGPT.from_npz(BOOK_WEIGHTS)
    weight = model.blocks[0].mlp.w_down.weight.detach()  # 341 inputs: int4 pads the last group
    torch_codes, torch_scale = q.quantize_int8(weight) if bits == 8 else q.quantize_int4(weight, 32)
    w = numpy_model.blocks[0].mlp.w_down.weight
    numpy_codes, numpy_scale = ns.quantize_int8(w) if bits == 8 else ns.quantize_int4(w, 32)
    assert np.array_equal(torch_codes.numpy(), numpy_codes) and np.array_equal(torch_scale.numpy(), numpy_scale)
    x = batches[0][0][:2]
    with torch.no_grad():
        torch_logits = q.quantize_model(model, bits)(x)[0].numpy()
    numpy_quantized = ns.quantize_model(numpy_model, bits)
    assert np.abs(numpy_quantized(x.numpy()) - torch_logits).max() <= 1e-4
    assert ns.linear_weight_bytes(numpy_quantized) == q.linear_weight_bytes(q.quantize_model(model, bits))


@pytest.mark.parametrize("bits, group_size, message", [
    (3, 32, "bits (3) must be 8 (int8 per channel) or 4 (int4 group-wise)"),
    (4, 7, "group_size (7) must be an even integer >= 2"),
    (4, 0, "group_size (0) must be an even integer >= 2"),
])
def test_invalid_quantization_arguments_name_the_value_and_the_rule_in_both_twins(bits, group_size, message):
    for check in (q.check_quant_args, ns.check_quant_args):
        with pytest.raises(ValueError) as e:
            check(bits, group_size)
        assert str(e.value) == message
