"""Write a file so that nobody ever sees half of it: not a reader, not the next run after a crash."""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_write(path, mode: str = "w"):
    """Open a temporary file next to path for writing ("w": UTF-8 text, "wb": bytes).

    When the block ends normally the file is flushed to disk and renamed over path in one step; when it
    raises, the temporary file is removed and path keeps what it held before.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")  # one per writer
    try:
        with open(tmp, mode, encoding=None if "b" in mode else "utf-8") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_text(path, text: str):
    with atomic_write(path) as f:
        f.write(text)
