"""Choosing the next token: temperature, top-k and top-p (nucleus), in that order.

model.py's sample_next knows temperature and top-k; this module adds top-p beside them and splits the
work in two so each step can be looked at: filter_logits turns logits into the logits that may still be
drawn (the rest set to -inf), sample_next draws from them. numpy_serving.py holds the same functions
in NumPy, and tests/test_sampling.py checks the two keep the same tokens with the same probabilities.
"""

from __future__ import annotations

import math

import torch
from torch.nn import functional as F

from .checks import check_sampling_args as check_temperature_and_top_k


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
    kth_best = torch.topk(logits, min(top_k, logits.size(-1)), dim=-1).values[..., [-1]]
    return logits.masked_fill(logits < kth_best, float("-inf"))


def top_p_filter(logits, top_p: float):
    """Keep the smallest set of most likely tokens whose probabilities add up to at least top_p.

    Sort the probabilities from high to low; a token stays if the mass of the tokens before it is still
    below top_p. The most likely token always stays, so top_p -> 0 becomes greedy.
    """
    sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
    sorted_probs = F.softmax(sorted_logits, dim=-1)
    mass_before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs
    keep_sorted = mass_before < top_p
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)  # back to vocabulary order
    return logits.masked_fill(~keep, float("-inf"))


def filter_logits(logits, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None):
    """Logits (B, vocab) divided by temperature (> 0), then cut by top-k, then by top-p."""
    logits = logits / temperature
    if top_k is not None:
        logits = top_k_filter(logits, top_k)
    if top_p is not None and top_p < 1:  # top_p = 1 keeps every token (float32 sums can fall short of 1)
        logits = top_p_filter(logits, top_p)
    return logits


def sample_next(logits, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None,
                generator: torch.Generator | None = None):
    """One token id per row of logits (B, vocab): greedy at temperature 0, else drawn from the filtered softmax."""
    check_sampling_args(temperature, top_k, top_p)
    if temperature == 0:
        return logits.argmax(dim=-1, keepdim=True)
    probs = F.softmax(filter_logits(logits, temperature, top_k, top_p), dim=-1)
    return torch.multinomial(probs, num_samples=1, generator=generator)
