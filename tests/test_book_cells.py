"""Run every {pyodide} cell of every page in CPython: the fast twin of the browser test.

Each page runs in its own subprocess, in page order, in one namespace, with the working
directory holding exactly the files `pyodide: files:` puts into the browser. `llmparts`
is importable only from those copies and `import torch` fails, as under Pyodide. For an
exercise the starter cell is skipped; its solution runs, then its check.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

import booklib as B

RUNNER = r'''
import importlib.abc, json, os, sys, traceback

class NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("torch is not available in the browser: cells may use numpy only")
        return None

# Forget the editable install of llmparts and expose only the files copied into cwd.
sys.meta_path[:] = [NoTorch()] + [f for f in sys.meta_path if "editable" not in repr(f).lower()]
sys.path[:] = [os.getcwd()] + [p for p in sys.path if p and not p.rstrip("/").endswith("/src")]

cells = json.load(open(sys.argv[1], encoding="utf-8"))
namespace = {"__name__": "__main__"}
for n, (label, code) in enumerate(cells, 1):
    try:
        exec(compile(code, label, "exec"), namespace)
    except BaseException:
        print(f"cell {n} of {len(cells)} ({label}) failed:\n{code}\n", file=sys.stderr)
        traceback.print_exc()
        sys.exit(1)
import llmparts
assert os.path.dirname(llmparts.__file__) == os.path.join(os.getcwd(), "llmparts"), llmparts.__file__
print(f"ran {len(cells)} cells")
'''


def run_order(cells, page):
    """(label, code) in the order the CPython twin runs them: starters are skipped; at an
    exercise's first cell its solution runs, then its check."""
    by_exercise = {}
    for opts, code in cells:
        if "exercise" in opts:
            by_exercise.setdefault(str(opts["exercise"]), {})[opts.get("role", "starter")] = code
    order, done = [], set()
    for i, (opts, code) in enumerate(cells, 1):
        ex = str(opts["exercise"]) if "exercise" in opts else None
        if ex is None:
            order.append((f"{page} cell {i}", code))
        elif ex not in done:
            done.add(ex)
            parts = by_exercise[ex]
            for role in ("solution", "check"):
                assert role in parts, f"{page}: exercise {ex} has no {role} cell"
                order.append((f"{page} exercise {ex} {role}", parts[role]))
    return order


def stage_files(dest_dir):
    for f in B.project()["pyodide"]["files"]:
        src = B.ROOT / f["src"]
        assert src.exists(), f"{f['src']} (a pyodide file) is missing: run `make smoke` or `make reproduce`"
        target = dest_dir / f["dest"]
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)


PAGES = [(lang, page) for lang in B.LANGS for page in B.ALL_PAGES]


@pytest.mark.parametrize("lang,page", PAGES)
def test_every_cell_of_the_page_runs_in_order_without_torch(lang, page, tmp_path):
    if not B.page_source(lang, page).exists():
        pytest.skip(f"book/{lang}/{page}.qmd is not written yet (test_book.py fails on that)")
    cells = B.pyodide_cells(B.read_page(lang, page))
    if not cells:
        return
    work = tmp_path / "home"
    work.mkdir()
    stage_files(work)
    (tmp_path / "cells.json").write_text(json.dumps(run_order(cells, f"book/{lang}/{page}.qmd")), encoding="utf-8")
    (tmp_path / "runner.py").write_text(RUNNER, encoding="utf-8")
    env = {**os.environ, "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1", "PYTHONPATH": ""}
    out = subprocess.run([sys.executable, str(tmp_path / "runner.py"), str(tmp_path / "cells.json")],
                         cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-4000:]


def test_exercises_run_solution_then_check_and_skip_the_starter():
    cells = [({}, "a = 1"), ({"exercise": "e1"}, "x = ..."), ({"exercise": "e1", "role": "check"}, "assert x == 2"),
             ({"exercise": "e1", "role": "solution"}, "x = 2"), ({}, "b = 2")]
    assert [code for _, code in run_order(cells, "p")] == ["a = 1", "x = 2", "assert x == 2", "b = 2"]


def test_a_failing_cell_or_torch_import_fails_the_page(tmp_path):
    (tmp_path / "runner.py").write_text(RUNNER, encoding="utf-8")
    (tmp_path / "llmparts").mkdir()
    (tmp_path / "llmparts/__init__.py").write_text("", encoding="utf-8")
    for code, message in [("import torch", "torch is not available"), ("assert 1 == 2, 'wrong'", "wrong")]:
        (tmp_path / "cells.json").write_text(json.dumps([["p cell 1", "x = 1"], ["p cell 2", code]]), encoding="utf-8")
        out = subprocess.run([sys.executable, "runner.py", "cells.json"], cwd=tmp_path, capture_output=True, text=True)
        assert out.returncode == 1 and "cell 2 of 2" in out.stderr and message in out.stderr
