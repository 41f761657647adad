"""The model of model.py again, in pure NumPy: it runs wherever NumPy does, including the browser (Pyodide).

Same components, same names, same order as model.py, so the two files can be read side by side:
the norms, the feed-forwards, RoPE, attention with a KV cache, the block, the model,
and sampling. Inference only (no dropout, no gradients), float32 throughout.
Weights come from the .npz that llmparts.export.to_npz writes, under the same keys as torch's state_dict.
"""

from __future__ import annotations

import json
import math

import numpy as np

from .checks import check_generate_args, check_sampling_args
from .config import ModelConfig
from .tokenizer import CharTokenizer  # noqa: F401  (the chapters' cells import it from here)


# ---------------------------------------------------------------- building blocks torch gives for free

class Linear:
    """y = x W^T + b, with W stored (out_features, in_features) as torch stores it."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True):
        self.weight = np.zeros((out_features, in_features), dtype=np.float32)
        self.bias = np.zeros(out_features, dtype=np.float32) if bias else None

    def __call__(self, x):
        y = x @ self.weight.T
        return y if self.bias is None else y + self.bias


class Embedding:
    """A lookup table: row i is the vector of token (or position) i."""

    def __init__(self, num_embeddings: int, embedding_dim: int):
        self.weight = np.zeros((num_embeddings, embedding_dim), dtype=np.float32)

    def __call__(self, ids):
        return self.weight[ids]


_erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu(x):
    """The exact GELU, x * Phi(x), as torch's default (not the tanh approximation)."""
    return (0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))).astype(x.dtype)


def silu(x):
    return x / (1.0 + np.exp(-x))


def softmax(x, axis: int = -1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))  # subtracting the max keeps exp from overflowing
    return e / e.sum(axis=axis, keepdims=True)


# ---------------------------------------------------------------- normalization

class LayerNorm:
    """(x - mean) / std, then scale and (optionally) shift: two statistics per vector."""

    def __init__(self, dim: int, eps: float = 1e-5, bias: bool = True):
        self.eps = eps
        self.weight = np.ones(dim, dtype=np.float32)
        self.bias = np.zeros(dim, dtype=np.float32) if bias else None

    def __call__(self, x):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)  # biased variance, as torch's layer_norm
        y = (x - mean) / np.sqrt(var + self.eps) * self.weight
        return y if self.bias is None else y + self.bias


class RMSNorm:
    """x / rms(x), then scale: one statistic, no mean subtraction, no shift."""

    def __init__(self, dim: int, eps: float = 1e-5):
        self.eps = eps
        self.weight = np.ones(dim, dtype=np.float32)

    def __call__(self, x):
        rms_inv = 1.0 / np.sqrt((x ** 2).mean(-1, keepdims=True) + self.eps)
        return x * rms_inv * self.weight


def make_norm(config: ModelConfig):
    if config.use_rmsnorm:
        return RMSNorm(config.n_embd, config.norm_eps)
    return LayerNorm(config.n_embd, config.norm_eps, bias=config.bias)


# ---------------------------------------------------------------- feed-forward

class MLP:
    """GPT-2's feed-forward: widen 4x, GELU, project back."""

    def __init__(self, config: ModelConfig):
        hidden = 4 * config.n_embd
        self.w_up = Linear(config.n_embd, hidden, bias=config.bias)
        self.w_down = Linear(hidden, config.n_embd, bias=config.bias)

    def __call__(self, x):
        return self.w_down(gelu(self.w_up(x)))


class SwiGLU:
    """LLaMA's feed-forward: a SiLU-activated gate multiplies a second projection."""

    def __init__(self, config: ModelConfig):
        hidden = config.swiglu_hidden
        self.w_gate = Linear(config.n_embd, hidden, bias=config.bias)
        self.w_up = Linear(config.n_embd, hidden, bias=config.bias)
        self.w_down = Linear(hidden, config.n_embd, bias=config.bias)

    def __call__(self, x):
        return self.w_down(silu(self.w_gate(x)) * self.w_up(x))


# ---------------------------------------------------------------- rotary positions

def precompute_rope(head_dim: int, length: int, theta: float = 10000.0):
    """cos and sin tables of shape (length, head_dim // 2): angle = position * theta^(-2i/head_dim)."""
    inv_freq = 1.0 / (theta ** (np.arange(0, head_dim, 2, dtype=np.float32) / head_dim))
    angles = np.outer(np.arange(length, dtype=np.float32), inv_freq.astype(np.float32))
    return np.cos(angles), np.sin(angles)


def apply_rope(x, cos, sin, offset: int = 0):
    """Rotate each interleaved pair (x[2i], x[2i+1]) of x (B, H, T, head_dim) by its position's angle."""
    T = x.shape[-2]
    cos, sin = cos[offset:offset + T], sin[offset:offset + T]
    x1, x2 = x[..., ::2], x[..., 1::2]
    rotated_1 = x1 * cos - x2 * sin
    rotated_2 = x1 * sin + x2 * cos
    return np.stack([rotated_1, rotated_2], axis=-1).reshape(x.shape)


# ---------------------------------------------------------------- attention

def repeat_kv(x, n_rep: int):
    """(B, n_kv_head, T, D) -> (B, n_kv_head * n_rep, T, D): each K/V head serves n_rep query heads."""
    if n_rep == 1:
        return x
    return np.repeat(x, n_rep, axis=1)  # kv head h is copied to query heads h*n_rep .. h*n_rep + n_rep-1


class KVCache:
    """Keys and values of past positions, per layer, for n_kv_head heads (not n_head)."""

    def __init__(self, config: ModelConfig, batch_size: int):
        shape = (batch_size, config.n_kv_head, config.block_size, config.head_dim)
        self.k = [np.zeros(shape, dtype=np.float32) for _ in range(config.n_layer)]
        self.v = [np.zeros(shape, dtype=np.float32) for _ in range(config.n_layer)]
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
        return sum(a.nbytes for a in self.k + self.v)


def kv_cache_bytes_per_token(config: ModelConfig, itemsize: int = 4) -> int:
    """Bytes the cache adds per generated token: keys and values, every layer, n_kv_head heads."""
    return 2 * config.n_layer * config.n_kv_head * config.head_dim * itemsize


def causal_mask(T: int, S: int, offset: int):
    """(T, S) boolean mask: query i (at position offset + i) may see keys 0 .. offset + i."""
    query_pos = np.arange(T)[:, None] + offset
    key_pos = np.arange(S)[None, :]
    return key_pos <= query_pos


class CausalSelfAttention:
    def __init__(self, config: ModelConfig):
        self.n_head, self.n_kv_head, self.head_dim = config.n_head, config.n_kv_head, config.head_dim
        self.use_rope = config.use_rope
        self.wq = Linear(config.n_embd, config.n_head * config.head_dim, bias=config.bias)
        self.wk = Linear(config.n_embd, config.n_kv_head * config.head_dim, bias=config.bias)
        self.wv = Linear(config.n_embd, config.n_kv_head * config.head_dim, bias=config.bias)
        self.wo = Linear(config.n_head * config.head_dim, config.n_embd, bias=config.bias)

    def __call__(self, x, rope_cos=None, rope_sin=None, cache: KVCache | None = None, layer: int = 0):
        B, T, _ = x.shape
        q = self.wq(x).reshape(B, T, self.n_head, self.head_dim).transpose(0, 2, 1, 3)
        k = self.wk(x).reshape(B, T, self.n_kv_head, self.head_dim).transpose(0, 2, 1, 3)
        v = self.wv(x).reshape(B, T, self.n_kv_head, self.head_dim).transpose(0, 2, 1, 3)

        offset = cache.pos if cache is not None else 0
        if self.use_rope:  # positions enter q and k only: values carry content, not position
            q = apply_rope(q, rope_cos, rope_sin, offset)
            k = apply_rope(k, rope_cos, rope_sin, offset)
        if cache is not None:
            k, v = cache.update(layer, k, v)  # the cache keeps n_kv_head heads ...

        n_rep = self.n_head // self.n_kv_head
        k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)  # ... expanded only for the matmul

        S = k.shape[-2]
        scores = (q @ k.transpose(0, 1, 3, 2)) / np.float32(math.sqrt(self.head_dim))
        scores = np.where(causal_mask(T, S, offset), scores, np.float32(-np.inf))
        y = softmax(scores, axis=-1) @ v
        y = y.transpose(0, 2, 1, 3).reshape(B, T, self.n_head * self.head_dim)
        return self.wo(y)


# ---------------------------------------------------------------- the model

class Block:
    """Pre-norm residual block: x + attn(norm(x)), then h + mlp(norm(h))."""

    def __init__(self, config: ModelConfig):
        self.attn_norm = make_norm(config)
        self.attn = CausalSelfAttention(config)
        self.mlp_norm = make_norm(config)
        self.mlp = SwiGLU(config) if config.use_swiglu else MLP(config)

    def __call__(self, x, rope_cos=None, rope_sin=None, cache=None, layer=0):
        x = x + self.attn(self.attn_norm(x), rope_cos, rope_sin, cache, layer)
        return x + self.mlp(self.mlp_norm(x))


class NumpyGPT:
    def __init__(self, config: ModelConfig, seed: int | None = None):
        self.config = config
        self.tok_emb = Embedding(config.vocab_size, config.n_embd)
        # With RoPE, position lives in the rotation of q and k: no position table at all.
        self.pos_emb = None if config.use_rope else Embedding(config.block_size, config.n_embd)
        self.blocks = [Block(config) for _ in range(config.n_layer)]
        self.norm_f = make_norm(config)
        self.lm_head = Linear(config.n_embd, config.vocab_size, bias=False)
        if config.tie_embeddings:
            self.lm_head.weight = self.tok_emb.weight
        if config.use_rope:
            self.rope_cos, self.rope_sin = precompute_rope(config.head_dim, config.block_size, config.rope_theta)
        else:
            self.rope_cos = self.rope_sin = None
        if seed is not None:
            self._init_weights(np.random.default_rng(seed))

    def _init_weights(self, rng):
        """model.py's init: matrices ~ N(0, 0.02), residual output projections shrunk with depth."""
        for name, array in self.state_dict().items():
            if name.endswith("wo.weight") or name.endswith("w_down.weight"):
                std = 0.02 / math.sqrt(2 * self.config.n_layer)
            elif array.ndim == 2:
                std = 0.02
            else:  # norm weights stay 1, biases stay 0
                continue
            array[...] = rng.normal(0.0, std, size=array.shape)

    def state_dict(self) -> dict:
        """name -> array, the names torch's state_dict() uses (a tied head appears under both names)."""
        def walk(prefix, obj):
            for attr, value in vars(obj).items():
                if isinstance(value, np.ndarray) and attr in ("weight", "bias"):
                    yield prefix + attr, value
                elif isinstance(value, list):
                    for i, item in enumerate(value):
                        yield from walk(f"{prefix}{attr}.{i}.", item)
                elif isinstance(value, (Linear, Embedding, LayerNorm, RMSNorm, MLP, SwiGLU,
                                        CausalSelfAttention, Block)):
                    yield from walk(f"{prefix}{attr}.", value)
        return dict(walk("", self))

    def load_state_dict(self, state: dict):
        """Copy arrays keyed by torch's state_dict names into this model, checking names and shapes."""
        own = self.state_dict()
        missing, unexpected = sorted(set(own) - set(state)), sorted(set(state) - set(own))
        if missing or unexpected:
            raise ValueError(f"state dict does not fit this config: missing keys {missing}, "
                             f"unexpected keys {unexpected}")
        for name, array in own.items():
            value = np.asarray(state[name], dtype=np.float32)
            if value.shape != array.shape:
                raise ValueError(f"{name} has shape {value.shape}, this config needs {array.shape}")
            array[...] = value  # in place, so a tied head and embedding stay one array

    @classmethod
    def from_npz(cls, path) -> "NumpyGPT":
        """Load a model written by llmparts.export.to_npz."""
        with np.load(path) as data:
            config = ModelConfig.from_dict(json.loads(str(data["config_json"])))
            model = cls(config)
            model.load_state_dict({k: data[k] for k in data.files if k not in ("config_json", "chars")})
        return model

    def num_params(self) -> int:
        """Every parameter once: a tied embedding and output head count as one matrix."""
        unique = {id(a): a for a in self.state_dict().values()}
        return sum(a.size for a in unique.values())

    def forward(self, idx, cache: KVCache | None = None):
        """Token ids (B, T) -> logits (B, T, vocab_size)."""
        idx = np.asarray(idx)
        if idx.ndim != 2 or not np.issubdtype(idx.dtype, np.integer):
            raise ValueError(f"idx (shape {idx.shape}, dtype {idx.dtype}) must be a 2-D integer array (batch, time)")
        if idx.size and (idx.min() < 0 or idx.max() >= self.config.vocab_size):
            raise ValueError(f"token ids must be in [0, {self.config.vocab_size}), got {idx.min()} .. {idx.max()}")
        B, T = idx.shape
        offset = cache.pos if cache is not None else 0
        if offset + T > self.config.block_size:
            raise ValueError(f"sequence length {offset + T} exceeds block_size ({self.config.block_size})")
        x = self.tok_emb(idx)
        if self.pos_emb is not None:
            x = x + self.pos_emb(np.arange(offset, offset + T))
        for layer, block in enumerate(self.blocks):
            x = block(x, self.rope_cos, self.rope_sin, cache, layer)
        if cache is not None:
            cache.advance(T)
        return self.lm_head(self.norm_f(x))

    __call__ = forward

    def generate(self, idx, max_new_tokens: int, temperature: float = 1.0, top_k: int | None = None,
                 eos_id: int | None = None, use_cache: bool = True, rng: np.random.Generator | None = None):
        """Append up to max_new_tokens sampled tokens to idx (B, T); stop early when every row hits eos_id."""
        idx = np.asarray(idx, dtype=np.int64)
        if idx.ndim != 2:
            raise ValueError(f"idx (shape {idx.shape}) must be a 2-D array of token ids (batch, time)")
        check_generate_args(idx.shape[1], max_new_tokens, temperature, top_k, self.config.block_size, use_cache)
        rng = np.random.default_rng() if rng is None else rng
        block_size = self.config.block_size
        cache = KVCache(self.config, idx.shape[0]) if use_cache else None
        step_input = idx
        for _ in range(max_new_tokens):
            if cache is None:
                step_input = idx[:, -block_size:]  # no cache: recompute the whole (cropped) context
            logits = self.forward(step_input, cache=cache)
            next_id = sample_next(logits[:, -1, :], temperature, top_k, rng)
            idx = np.concatenate([idx, next_id], axis=1)
            step_input = next_id  # with a cache, only the new token goes through the model
            if eos_id is not None and bool((next_id == eos_id).all()):
                break
        return idx


# ---------------------------------------------------------------- sampling

def sample_next(logits, temperature: float = 1.0, top_k: int | None = None, rng=None):
    """Pick one token id per row of logits (B, vocab): greedy at temperature 0, else sample."""
    check_sampling_args(temperature, top_k)
    if temperature == 0:
        return logits.argmax(axis=-1, keepdims=True)
    logits = logits / temperature  # < 1 sharpens the distribution, > 1 flattens it
    if top_k is not None:
        k = min(top_k, logits.shape[-1])
        kth_best = np.sort(logits, axis=-1)[:, [-k]]
        logits = np.where(logits < kth_best, -np.inf, logits)
    probs = softmax(logits.astype(np.float64), axis=-1)  # float64 so each row sums to 1 for rng.choice
    rng = np.random.default_rng() if rng is None else rng
    return np.array([[rng.choice(probs.shape[-1], p=row)] for row in probs], dtype=np.int64)
