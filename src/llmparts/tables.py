"""How numbers look in the book's tables and variables: one format per kind of number, and Markdown pipe tables."""

from __future__ import annotations


def loss(x: float) -> str:
    return f"{x:.4f}"


def signed(x: float) -> str:
    return f"{x:+.4f}"


def count(n: float) -> str:
    return f"{n:,.0f}"


def gflop(n: float) -> str:
    return f"{n / 1e9:.3f} GFLOP"


def mib(n_bytes: float) -> str:
    return f"{n_bytes / 2**20:.1f} MiB"


def times(x: float) -> str:
    return f"{x:.1f}×"


def pipe_table(header: list[str], rows: list[list[str]], caption: str, name: str) -> str:
    """A Quarto pipe table with its caption and the label @tbl-NAME."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + f"\n\n: {caption} {{#tbl-{name}}}\n"
