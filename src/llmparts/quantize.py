"""Weight-only quantization: store each Linear's weight in 8 or 4 bits, compute in float32.

absmax: a group of weights shares one scale, its largest |w| divided by the largest integer code, so
that weight maps to +-127 (int8) or +-7 (int4) and every other weight rounds to the nearest code in
between. The error of one weight is at most half a step, scale / 2.

- int8 per channel: one scale per output row of W (out_features, in_features).
- int4 group-wise: one scale per group_size consecutive weights of a row (a row's outliers only widen
  their own group's step); two 4-bit codes are packed into one byte.

quantize_model swaps the Linear layers of every block for QuantizedLinear, which keeps the codes and the
scales and dequantizes the weight when it multiplies (weight-only: activations stay float32). The tied
embedding / output head stays float32. torch_dynamic_int8 is PyTorch's own answer to the same question
(int8 weights and int8 activations), for comparison; quantization_report measures bytes and validation
loss on the book's trained char model. numpy_serving.py holds the quantizers in NumPy.
"""

from __future__ import annotations

import copy
import io
import warnings

import torch
import torch.nn as nn
from torch.nn import functional as F

from .model import GPT

INT8_MAX = 127  # codes -127 .. 127 (symmetric: -128 is left unused)
INT4_MAX = 7    # codes -7 .. 7, stored as 1 .. 15 in a nibble


def check_quant_args(bits, group_size):
    if bits not in (8, 4) or isinstance(bits, bool):
        raise ValueError(f"bits ({bits!r}) must be 8 (int8 per channel) or 4 (int4 group-wise)")
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 2 or group_size % 2:
        raise ValueError(f"group_size ({group_size!r}) must be an even integer >= 2")


def absmax_scale(w, max_code: int):
    """The step between codes: largest |w| along the last axis / max_code (1 where a group is all zeros)."""
    absmax = w.abs().amax(dim=-1, keepdim=True)
    return torch.where(absmax > 0, absmax / max_code, torch.ones_like(absmax))


def quantize_int8(w):
    """W (out, in) -> int8 codes (out, in) and one float32 scale per row (out, 1)."""
    scale = absmax_scale(w, INT8_MAX)
    codes = torch.round(w / scale).clamp(-INT8_MAX, INT8_MAX).to(torch.int8)
    return codes, scale


def dequantize_int8(codes, scale):
    return codes.to(torch.float32) * scale


def quantize_int4(w, group_size: int = 32):
    """W (out, in) -> packed codes (out, padded_in // 2) uint8 and a scale per group (out, padded_in // group_size, 1).

    A row whose length is not a multiple of group_size is padded with zeros to the next multiple
    (341 -> 352 for group 32); dequantize_int4 returns the padded matrix, QuantizedLinear crops it.
    """
    out_features, in_features = w.shape
    w = F.pad(w, (0, -in_features % group_size))
    groups = w.reshape(out_features, -1, group_size)
    scale = absmax_scale(groups, INT4_MAX)
    codes = torch.round(groups / scale).clamp(-INT4_MAX, INT4_MAX).to(torch.int8).reshape(out_features, -1)
    return pack_int4(codes), scale


def pack_int4(codes):
    """Codes in -7 .. 7 (out, in) -> bytes (out, in // 2): code + 8 in the low nibble, the next in the high."""
    nibbles = (codes + 8).to(torch.uint8)
    return nibbles[:, 0::2] | (nibbles[:, 1::2] << 4)


def unpack_int4(packed):
    low, high = (packed & 0x0F).to(torch.int8) - 8, (packed >> 4).to(torch.int8) - 8
    return torch.stack([low, high], dim=-1).reshape(packed.shape[0], -1)


def dequantize_int4(packed, scale):
    codes = unpack_int4(packed)
    out_features, n_groups = scale.shape[0], scale.shape[1]
    groups = codes.reshape(out_features, n_groups, -1).to(torch.float32) * scale
    return groups.reshape(out_features, -1)


class QuantizedLinear(nn.Module):
    """A Linear whose weight is kept as int8 or packed int4 codes plus scales, dequantized at each call."""

    def __init__(self, linear: nn.Linear, bits: int = 8, group_size: int = 32):
        super().__init__()
        check_quant_args(bits, group_size)
        self.bits, self.group_size = bits, group_size
        self.in_features, self.out_features = linear.in_features, linear.out_features
        w = linear.weight.detach().to(torch.float32)
        codes, scale = quantize_int8(w) if bits == 8 else quantize_int4(w, group_size)
        self.register_buffer("codes", codes)
        self.register_buffer("scale", scale)
        self.bias = None if linear.bias is None else nn.Parameter(linear.bias.detach().clone())

    def dequantized_weight(self):
        if self.bits == 8:
            return dequantize_int8(self.codes, self.scale)
        return dequantize_int4(self.codes, self.scale)[:, :self.in_features]

    def forward(self, x):
        return F.linear(x, self.dequantized_weight(), self.bias)


def block_linears(model: GPT):
    """(parent module, attribute name, Linear) for every Linear inside the blocks (the head is the embedding)."""
    for block in model.blocks:
        for parent in (block.attn, block.mlp):
            for name, child in list(parent.named_children()):
                if isinstance(child, nn.Linear):
                    yield parent, name, child


def quantize_model(model: GPT, bits: int = 8, group_size: int = 32) -> GPT:
    """A copy of model whose block Linears are QuantizedLinear; the original is left untouched."""
    check_quant_args(bits, group_size)
    quantized = copy.deepcopy(model).eval()
    for parent, name, linear in list(block_linears(quantized)):
        setattr(parent, name, QuantizedLinear(linear, bits, group_size))
    return quantized


def torch_dynamic_int8(model: GPT) -> nn.Module:
    """PyTorch's dynamic quantization of the same Linears: int8 weights per channel, activations quantized on the fly."""
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    names = {f"blocks.{i}.{part}.{name}" for i, block in enumerate(model.blocks)
             for part in ("attn", "mlp") for name, child in getattr(block, part).named_children()
             if isinstance(child, nn.Linear)}
    with warnings.catch_warnings():  # torch deprecates its quantized tensors in favour of torchao
        warnings.simplefilter("ignore")
        return quantize_dynamic(copy.deepcopy(model).eval(), {n: per_channel_dynamic_qconfig for n in names},
                                dtype=torch.qint8)


def state_bytes(model: nn.Module) -> int:
    """Bytes of the model's state_dict as torch.save writes it (a tied matrix is stored once)."""
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.save(model.state_dict(), buffer)
    return buffer.tell()


def linear_weight_bytes(model: nn.Module) -> int:
    """Bytes of the block Linears' weights alone: float32 weights, or codes + scales once quantized."""
    total = 0
    for module in model.modules():
        if isinstance(module, QuantizedLinear):
            total += module.codes.numel() * module.codes.element_size() + module.scale.numel() * 4
        elif isinstance(module, nn.Linear) and module is not getattr(model, "lm_head", None):
            total += module.weight.numel() * module.weight.element_size()
    return total


@torch.no_grad()
def val_loss(model: nn.Module, batches) -> float:
    """Mean cross-entropy over fixed (x, y) batches."""
    losses = []
    for x, y in batches:
        logits = model(x)[0]
        losses.append(F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1)).item())
    return sum(losses) / len(losses)


def quantization_report(model: GPT, batches, group_sizes=(32, 128)) -> list[dict]:
    """Bytes and validation loss of float32, int8 per channel, int4 per group and PyTorch's dynamic int8."""
    variants = {"float32": model.eval(), "int8 per channel": quantize_model(model, 8)}
    for group_size in group_sizes:
        variants[f"int4 group {group_size}"] = quantize_model(model, 4, group_size)
    variants["torch dynamic int8"] = torch_dynamic_int8(model)
    base_loss = val_loss(model, batches)
    rows = []
    for name, variant in variants.items():
        loss = val_loss(variant, batches)
        rows.append({"variant": name, "state_bytes": state_bytes(variant),
                     "linear_bytes": None if name == "torch dynamic int8" else linear_weight_bytes(variant),
                     "val_loss": loss, "loss_delta": loss - base_loss})
    return rows


def benchmark(model: GPT, batches, new_tokens: int = 60, repeats: int = 3, group_size: int = 32) -> list[dict]:
    """Speed of each variant (for `make bench`, not tests): greedy tokens/s from a one-token prompt with the
    KV cache, and ms per forward of one validation batch; the median of `repeats` runs."""
    import statistics
    import time

    variants = {"float32": model.eval(), "int8 per channel": quantize_model(model, 8),
                f"int4 group {group_size}": quantize_model(model, 4, group_size),
                "torch dynamic int8": torch_dynamic_int8(model)}
    new_tokens = min(new_tokens, model.config.block_size - 1)
    prompt = torch.zeros((1, 1), dtype=torch.long)
    x = batches[0][0]
    rows = []
    for name, variant in variants.items():
        generate_s, forward_s = [], []
        with torch.no_grad():
            variant(x)  # first-touch allocations
            for _ in range(repeats):
                t0 = time.perf_counter()
                GPT.generate(variant, prompt, new_tokens, temperature=0)
                generate_s.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                variant(x)
                forward_s.append(time.perf_counter() - t0)
        rows.append({"variant": name, "tokens_per_sec": new_tokens / statistics.median(generate_s),
                     "forward_ms": 1000 * statistics.median(forward_s), "batch": list(x.shape)})
    return rows
