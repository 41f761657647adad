"""Where a result came from: the git commit, a fingerprint of the code and config, the runtime.

The fingerprint decides whether committed results are stale. It hashes the experiment's config and
the *meaning* of the modules that produce its numbers: each module is parsed and dumped with
`ast.dump` after its docstrings are removed, so editing a comment or a docstring keeps results
fresh while changing a line of code makes them stale.
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

REPO_ROOT = Path(__file__).resolve().parents[2]

# The modules whose code determines every experiment's numbers (report.py only formats them).
CORE_SOURCES = ("src/llmparts/config.py", "src/llmparts/model.py", "src/llmparts/data.py",
                "src/llmparts/train.py", "src/llmparts/experiments.py")


def normalized_source(text: str) -> str:
    """The module's syntax tree without docstrings; comments and formatting vanish in parsing."""
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, annotate_fields=False, include_attributes=False)


def fingerprint(config: dict, sources: list[str] | tuple[str, ...], root: Path = REPO_ROOT) -> str:
    """sha256 over the config (canonical JSON) and the normalized source of each module, by path."""
    h = hashlib.sha256()
    h.update(json.dumps(config, sort_keys=True, separators=(",", ":")).encode())
    for rel in sorted(sources):
        path = Path(root) / rel
        if not path.is_file():
            raise FileNotFoundError(f"fingerprint source {rel} not found under {root}")
        h.update(b"\0" + rel.encode() + b"\0")
        h.update(normalized_source(path.read_text(encoding="utf-8")).encode())
    return h.hexdigest()


def git_commit(root: Path = REPO_ROOT) -> dict:
    """HEAD's hash and whether the working tree had uncommitted changes ('unknown' outside git)."""
    def git(*args):
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout
    try:
        return {"commit": git("rev-parse", "HEAD").strip(), "dirty": bool(git("status", "--porcelain").strip())}
    except (OSError, subprocess.CalledProcessError):
        return {"commit": "unknown", "dirty": None}


def provenance(config: dict, sources, *, threads: int, seeds: list[int], wall_time_s: float,
               smoke: bool, root: Path = REPO_ROOT) -> dict:
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
