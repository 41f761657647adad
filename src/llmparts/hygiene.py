"""Data hygiene, hash-based: exact and near-duplicate lines, duplicate passages, and train/validation overlap.

Pure Python and NumPy (no torch): the functions take text and return plain dicts and lists.

- Exact duplicates: hash each line (or passage) and count hashes seen more than once.
- Near duplicates of lines: the same, after normalising the line (lower case, letters and digits only),
  so "Ay, my lord." and "ay my lord" collide.
- Near duplicates of passages: MinHash. Each passage becomes its set of word n-grams; a signature of
  `num_perm` minimum hash values estimates the Jaccard similarity of two sets; locality-sensitive
  hashing (bands of the signature) finds candidate pairs without comparing every pair; each candidate
  is then checked with the exact Jaccard similarity.
- Overlap (contamination): the share of validation passages that share a word n-gram with the training
  text, the test GPT-3's authors ran for their benchmarks (with n = 13).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter, defaultdict

import numpy as np

MERSENNE = (1 << 31) - 1  # a prime: (a * x + b) mod p is a random-looking permutation of 0..p-1
WORD = re.compile(r"[^\W_]+")


def digest(text: str) -> int:
    """A stable 64-bit hash (Python's hash() changes between runs)."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


def normalize(text: str) -> str:
    """Lower case, letters and digits only, single spaces: what a near-duplicate line ignores."""
    return " ".join(WORD.findall(text.lower()))


def duplicates(items: list[str], key=lambda s: s) -> dict:
    """How many items repeat an earlier one (by the hash of key(item)), and how many characters they hold."""
    seen: Counter = Counter()
    first: dict[int, str] = {}
    repeated_items = repeated_chars = 0
    for item in items:
        h = digest(key(item))
        if seen[h]:
            repeated_items += 1
            repeated_chars += len(item)
        else:
            first[h] = item
        seen[h] += 1
    top = [(first[h], n) for h, n in seen.most_common(5) if n > 1]
    return {"items": len(items), "distinct": len(seen), "repeats": repeated_items,
            "repeat_share": repeated_items / max(1, len(items)),
            "repeat_char_share": repeated_chars / max(1, sum(len(s) for s in items)), "top": top}


def lines(text: str, min_chars: int = 1) -> list[str]:
    """The text's lines with at least min_chars characters (trailing spaces removed)."""
    return [line for line in (raw.rstrip() for raw in text.split("\n")) if len(line) >= min_chars]


def passages(text: str) -> list[str]:
    """Speeches: the blocks between blank lines (in tinyshakespeare, a speaker's name and their lines)."""
    return [block.strip() for block in re.split(r"\n\s*\n", text) if block.strip()]


def shingles(text: str, n: int) -> set[tuple[str, ...]]:
    """The set of word n-grams of text, after normalising it (a text shorter than n words has none)."""
    words = normalize(text).split()
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def minhash(shingle_set, num_perm: int = 64, seed: int = 0) -> np.ndarray:
    """num_perm minimum hash values: two sets agree in each with probability = their Jaccard similarity."""
    rng = np.random.default_rng(seed)
    a = rng.integers(1, MERSENNE, size=num_perm, dtype=np.int64)
    b = rng.integers(0, MERSENNE, size=num_perm, dtype=np.int64)
    x = np.array([digest(" ".join(s)) % MERSENNE for s in shingle_set], dtype=np.int64)
    return ((a[:, None] * x[None, :] + b[:, None]) % MERSENNE).min(axis=1)  # a, x < 2**31: no overflow


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def near_duplicate_passages(texts: list[str], n: int = 5, threshold: float = 0.5, num_perm: int = 64,
                            bands: int = 32) -> list[dict]:
    """Pairs of passages whose n-gram sets have Jaccard similarity >= threshold, found with MinHash LSH.

    Two passages become candidates when one band (num_perm / bands consecutive signature values) is
    equal in both; with 2 rows per band, a pair at similarity s is missed with probability (1 - s**2)**bands.
    """
    if num_perm % bands:
        raise ValueError(f"num_perm ({num_perm}) must be divisible by bands ({bands})")
    rows = num_perm // bands
    sets = [shingles(t, n) for t in texts]
    buckets = defaultdict(list)
    for i, s in enumerate(sets):
        if not s:
            continue
        signature = minhash(s, num_perm)
        for band in range(bands):
            buckets[(band, signature[band * rows:(band + 1) * rows].tobytes())].append(i)
    candidates = {(i, j) for ids in buckets.values() for k, i in enumerate(ids) for j in ids[k + 1:]}
    pairs = []
    for i, j in sorted(candidates):
        similarity = jaccard(sets[i], sets[j])
        if similarity >= threshold:
            pairs.append({"a": i, "b": j, "jaccard": similarity})
    return pairs


def overlap(train_text: str, val_texts: list[str], n: int = 13) -> dict:
    """The share of validation passages (with at least n words) sharing a word n-gram with the training text."""
    train_grams = {digest(" ".join(g)) for g in shingles(train_text, n)}
    checked = hits = 0
    for text in val_texts:
        grams = shingles(text, n)
        if not grams:
            continue
        checked += 1
        hits += any(digest(" ".join(g)) in train_grams for g in grams)
    return {"n": n, "passages": checked, "with_overlap": hits, "share": hits / max(1, checked)}


def report(train_text: str, val_text: str) -> dict:
    """Everything the chapter's hygiene table shows, for one train/validation split."""
    text = train_text + val_text
    speeches = passages(text)
    long_speeches = [p for p in speeches if len(shingles(p, 5)) > 0]
    pairs = near_duplicate_passages(long_speeches)
    exact_passages = duplicates(speeches)
    return {
        "lines": duplicates(lines(text)),
        "lines_normalized": duplicates(lines(text), key=normalize),
        "long_lines": duplicates(lines(text, min_chars=30)),
        "long_lines_normalized": duplicates(lines(text, min_chars=30), key=normalize),
        "passages": exact_passages,
        "near_duplicate_passages": {
            "passages": len(long_speeches), "pairs": len(pairs),
            "examples": [{"a": long_speeches[p["a"]], "b": long_speeches[p["b"]], "jaccard": p["jaccard"]}
                         for p in sorted(pairs, key=lambda p: -p["jaccard"])[:3]],
        },
        "overlap": overlap(train_text, passages(val_text)),
    }
