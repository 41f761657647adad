"""One GPT skeleton whose parts can be swapped for LLaMA's, one switch at a time.

Read top to bottom: the four modern parts next to the ones they replace
(LayerNorm -> RMSNorm, MLP -> SwiGLU, learned positions -> RoPE, MHA -> GQA/MQA),
attention with a KV cache, the block, and the model with its generation loop.
The switches live in `ModelConfig` (config.py), shared with the NumPy twin.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
from torch.nn import functional as F

from .checks import check_generate_args, check_sampling_args
from .config import ModelConfig


# ---------------------------------------------------------------- normalization

class LayerNorm(nn.Module):
    """(x - mean) / std, then scale and (optionally) shift: two statistics per vector."""

    def __init__(self, dim: int, eps: float = 1e-5, bias: bool = True):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, self.eps)


class RMSNorm(nn.Module):
    """x / rms(x), then scale: one statistic, no mean subtraction, no shift."""

    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        rms_inv = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return x * rms_inv * self.weight


def make_norm(config: ModelConfig) -> nn.Module:
    if config.use_rmsnorm:
        return RMSNorm(config.n_embd, config.norm_eps)
    return LayerNorm(config.n_embd, config.norm_eps, bias=config.bias)


# ---------------------------------------------------------------- feed-forward

class MLP(nn.Module):
    """GPT-2's feed-forward: widen 4x, GELU, project back."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        hidden = 4 * config.n_embd
        self.w_up = nn.Linear(config.n_embd, hidden, bias=config.bias)
        self.w_down = nn.Linear(hidden, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.w_down(F.gelu(self.w_up(x))))


class SwiGLU(nn.Module):
    """LLaMA's feed-forward: a SiLU-activated gate multiplies a second projection."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        hidden = config.swiglu_hidden
        self.w_gate = nn.Linear(config.n_embd, hidden, bias=config.bias)
        self.w_up = nn.Linear(config.n_embd, hidden, bias=config.bias)
        self.w_down = nn.Linear(hidden, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.w_down(F.silu(self.w_gate(x)) * self.w_up(x)))


# ---------------------------------------------------------------- rotary positions

def precompute_rope(head_dim: int, length: int, theta: float = 10000.0):
    """cos and sin tables of shape (length, head_dim // 2): angle = position * theta^(-2i/head_dim)."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    angles = torch.outer(torch.arange(length, dtype=torch.float32), inv_freq)
    return torch.cos(angles), torch.sin(angles)


def apply_rope(x, cos, sin, offset: int = 0):
    """Rotate each interleaved pair (x[2i], x[2i+1]) of x (B, H, T, head_dim) by its position's angle."""
    T = x.shape[-2]
    cos, sin = cos[offset:offset + T], sin[offset:offset + T]
    x1, x2 = x[..., ::2], x[..., 1::2]
    rotated_1 = x1 * cos - x2 * sin
    rotated_2 = x1 * sin + x2 * cos
    return torch.stack([rotated_1, rotated_2], dim=-1).flatten(-2)


# ---------------------------------------------------------------- attention

def repeat_kv(x, n_rep: int):
    """(B, n_kv_head, T, D) -> (B, n_kv_head * n_rep, T, D): each K/V head serves n_rep query heads."""
    if n_rep == 1:
        return x
    B, H_kv, T, D = x.shape
    return x[:, :, None, :, :].expand(B, H_kv, n_rep, T, D).reshape(B, H_kv * n_rep, T, D)


class KVCache:
    """Keys and values of past positions, per layer, for n_kv_head heads (not n_head)."""

    def __init__(self, config: ModelConfig, batch_size: int, device=None, dtype=torch.float32):
        shape = (batch_size, config.n_kv_head, config.block_size, config.head_dim)
        self.k = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(config.n_layer)]
        self.v = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(config.n_layer)]
        self.capacity = config.block_size
        self.pos = 0  # how many positions are stored; the next token's position

    def update(self, layer: int, k, v):
        """Store this step's k, v (B, n_kv_head, T, D) and return all keys and values so far."""
        start, end = self.pos, self.pos + k.shape[-2]
        if end > self.capacity:
            raise ValueError(f"KV cache full: position {end} exceeds block_size ({self.capacity})")
        self.k[layer][:, :, start:end] = k
        self.v[layer][:, :, start:end] = v
        return self.k[layer][:, :, :end], self.v[layer][:, :, :end]

    def advance(self, n: int):
        self.pos += n

    def num_bytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.k + self.v)


def kv_cache_bytes_per_token(config: ModelConfig, dtype=torch.float32) -> int:
    """Bytes the cache adds per generated token: keys and values, every layer, n_kv_head heads."""
    element_size = torch.empty((), dtype=dtype).element_size()
    return 2 * config.n_layer * config.n_kv_head * config.head_dim * element_size


class CausalSelfAttention(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.n_head, self.n_kv_head, self.head_dim = config.n_head, config.n_kv_head, config.head_dim
        self.use_rope = config.use_rope
        self.attn_impl = config.attn_impl
        self.wq = nn.Linear(config.n_embd, config.n_head * config.head_dim, bias=config.bias)
        self.wk = nn.Linear(config.n_embd, config.n_kv_head * config.head_dim, bias=config.bias)
        self.wv = nn.Linear(config.n_embd, config.n_kv_head * config.head_dim, bias=config.bias)
        self.wo = nn.Linear(config.n_head * config.head_dim, config.n_embd, bias=config.bias)
        self.dropout_p = config.dropout
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)

    def forward(self, x, rope_cos=None, rope_sin=None, cache: KVCache | None = None, layer: int = 0):
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2)

        offset = cache.pos if cache is not None else 0
        if self.use_rope:  # positions enter q and k only: values carry content, not position
            q = apply_rope(q, rope_cos, rope_sin, offset)
            k = apply_rope(k, rope_cos, rope_sin, offset)
        if cache is not None:
            k, v = cache.update(layer, k, v)  # the cache keeps n_kv_head heads ...

        n_rep = self.n_head // self.n_kv_head
        k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)  # ... expanded only for the matmul

        if self.attn_impl == "sdpa":
            y = self._sdpa(q, k, v, offset)
        else:
            y = self._manual(q, k, v, offset)
        y = y.transpose(1, 2).contiguous().view(B, T, self.n_head * self.head_dim)
        return self.resid_dropout(self.wo(y))

    def _sdpa(self, q, k, v, offset):
        dropout_p = self.dropout_p if self.training else 0.0
        T, S = q.shape[-2], k.shape[-2]
        if offset == 0 and T == S:
            return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=True)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask(T, S, offset, q.device),
                                              dropout_p=dropout_p)

    def _manual(self, q, k, v, offset):
        T, S = q.shape[-2], k.shape[-2]
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        scores = scores.masked_fill(~causal_mask(T, S, offset, q.device), float("-inf"))
        weights = self.attn_dropout(F.softmax(scores, dim=-1))
        return weights @ v


def causal_mask(T: int, S: int, offset: int, device=None):
    """(T, S) boolean mask: query i (at position offset + i) may see keys 0 .. offset + i."""
    query_pos = torch.arange(T, device=device)[:, None] + offset
    key_pos = torch.arange(S, device=device)[None, :]
    return key_pos <= query_pos


# ---------------------------------------------------------------- the model

class Block(nn.Module):
    """Pre-norm residual block: x + attn(norm(x)), then h + mlp(norm(h))."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.attn_norm = make_norm(config)
        self.attn = CausalSelfAttention(config)
        self.mlp_norm = make_norm(config)
        self.mlp = SwiGLU(config) if config.use_swiglu else MLP(config)

    def forward(self, x, rope_cos=None, rope_sin=None, cache=None, layer=0):
        x = x + self.attn(self.attn_norm(x), rope_cos, rope_sin, cache, layer)
        return x + self.mlp(self.mlp_norm(x))


class GPT(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.tok_emb = nn.Embedding(config.vocab_size, config.n_embd)
        # With RoPE, position lives in the rotation of q and k: no position table at all.
        self.pos_emb = None if config.use_rope else nn.Embedding(config.block_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.norm_f = make_norm(config)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        if config.tie_embeddings:
            self.lm_head.weight = self.tok_emb.weight
        if config.use_rope:
            cos, sin = precompute_rope(config.head_dim, config.block_size, config.rope_theta)
            self.register_buffer("rope_cos", cos, persistent=False)
            self.register_buffer("rope_sin", sin, persistent=False)
        else:
            self.rope_cos = self.rope_sin = None
        self.apply(self._init_weights)
        # GPT-2's scaled init: each residual branch's output projection shrinks with depth.
        for name, p in self.named_parameters():
            if name.endswith("wo.weight") or name.endswith("w_down.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def num_params(self) -> int:
        """Every parameter once: a tied embedding and output head count as one matrix."""
        return sum(p.numel() for p in self.parameters())

    def forward(self, idx, targets=None, cache: KVCache | None = None):
        B, T = idx.shape
        offset = cache.pos if cache is not None else 0
        if offset + T > self.config.block_size:
            raise ValueError(f"sequence length {offset + T} exceeds block_size ({self.config.block_size})")
        x = self.tok_emb(idx)
        if self.pos_emb is not None:
            x = x + self.pos_emb(torch.arange(offset, offset + T, device=idx.device))
        x = self.drop(x)
        for layer, block in enumerate(self.blocks):
            x = block(x, self.rope_cos, self.rope_sin, cache, layer)
        if cache is not None:
            cache.advance(T)
        logits = self.lm_head(self.norm_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss

    @torch.no_grad()
    def generate(self, idx, max_new_tokens: int, temperature: float = 1.0, top_k: int | None = None,
                 eos_id: int | None = None, use_cache: bool = True, generator: torch.Generator | None = None):
        """Append up to max_new_tokens sampled tokens to idx (B, T); stop early when every row hits eos_id."""
        check_generate_args(idx.shape[1], max_new_tokens, temperature, top_k, self.config.block_size, use_cache)
        block_size = self.config.block_size
        param = self.tok_emb.weight
        cache = KVCache(self.config, idx.shape[0], device=param.device, dtype=param.dtype) if use_cache else None
        step_input = idx
        for _ in range(max_new_tokens):
            if cache is None:
                step_input = idx[:, -block_size:]  # no cache: recompute the whole (cropped) context
            logits, _ = self(step_input, cache=cache)
            next_id = sample_next(logits[:, -1, :], temperature, top_k, generator)
            idx = torch.cat([idx, next_id], dim=1)
            step_input = next_id  # with a cache, only the new token goes through the model
            if eos_id is not None and bool((next_id == eos_id).all()):
                break
        return idx


# ---------------------------------------------------------------- sampling

def sample_next(logits, temperature: float = 1.0, top_k: int | None = None, generator=None):
    """Pick one token id per row of logits (B, vocab): greedy at temperature 0, else sample."""
    check_sampling_args(temperature, top_k)
    if temperature == 0:
        return logits.argmax(dim=-1, keepdim=True)
    logits = logits / temperature  # < 1 sharpens the distribution, > 1 flattens it
    if top_k is not None:
        kth_best = torch.topk(logits, min(top_k, logits.size(-1)), dim=-1).values[:, [-1]]
        logits = logits.masked_fill(logits < kth_best, float("-inf"))
    probs = F.softmax(logits, dim=-1)
    return torch.multinomial(probs, num_samples=1, generator=generator)
