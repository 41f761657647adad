"""What a chapter's Jupyter notebook needs that the browser page gets from its virtual filesystem.

In the page, Pyodide is handed the files of BOOK_FILES (the book's trained char models and the results the
cells read, such as chapter 04's `data.json`) in its working folder. A notebook downloaded from the book calls
`use_book_files()` first, which puts the same files beside the notebook, from a clone of the repository
(`pip install -e .`) or from the site folder it came from, and points `$TINYSHAKESPEARE` at the
repository's copy of the dataset for the optional PyTorch cells. It never uses the network.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

WEIGHTS = "char_llama.npz"
# name beside the notebook -> (where it is in the repository and in the site, what it is)
BOOK_FILES = {WEIGHTS: ("results/weights/char_llama.npz", "the book's trained char model"),
              "data.json": ("results/data.json", "chapter 04's results"),
              "drift.json": ("results/drift.json", "chapter 08's per-window losses"),
              "governance_lines.json": ("results/governance/lines.json", "chapter 07's per-line losses"),
              "MODEL_CARD.md": ("results/governance/MODEL_CARD.md", "chapter 07's generated model card"),
              "char_llama_sft.npz": ("results/weights/char_llama_sft.npz", "chapter 09's fine-tuned (SFT) char model"),
              "char_llama_dpo.npz": ("results/weights/char_llama_dpo.npz", "chapter 09's DPO-trained char model")}
REPOSITORY = Path(__file__).resolve().parents[2]  # src/llmparts/notebook.py -> the checkout, when there is one


def book_file_candidates(folder: Path, name: str = WEIGHTS) -> list[Path]:
    path = BOOK_FILES[name][0]
    return [folder / path,       # a notebook inside a copy of the published site
            REPOSITORY / path]   # an editable install from a clone


def use_book_files(folder: str | os.PathLike = ".") -> Path:
    """Make every file of BOOK_FILES exist in `folder` (copied, never downloaded); return the weights' path."""
    folder = Path(folder)
    for name in BOOK_FILES:
        target = folder / name
        if target.exists():
            continue
        source = next((p for p in book_file_candidates(folder, name) if p.is_file()), None)
        if source is None:
            path, what = BOOK_FILES[name]
            raise FileNotFoundError(
                f"{name} ({what}) is not in {folder.resolve()} nor in "
                f"{', '.join(str(p.parent) for p in book_file_candidates(folder, name))}: run the notebook from a "
                f"clone of the repository (pip install -e .) or put {path} beside it")
        shutil.copyfile(source, target)
    dataset = REPOSITORY / "data" / "tinyshakespeare" / "input.txt"
    if dataset.is_file():
        os.environ.setdefault("TINYSHAKESPEARE", str(dataset))
    return folder / WEIGHTS
