"""Byte-level BPE, written for the book: train it on text, encode, decode, save and load it as JSON.

Pure Python (no torch, no NumPy): this file runs unchanged in the reader's browser under Pyodide.

Byte-level means the alphabet is the 256 byte values of UTF-8, so every string — English, Chinese,
emoji — can be encoded, and no text is ever "unknown". Training repeatedly finds the most frequent
pair of adjacent tokens and gives it a new id (256, 257, ...); encoding replays those merges in the
order they were learned. Like GPT-2, the text is first split into chunks (a word with its leading
space, a run of digits, a run of punctuation, whitespace), and merges never cross a chunk boundary.

    tok = BPETokenizer.train(text, vocab_size=512)
    ids = tok.encode("To be, or not to be")
    assert tok.decode(ids) == "To be, or not to be"
    tok.save("bpe.json"); BPETokenizer.load("bpe.json")
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path

FORMAT = "llmparts-bpe-v1"
# A letter run, a digit run, or a run of other symbols, each with an optional leading space; then
# whitespace. Every character matches one branch, so the chunks always join back into the text.
SPLIT_PATTERN = r" ?[^\W\d_]+| ?\d+| ?(?:[^\w\s]|_)+|\s+(?!\S)|\s+"
SPLIT = re.compile(SPLIT_PATTERN)


class BPEError(ValueError):
    """Bad input to the tokenizer; the message names the value and the rule."""


def split_chunks(text: str) -> list[str]:
    """The pieces BPE works inside: ' the', ',', '\\n\\n', ..."""
    return SPLIT.findall(text)


def merge(ids: list[int], pair: tuple[int, int], new_id: int) -> list[int]:
    """Replace every occurrence of pair in ids, left to right, by new_id."""
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and ids[i] == pair[0] and ids[i + 1] == pair[1]:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


class BPETokenizer:
    """256 byte tokens, then one token per learned merge: merges[i] = (a, b) made token 256 + i."""

    def __init__(self, merges=()):
        self.merges: list[tuple[int, int]] = []
        self.vocab: list[bytes] = [bytes([b]) for b in range(256)]  # token id -> the bytes it stands for
        self.ranks: dict[tuple[int, int], int] = {}  # pair -> the id it merges into (lower = learned earlier)
        for a, b in merges:
            new_id = len(self.vocab)
            for part in (a, b):
                if isinstance(part, bool) or not isinstance(part, int) or not 0 <= part < new_id:
                    raise BPEError(f"merge {len(self.merges)} ({a!r}, {b!r}) must join two ids below {new_id}: "
                                   f"a merge can only use bytes and tokens learned before it")
            if (a, b) in self.ranks:
                raise BPEError(f"merge {len(self.merges)} ({a}, {b}) repeats merge {self.ranks[(a, b)] - 256}")
            self.merges.append((a, b))
            self.ranks[(a, b)] = new_id
            self.vocab.append(self.vocab[a] + self.vocab[b])
        self.merge_counts: list[int] = []  # how often each merged pair occurred when it was learned (train only)
        self._cache: dict[str, list[int]] = {}

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    # ------------------------------------------------------------ training

    @classmethod
    def train(cls, text: str, vocab_size: int, byte_order=None) -> "BPETokenizer":
        """Learn vocab_size - 256 merges from text: each time, the most frequent adjacent pair.

        A tie goes to the pair with the smaller ids, comparing bytes in byte_order (default: by value).
        Stops early when no pair is left to merge.
        """
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 256:
            raise BPEError(f"vocab_size ({vocab_size!r}) must be an integer >= 256: the 256 byte values come first")
        if not isinstance(text, str) or not text:
            raise BPEError("the training text is empty: BPE learns its merges from the pairs it counts in text")
        byte_order = list(range(256)) if byte_order is None else list(byte_order)
        if sorted(byte_order) != list(range(256)):
            raise BPEError("byte_order must list each of the 256 byte values exactly once")
        place = {b: i for i, b in enumerate(byte_order)}  # a merged token (id >= 256) keeps its id: after every byte

        # Identical chunks behave identically: keep each distinct chunk once, with how often it occurs.
        chunk_counts = Counter(split_chunks(text))
        words = [list(chunk.encode("utf-8")) for chunk in chunk_counts]
        freqs = list(chunk_counts.values())
        pair_counts = Counter()  # pair -> how often it occurs in the whole text
        where = defaultdict(set)  # pair -> the words that hold it (or once held it)
        for i, word in enumerate(words):
            for pair in zip(word, word[1:]):
                pair_counts[pair] += freqs[i]
                where[pair].add(i)

        tokenizer = cls()
        while tokenizer.vocab_size < vocab_size and pair_counts:
            # The most frequent pair; among equals, the smallest (a, b) in byte_order.
            pair = max(pair_counts, key=lambda p: (pair_counts[p], -place.get(p[0], p[0]), -place.get(p[1], p[1])))
            new_id = tokenizer.vocab_size
            tokenizer._add_merge(pair, pair_counts[pair])
            for i in where.pop(pair):  # only the words that hold the pair change
                word, freq = words[i], freqs[i]
                for p in zip(word, word[1:]):  # take the word's pairs out, merge, put the new pairs in
                    pair_counts[p] -= freq
                    if pair_counts[p] == 0:
                        del pair_counts[p]
                word = words[i] = merge(word, pair, new_id)
                for p in zip(word, word[1:]):
                    pair_counts[p] += freq
                    where[p].add(i)
        return tokenizer

    def _add_merge(self, pair: tuple[int, int], count: int):
        self.ranks[pair] = len(self.vocab)
        self.merges.append(pair)
        self.vocab.append(self.vocab[pair[0]] + self.vocab[pair[1]])
        self.merge_counts.append(count)

    # ------------------------------------------------------------ encoding and decoding

    def encode_chunk(self, chunk: str) -> list[int]:
        """Start from the chunk's bytes; merge the earliest-learned pair present until none is left."""
        ids = list(chunk.encode("utf-8"))
        while len(ids) >= 2:
            pair = min(zip(ids, ids[1:]), key=lambda p: self.ranks.get(p, float("inf")))
            if pair not in self.ranks:
                break
            ids = merge(ids, pair, self.ranks[pair])
        return ids

    def encode(self, text: str) -> list[int]:
        if not isinstance(text, str):
            raise BPEError(f"encode takes a str, not {type(text).__name__}")
        ids = []
        for chunk in split_chunks(text):
            if chunk not in self._cache:  # a text repeats its words: encode each distinct chunk once
                self._cache[chunk] = self.encode_chunk(chunk)
            ids.extend(self._cache[chunk])
        return ids

    def decode(self, ids) -> str:
        """The tokens' bytes joined and read as UTF-8; a cut through a character shows as U+FFFD."""
        out = []
        for i in ids:
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < self.vocab_size:
                try:
                    i = int(i)  # a NumPy or torch integer is fine
                except (TypeError, ValueError):
                    raise BPEError(f"token id {i!r} is not an integer") from None
                if not 0 <= i < self.vocab_size:
                    raise BPEError(f"token id {i} is not in the vocabulary of {self.vocab_size} tokens")
            out.append(self.vocab[i])
        return b"".join(out).decode("utf-8", errors="replace")

    # ------------------------------------------------------------ saving and loading

    def to_dict(self) -> dict:
        return {"format": FORMAT, "split_pattern": SPLIT_PATTERN, "merges": [list(m) for m in self.merges]}

    def save(self, path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.to_dict()) + "\n", encoding="utf-8")
        return path

    @classmethod
    def from_dict(cls, data, source: str = "the merges") -> "BPETokenizer":
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise BPEError(f"{source} is not a {FORMAT} file (no \"format\": \"{FORMAT}\")")
        if data.get("split_pattern") != SPLIT_PATTERN:
            raise BPEError(f"{source} splits text with {data.get('split_pattern')!r}, this code with "
                           f"{SPLIT_PATTERN!r}: its merges would encode differently")
        merges = data.get("merges")
        if not isinstance(merges, list) or not all(isinstance(m, list) and len(m) == 2 for m in merges):
            raise BPEError(f"{source}: \"merges\" must be a list of [a, b] pairs of token ids")
        try:
            return cls([tuple(m) for m in merges])
        except BPEError as e:
            raise BPEError(f"{source}: {e}") from None

    @classmethod
    def load(cls, path) -> "BPETokenizer":
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise BPEError(f"no merges file at {path}") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise BPEError(f"{path} is corrupt: not JSON ({e})") from None
        return cls.from_dict(data, source=str(path))


# ---------------------------------------------------------------- interop with Hugging Face `tokenizers`

def byte_to_unicode() -> dict[int, str]:
    """GPT-2's table: each byte as a printable character, the form byte-level vocabularies are written in.

    Printable bytes stand for themselves; the other 68 (space, newline, control bytes, ...) are moved
    to the characters from U+0100 on, in byte order (space becomes 'Ġ', newline 'Ċ').
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def hf_tokenizer(tokenizer: BPETokenizer):
    """The same tokenizer as a Hugging Face `tokenizers.Tokenizer`: same split, same merges, same ids."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    table = byte_to_unicode()
    as_text = ["".join(table[b] for b in token) for token in tokenizer.vocab]
    if len(set(as_text)) != len(as_text):
        raise BPEError("two token ids stand for the same bytes: a Hugging Face vocabulary cannot hold both")
    vocab = {text: i for i, text in enumerate(as_text)}
    merges = [(as_text[a], as_text[b]) for a, b in tokenizer.merges]
    hf = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    hf.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(SPLIT_PATTERN), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    hf.decoder = decoders.ByteLevel()
    return hf
