"""The offline site that the browser tests and the browser bench both serve.

A folder laid out like the published book as the cells' worker sees it: the offline Pyodide 0.27.7 of
build/pyodide/, the pyodide-cells extension, the project's sources and the char model's weights, served on
127.0.0.1 (never file://: Pyodide cannot load from it) with .wasm as application/wasm (without it
loadPyodide hangs with only a console warning). Pages are Markdown run through the extension's Lua filter
with pandoc, as Quarto would.
"""

from __future__ import annotations

import functools
import http.server
import re
import subprocess
import sys
import threading
from pathlib import Path

import pypandoc

ROOT = Path(__file__).resolve().parent.parent
EXTENSION = ROOT / "_extensions" / "pyodide-cells"
PYODIDE_DIR = ROOT / "build" / "pyodide"
TRAINED_WEIGHTS = ROOT / "results" / "weights" / "char_llama.npz"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--no-first-run",
    # Every host but ours fails to resolve: pages must work with no network at all.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]
FENCE = re.compile(r"^(\s*)```\{(pyodide)\}", re.MULTILINE)


def render_fragment(markdown: str) -> str:
    """The filter's HTML for a .qmd text; ```{pyodide} fences are rewritten as Quarto's reader does."""
    return pypandoc.convert_text(FENCE.sub(r"\1```{.\2}", markdown), "html", format="markdown",
                                 extra_args=[f"--lua-filter={EXTENSION / 'pyodide-cells.lua'}"])


def ensure_pyodide_assets() -> Path:
    if not (PYODIDE_DIR / "pyodide.asm.wasm").exists():
        subprocess.run([sys.executable, str(ROOT / "scripts" / "build_pyodide_assets.py")], check=True)
    return PYODIDE_DIR


def export_random_char_model(path: Path):
    """Until `make reproduce` has trained the book's char model, a random one of the same shape stands in."""
    import torch

    from llmparts.data import dataset_path
    from llmparts.export import to_npz
    from llmparts.model import GPT
    from llmparts.recipes import llama
    from llmparts.tokenizer import CharTokenizer

    tokenizer = CharTokenizer.from_text(dataset_path().read_text(encoding="utf-8"))  # so chapter prompts encode
    torch.manual_seed(0)
    to_npz(GPT(llama(vocab_size=tokenizer.vocab_size)), path, chars=tokenizer.chars)


def lay_out(root: Path) -> str:
    """Fill root with the site's files; say which weights it got ("trained" or the random stand-in)."""
    (root / "pyodide").symlink_to(ensure_pyodide_assets())
    (root / "pyodide-cells").symlink_to(EXTENSION)
    (root / "src").symlink_to(ROOT / "src")
    results = root / "results"
    results.mkdir()
    for item in (ROOT / "results").iterdir():  # every result a page may fetch (data.json, …); weights below
        if item.name != "weights":
            (results / item.name).symlink_to(item)
    weights = root / "results" / "weights" / "char_llama.npz"
    weights.parent.mkdir(parents=True)
    for item in (ROOT / "results" / "weights").glob("*.npz"):  # chapter 09's fine-tuned models, …
        if item.name != weights.name:
            (weights.parent / item.name).symlink_to(item)
    if TRAINED_WEIGHTS.exists():
        weights.symlink_to(TRAINED_WEIGHTS)
        return "trained"
    export_random_char_model(weights)
    return "random stand-in (results/weights/char_llama.npz not written yet)"


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".wasm": "application/wasm", ".mjs": "text/javascript", ".js": "text/javascript",
                      ".whl": "application/zip", ".npz": "application/octet-stream"}

    def log_message(self, *args):
        pass


class Site:
    """A folder served on 127.0.0.1 in a background thread; `page` writes an HTML page from Markdown."""

    def __init__(self, root: Path):
        self.root = root
        handler = functools.partial(QuietHandler, directory=str(root))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def page(self, name: str, markdown: str, lang: str = "en") -> str:
        """Write name.html from a .qmd text; return its URL."""
        body = render_fragment(markdown)
        html = (f'<!doctype html>\n<html lang="{lang}">\n<head><meta charset="utf-8"><title>{name}</title></head>\n'
                f'<body>\n<main>\n{body}\n</main>\n</body>\n</html>\n')
        (self.root / f"{name}.html").write_text(html, encoding="utf-8")
        return self.url + f"{name}.html"

    def shutdown(self):
        self.server.shutdown()
