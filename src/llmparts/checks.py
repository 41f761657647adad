"""The argument checks every part of llmparts shares: one message shape, `NAME (VALUE) must RULE`.

Pure Python (no torch, no numpy) so that the NumPy twin uses the same checks in the reader's browser.
A bad value raises ValueError with one line naming the value and the rule; a command line turns that
line into `prog: error: ...` and exit status 2.
"""

from __future__ import annotations

import argparse
import math


def check_int(name: str, value, minimum: int = 1):
    """An int (not a bool) >= minimum."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        rule = {0: "a non-negative integer", 1: "a positive integer"}.get(minimum, f"an integer >= {minimum}")
        raise ValueError(f"{name} ({value!r}) must be {rule}")


def check_number(name: str, value):
    """A finite int or float (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} ({value!r}) must be a finite number")


def check_bool(name: str, value):
    """True or False: the string "false" would be truthy, so it is refused rather than guessed."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} ({value!r}) must be True or False")


def check_choice(name: str, value, choices):
    if value not in choices:
        raise ValueError(f"{name} ({value!r}) must be one of {', '.join(map(repr, choices))}")


def check_sampling_args(temperature, top_k):
    """temperature >= 0 (0 is greedy) and finite; top_k a positive integer or None."""
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not temperature >= 0:
        raise ValueError(f"temperature ({temperature!r}) must be a number >= 0 (0 means greedy)")
    if math.isinf(temperature):
        raise ValueError(f"temperature ({temperature!r}) must be finite")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"top_k ({top_k!r}) must be a positive integer or None")


def check_generate_args(prompt_len: int, max_new_tokens, temperature, top_k, block_size: int, use_cache: bool):
    """What `generate` needs of its arguments, in PyTorch and in NumPy alike."""
    check_sampling_args(temperature, top_k)
    check_int("max_new_tokens", max_new_tokens, minimum=0)
    if prompt_len < 1:
        raise ValueError("the prompt must hold at least one token")
    total = prompt_len + max_new_tokens
    if use_cache and total > block_size:
        raise ValueError(f"prompt ({prompt_len}) + max_new_tokens ({max_new_tokens}) = {total} "
                         f"exceeds block_size ({block_size}), the KV cache's capacity; "
                         f"generate fewer tokens or pass use_cache=False")


class ArgumentParser(argparse.ArgumentParser):
    """A command line whose usage errors print one line, `PROG: error: ...`, and exit 2, without the usage block."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def check_cli_ints(parser, args, names, minimum: int = 1):
    """On a command line: exit 2 with one line (`--NAME (VALUE) must be ...`) for the first bad count."""
    for name in names:
        value = getattr(args, name)
        if value is not None:
            try:
                check_int(f"--{name}", value, minimum)
            except ValueError as e:
                parser.error(str(e))
