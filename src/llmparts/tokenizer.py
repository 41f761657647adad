"""Text <-> token ids, one id per character: the tokenizer of the training data and of the NumPy twin.

Pure Python, so that it also runs in the reader's browser under Pyodide (numpy only to read an .npz).
"""

from __future__ import annotations


class CharTokenizer:
    """One id per character of a fixed vocabulary string; from text, the ids follow sorted character order."""

    def __init__(self, chars):
        chars = "".join(chars)  # a string, or a list of single characters (as older checkpoints hold)
        if len(set(chars)) != len(chars):
            raise ValueError(f"chars ({chars!r}) must not repeat a character")
        self.chars = chars
        self.stoi = {c: i for i, c in enumerate(chars)}

    @classmethod
    def from_text(cls, text: str) -> "CharTokenizer":
        return cls(sorted(set(text)))

    @classmethod
    def from_npz(cls, path) -> "CharTokenizer":
        """The vocabulary that llmparts.export.to_npz stored next to a model's weights."""
        import numpy as np

        with np.load(path) as data:
            if "chars" not in data.files:
                raise ValueError(f"{path} holds no 'chars' vocabulary; export it with to_npz(model, path, chars=...)")
            return cls(str(data["chars"]))

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> list[int]:
        unknown = sorted(set(text) - set(self.stoi))
        if len(unknown) == 1:
            raise ValueError(f"character {unknown[0]!r} is not in the vocabulary of {self.vocab_size} characters")
        if unknown:
            raise ValueError(f"characters {unknown} are not in the vocabulary of {self.vocab_size} characters")
        return [self.stoi[c] for c in text]

    def decode(self, ids) -> str:
        return "".join(self.chars[int(i)] for i in ids)
