"""Offline browser fixtures: Pyodide 0.27.7 served from 127.0.0.1, headless Debian Chromium, every other host blocked.

The site itself (layout, server, pages rendered through the extension's Lua filter) is scripts/browser_site.py,
shared with the browser bench.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import scriptlib

ROOT = Path(__file__).resolve().parents[2]
browser_site = scriptlib.load("browser_site")
CHROMIUM, CHROMIUM_FLAGS, Site = browser_site.CHROMIUM, browser_site.CHROMIUM_FLAGS, browser_site.Site
ensure_pyodide_assets, lay_out = browser_site.ensure_pyodide_assets, browser_site.lay_out

READY_TIMEOUT_MS = 90_000
# The files the worker places in Python's filesystem, exactly as book/quarto/_quarto.yml lists them.
SITE_FILES = json.dumps(yaml.safe_load((ROOT / "book" / "quarto" / "_quarto.yml").read_text(encoding="utf-8"))["pyodide"]["files"])


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
    return ensure_pyodide_assets()


@pytest.fixture(scope="session")
def site(tmp_path_factory, pyodide_dir) -> Site:
    root = tmp_path_factory.mktemp("site")
    lay_out(root)
    served = Site(root)
    yield served
    served.shutdown()


@pytest.fixture(scope="session")
def browser_context(tmp_path_factory):
    if not Path(CHROMIUM).exists():  # never a silent skip: SKIP_BROWSER=1 is the only way not to run these
        pytest.fail(f"{CHROMIUM} is missing: run `make test` (installs it where it can) or "
                    f"`sudo apt-get install -y --no-install-recommends chromium`; SKIP_BROWSER=1 skips the browser tests",
                    pytrace=False)
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
