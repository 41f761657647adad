"""Many sequences at once: a KV cache with one row ("slot") per sequence, each at its own position.

GPT.generate runs a batch whose rows all sit at the same position. A server's rows do not: prompts have
different lengths and requests arrive and leave at different times. Here every token carries its own
position (-1 marks padding), so one forward pass can serve rows at any positions:

- a token at position p writes its key and value into its slot's cache at column p, and sees the
  columns 0 .. p of its own slot, nothing else (padding writes nothing and is never seen);
- RoPE and the learned position table use p, not the column the token sits in within the batch.

forward_batch reuses the weights and modules of a model.py GPT; generate_batch pads a list of prompts
(left or right) and decodes them together; serve.py drives the same forward with requests that come and
go. numpy_serving.py holds the same code in NumPy.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

from .checks import check_int
from .config import ModelConfig
from .model import GPT, repeat_kv
from .sampling import check_sampling_args, sample_next

PAD = -1  # the position of a padding token: it is neither stored nor attended to


class SlotKVCache:
    """Keys and values per layer, (n_slots, n_kv_head, block_size, head_dim): row s belongs to one sequence."""

    def __init__(self, config: ModelConfig, n_slots: int, device=None, dtype=torch.float32):
        shape = (n_slots, config.n_kv_head, config.block_size, config.head_dim)
        self.k = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(config.n_layer)]
        self.v = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(config.n_layer)]
        self.capacity = config.block_size

    def update(self, layer: int, slots, positions, k, v):
        """Store k, v (B, n_kv_head, T, D) of the real tokens; return the slots' keys and values 0 .. max position."""
        rows, cols = (positions != PAD).nonzero(as_tuple=True)
        self.k[layer][slots[rows], :, positions[rows, cols]] = k[rows, :, cols]
        self.v[layer][slots[rows], :, positions[rows, cols]] = v[rows, :, cols]
        S = int(positions.max()) + 1
        return self.k[layer][slots, :, :S], self.v[layer][slots, :, :S]


def rope_at(x, cos, sin, positions):
    """model.apply_rope with a position per token: x (B, H, T, head_dim), positions (B, T)."""
    cos, sin = cos[positions][:, None], sin[positions][:, None]  # (B, 1, T, head_dim // 2)
    x1, x2 = x[..., ::2], x[..., 1::2]
    rotated_1 = x1 * cos - x2 * sin
    rotated_2 = x1 * sin + x2 * cos
    return torch.stack([rotated_1, rotated_2], dim=-1).flatten(-2)


def attend(attn, x, positions, cache: SlotKVCache, layer: int, slots, rope_cos, rope_sin):
    """CausalSelfAttention.forward where each token has its own position and each row its own cache slot."""
    B, T, _ = x.shape
    q = attn.wq(x).view(B, T, attn.n_head, attn.head_dim).transpose(1, 2)
    k = attn.wk(x).view(B, T, attn.n_kv_head, attn.head_dim).transpose(1, 2)
    v = attn.wv(x).view(B, T, attn.n_kv_head, attn.head_dim).transpose(1, 2)
    seen_from = positions.clamp(min=0)  # a padding query looks at column 0 of its slot; its output is ignored
    if attn.use_rope:
        q = rope_at(q, rope_cos, rope_sin, seen_from)
        k = rope_at(k, rope_cos, rope_sin, seen_from)
    k, v = cache.update(layer, slots, positions, k, v)
    n_rep = attn.n_head // attn.n_kv_head
    k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)
    S = k.shape[-2]
    visible = torch.arange(S, device=x.device)[None, None, :] <= seen_from[:, :, None]  # (B, T, S)
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=visible[:, None])
    y = y.transpose(1, 2).contiguous().view(B, T, attn.n_head * attn.head_dim)
    return attn.wo(y)


@torch.no_grad()
def forward_batch(model: GPT, idx, positions, cache: SlotKVCache, slots=None):
    """Logits (B, T, vocab) for token ids idx (B, T) at positions (B, T) (PAD = -1 for padding), row b in slot slots[b]."""
    if positions.shape != idx.shape:
        raise ValueError(f"positions (shape {tuple(positions.shape)}) must have the shape of idx ({tuple(idx.shape)})")
    if int(positions.max()) >= cache.capacity:
        raise ValueError(f"position {int(positions.max())} exceeds block_size ({cache.capacity}), the cache's capacity")
    slots = torch.arange(idx.shape[0], device=idx.device) if slots is None else slots
    x = model.tok_emb(idx)
    if model.pos_emb is not None:
        x = x + model.pos_emb(positions.clamp(min=0))
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
    idx = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    positions = torch.full((len(prompts), width), PAD, dtype=torch.long)
    for row, prompt in enumerate(prompts):
        start = width - len(prompt) if padding == "left" else 0
        idx[row, start:start + len(prompt)] = torch.tensor(prompt, dtype=torch.long)
        positions[row, start:start + len(prompt)] = torch.arange(len(prompt))
    return idx, positions


@torch.no_grad()
def generate_batch(model: GPT, prompts, max_new_tokens: int, temperature: float = 1.0, top_k: int | None = None,
                   top_p: float | None = None, eos_id: int | None = None, padding: str = "left", pad_id: int = 0,
                   generator: torch.Generator | None = None):
    """Continue each prompt (a list of token ids) by up to max_new_tokens tokens; a row stops at its own eos_id."""
    check_sampling_args(temperature, top_k, top_p)
    check_int("max_new_tokens", max_new_tokens, minimum=0)
    param = model.tok_emb.weight
    idx, positions = (t.to(param.device) for t in pad_prompts(prompts, padding, pad_id))
    longest = idx.shape[1] + max_new_tokens
    if longest > model.config.block_size:
        raise ValueError(f"longest prompt ({idx.shape[1]}) + max_new_tokens ({max_new_tokens}) = {longest} "
                         f"exceeds block_size ({model.config.block_size}), the KV cache's capacity")
    cache = SlotKVCache(model.config, len(prompts), device=param.device, dtype=param.dtype)
    outputs = [list(p) for p in prompts]
    logits = forward_batch(model, idx, positions, cache)
    last = positions.argmax(dim=1)  # each row's last real token: the last column with left padding
    logits = logits[torch.arange(len(prompts), device=param.device), last]
    next_pos = positions.max(dim=1).values + 1
    done = torch.zeros(len(prompts), dtype=torch.bool, device=param.device)
    for step in range(max_new_tokens):
        next_id = sample_next(logits, temperature, top_k, top_p, generator)
        for row in (~done).nonzero().flatten().tolist():
            outputs[row].append(int(next_id[row]))
        if eos_id is not None:
            done |= next_id[:, 0] == eos_id
        if bool(done.all()) or step == max_new_tokens - 1:
            break
        step_pos = torch.where(done, PAD, next_pos)[:, None]  # finished rows stay in the batch as padding
        logits = forward_batch(model, next_id, step_pos, cache)[:, -1]
        next_pos += 1
    return outputs


# ---------------------------------------------------------------- benchmarks (make bench and the chapter's experiments, never tests)

def _median_time(fn, repeats: int) -> float:
    import statistics
    import time

    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


@torch.no_grad()
def step_time_vs_context(model: GPT, contexts, repeats: int = 5, seed: int = 0) -> list[dict]:
    """Seconds for the next token at each context length: without a cache (a forward over the whole context,
    quadratic in attention) and with one (a forward over one token that reads the cached keys, linear)."""
    g = torch.Generator().manual_seed(seed)
    rows = []
    for T in contexts:
        if not 2 <= T <= model.config.block_size:
            raise ValueError(f"context ({T}) must be between 2 and block_size ({model.config.block_size})")
        idx = torch.randint(model.config.vocab_size, (1, T), generator=g)
        uncached = _median_time(lambda: model(idx), repeats)

        def one_cached_step():
            cache = SlotKVCache(model.config, 1)
            forward_batch(model, idx[:, :-1], torch.arange(T - 1)[None], cache)  # the prompt pass (not timed)
            return cache

        cache = one_cached_step()
        cached = _median_time(lambda: forward_batch(model, idx[:, -1:], torch.tensor([[T - 1]]), cache), repeats)
        rows.append({"context": T, "uncached_ms": 1000 * uncached, "cached_ms": 1000 * cached,
                     "speedup": uncached / cached})
    return rows


@torch.no_grad()
def throughput_vs_batch_size(model: GPT, batch_sizes=(1, 2, 4, 8, 16, 32), prompt_len: int = 8,
                             new_tokens: int = 48, repeats: int = 3, seed: int = 0) -> list[dict]:
    """Greedy batched generation: tokens/s over the batch and the time of one decode step (every sequence's
    per-token latency) for each batch size."""
    g = torch.Generator().manual_seed(seed)
    rows = []
    for B in batch_sizes:
        prompts = torch.randint(model.config.vocab_size, (B, prompt_len), generator=g).tolist()
        seconds = _median_time(lambda: generate_batch(model, prompts, new_tokens, temperature=0), repeats)
        rows.append({"batch": B, "tokens_per_s": B * new_tokens / seconds, "ms_per_token": 1000 * seconds / new_tokens})
    return rows
