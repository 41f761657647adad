"""The model's configuration, shared by the PyTorch model and its NumPy twin.

Pure Python (no torch, no numpy) so that it also runs in the reader's browser under Pyodide.
Every field is checked on construction; a bad value gets one message naming the value and the rule.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields


@dataclass
class ModelConfig:
    vocab_size: int = 65
    block_size: int = 64  # longest sequence: learned-position rows, RoPE table length, KV-cache capacity
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    n_kv_head: int | None = None  # None = n_head (MHA); 1 = MQA; in between = GQA
    use_rmsnorm: bool = False
    use_swiglu: bool = False
    use_rope: bool = False
    bias: bool = False
    dropout: float = 0.0
    multiple_of: int = 1  # SwiGLU hidden size is rounded up to a multiple of this
    tie_embeddings: bool = True
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    attn_impl: str = "sdpa"  # "sdpa" (F.scaled_dot_product_attention) or "manual" (softmax by hand)

    def __post_init__(self):
        if self.n_kv_head is None:
            self.n_kv_head = self.n_head
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd", "n_kv_head", "multiple_of"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} ({value!r}) must be a positive integer")
        for name in ("use_rmsnorm", "use_swiglu", "use_rope", "bias", "tie_embeddings"):
            value = getattr(self, name)
            if not isinstance(value, bool):  # "false" would be truthy: refuse it rather than guess
                raise ValueError(f"{name} ({value!r}) must be True or False")
        for name in ("dropout", "rope_theta", "norm_eps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"{name} ({value!r}) must be a finite number")
        if self.n_embd % self.n_head != 0:
            raise ValueError(f"n_embd ({self.n_embd}) must be divisible by n_head ({self.n_head})")
        if self.n_kv_head > self.n_head:
            raise ValueError(f"n_kv_head ({self.n_kv_head}) must be between 1 and n_head ({self.n_head})")
        if self.n_head % self.n_kv_head != 0:
            raise ValueError(f"n_head ({self.n_head}) must be divisible by n_kv_head ({self.n_kv_head})")
        if self.use_rope and self.head_dim % 2 != 0:
            raise ValueError(f"head dim n_embd/n_head ({self.head_dim}) must be even when use_rope is on")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout ({self.dropout!r}) must be in [0, 1)")
        if not self.rope_theta > 0:
            raise ValueError(f"rope_theta ({self.rope_theta!r}) must be positive")
        if not self.norm_eps > 0:
            raise ValueError(f"norm_eps ({self.norm_eps!r}) must be positive")
        if self.attn_impl not in ("sdpa", "manual"):
            raise ValueError(f"attn_impl ({self.attn_impl!r}) must be 'sdpa' or 'manual'")

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head

    @property
    def swiglu_hidden(self) -> int:
        # 2/3 of the usual 4x keeps three matrices as cheap as the MLP's two, then round up.
        hidden = int(2 * (4 * self.n_embd) / 3)
        return self.multiple_of * math.ceil(hidden / self.multiple_of)

    @classmethod
    def llama2(cls, **overrides) -> "ModelConfig":
        """The book's LLaMA2-style preset: 82,594,560 parameters."""
        preset = dict(
            vocab_size=6144, block_size=512, n_layer=12, n_head=16, n_kv_head=8, n_embd=768,
            use_rmsnorm=True, use_swiglu=True, use_rope=True, bias=False, dropout=0.0,
            multiple_of=64, tie_embeddings=True,
        )
        preset.update(overrides)
        return cls(**preset)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "ModelConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown config keys {unknown}; known keys are {sorted(known)}")
        return cls(**d)
