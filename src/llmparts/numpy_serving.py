"""Serving in pure NumPy: sampling.py, batching.py and quantize.py again, without torch (runs under Pyodide).

Same functions, same names, same order as the PyTorch modules, so the chapter's cells in the browser run
the code the server runs: top-p sampling, batched generation with a KV cache per sequence, and
weight-only int8 / int4 quantization. tests/test_numpy_serving.py keeps them equal to PyTorch.
"""

from __future__ import annotations

import copy
import math

import numpy as np

from .checks import check_int
from .checks import check_sampling_args as check_temperature_and_top_k
from .numpy_model import KVCache, Linear, repeat_kv, softmax


# ---------------------------------------------------------------- sampling (sampling.py)

def check_sampling_args(temperature, top_k, top_p=None):
    """temperature >= 0 and finite, top_k a positive integer or None, top_p in (0, 1] or None."""
    check_temperature_and_top_k(temperature, top_k)
    if top_p is None:
        return
    if isinstance(top_p, bool) or not isinstance(top_p, (int, float)) or math.isnan(top_p):
        raise ValueError(f"top_p ({top_p!r}) must be a number in (0, 1] or None")
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p ({top_p!r}) must be in (0, 1]")


def top_k_filter(logits, top_k: int):
    """Keep the top_k largest logits of each row (ties with the k-th kept too); the rest become -inf."""
    k = min(top_k, logits.shape[-1])
    kth_best = np.sort(logits, axis=-1)[..., [-k]]
    return np.where(logits < kth_best, -np.inf, logits)


def top_p_filter(logits, top_p: float):
    """Keep the smallest set of most likely tokens whose probabilities add up to at least top_p.

    Sort the probabilities from high to low; a token stays if the mass of the tokens before it is still
    below top_p. The most likely token always stays, so top_p -> 0 becomes greedy.
    """
    order = np.argsort(-logits, axis=-1, kind="stable")
    sorted_probs = softmax(np.take_along_axis(logits, order, axis=-1), axis=-1)
    mass_before = np.cumsum(sorted_probs, axis=-1) - sorted_probs
    keep = np.zeros(logits.shape, dtype=bool)
    np.put_along_axis(keep, order, mass_before < top_p, axis=-1)  # back to vocabulary order
    return np.where(keep, logits, -np.inf)


def filter_logits(logits, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None):
    """Logits (B, vocab) divided by temperature (> 0), then cut by top-k, then by top-p."""
    logits = logits / temperature
    if top_k is not None:
        logits = top_k_filter(logits, top_k)
    if top_p is not None and top_p < 1:  # top_p = 1 keeps every token (float32 sums can fall short of 1)
        logits = top_p_filter(logits, top_p)
    return logits


def sample_next(logits, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None,
                rng: np.random.Generator | None = None):
    """One token id per row of logits (B, vocab): greedy at temperature 0, else drawn from the filtered softmax."""
    check_sampling_args(temperature, top_k, top_p)
    if temperature == 0:
        return logits.argmax(axis=-1, keepdims=True)
    probs = softmax(filter_logits(logits, temperature, top_k, top_p).astype(np.float64), axis=-1)
    rng = np.random.default_rng() if rng is None else rng
    return np.array([[rng.choice(probs.shape[-1], p=row)] for row in probs], dtype=np.int64)


# ---------------------------------------------------------------- batched generation (batching.py)

PAD = -1  # the position of a padding token: it is neither stored nor attended to


class SlotKVCache:
    """Keys and values per layer, (n_slots, n_kv_head, block_size, head_dim): row s belongs to one sequence."""

    def __init__(self, config, n_slots: int):
        shape = (n_slots, config.n_kv_head, config.block_size, config.head_dim)
        self.k = [np.zeros(shape, dtype=np.float32) for _ in range(config.n_layer)]
        self.v = [np.zeros(shape, dtype=np.float32) for _ in range(config.n_layer)]
        self.capacity = config.block_size

    def update(self, layer: int, slots, positions, k, v):
        """Store k, v (B, n_kv_head, T, D) of the real tokens; return the slots' keys and values 0 .. max position."""
        rows, cols = np.nonzero(positions != PAD)
        self.k[layer][slots[rows], :, positions[rows, cols]] = k[rows, :, cols]
        self.v[layer][slots[rows], :, positions[rows, cols]] = v[rows, :, cols]
        S = int(positions.max()) + 1
        return self.k[layer][slots, :, :S], self.v[layer][slots, :, :S]


def rope_at(x, cos, sin, positions):
    """numpy_model.apply_rope with a position per token: x (B, H, T, head_dim), positions (B, T)."""
    cos, sin = cos[positions][:, None], sin[positions][:, None]  # (B, 1, T, head_dim // 2)
    x1, x2 = x[..., ::2], x[..., 1::2]
    rotated_1 = x1 * cos - x2 * sin
    rotated_2 = x1 * sin + x2 * cos
    return np.stack([rotated_1, rotated_2], axis=-1).reshape(x.shape)


def attend(attn, x, positions, cache: SlotKVCache, layer: int, slots, rope_cos, rope_sin):
    """CausalSelfAttention.__call__ where each token has its own position and each row its own cache slot."""
    B, T, _ = x.shape
    q = attn.wq(x).reshape(B, T, attn.n_head, attn.head_dim).transpose(0, 2, 1, 3)
    k = attn.wk(x).reshape(B, T, attn.n_kv_head, attn.head_dim).transpose(0, 2, 1, 3)
    v = attn.wv(x).reshape(B, T, attn.n_kv_head, attn.head_dim).transpose(0, 2, 1, 3)
    seen_from = np.maximum(positions, 0)  # a padding query looks at column 0 of its slot; its output is ignored
    if attn.use_rope:
        q = rope_at(q, rope_cos, rope_sin, seen_from)
        k = rope_at(k, rope_cos, rope_sin, seen_from)
    k, v = cache.update(layer, slots, positions, k, v)
    n_rep = attn.n_head // attn.n_kv_head
    k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)
    S = k.shape[-2]
    visible = np.arange(S)[None, None, :] <= seen_from[:, :, None]  # (B, T, S)
    scores = (q @ k.transpose(0, 1, 3, 2)) / np.float32(math.sqrt(attn.head_dim))
    scores = np.where(visible[:, None], scores, np.float32(-np.inf))
    y = softmax(scores, axis=-1) @ v
    y = y.transpose(0, 2, 1, 3).reshape(B, T, attn.n_head * attn.head_dim)
    return attn.wo(y)


def forward_batch(model, idx, positions, cache: SlotKVCache, slots=None):
    """Logits (B, T, vocab) for token ids idx (B, T) at positions (B, T) (PAD = -1 for padding), row b in slot slots[b]."""
    idx, positions = np.asarray(idx), np.asarray(positions)
    if positions.shape != idx.shape:
        raise ValueError(f"positions (shape {tuple(positions.shape)}) must have the shape of idx ({tuple(idx.shape)})")
    if int(positions.max()) >= cache.capacity:
        raise ValueError(f"position {int(positions.max())} exceeds block_size ({cache.capacity}), the cache's capacity")
    slots = np.arange(idx.shape[0]) if slots is None else np.asarray(slots)
    x = model.tok_emb(idx)
    if model.pos_emb is not None:
        x = x + model.pos_emb(np.maximum(positions, 0))
    for layer, block in enumerate(model.blocks):
        x = x + attend(block.attn, block.attn_norm(x), positions, cache, layer, slots, model.rope_cos, model.rope_sin)
        x = x + block.mlp(block.mlp_norm(x))
    return model.lm_head(model.norm_f(x))


def pad_prompts(prompts, padding: str = "left", pad_id: int = 0):
    """Token ids (B, T_max) and positions (B, T_max) of prompts of different lengths; pads get position PAD."""
    if padding not in ("left", "right"):
        raise ValueError(f"padding ({padding!r}) must be 'left' or 'right'")
    if not prompts or any(len(p) < 1 for p in prompts):
        raise ValueError("every prompt must hold at least one token")
    width = max(len(p) for p in prompts)
    idx = np.full((len(prompts), width), pad_id, dtype=np.int64)
    positions = np.full((len(prompts), width), PAD, dtype=np.int64)
    for row, prompt in enumerate(prompts):
        start = width - len(prompt) if padding == "left" else 0
        idx[row, start:start + len(prompt)] = prompt
        positions[row, start:start + len(prompt)] = np.arange(len(prompt))
    return idx, positions


def generate_batch(model, prompts, max_new_tokens: int, temperature: float = 1.0, top_k: int | None = None,
                   top_p: float | None = None, eos_id: int | None = None, padding: str = "left", pad_id: int = 0,
                   rng: np.random.Generator | None = None):
    """Continue each prompt (a list of token ids) by up to max_new_tokens tokens; a row stops at its own eos_id."""
    check_sampling_args(temperature, top_k, top_p)
    check_int("max_new_tokens", max_new_tokens, minimum=0)
    idx, positions = pad_prompts(prompts, padding, pad_id)
    longest = idx.shape[1] + max_new_tokens
    if longest > model.config.block_size:
        raise ValueError(f"longest prompt ({idx.shape[1]}) + max_new_tokens ({max_new_tokens}) = {longest} "
                         f"exceeds block_size ({model.config.block_size}), the KV cache's capacity")
    cache = SlotKVCache(model.config, len(prompts))
    outputs = [list(p) for p in prompts]
    logits = forward_batch(model, idx, positions, cache)
    last = positions.argmax(axis=1)  # each row's last real token: the last column with left padding
    logits = logits[np.arange(len(prompts)), last]
    next_pos = positions.max(axis=1) + 1
    done = np.zeros(len(prompts), dtype=bool)
    for step in range(max_new_tokens):
        next_id = sample_next(logits, temperature, top_k, top_p, rng)
        for row in np.flatnonzero(~done):
            outputs[row].append(int(next_id[row, 0]))
        if eos_id is not None:
            done |= next_id[:, 0] == eos_id
        if bool(done.all()) or step == max_new_tokens - 1:
            break
        step_pos = np.where(done, PAD, next_pos)[:, None]  # finished rows stay in the batch as padding
        logits = forward_batch(model, next_id, step_pos, cache)[:, -1]
        next_pos += 1
    return outputs


def stream_tokens(model, prompt_ids, max_new_tokens: int, temperature: float = 1.0, top_k: int | None = None,
                  top_p: float | None = None, rng: np.random.Generator | None = None):
    """Yield the tokens of one continuation as they are chosen (what a server streams), with the KV cache."""
    check_sampling_args(temperature, top_k, top_p)
    if len(prompt_ids) < 1:
        raise ValueError("the prompt must hold at least one token")
    total = len(prompt_ids) + max_new_tokens
    if total > model.config.block_size:
        raise ValueError(f"prompt ({len(prompt_ids)}) + max_new_tokens ({max_new_tokens}) = {total} "
                         f"exceeds block_size ({model.config.block_size}), the KV cache's capacity")
    cache = KVCache(model.config, 1)
    step_input = np.array([prompt_ids], dtype=np.int64)
    for _ in range(max_new_tokens):
        logits = model.forward(step_input, cache=cache)
        step_input = sample_next(logits[:, -1, :], temperature, top_k, top_p, rng)
        yield int(step_input[0, 0])


# ---------------------------------------------------------------- weight-only quantization (quantize.py)

INT8_MAX = 127  # codes -127 .. 127 (symmetric: -128 is left unused)
INT4_MAX = 7    # codes -7 .. 7, stored as 1 .. 15 in a nibble


def check_quant_args(bits, group_size):
    if bits not in (8, 4) or isinstance(bits, bool):
        raise ValueError(f"bits ({bits!r}) must be 8 (int8 per channel) or 4 (int4 group-wise)")
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 2 or group_size % 2:
        raise ValueError(f"group_size ({group_size!r}) must be an even integer >= 2")


def absmax_scale(w, max_code: int):
    """The step between codes: largest |w| along the last axis / max_code (1 where a group is all zeros)."""
    absmax = np.abs(w).max(axis=-1, keepdims=True)
    return np.where(absmax > 0, absmax / np.float32(max_code), np.float32(1)).astype(np.float32)


def quantize_int8(w):
    """W (out, in) -> int8 codes (out, in) and one float32 scale per row (out, 1)."""
    scale = absmax_scale(w, INT8_MAX)
    codes = np.clip(np.round(w / scale), -INT8_MAX, INT8_MAX).astype(np.int8)
    return codes, scale


def dequantize_int8(codes, scale):
    return codes.astype(np.float32) * scale


def quantize_int4(w, group_size: int = 32):
    """W (out, in) -> packed codes (out, padded_in // 2) uint8 and a scale per group (out, padded_in // group_size, 1)."""
    out_features, in_features = w.shape
    w = np.pad(w, ((0, 0), (0, -in_features % group_size)))
    groups = w.reshape(out_features, -1, group_size)
    scale = absmax_scale(groups, INT4_MAX)
    codes = np.clip(np.round(groups / scale), -INT4_MAX, INT4_MAX).astype(np.int8).reshape(out_features, -1)
    return pack_int4(codes), scale


def pack_int4(codes):
    """Codes in -7 .. 7 (out, in) -> bytes (out, in // 2): code + 8 in the low nibble, the next in the high."""
    nibbles = (codes + 8).astype(np.uint8)
    return nibbles[:, 0::2] | (nibbles[:, 1::2] << 4)


def unpack_int4(packed):
    low, high = (packed & 0x0F).astype(np.int8) - 8, (packed >> 4).astype(np.int8) - 8
    return np.stack([low, high], axis=-1).reshape(packed.shape[0], -1)


def dequantize_int4(packed, scale):
    codes = unpack_int4(packed)
    out_features, n_groups = scale.shape[0], scale.shape[1]
    groups = codes.reshape(out_features, n_groups, -1).astype(np.float32) * scale
    return groups.reshape(out_features, -1)


class QuantizedLinear:
    """A Linear whose weight is kept as int8 or packed int4 codes plus scales, dequantized at each call."""

    def __init__(self, linear, bits: int = 8, group_size: int = 32):
        check_quant_args(bits, group_size)
        self.bits, self.group_size = bits, group_size
        self.out_features, self.in_features = linear.weight.shape
        w = linear.weight.astype(np.float32)
        self.codes, self.scale = quantize_int8(w) if bits == 8 else quantize_int4(w, group_size)
        self.bias = linear.bias

    def dequantized_weight(self):
        if self.bits == 8:
            return dequantize_int8(self.codes, self.scale)
        return dequantize_int4(self.codes, self.scale)[:, :self.in_features]

    def __call__(self, x):
        y = x @ self.dequantized_weight().T
        return y if self.bias is None else y + self.bias


def block_linears(model):
    """(parent, attribute name, Linear) for every Linear inside the blocks (the head is the embedding)."""
    for block in model.blocks:
        for parent in (block.attn, block.mlp):
            for name, child in list(vars(parent).items()):
                if isinstance(child, Linear):
                    yield parent, name, child


def quantize_model(model, bits: int = 8, group_size: int = 32):
    """A copy of model whose block Linears are QuantizedLinear; the original is left untouched."""
    check_quant_args(bits, group_size)
    quantized = copy.deepcopy(model)
    for parent, name, linear in list(block_linears(quantized)):
        setattr(parent, name, QuantizedLinear(linear, bits, group_size))
    return quantized


def linear_weight_bytes(model) -> int:
    """Bytes of the block Linears' weights alone: float32 weights, or codes + scales once quantized."""
    total = 0
    for block in model.blocks:
        for parent in (block.attn, block.mlp):
            for child in vars(parent).values():
                if isinstance(child, QuantizedLinear):
                    total += child.codes.nbytes + child.scale.nbytes
                elif isinstance(child, Linear):
                    total += child.weight.nbytes
    return total


# ---------------------------------------------------------------- static vs continuous batching (serve.py's schedule)

def simulate_batching(lengths, n_slots: int, continuous: bool = True, arrivals=None, n_clients=None):
    """Replay serve.Engine's schedule, counted in decode steps, without a model.

    Request i arrives before step arrivals[i] (default: all at once) and wants lengths[i] tokens. When it
    gets a slot (admission), its prompt pass gives the first token; every later decode step gives one more
    token to every request holding a slot. Continuous batching admits into any free slot; static batching
    only into an empty batch. With n_clients instead of arrivals the load is a closed loop, like
    serve.load_test: n_clients clients send requests 0, 1, 2, ... in order, each sending the next one as
    soon as its last has finished (client_arrivals gives the arrivals that follow). Returns, per request,
    the steps run before admission and at its finish.
    """
    n = len(lengths)
    if isinstance(n_slots, bool) or not isinstance(n_slots, int) or n_slots < 1:
        raise ValueError(f"n_slots ({n_slots!r}) must be a positive integer")
    if any(isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < 1 for x in lengths):
        raise ValueError(f"lengths ({list(lengths)!r}) must all be positive integers")
    if n_clients is not None:
        if arrivals is not None:
            raise ValueError("give arrivals (an open load) or n_clients (a closed loop), not both")
        if isinstance(n_clients, bool) or not isinstance(n_clients, int) or n_clients < 1:
            raise ValueError(f"n_clients ({n_clients!r}) must be a positive integer")
        arrivals = [0] * min(n_clients, n) + [None] * max(n - n_clients, 0)  # the rest: when a client is free
        order = list(range(n))
    else:
        arrivals = [0] * n if arrivals is None else list(arrivals)
        order = sorted(range(n), key=lambda i: (arrivals[i], i))
    waiting, slots = [], [None] * n_slots
    admitted, finished, remaining = [None] * n, [None] * n, [0] * n
    step, next_arrival, released = 0, 0, min(n_clients or n, n)

    def finish(i):
        nonlocal released
        finished[i] = step
        if n_clients is not None and released < n:  # its client sends the next request at once
            arrivals[released] = step
            released += 1

    while None in finished:
        while next_arrival < n and arrivals[order[next_arrival]] is not None and arrivals[order[next_arrival]] <= step:
            waiting.append(order[next_arrival])
            next_arrival += 1
        if continuous or all(s is None for s in slots):
            for slot in range(n_slots):
                if slots[slot] is None and waiting:
                    i = waiting.pop(0)
                    admitted[i], remaining[i] = step, lengths[i] - 1  # the prompt pass gives the first token
                    if remaining[i] == 0:
                        finish(i)
                    else:
                        slots[slot] = i
        if all(s is None for s in slots):
            if not waiting and next_arrival < n and arrivals[order[next_arrival]] is not None:
                step = max(step, arrivals[order[next_arrival]])  # idle until the next arrival
            continue
        step += 1  # one decode step: a token for every request holding a slot
        for slot, i in enumerate(slots):
            if i is not None:
                remaining[i] -= 1
                if remaining[i] == 0:
                    slots[slot] = None
                    finish(i)
    return admitted, finished


def client_arrivals(finished, n_clients: int) -> list:
    """The arrivals of a closed loop of n_clients: the first n_clients at step 0, then one at each finish, in order."""
    n = len(finished)
    return [0] * min(n_clients, n) + sorted(finished)[:max(n - n_clients, 0)]


def batching_summary(lengths, admitted, finished, arrivals=None) -> dict:
    """Tokens per decode step and latency (arrival to last token, in steps) of a simulated schedule."""
    arrivals = [0] * len(lengths) if arrivals is None else list(arrivals)
    latency = np.array(finished) - np.array(arrivals)
    steps = max(finished) - min(arrivals)
    return {"steps": int(steps), "tokens_per_step": float(sum(lengths) / max(steps, 1)),
            "latency_p50": float(np.percentile(latency, 50)), "latency_p99": float(np.percentile(latency, 99)),
            "latency_mean": float(latency.mean())}
