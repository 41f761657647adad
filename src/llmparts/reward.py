"""Chapter 09's target behaviour, scored by a program instead of a person: a speech by one named speaker
whose lines keep the length of blank verse.

A completion earns half a point for opening with the speaker's name line (`ROMEO:`) and half a point times
the share of its lines that are verse-like, 30 to 50 characters. Pure Python, so the reader's browser
imports it. `repetition` is not part of the reward: it measures one way of gaming it.
"""

from __future__ import annotations

SPEAKER = "ROMEO"
VERSE_MIN, VERSE_MAX = 30, 50  # characters: where most of Romeo's lines in tinyshakespeare fall


def verse_lines(body: str) -> list[bool]:
    """For each line of body that can be judged: is it verse-like?

    A finished line (it ends in a newline) is judged by its length. The unfinished last line is judged only
    once it is long enough to count (VERSE_MIN) — it is still verse-like up to VERSE_MAX — so a completion cut
    off mid-line is not punished for the cut.
    """
    *finished, last = body.split("\n")
    judged = [VERSE_MIN <= len(line) <= VERSE_MAX for line in finished]
    if len(last) >= VERSE_MIN:
        judged.append(len(last) <= VERSE_MAX)
    return judged


def score(completion: str, speaker: str = SPEAKER) -> dict:
    """The reward's two halves and their sum: {"speaker": 0 or 1, "verse": share in [0, 1], "reward": ...}."""
    head, newline, body = completion.partition("\n")
    speaks = float(bool(newline) and head == f"{speaker}:")
    judged = verse_lines(body) if newline else []
    verse = sum(judged) / len(judged) if judged else 0.0
    return {"speaker": speaks, "verse": verse, "reward": 0.5 * speaks + 0.5 * verse}


def reward(completion: str, speaker: str = SPEAKER) -> float:
    """A number in [0, 1]: 1 for a speech by speaker whose every judged line is verse-like."""
    return score(completion, speaker)["reward"]


def repetition(text: str) -> float:
    """The share of words that repeat an earlier word of the same text (0: all different); 0 for no words."""
    words = text.lower().split()
    return 1 - len(set(words)) / len(words) if words else 0.0
