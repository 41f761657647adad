"""The settings of a model (shared by the PyTorch model and its NumPy twin) and of a training run.

Pure Python (no torch, no numpy) so that it also runs in the reader's browser under Pyodide.
Every field is checked on construction; a bad value gets one message naming the value and the rule.
ModelConfig's defaults are the book's baseline; llmparts.recipes names it and every other model.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

from .checks import check_bool, check_choice, check_int, check_number

ATTN_IMPLS = ("sdpa", "manual")  # F.scaled_dot_product_attention, or the softmax written out
DTYPES = ("float32", "bfloat16", "float16")  # float32, or autocast to bfloat16/float16
DEVICES = ("cpu", "cuda", "mps")


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
    attn_impl: str = "sdpa"  # one of ATTN_IMPLS

    def __post_init__(self):
        if self.n_kv_head is None:
            self.n_kv_head = self.n_head
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd", "n_kv_head", "multiple_of"):
            check_int(name, getattr(self, name))
        for name in ("use_rmsnorm", "use_swiglu", "use_rope", "bias", "tie_embeddings"):
            check_bool(name, getattr(self, name))
        for name in ("dropout", "rope_theta", "norm_eps"):
            check_number(name, getattr(self, name))
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
        check_choice("attn_impl", self.attn_impl, ATTN_IMPLS)

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


@dataclass
class TrainConfig:
    batch_size: int = 12
    seq_len: int = 64  # training length; may be shorter than the model's block_size
    max_iters: int = 2000
    lr: float = 1e-3
    min_lr: float = 1e-4
    warmup_iters: int = 100
    lr_decay_iters: int | None = None  # None = max_iters
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.99
    grad_clip: float = 1.0  # 0 turns clipping off
    eval_interval: int = 250
    eval_batches: int = 20
    final_eval_batches: int = 200
    seed: int = 1337
    device: str = "cpu"
    dtype: str = "bfloat16"  # autocast: on a CPU the fastest path that `make bench` measures
    compile: bool = False
    threads: int | None = None  # None = torch's default
    checkpoint_interval: int = 500
    out_dir: str | None = None  # None = keep nothing on disk
    resume: bool = False
    quiet: bool = False

    def __post_init__(self):
        for name in ("batch_size", "seq_len", "max_iters", "eval_interval", "eval_batches", "final_eval_batches",
                     "checkpoint_interval"):
            check_int(name, getattr(self, name))
        check_int("warmup_iters", self.warmup_iters, minimum=0)
        check_int("seed", self.seed, minimum=0)
        for name in ("lr_decay_iters", "threads"):
            if getattr(self, name) is not None:
                check_int(name, getattr(self, name))
        for name in ("lr", "min_lr", "weight_decay", "beta1", "beta2", "grad_clip"):
            check_number(name, getattr(self, name))
        if not self.lr > 0:
            raise ValueError(f"lr ({self.lr}) must be positive")
        if not 0 <= self.min_lr <= self.lr:
            raise ValueError(f"min_lr ({self.min_lr}) must be between 0 and lr ({self.lr})")
        if self.weight_decay < 0 or self.grad_clip < 0:
            raise ValueError(f"weight_decay ({self.weight_decay}) and grad_clip ({self.grad_clip}) must be >= 0")
        for name in ("beta1", "beta2"):
            if not 0 <= getattr(self, name) < 1:
                raise ValueError(f"{name} ({getattr(self, name)}) must be in [0, 1)")
        for name in ("compile", "resume", "quiet"):
            check_bool(name, getattr(self, name))
        if self.resume and not self.out_dir:
            raise ValueError("resume (True) needs an out_dir holding ckpt.pt")
        check_choice("dtype", self.dtype, DTYPES)
        if not isinstance(self.device, str) or self.device.split(":")[0] not in DEVICES:
            raise ValueError(f"device ({self.device!r}) must be one of {', '.join(map(repr, DEVICES))}, "
                             f"optionally with an index such as 'cuda:1'")

    @property
    def decay_iters(self) -> int:
        return self.max_iters if self.lr_decay_iters is None else self.lr_decay_iters

    def to_dict(self) -> dict:
        return asdict(self)


# Settings that decide the sequence of weights; a resumed run must share them with the run it continues.
# The rest (max_iters when lr_decay_iters is pinned, eval and checkpoint cadence, device, quiet) may change.
TRAJECTORY_KEYS = ("batch_size", "seq_len", "lr", "min_lr", "warmup_iters", "decay_iters", "weight_decay",
                   "beta1", "beta2", "grad_clip", "seed", "dtype")
