"""Serving in pure NumPy: sampling.py, batching.py and quantize.py again, without torch (runs under Pyodide).

Same functions, same names, same order as the PyTorch modules, so the chapter's cells in the browser run
the code the server runs: top-p sampling, batched generation with a KV cache per sequence, and
weight-only int8 / int4 quantization. tests/test_numpy_serving.py keeps them equal to PyTorch.
"""

from __future__ import annotations

import math

import numpy as np

from .numpy_model import check_sampling_args as check_temperature_and_top_k
from .numpy_model import softmax


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
    if top_p is not None:
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
