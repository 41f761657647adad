"""experiments/hands_on.py: the chapter's script, run as a reader runs it, and its table."""

import json
import subprocess
import sys

from llmparts.experiments.base import Result
from llmparts.experiments.hands_on import EXPERIMENT, SCRIPT, HandsOnRecord, HandsOnRow
from llmparts.provenance import project_root


def test_the_script_rejects_zero_steps_with_one_line():
    proc = subprocess.run([sys.executable, SCRIPT, "--steps", "0"], cwd=project_root(), capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.endswith("--steps (0) must be a positive integer\n")


def test_the_script_writes_its_table_as_json_for_the_experiment(tmp_path):
    out = tmp_path / "table.json"
    proc = subprocess.run([sys.executable, SCRIPT, "--steps", "1", "--threads", "1", "--json", str(out)],
                          cwd=project_root(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(out.read_text())["rows"]
    switches = [r["switches"] for r in rows]
    assert len(rows) == 5 and not any(switches[0].values()) and all(switches[-1].values())
    assert [sum(s.values()) for s in switches[1:4]] == [1, 1, 1]
    assert all(r["val_loss"] > 0 and r["params"] > 0 for r in rows)
    assert rows[0]["name"] in proc.stdout


def test_table_labels_the_switches_in_each_language():
    rows = [HandsOnRow("a", {"rmsnorm": False, "swiglu": False, "rope": False}, 1.6361, 620_000),
            HandsOnRow("b", {"rmsnorm": True, "swiglu": False, "rope": False}, 1.6389, 620_000),
            HandsOnRow("c", {"rmsnorm": True, "swiglu": True, "rope": True}, 1.6108, 610_000)]
    report = EXPERIMENT.report(Result("hands_on", EXPERIMENT.config("full"), {}, HandsOnRecord(rows, 246.0)))
    assert report.variables == {"hands_on": {"steps": "2500", "minutes": "4.1"}}
    en, zh = report.tables["hands_on"]["en"], report.tables["hands_on"]["zh"]
    assert "| baseline | 1.6361 | 620,000 | — |" in en and "| +RMSNorm | 1.6389 | 620,000 | +0.0028 |" in en
    assert "| 三個全開（LLaMA 配方） | 1.6108 | 610,000 | -0.0253 |" in zh
