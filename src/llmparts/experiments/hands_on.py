"""The chapter's hands-on script, examples/tiny_modern.py, run exactly as a reader runs it.

Five configs on a 3-layer model, one seed: the table a reader gets on a laptop. The experiment runs the
script in its own process and records the table it writes with --json.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..provenance import project_root
from ..strings import STRINGS
from ..tables import count, loss, pipe_table, signed
from .base import Context, Experiment, Report, Result, Task

SCRIPT = "examples/tiny_modern.py"
STEPS = {"full": 2500, "smoke": 8}


@dataclass
class HandsOnRow:
    name: str
    switches: dict[str, bool]  # rmsnorm, swiglu, rope
    val_loss: float
    params: int


@dataclass
class HandsOnRecord:
    rows: list[HandsOnRow]
    wall_time_s: float  # the whole script, as a reader would wait for it


def run_script(steps: int, seed: int, threads: int) -> dict:
    """python examples/tiny_modern.py --steps N --seed S --threads T, from the project root; its table and its
    wall time."""
    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "table.json"
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, SCRIPT, "--steps", str(steps), "--seed", str(seed),
                               "--threads", str(threads), "--json", str(table)],
                              cwd=project_root(), capture_output=True, text=True)
        wall_time_s = time.perf_counter() - start
        if proc.returncode != 0:
            raise RuntimeError(f"{SCRIPT} exited with {proc.returncode}: {proc.stderr.strip()[-2000:]}")
        return {"rows": json.loads(table.read_text(encoding="utf-8"))["rows"], "wall_time_s": wall_time_s}


class HandsOn(Experiment):
    name = "hands_on"
    sources = (SCRIPT,)
    record_type = HandsOnRecord

    def config(self, scale):
        return {"steps": STEPS[scale], "seed": 0}

    def tasks(self, config, scale):
        return [Task("hands_on", run_script, dict(steps=config["steps"], seed=config["seed"]),
                     cost=5 * config["steps"])]

    def run(self, config, outputs, context: Context) -> HandsOnRecord:
        (out,) = outputs.values()
        return HandsOnRecord(rows=[HandsOnRow(**row) for row in out["rows"]], wall_time_s=out["wall_time_s"])

    def describe(self, task, output):
        return ", ".join(f"{row['val_loss']:.4f}" for row in output["rows"])

    def report(self, result: Result) -> Report:
        record = result.record
        variables = {"steps": str(result.config["steps"]), "minutes": f"{record.wall_time_s / 60:.1f}"}
        return Report(variables={"hands_on": variables},
                      tables={"hands_on": {lang: report_table(result, lang) for lang in STRINGS}})


def report_label(switches: dict, lang: str) -> str:
    t = STRINGS[lang]["hands_on"]
    on = [k for k, v in switches.items() if v]
    if not on:
        return t["baseline"]
    if len(on) == len(switches):
        return t["all"]
    names = {"rmsnorm": "RMSNorm", "swiglu": "SwiGLU", "rope": "RoPE"}
    return " ".join("+" + names[k] for k in on)


def report_table(result: Result, lang: str) -> str:
    t, record = STRINGS[lang]["hands_on"], result.record
    base = record.rows[0].val_loss
    rows = [[report_label(r.switches, lang), loss(r.val_loss), count(r.params),
             "—" if i == 0 else signed(r.val_loss - base)] for i, r in enumerate(record.rows)]
    caption = t["caption"].format(steps=result.config["steps"], minutes=f"{record.wall_time_s / 60:.1f}")
    return pipe_table(t["header"], rows, caption, "hands_on")


EXPERIMENT = HandsOn()
