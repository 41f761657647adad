"""tinyshakespeare as characters: find (or download and verify) the file, build the vocabulary,
split it 90/10 by position, and cut it into training batches and fixed validation batches."""

from __future__ import annotations

import hashlib
import os
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import torch

from .atomic import atomic_write
from .tokenizer import CharTokenizer

DATA_URL = "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
DATA_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
DEFAULT_PATH = Path("data/tinyshakespeare/input.txt")
TRAIN_FRACTION = 0.9


class DataError(Exception):
    """The dataset cannot be found, downloaded or trusted; the message says what to do."""


def sha256_of(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def verify(path: Path) -> Path:
    digest = sha256_of(path)
    if digest != DATA_SHA256:
        raise DataError(f"{path} has sha256 {digest}, expected {DATA_SHA256} (tinyshakespeare): "
                        f"delete it to download a fresh copy, or point TINYSHAKESPEARE at the right file")
    return Path(path)


def download(dest: Path, url: str | None = None) -> Path:
    """Fetch url into dest; dest appears only once the download is whole and its sha256 is right."""
    url = url or DATA_URL
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            body = response.read()
    except OSError as e:
        raise DataError(f"no dataset at {dest} and the download from {url} failed ({e}); "
                        f"copy tinyshakespeare's input.txt there or set TINYSHAKESPEARE to its path") from None
    digest = hashlib.sha256(body).hexdigest()
    if digest != DATA_SHA256:
        raise DataError(f"the file downloaded from {url} has sha256 {digest}, expected {DATA_SHA256}; "
                        f"nothing was written to {dest}: check the URL or fetch input.txt by hand")
    with atomic_write(dest, "wb") as f:
        f.write(body)
    return Path(dest)


def dataset_path() -> Path:
    """$TINYSHAKESPEARE if set, else data/tinyshakespeare/input.txt, downloaded there if missing."""
    env = os.environ.get("TINYSHAKESPEARE")
    if env:
        path = Path(env)
        if not path.is_file():
            raise DataError(f"TINYSHAKESPEARE ({env}) is not a file: point it at tinyshakespeare's input.txt "
                            f"or unset it to use {DEFAULT_PATH}")
        return verify(path)
    if DEFAULT_PATH.is_file():
        return verify(DEFAULT_PATH)
    return download(DEFAULT_PATH, DATA_URL)


@dataclass
class Dataset:
    train: torch.Tensor  # int64 token ids, the first 90% of the text
    val: torch.Tensor    # the last 10%
    tokenizer: CharTokenizer


def load_dataset(path: Path | None = None) -> Dataset:
    text = Path(path or dataset_path()).read_text(encoding="utf-8")
    tokenizer = CharTokenizer.from_text(text)
    ids = torch.tensor(tokenizer.encode(text), dtype=torch.long)
    n_train = int(TRAIN_FRACTION * len(ids))
    return Dataset(train=ids[:n_train], val=ids[n_train:], tokenizer=tokenizer)


def get_batch(ids: torch.Tensor, batch_size: int, seq_len: int, generator: torch.Generator | None = None):
    """batch_size random windows of ids: inputs x (B, T) and targets y, the same text shifted by one."""
    if len(ids) <= seq_len:
        raise ValueError(f"seq_len ({seq_len}) must be shorter than the token sequence ({len(ids)} tokens)")
    starts = torch.randint(len(ids) - seq_len, (batch_size,), generator=generator)
    windows = ids.unfold(0, seq_len + 1, 1)[starts]  # (B, T + 1): a strided view, copied only for these rows
    return windows[:, :-1].contiguous(), windows[:, 1:].contiguous()


def fixed_batches(ids: torch.Tensor, n_batches: int, batch_size: int, seq_len: int, seed: int = 0):
    """The same n_batches (x, y) pairs for every caller with the same arguments: a shared yardstick."""
    generator = torch.Generator().manual_seed(seed)
    return [get_batch(ids, batch_size, seq_len, generator) for _ in range(n_batches)]
