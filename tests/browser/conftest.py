"""Offline browser fixtures: Pyodide 0.27.7 served from 127.0.0.1, headless Debian Chromium, every other host blocked.

Pages are Markdown run through the extension's Lua filter with pandoc (as Quarto would), wrapped in a minimal
HTML page and served next to the extension's files, the offline Pyodide folder and the project's sources.
"""

from __future__ import annotations

import functools
import http.server
import json
import re
import subprocess
import sys
import threading
from pathlib import Path

import pypandoc
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = ROOT / "_extensions" / "pyodide-cells"
PYODIDE_DIR = ROOT / "build" / "pyodide"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--no-first-run",
    # Every host but ours fails to resolve: the tests must pass with no network at all.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]
READY_TIMEOUT_MS = 90_000
TRAINED_WEIGHTS = ROOT / "results" / "weights" / "char_llama.npz"
# The files the worker places in Python's filesystem, exactly as the book's _quarto.yml lists them.
SITE_FILES = json.dumps(yaml.safe_load((ROOT / "_quarto.yml").read_text(encoding="utf-8"))["pyodide"]["files"])
FENCE = re.compile(r"^(\s*)```\{(pyodide)\}", re.MULTILINE)


def render_fragment(markdown: str) -> str:
    """The filter's HTML for a .qmd text; ```{pyodide} fences are rewritten as Quarto's reader does."""
    return pypandoc.convert_text(FENCE.sub(r"\1```{.\2}", markdown), "html", format="markdown",
                                 extra_args=[f"--lua-filter={EXTENSION / 'pyodide-cells.lua'}"])


def char_vocab() -> str:
    """tinyshakespeare's 65 characters, so chapter prompts encode with the stand-in model too."""
    from llmparts.data import dataset_path

    return "".join(sorted(set(dataset_path().read_text(encoding="utf-8"))))


def export_random_char_model(path: Path):
    """Until `make reproduce` has trained the book's char model, a small random one with its layout stands in."""
    import torch

    from llmparts.export import to_npz
    from llmparts.model import GPT, ModelConfig

    chars = char_vocab()
    torch.manual_seed(0)
    config = ModelConfig(vocab_size=len(chars), block_size=128, n_layer=2, n_head=4, n_kv_head=2, n_embd=64,
                         use_rmsnorm=True, use_swiglu=True, use_rope=True)
    to_npz(GPT(config), path, chars=chars)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    # Without application/wasm, loadPyodide hangs with only a console warning.
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".wasm": "application/wasm", ".mjs": "text/javascript", ".js": "text/javascript",
                      ".whl": "application/zip", ".npz": "application/octet-stream"}

    def log_message(self, *args):
        pass


class Site:
    """A folder served on 127.0.0.1: pyodide/, pyodide-cells/, src/ and the pages the tests write."""

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


def page_markdown(cells: list[str], lang: str = "en", **options) -> str:
    """A .qmd text: front matter with `pyodide:` options (local base URL by default) and one fence per cell."""
    options = {"base-url": "pyodide/", "timeout": 20, "load-timeout": 60, **options}
    meta = "\n".join(f"  {key}: {value}" for key, value in options.items())
    fences = "\n\n".join(f"```{{pyodide}}\n{code.strip()}\n```" for code in cells)
    return f"---\ntitle: test\nlang: {lang}\npyodide:\n{meta}\n---\n\n{fences}\n"


@pytest.fixture(scope="session")
def site_files() -> str:
    return SITE_FILES


@pytest.fixture(scope="session")
def pyodide_dir() -> Path:
    if not (PYODIDE_DIR / "pyodide.asm.wasm").exists():
        subprocess.run([sys.executable, str(ROOT / "scripts" / "build_pyodide_assets.py")], check=True)
    return PYODIDE_DIR


@pytest.fixture(scope="session")
def site(tmp_path_factory, pyodide_dir) -> Site:
    root = tmp_path_factory.mktemp("site")
    (root / "pyodide").symlink_to(pyodide_dir)
    (root / "pyodide-cells").symlink_to(EXTENSION)
    (root / "src").symlink_to(ROOT / "src")
    weights = root / "results" / "weights" / "char_llama.npz"
    weights.parent.mkdir(parents=True)
    if TRAINED_WEIGHTS.exists():
        weights.symlink_to(TRAINED_WEIGHTS)
    else:
        export_random_char_model(weights)
    served = Site(root)
    yield served
    served.server.shutdown()


@pytest.fixture(scope="session")
def browser_context(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing: apt-get install chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            user_data_dir=str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS, viewport={"width": 1000, "height": 900})
        context.set_default_timeout(READY_TIMEOUT_MS)
        context.foreign_hosts = []
        context.on("request", lambda req: None if req.url.startswith(("http://127.0.0.1", "data:", "blob:"))
                   else context.foreign_hosts.append(req.url))
        yield context
        context.close()


class CellPage:
    """One page of cells in the browser, with the waits every test needs."""

    def __init__(self, page):
        self.page = page
        self.js_errors = []
        page.on("pageerror", lambda exc: self.js_errors.append(str(exc)))

    def wait_ready(self, timeout_ms: int = READY_TIMEOUT_MS):
        self.page.wait_for_selector('.pyodide-page-bar[data-state="ready"]', timeout=timeout_ms)

    def status(self) -> str:
        return self.page.locator(".pyodide-status").inner_text()

    def cell(self, n: int):
        return self.page.locator(f"#pyodide-cell-{n}")

    def wait_runs(self, n: int, runs: int, attr: str = "runs", timeout_ms: int = READY_TIMEOUT_MS):
        self.page.wait_for_selector(f'#pyodide-cell-{n}[data-{attr}="{runs}"]', timeout=timeout_ms)

    def run(self, n: int, runs: int = 1):
        """Click cell n's Run button and wait until it has finished `runs` runs."""
        self.cell(n).locator("button.pyodide-run").click()
        self.wait_runs(n, runs)

    def output(self, n: int, kind: str) -> list[str]:
        return self.cell(n).locator(f".pyodide-output .pyodide-{kind}").all_inner_texts()

    def editor_text(self, n: int) -> str:
        return self.cell(n).locator(".cm-content").inner_text()


@pytest.fixture
def open_page(site, browser_context):
    """open_page(cells, lang="en", name=..., **pyodide_options) -> CellPage, loaded and ready to click."""
    pages = []

    def _open(cells, lang="en", name="page", wait=True, **options):
        url = site.page(name, page_markdown(cells, lang, **options), lang)
        cell_page = CellPage(browser_context.new_page())
        pages.append(cell_page.page)
        cell_page.page.goto(url)
        if wait:
            cell_page.wait_ready()
        return cell_page

    yield _open
    for p in pages:
        p.close()
