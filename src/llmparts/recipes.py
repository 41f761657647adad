"""Every model the book trains, times or counts, named once.

Experiments, the benchmark, the browser site, the examples and the tests take their models from here,
so a recipe changes in one place. Pure Python, like config.py.
"""

from __future__ import annotations

from .config import ModelConfig

# nanoGPT's CPU shakespeare_char recipe with GPT-2's parts: LayerNorm, GELU MLP, learned positions, MHA.
# These are also ModelConfig's defaults, so the book can say "the baseline is ModelConfig()".
BASELINE_SETTINGS = dict(vocab_size=65, n_layer=4, n_head=4, n_embd=128, block_size=64, dropout=0.0, bias=False)
BASELINE = ModelConfig(**BASELINE_SETTINGS)

# LLaMA's four parts switched on together; 2 KV heads for the 4 query heads is GQA.
LLAMA_PARTS = dict(use_rmsnorm=True, use_swiglu=True, use_rope=True, n_kv_head=2)
LLAMA = ModelConfig(**BASELINE_SETTINGS, **LLAMA_PARTS)

# The ablation: the baseline, each part alone, MQA, and all four parts (the LLaMA recipe).
ABLATION = {
    "baseline": {},
    "rmsnorm": {"use_rmsnorm": True},
    "swiglu": {"use_swiglu": True},
    "rope": {"use_rope": True},
    "gqa": {"n_kv_head": 2},
    "mqa": {"n_kv_head": 1},
    "llama": LLAMA_PARTS,
}
SINGLE_PARTS = ("rmsnorm", "swiglu", "rope", "gqa")  # the four the llama variant switches on together

# Attention by its number of key/value heads, for the baseline's 4 query heads.
ATTENTION = {"MHA": 4, "GQA": 2, "MQA": 1}

# The LLaMA2-style preset of chapter 03 (dim 768, 12 layers, 16 heads, 8 KV heads): 82,594,560 parameters.
LLAMA2 = ModelConfig.llama2()


def ablation_variant(name: str, **overrides) -> ModelConfig:
    """The baseline with the ablation's switches for name, then overrides (a longer block_size, say)."""
    if name not in ABLATION:
        raise ValueError(f"ablation variant ({name!r}) must be one of {', '.join(map(repr, ABLATION))}")
    return ModelConfig(**{**BASELINE_SETTINGS, **ABLATION[name], **overrides})


def llama(**overrides) -> ModelConfig:
    """The LLaMA recipe at the baseline's size, with overrides (another n_kv_head, vocab or block_size)."""
    return ablation_variant("llama", **overrides)
