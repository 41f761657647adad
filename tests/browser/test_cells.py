"""Cells running in headless Chromium with offline Pyodide 0.27.7 (see conftest.py)."""

import base64

import pytest

pytestmark = pytest.mark.browser


def test_numpy_cell_shows_stdout_and_trailing_expression_value(open_page, browser_context):
    p = open_page(["import numpy as np\nprint(np.arange(4) * 3)\nnp.float64(2.5) * 2"])
    assert p.status() == "Python ready"
    p.run(1)
    assert p.output(1, "stdout") == ["[0 3 6 9]\n"]
    assert p.output(1, "value") == ["np.float64(5.0)"]
    assert p.output(1, "error") == []
    assert p.js_errors == []
    assert browser_context.foreign_hosts == []


def test_matplotlib_figure_is_loaded_on_import_and_shown_as_png(open_page):
    p = open_page(["import matplotlib.pyplot as plt\nplt.plot([0, 1, 4, 9])\nplt.title('squares');"])
    p.run(1)
    images = p.cell(1).locator("img.pyodide-figure")
    assert images.count() == 1
    src = images.first.get_attribute("src")
    assert src.startswith("data:image/png;base64,")
    assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    assert images.first.evaluate("img => img.naturalWidth") > 200
    assert images.first.get_attribute("alt") == "Figure 1 from cell 1"
    assert p.output(1, "error") == [] and p.output(1, "value") == []  # trailing ';' hides the Text value


def test_traceback_is_shown_and_the_next_cell_still_runs_in_the_same_namespace(open_page):
    p = open_page(["x = 41\ndef f():\n    return 1 / 0\nf()", "x + 1"])
    p.run(1)
    [error] = p.output(1, "error")
    assert "ZeroDivisionError: division by zero" in error
    assert 'File "<cell 1>", line 3, in f' in error and "return 1 / 0" in error
    assert "_pyodide" not in error  # the runtime's own frames are hidden
    p.run(2)
    assert p.output(2, "value") == ["42"]
    assert p.output(2, "error") == []


def test_runaway_loop_is_stopped_by_the_time_limit_and_a_fresh_runtime_takes_over(open_page):
    p = open_page(["y = 1", "#| timeout: 3\nwhile True:\n    pass", "'y' in globals(), 6 * 7"])
    p.run(1)
    p.run(2)
    [error] = p.output(2, "error")
    assert "longer than 3 s" in error and "restarted" in error
    p.wait_ready()
    p.run(3)
    assert p.output(3, "value") == ["(False, 42)"]  # state was reset, the new runtime works


def test_exercise_check_reports_wrong_answer_then_correct_and_reveals_hint_and_solution(open_page):
    starter = '#| exercise: double\n#| hint: "Multiply by two."\ndef double(x):\n    return x'
    solution = "#| exercise: double\n#| role: solution\ndef double(x):\n    return 2 * x"
    check = '#| exercise: double\n#| role: check\nassert double(3) == 6, "double(3) should be 6"'
    p = open_page([starter, solution, check])
    assert p.page.locator("div.pyodide-cell").count() == 1  # solution and check are not cells
    box = p.cell(1)
    hint = box.locator(".pyodide-hint")
    assert hint.is_hidden()
    box.get_by_role("button", name="Hint").click()
    assert hint.inner_text() == "Multiply by two."
    box.get_by_role("button", name="Check double").click()
    p.wait_runs(1, 1, attr="checks")
    assert box.locator(".pyodide-feedback").inner_text() == "Not yet: double(3) should be 6"
    solution_button = box.get_by_role("button", name="Solution")
    assert solution_button.get_attribute("aria-expanded") == "false"
    solution_button.click()
    assert box.locator(".pyodide-solution-code").inner_text() == "def double(x):\n    return 2 * x"
    box.locator(".cm-content").click()
    p.page.keyboard.press("Control+a")
    p.page.keyboard.press("Delete")
    p.page.keyboard.insert_text("def double(x):\n    return x + x")
    box.get_by_role("button", name="Check double").click()
    p.wait_runs(1, 2, attr="checks")
    assert box.locator(".pyodide-feedback").inner_text() == "Correct!"


def test_edited_cell_runs_with_shift_enter_and_reset_restores_the_original(open_page):
    p = open_page(["print('original')"])
    editor = p.cell(1).locator(".cm-content")
    editor.click()
    p.page.keyboard.press("Control+a")
    p.page.keyboard.insert_text("print('edited')")
    p.page.keyboard.press("Shift+Enter")
    p.wait_runs(1, 1)
    assert p.output(1, "stdout") == ["edited\n"]
    p.cell(1).get_by_role("button", name="Reset cell 1 to its original code").click()
    assert p.editor_text(1) == "print('original')"
    assert p.output(1, "stdout") == []
    p.run(1, runs=2)
    assert p.output(1, "stdout") == ["original\n"]


def test_run_all_runs_every_cell_in_page_order(open_page):
    p = open_page(["import time\norder = []\ntime.sleep(0.3)\norder.append(1)", "order.append(2)",
                   "order.append(3)\norder"])
    p.page.get_by_role("button", name="Run every cell on this page in order").click()
    p.wait_runs(3, 1)
    assert p.output(3, "value") == ["[1, 2, 3]"]


def test_autorun_cells_run_when_ready_and_read_only_cells_cannot_be_edited(open_page):
    p = open_page(["#| autorun: true\n#| edit: false\nauto = 'ran'\nauto"])
    p.wait_runs(1, 1)
    assert p.output(1, "value") == ["'ran'"]
    assert p.cell(1).locator(".cm-content").get_attribute("contenteditable") == "false"
    assert p.cell(1).locator("button.pyodide-reset").count() == 0


def test_page_in_traditional_chinese_gets_chinese_interface_strings(open_page):
    p = open_page(["1 + 1"], lang="zh-TW", name="zh")
    assert p.status() == "Python 已就緒"
    assert p.cell(1).locator("button.pyodide-run").inner_text() == "執行"
    assert p.cell(1).locator("button.pyodide-run").get_attribute("aria-label") == "執行第 1 格"


def test_unreachable_pyodide_shows_a_clear_load_failure_and_cells_say_they_cannot_run(open_page):
    # The default CDN: every host but 127.0.0.1 is blocked in these tests, as when a reader is offline.
    p = open_page(["1 + 1"], name="offline", wait=False,
                  **{"base-url": "https://cdn.jsdelivr.net/pyodide/v0.27.7/full/", "load-timeout": 30})
    p.page.wait_for_selector('.pyodide-page-bar[data-state="failed"]')
    assert p.status().startswith("Python failed to load:")
    assert "Check your connection" in p.status()
    p.run(1)
    assert p.output(1, "error") == ["Python could not load, so this cell cannot run."]


def test_core_file_that_fails_its_integrity_hash_is_refused(open_page, site, pyodide_dir):
    tampered = site.root / "tampered"
    tampered.mkdir(exist_ok=True)
    for f in pyodide_dir.iterdir():
        if f.name != "pyodide.asm.wasm" and not (tampered / f.name).exists():
            (tampered / f.name).symlink_to(f)
    wasm = tampered / "pyodide.asm.wasm"
    if not wasm.exists():
        data = bytearray((pyodide_dir / "pyodide.asm.wasm").read_bytes())
        data[-1] ^= 1  # one flipped bit in the last byte
        wasm.write_bytes(bytes(data))
    p = open_page(["1 + 1"], name="tampered", wait=False, **{"base-url": "tampered/", "load-timeout": 40})
    p.page.wait_for_selector('.pyodide-page-bar[data-state="failed"]')
    assert p.status().startswith("Python failed to load:")
    assert "pyodide.asm.wasm could not be fetched or failed its integrity check" in p.status()
