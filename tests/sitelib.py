"""The book rendered by Quarto exactly as `make site` does it, once per test run, for the tests that need it
(tests/browser/test_site.py, tests/test_notebooks.py).

The one change from the published site: Pyodide loads from the offline copy in build/pyodide (served at
/pyodide/ beside the editions) instead of the CDN, with the same files and the same integrity hashes.
"""
from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "build" / "test-site"
LANGS = ("zh", "en")


def _load(name: str):
    """book/NAME.py, a standalone script, as a module (book/ is not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "book" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


website = _load("website")
find_quarto = _load("find_quarto")


@functools.lru_cache(maxsize=None)
def rendered_book() -> dict:
    """Render both editions into build/test-site (once); return Quarto's seconds per edition."""
    return website.render(LANGS, SITE, pyodide_base_url="/pyodide/")


def pages(lang: str) -> list[str]:
    return sorted(p.stem for p in (ROOT / "book" / lang).glob("*.qmd"))


def pages_with_cells(lang: str) -> list[str]:
    return [page for page in pages(lang)
            if website.CELL_FENCE in (ROOT / "book" / lang / f"{page}.qmd").read_text(encoding="utf-8")]
