"""Every chapter with cells is also a Jupyter notebook (book/website.py, Quarto's ipynb format through the
pyodide-cells filter), and each notebook runs top to bottom in a plain Python 3 kernel with the installed
`llmparts`, no browser and no network.

The notebooks come from the same render as the site (tests/sitelib.py), so this module needs Quarto and
Chromium (Quarto draws the roadmap for notebooks with it): it is marked `browser` with the site's tests.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time

import nbformat
import pytest
from nbclient import NotebookClient

import llmparts.notebook
from booklib import ROOT, code_blocks
from sitelib import LANGS, SITE, pages_with_cells, rendered_book

NOTEBOOKS = [(lang, page) for lang in LANGS for page in pages_with_cells(lang)]
NOTEBOOK_TIMEOUT_S = 300  # per cell; a whole chapter runs in seconds (measured: under 10 s each)


def read_notebook(lang, page):
    rendered_book()
    return nbformat.read(SITE / lang / f"{page}.ipynb", as_version=4)


def cell_blocks(lang, page):
    text = (ROOT / "book" / lang / f"{page}.qmd").read_text(encoding="utf-8")
    return [info for info, _ in code_blocks(text) if info == "{pyodide}" or "notebook-only" in info]


@pytest.mark.browser
@pytest.mark.parametrize("lang,page", NOTEBOOKS, ids=lambda v: str(v))
def test_notebook_is_valid_and_has_a_code_cell_for_every_cell_of_the_page(lang, page):
    nb = read_notebook(lang, page)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[0].metadata.tags == ["setup"] and "use_book_files()" in code[0].source
    assert len(code) - 1 == len(cell_blocks(lang, page)), "a cell of the page is missing from its notebook"
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
    assert any(c.cell_type == "markdown" and len(c.source) > 200 for c in nb.cells), "the prose is missing"
    solutions = [c for c in code if "solution" in c.metadata.get("tags", [])]
    assert all(c.metadata.jupyter.source_hidden for c in solutions)


@pytest.mark.browser
@pytest.mark.parametrize("lang,page", NOTEBOOKS, ids=lambda v: str(v))
def test_page_links_its_notebook(lang, page):
    rendered_book()
    html = (SITE / lang / f"{page}.html").read_text(encoding="utf-8")
    assert f'href="{page}.ipynb"' in html


@pytest.mark.browser
@pytest.mark.parametrize("lang,page", NOTEBOOKS, ids=lambda v: str(v))
def test_notebook_runs_top_to_bottom_in_a_python3_kernel_without_an_error(lang, page, tmp_path):
    nb = read_notebook(lang, page)
    shutil.copy(SITE / lang / f"{page}.ipynb", tmp_path)
    started = time.monotonic()
    NotebookClient(nb, timeout=NOTEBOOK_TIMEOUT_S, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [f"cell {i}: {o.ename}: {o.evalue}" for i, c in enumerate(nb.cells) if c.cell_type == "code"
              for o in c.outputs if o.output_type == "error"]
    stderr = [o.text for c in nb.cells if c.cell_type == "code"
              for o in c.outputs if o.output_type == "stream" and o.name == "stderr" and "Traceback" in o.text]
    assert errors == [] and stderr == [], errors + stderr
    assert (tmp_path / llmparts.notebook.WEIGHTS).exists()  # the setup cell put the weights beside it
    assert time.monotonic() - started < 120


def test_use_book_files_copies_the_weights_from_the_repository_and_never_overwrites(tmp_path):
    target = llmparts.notebook.use_book_files(tmp_path)
    assert target.read_bytes() == (ROOT / "results" / "weights" / "char_llama.npz").read_bytes()
    target.write_bytes(b"the reader's own")
    llmparts.notebook.use_book_files(tmp_path)
    assert target.read_bytes() == b"the reader's own"


def test_use_book_files_says_where_it_looked_when_the_weights_are_nowhere(tmp_path, monkeypatch):
    monkeypatch.setattr(llmparts.notebook, "REPOSITORY", tmp_path / "no-checkout")
    with pytest.raises(FileNotFoundError, match=r"char_llama\.npz \(the book's trained char model\) is not in .*"
                                                 r"pip install -e \."):
        llmparts.notebook.use_book_files(tmp_path)


OPTIONAL = [(lang, page) for lang, page in NOTEBOOKS if any("notebook-only" in info for info in cell_blocks(lang, page))]


@pytest.mark.browser
@pytest.mark.parametrize("lang,page", [n for n in OPTIONAL if n[0] == "en"], ids=lambda v: str(v))
def test_optional_pytorch_cell_is_off_by_default_and_trains_the_real_model_when_switched_on(lang, page, tmp_path):
    nb = read_notebook(lang, page)
    [cell] = [c for c in nb.cells if "notebook-only" in c.metadata.get("tags", [])]
    assert "TRAIN_WITH_PYTORCH = False" in cell.source
    setup = next(c for c in nb.cells if "setup" in c.metadata.get("tags", []))
    code = re.sub(r"^(STEPS\b.*?)300", r"\g<1>20", cell.source.replace("TRAIN_WITH_PYTORCH = False",
                                                                        "TRAIN_WITH_PYTORCH = True"), flags=re.M)
    code = setup.source + "\n\n" + code  # as in the notebook: the setup cell first
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "validation loss after 20 steps" in run.stdout, run.stdout


def test_both_editions_have_the_same_optional_pytorch_cells():
    assert [page for lang, page in OPTIONAL if lang == "zh"] == [page for lang, page in OPTIONAL if lang == "en"]


def test_use_book_files_gives_a_notebook_every_data_file_the_page_gets():
    """The page's worker places `pyodide.files` in Python's folder; a notebook gets the same data files."""
    import booklib as B

    page_files = {f["dest"]: f["src"] for f in B.project()["pyodide"]["files"] if not f["src"].startswith("src/")}
    assert {name: path for name, (path, _) in llmparts.notebook.BOOK_FILES.items()} == page_files
