"""Where a result came from: the git commit, a fingerprint of the code and config, the runtime.

The fingerprint decides whether committed results are stale. It hashes the experiment's config and
the *meaning* of the modules that produce its numbers: each module is parsed and dumped with
`ast.dump` after its docstrings are removed, so editing a comment or a docstring keeps results
fresh while changing a line of code makes them stale. An experiment's report (its method `report` and
the functions named `report_*`) only formats numbers, so it is left out too, like strings.py.
"""

from __future__ import annotations

import ast
import hashlib
import json
import platform
import subprocess
from pathlib import Path

import numpy as np
import torch

PACKAGE_DIR = Path(__file__).resolve().parent

# The modules whose code determines every experiment's numbers.
CORE_SOURCES = tuple(f"src/llmparts/{name}" for name in (
    "atomic.py", "checks.py", "checkpoint.py", "config.py", "data.py", "flops.py", "model.py", "recipes.py",
    "tokenizer.py", "train.py", "experiments/base.py"))


def project_root() -> Path:
    """The checkout the package lives in (an editable install), else the current directory: where data/,
    examples/ and results/ are."""
    checkout = PACKAGE_DIR.parents[1]
    return checkout if (checkout / "pyproject.toml").is_file() else Path.cwd()


def source_path(rel: str, root: Path | None = None) -> Path:
    """src/llmparts/NAME is the installed package's file (editable or not); anything else is under root."""
    if rel.startswith("src/llmparts/"):
        return PACKAGE_DIR / rel.removeprefix("src/llmparts/")
    return (root or project_root()) / rel


def source_name(path: Path) -> str:
    """The name a fingerprint gives a file: src/llmparts/... for the package's, else relative to the project."""
    path = Path(path).resolve()
    if path.is_relative_to(PACKAGE_DIR):
        return "src/llmparts/" + path.relative_to(PACKAGE_DIR).as_posix()
    return path.relative_to(project_root().resolve()).as_posix()


def is_report(node) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
        (node.name == "report" or node.name.startswith("report_"))


def normalized_source(text: str) -> str:
    """The module's syntax tree without docstrings and report code; comments and formatting vanish in parsing."""
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = [child for child in node.body if not is_report(child)]
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                body = body[1:]
            node.body = body or [ast.Pass()]
    return ast.dump(tree, annotate_fields=False, include_attributes=False)


def fingerprint(config: dict, sources: list[str] | tuple[str, ...], root: Path | None = None) -> str:
    """sha256 over the config (canonical JSON) and the normalized source of each module, by path."""
    h = hashlib.sha256()
    h.update(json.dumps(config, sort_keys=True, separators=(",", ":")).encode())
    for rel in sorted(sources):
        path = source_path(rel, root)
        if not path.is_file():
            raise FileNotFoundError(f"fingerprint source {rel} not found ({path})")
        h.update(b"\0" + rel.encode() + b"\0")
        h.update(normalized_source(path.read_text(encoding="utf-8")).encode())
    return h.hexdigest()


def git_commit(root: Path | None = None) -> dict:
    """HEAD's hash and whether the working tree had uncommitted changes ('unknown' outside git)."""
    def git(*args):
        return subprocess.run(["git", "-C", str(root or project_root()), *args], capture_output=True, text=True,
                              check=True).stdout
    try:
        return {"commit": git("rev-parse", "HEAD").strip(), "dirty": bool(git("status", "--porcelain").strip())}
    except (OSError, subprocess.CalledProcessError):
        return {"commit": "unknown", "dirty": None}


def provenance(config: dict, sources, *, threads: int, seeds: list[int], wall_time_s: float,
               smoke: bool, root: Path | None = None) -> dict:
    return {
        **git_commit(root),
        "fingerprint": fingerprint(config, sources, root),
        "sources": sorted(sources),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "threads": threads,
        "seeds": list(seeds),
        "wall_time_s": round(wall_time_s, 2),
        "smoke": smoke,
    }
