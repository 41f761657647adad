"""Every {pyodide} cell of every chapter, both languages, runs in the browser in page order without an error.

Each chapter goes through the extension's filter (pandoc), gets _quarto.yml's `pyodide:` options with the local
Pyodide, and is run with Run-all. Exercises run their solution (as tests/test_book_cells.py does in CPython),
then their check must report "correct".
"""

from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted(p for lang in ("zh", "en") for p in (ROOT / "book" / lang).glob("*.qmd")
                  if "```{pyodide}" in p.read_text(encoding="utf-8"))
CHAPTER_TIMEOUT_MS = 300_000


def chapter_markdown(chapter: Path) -> str:
    options = yaml.safe_load((ROOT / "_quarto.yml").read_text(encoding="utf-8"))["pyodide"]
    options["base-url"] = "pyodide/"
    front = yaml.safe_dump({"pyodide": options}, allow_unicode=True)
    return f"---\n{front}---\n\n{chapter.read_text(encoding='utf-8')}"


@pytest.mark.skipif(not CHAPTERS, reason="no chapter has {pyodide} cells yet")
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_cell_of_the_chapter_runs_in_page_order_without_error(chapter, site, browser_context):
    lang = "zh-TW" if chapter.parent.name == "zh" else "en"
    url = site.page(f"chapter-{chapter.parent.name}-{chapter.stem}", chapter_markdown(chapter), lang)
    page = browser_context.new_page()
    js_errors = []
    page.on("pageerror", lambda exc: js_errors.append(str(exc)))
    try:
        page.goto(url)
        page.wait_for_selector('.pyodide-page-bar[data-state="ready"]', timeout=CHAPTER_TIMEOUT_MS)
        assert "missing" not in page.locator(".pyodide-status").inner_text()
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
        n_cells = page.locator("div.pyodide-cell").count()
        page.wait_for_function(
            "() => window.pyodideCells.cells.every(c => Number(c.node.dataset.runs || 0) >= (c.autorun ? 2 : 1))",
            timeout=CHAPTER_TIMEOUT_MS)
        errors = page.evaluate("""() => [...document.querySelectorAll('div.pyodide-cell')]
            .filter(c => c.querySelector('.pyodide-error'))
            .map(c => `${c.id}: ${c.querySelector('.pyodide-error').textContent}`)""")
        assert errors == [], f"{chapter.name}: {len(errors)} of {n_cells} cells failed:\n" + "\n".join(errors)
        for label in exercises:
            box = page.locator(f"#pyodide-cell-{label}")
            box.locator("button.pyodide-check").click()
            page.wait_for_selector(f'#pyodide-cell-{label}[data-checks="1"]', timeout=CHAPTER_TIMEOUT_MS)
            feedback = box.locator(".pyodide-feedback, .pyodide-error").all_inner_texts()
            assert feedback == ["Correct!" if lang == "en" else "答對了！"], f"exercise in cell {label}: {feedback}"
        assert js_errors == []
    finally:
        page.close()
