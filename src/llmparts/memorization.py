"""Does a model leak its training text? A membership test on per-line loss, and verbatim regurgitation.

Membership inference asks whether a line was in the training data from the model alone: a line the model
has seen tends to get a lower loss. The test scores every line by minus its loss; its ROC AUC is the
chance that a random training line scores above a random held-out line (ties count half), so 0.5 means
the model gives nothing away and 1.0 means every training line is told apart. Regurgitation asks for the
text itself: from the first characters of a training passage, does greedy decoding write the rest exactly?
"""

from __future__ import annotations

import numpy as np
import torch


def roc_auc(positives, negatives) -> float:
    """The area under the ROC curve: P(a positive scores above a negative), a tie counting one half.

    By ranks (Mann-Whitney): rank all scores together, tied scores sharing the mean of their ranks; the
    positives' rank sum, less the smallest it could be, over the number of (positive, negative) pairs.
    """
    pos, neg = np.asarray(positives, dtype=float), np.asarray(negatives, dtype=float)
    if pos.ndim != 1 or neg.ndim != 1 or pos.size == 0 or neg.size == 0:
        raise ValueError(f"roc_auc needs two non-empty 1-D score lists (got shapes {pos.shape} and {neg.shape})")
    if not (np.isfinite(pos).all() and np.isfinite(neg).all()):
        raise ValueError("roc_auc scores must be finite numbers (found nan or inf)")
    _, which, counts = np.unique(np.concatenate([pos, neg]), return_inverse=True, return_counts=True)
    mean_rank = np.cumsum(counts) - (counts - 1) / 2  # 1-based ranks; a run of ties shares its middle rank
    rank_sum = mean_rank[which[:pos.size]].sum()
    return float((rank_sum - pos.size * (pos.size + 1) / 2) / (pos.size * neg.size))


def distinct_lines(text: str, min_chars: int, max_chars: int) -> list[str]:
    """Each line of text with min_chars..max_chars characters, once, in order of first appearance."""
    return list(dict.fromkeys(line for line in text.split("\n") if min_chars <= len(line) <= max_chars))


def probe_lines(member_text: str, other_text: str, n: int, min_chars: int, max_chars: int,
                seed: int) -> tuple[list[str], list[str]]:
    """n lines drawn from member_text and n from other_text, none of the latter occurring in member_text
    (a line the model saw elsewhere would be a member under another name)."""
    members = distinct_lines(member_text, min_chars, max_chars)
    seen = set(distinct_lines(member_text, 0, len(member_text)))
    others = [line for line in distinct_lines(other_text, min_chars, max_chars) if line not in seen]
    if min(len(members), len(others)) < n:
        raise ValueError(f"asked for {n} probe lines of {min_chars}-{max_chars} characters, but the texts hold "
                         f"{len(members)} (members) and {len(others)} (held out)")
    rng = np.random.default_rng(seed)
    return ([members[i] for i in sorted(rng.choice(len(members), n, replace=False))],
            [others[i] for i in sorted(rng.choice(len(others), n, replace=False))])


def passages(text: str, n: int, length: int, seed: int) -> list[str]:
    """n passages of length characters that start at distinct random positions of text."""
    if len(text) - length + 1 < n:
        raise ValueError(f"a text of {len(text)} characters holds fewer than {n} passages of {length}")
    starts = np.random.default_rng(seed).choice(len(text) - length + 1, n, replace=False)
    return [text[s:s + length] for s in sorted(starts)]


@torch.no_grad()
def line_losses(model, tokenizer, lines: list[str], batch: int = 256) -> list[float]:
    """Each line's mean loss (nats per character), read from a newline on: the line as its own document."""
    model.eval()
    out = []
    for start in range(0, len(lines), batch):
        chunk = [tokenizer.encode("\n" + line) for line in lines[start:start + batch]]
        width = max(len(ids) for ids in chunk) - 1
        x = torch.zeros(len(chunk), width, dtype=torch.long)
        y = torch.zeros(len(chunk), width, dtype=torch.long)
        mask = torch.zeros(len(chunk), width)
        for row, ids in enumerate(chunk):
            x[row, :len(ids) - 1] = torch.tensor(ids[:-1])
            y[row, :len(ids) - 1] = torch.tensor(ids[1:])
            mask[row, :len(ids) - 1] = 1
        logits, _ = model(x)
        nll = torch.nn.functional.cross_entropy(logits.transpose(1, 2), y, reduction="none")
        out += ((nll * mask).sum(1) / mask.sum(1)).tolist()
    return out


@torch.no_grad()
def regurgitated(model, tokenizer, texts: list[str], prefix: int) -> list[bool]:
    """For each text: does greedy decoding from its first prefix characters write the rest exactly?"""
    model.eval()
    ids = torch.tensor([tokenizer.encode(t) for t in texts], dtype=torch.long)  # equal lengths: one batch
    out = model.generate(ids[:, :prefix], ids.shape[1] - prefix, temperature=0)  # greedy, with the KV cache
    return (out[:, prefix:] == ids[:, prefix:]).all(1).tolist()
