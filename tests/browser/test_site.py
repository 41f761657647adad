"""The book as readers get it: both editions rendered by Quarto (book/website.py), served on 127.0.0.1, in Chromium.

The site is rendered once per test run into build/test-site with one change from the published one: Pyodide
loads from the offline copy in build/pyodide instead of the CDN (the same 0.27.7 files, still checked against
their Subresource Integrity hashes). Every other host fails to resolve, and a test fails on any request to it.
"""

from __future__ import annotations

import re
import threading
import urllib.request
from pathlib import Path

import pytest

import booklib as B
from booklib import ROOT, code_blocks
from sitelib import LANGS, SITE, pages, pages_with_cells, rendered_book, website

pytestmark = pytest.mark.browser

PAGES = pages("en")
CHAPTERS_WITH_CELLS = [(lang, page) for lang in LANGS for page in pages_with_cells(lang)]
PAGE_TIMEOUT_MS = 300_000
CORRECT = {"zh": "答對了！", "en": "Correct!"}


@pytest.fixture(scope="session")
def rendered_site(tmp_path_factory, pyodide_dir):
    """Both editions rendered by Quarto (tests/sitelib.py), served; yields (base URL, render seconds)."""
    seconds = rendered_book()
    root = tmp_path_factory.mktemp("served")
    for lang in LANGS:
        (root / lang).symlink_to(SITE / lang)
    (root / "index.html").symlink_to(SITE / "index.html")
    (root / "pyodide").symlink_to(pyodide_dir)
    server = website.serve(root)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/", seconds
    server.shutdown()


@pytest.fixture
def open_site_page(rendered_site, browser_context):
    """open_site_page("en/02-modern-parts.html") -> (page, console errors, page errors)."""
    base, _ = rendered_site
    opened = []

    def _open(rel):
        page = browser_context.new_page()
        opened.append(page)
        console_errors, page_errors = [], []
        page.on("console", lambda msg: console_errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: page_errors.append(str(exc)))
        page.goto(base + rel)
        return page, console_errors, page_errors

    yield _open
    for page in opened:
        page.close()


def source_blocks(lang, page):
    text = (ROOT / "book" / lang / f"{page}.qmd").read_text(encoding="utf-8")
    return [body for info, body in code_blocks(text) if info == "{pyodide}"]


# ---------------------------------------------------------------- the render itself
def test_render_log_of_each_edition_has_no_warning_and_every_chapter_lands_at_lang_slash_name(rendered_site):
    for lang in LANGS:
        log = (ROOT / "build" / "site-src" / f"render-{lang}.log").read_text(encoding="utf-8")
        assert "WARN" not in log and "ERROR" not in log
        for page in PAGES:
            assert (SITE / lang / f"{page}.html").exists()
        edition = SITE / lang
        copied = sorted(p.relative_to(edition).as_posix() for folder in ("src", "results")
                        for p in (edition / folder).rglob("*") if p.is_file())
        # Each resource once, where the pages ask for it: no _site/ inside _site/, no stray sources.
        assert not list(edition.rglob("_site")), f"{lang}: a rendered site inside the rendered site"
        assert copied == sorted(B.project()["project"]["resources"])


@pytest.mark.parametrize("lang", LANGS)
def test_rendered_html_has_no_raw_shortcode_unresolved_reference_or_missing_number(rendered_site, lang):
    for page in PAGES:
        text = (SITE / lang / f"{page}.html").read_text(encoding="utf-8")
        assert "{{&lt;" not in text and "{{<" not in text, f"{lang}/{page}: raw shortcode"
        assert "?@" not in text, f"{lang}/{page}: unresolved cross-reference"
        assert "?var:" not in text, f"{lang}/{page}: a {{< var >}} key missing from _variables.yml"


def test_chapter_numbers_follow_the_roadmap_and_the_preface_is_unnumbered(rendered_site, open_site_page):
    for lang in LANGS:
        page, _, _ = open_site_page(f"{lang}/index.html")
        entries = page.locator("#quarto-sidebar .sidebar-item-text").all_inner_texts()
        numbered = {re.match(r"\s*(\d+)", e).group(1): e for e in entries if re.match(r"\s*\d+\s", e)}
        assert entries[0].strip() == {"zh": "前言", "en": "Preface"}[lang], entries
        for number in "123456789":
            page_name = f"0{number}"
            assert number in numbered, f"{lang}: no chapter {number} in the sidebar {entries}"
            link = page.locator("#quarto-sidebar a", has_text=numbered[number]).first.get_attribute("href")
            assert Path(link).name.startswith(page_name), f"{lang}: chapter {number} is {link}"


NOTEBOOK_ONLY = re.compile(r'(?ms)^::: \{\.content-visible when-format="ipynb"\}\n.*?^:::$')
WIDE = "\u2e80-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60"


def test_a_line_break_inside_chinese_prose_renders_as_no_space(rendered_site):
    """`各組種子間標準差的\n合併值` must read 各組種子間標準差的合併值, not 各組種子間標準差的 合併值."""
    joins = 0
    for page in PAGES:
        source = B.prose((ROOT / "book" / "zh" / f"{page}.qmd").read_text(encoding="utf-8"))  # code keeps its lines
        source = NOTEBOOK_ONLY.sub("", source)  # not in the HTML at all
        rendered = (SITE / "zh" / f"{page}.html").read_text(encoding="utf-8")
        for before, after in re.findall(rf"(?m)([{WIDE}]{{3}})\n([{WIDE}]{{3}})", source):
            assert before + after in rendered, f"zh/{page}: '{before} {after}' is split where the source breaks a line"
            joins += 1
    assert joins > 50  # the Chinese chapters do wrap their prose


# ---------------------------------------------------------------- every page, both editions
@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("page_name", PAGES)
def test_page_loads_without_console_errors_or_foreign_requests(rendered_site, open_site_page, browser_context,
                                                               lang, page_name):
    before = len(browser_context.foreign_hosts)
    page, console_errors, page_errors = open_site_page(f"{lang}/{page_name}.html")
    page.wait_for_load_state("networkidle")
    blocks = source_blocks(lang, page_name)
    rendered = page.locator("div.pyodide-cell, pre.pyodide-solution, pre.pyodide-check").count()
    assert rendered == len(blocks), f"{lang}/{page_name}: {rendered} cells on the page, {len(blocks)} in the source"
    if blocks:
        page.wait_for_selector('.pyodide-page-bar[data-state="ready"]', timeout=PAGE_TIMEOUT_MS)
    assert page_errors == [] and console_errors == [], (page_errors, console_errors)
    assert browser_context.foreign_hosts[before:] == []


@pytest.mark.parametrize("lang,page_name", CHAPTERS_WITH_CELLS, ids=lambda v: str(v))
def test_every_cell_of_the_chapter_runs_in_page_order_on_the_rendered_page(open_site_page, lang, page_name):
    page, console_errors, page_errors = open_site_page(f"{lang}/{page_name}.html")
    page.wait_for_selector('.pyodide-page-bar[data-state="ready"]', timeout=PAGE_TIMEOUT_MS)
    # Exercises run their solution (as tests/test_book_cells.py does in CPython); their check must pass.
    exercises = page.evaluate("""() => {
        const solutions = {};
        for (const pre of document.querySelectorAll("pre.pyodide-solution")) solutions[pre.dataset.exercise] = pre.textContent;
        const checked = [];
        for (const cell of window.pyodideCells.cells) {
            const id = cell.exercise;
            if (id && solutions[id] !== undefined) cell.editor.setCode(solutions[id]);
            if (id && document.querySelector(`pre.pyodide-check[data-exercise="${id}"]`)) checked.push(cell.label);
        }
        return checked;
    }""")
    # Autorun cells may already be running; Run-all queues every cell once more, in page order.
    page.locator("button.pyodide-run-all").click()
    page.wait_for_function(
        "() => window.pyodideCells.cells.every(c => Number(c.node.dataset.runs || 0) >= (c.autorun ? 2 : 1))",
        timeout=PAGE_TIMEOUT_MS)
    errors = page.evaluate("""() => [...document.querySelectorAll('div.pyodide-cell')]
        .filter(c => c.querySelector('.pyodide-error'))
        .map(c => `${c.id}: ${c.querySelector('.pyodide-error').textContent}`)""")
    assert errors == [], f"{lang}/{page_name}: cells failed:\n" + "\n".join(errors)
    for label in exercises:
        box = page.locator(f"#pyodide-cell-{label}")
        box.locator("button.pyodide-check").click()
        page.wait_for_selector(f'#pyodide-cell-{label}[data-checks="1"]', timeout=PAGE_TIMEOUT_MS)
        assert box.locator(".pyodide-feedback, .pyodide-error").all_inner_texts() == [CORRECT[lang]]
    assert page_errors == [] and console_errors == []


@pytest.mark.parametrize("lang", LANGS)
def test_no_table_runs_out_of_the_text_column(open_site_page, lang):
    for page_name in PAGES:
        page, _, _ = open_site_page(f"{lang}/{page_name}.html")
        overflowing = page.evaluate("""() => {
            const main = document.querySelector('#quarto-document-content').getBoundingClientRect();
            return [...document.querySelectorAll('#quarto-document-content table')]
                .filter(t => t.getBoundingClientRect().right > main.right + 1).map(t => t.textContent.slice(0, 60));
        }""")
        assert overflowing == [], f"{lang}/{page_name}: tables wider than the column: {overflowing}"
        page.close()


@pytest.mark.parametrize("lang", LANGS)
def test_notebook_numbering_map_agrees_with_the_numbers_quarto_gave_the_book(rendered_site, lang):
    """Notebooks number other chapters' sections, figures and tables from website.crossref_targets."""
    targets = website.crossref_targets(lang)
    assert len(targets) > 50
    for ident, target in targets.items():
        text = (SITE / lang / target["page"]).read_text(encoding="utf-8")
        if target["kind"] in ("figure", "table"):
            caption = re.search(rf'id="{ident}".*?(?:Figure|Table|圖|表)(?:&nbsp;|\xa0|\s)([\dA-Z.]+)', text, re.S)
            assert caption and caption.group(1) == target["number"], (lang, ident, target)
        elif target["kind"] == "appendix":  # its title reads "Appendix A — …" / "附錄 A — …"
            title = re.search(rf'id="{ident}"[^>]*>(?:Appendix|附錄)\s+([A-Z])\b', text)
            assert title and title.group(1) == target["number"], (lang, ident, target)
        else:
            heading = re.search(rf'id="{ident}"[^>]*>\s*<span class="(?:header-section|chapter)-number">([\dA-Z.]+)<',
                                text)
            assert heading and heading.group(1) == target["number"], (lang, ident, target)


# ---------------------------------------------------------------- between the editions
@pytest.mark.parametrize("page_name", PAGES)
def test_language_switch_leads_to_the_same_chapter_in_the_other_edition_and_back(rendered_site, open_site_page,
                                                                                 page_name):
    base, _ = rendered_site
    page, _, _ = open_site_page(f"zh/{page_name}.html")
    for lang, html_lang in (("en", "en"), ("zh", "zh-Hant")):
        page.locator("#lang-switch").click()
        # Quarto's own script shows a book's index.html as its folder.
        expected = f"{base}{lang}/" + ("" if page_name == "index" else f"{page_name}.html")
        page.wait_for_url(re.compile(re.escape(expected) + ("(index.html)?$" if page_name == "index" else "$")))
        assert page.locator("html").get_attribute("lang") == html_lang


def test_language_chooser_at_the_site_root_links_both_editions(rendered_site):
    base, _ = rendered_site
    text = urllib.request.urlopen(base + "index.html").read().decode("utf-8")
    assert 'href="zh/index.html"' in text and 'href="en/index.html"' in text


# ---------------------------------------------------------------- search
@pytest.mark.parametrize("lang,query,expected_page", [("zh", "旋轉", "02-modern-parts"),
                                                      ("en", "rotation", "02-modern-parts")])
def test_search_box_finds_a_section_of_the_edition_from_a_query_in_its_language(open_site_page, lang, query,
                                                                                expected_page):
    page, _, _ = open_site_page(f"{lang}/index.html")
    page.locator("#quarto-search .aa-DetachedSearchButton, #quarto-search button").first.click()
    page.locator("input.aa-Input").fill(query)
    page.wait_for_selector(".aa-Item a", timeout=30_000)
    hrefs = page.locator(".aa-Item a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    assert any(expected_page in (h or "") for h in hrefs), hrefs
