"""What a chapter's Jupyter notebook needs that the browser page gets from its virtual filesystem.

In the page, Pyodide is handed `char_llama.npz` (the book's trained char model) in its working folder. A
notebook downloaded from the book calls `use_book_files()` first, which puts the same file beside the
notebook, from a clone of the repository (`pip install -e .`) or from the site folder it came from, and
points `$TINYSHAKESPEARE` at the repository's copy of the dataset for the optional PyTorch cells. It never
uses the network.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

WEIGHTS = "char_llama.npz"
REPOSITORY = Path(__file__).resolve().parents[2]  # src/llmparts/notebook.py -> the checkout, when there is one


def weights_candidates(folder: Path) -> list[Path]:
    return [folder / "results" / "weights" / WEIGHTS,       # a notebook inside a copy of the published site
            REPOSITORY / "results" / "weights" / WEIGHTS]   # an editable install from a clone


def use_book_files(folder: str | os.PathLike = ".") -> Path:
    """Make `folder/char_llama.npz` exist (copied, never downloaded); return its path."""
    folder = Path(folder)
    target = folder / WEIGHTS
    if not target.exists():
        source = next((p for p in weights_candidates(folder) if p.is_file()), None)
        if source is None:
            raise FileNotFoundError(
                f"{WEIGHTS} (the book's trained char model) is not in {folder.resolve()} nor in "
                f"{', '.join(str(p.parent) for p in weights_candidates(folder))}: run the notebook from a clone "
                f"of the repository (pip install -e .) or put results/weights/{WEIGHTS} beside it")
        shutil.copyfile(source, target)
    dataset = REPOSITORY / "data" / "tinyshakespeare" / "input.txt"
    if dataset.is_file():
        os.environ.setdefault("TINYSHAKESPEARE", str(dataset))
    return target
