"""`llmparts gate`: may a candidate replace the released model? Not when a metric got worse beyond the noise.

Both sides are metrics.json files as llmparts.model_card.release_metrics writes them (beside MODEL_CARD.md):
each metric's value, its seed noise (sample std over the seeds) and which way is better. A metric regresses
when the candidate is worse than the release by more than SIGMAS x the release's seed noise: a change that
small is what retraining the same recipe with another seed already does.

Exit status: 0 accepted, 1 refused (one line naming the metric, the delta and the threshold), 2 bad input.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from .checks import ArgumentParser
from .provenance import project_root

SIGMAS = 2.0
RELEASED = "results/governance/metrics.json"


class GateError(ValueError):
    """An input the gate cannot read; the message names the file and what is wrong."""


def load_metrics(path: Path, role: str) -> dict:
    """name -> {value, noise, lower_is_better} from a metrics.json, checked field by field."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GateError(f"{role} metrics ({path}) do not exist") from None
    except (OSError, UnicodeDecodeError) as e:
        raise GateError(f"{role} metrics ({path}) cannot be read: {e}") from None
    except json.JSONDecodeError as e:
        raise GateError(f"{role} metrics ({path}) are not valid JSON: {e}") from None
    metrics = data.get("metrics") if isinstance(data, dict) else None
    if not isinstance(metrics, dict) or not metrics:
        raise GateError(f"{role} metrics ({path}) must hold a non-empty object under \"metrics\"")
    for name, m in metrics.items():
        for field, kind in (("value", "a finite number"), ("noise", "a finite number >= 0")):
            v = m.get(field) if isinstance(m, dict) else None
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or \
                    (field == "noise" and v < 0):
                raise GateError(f"{role} metric {name}.{field} ({v!r}) in {path} must be {kind}")
        if not isinstance(m.get("lower_is_better"), bool):
            raise GateError(f"{role} metric {name}.lower_is_better ({m.get('lower_is_better')!r}) in {path} "
                            f"must be true or false")
    return metrics


def compare(released: dict, candidate: dict, sigmas: float = SIGMAS) -> list[dict]:
    """Per released metric: how much worse the candidate is (negative: better) and the threshold."""
    missing = [name for name in released if name not in candidate]
    if missing:
        raise GateError(f"the candidate lacks metric(s) {', '.join(missing)} that the release has")
    rows = []
    for name, r in released.items():
        c = candidate[name]
        if c["lower_is_better"] != r["lower_is_better"]:
            raise GateError(f"metric {name} is lower_is_better={c['lower_is_better']} in the candidate but "
                            f"{r['lower_is_better']} in the release")
        worse = (c["value"] - r["value"]) * (1 if r["lower_is_better"] else -1)
        rows.append({"metric": name, "released": r["value"], "candidate": c["value"], "worse_by": worse,
                     "noise": r["noise"], "threshold": sigmas * r["noise"]})
    return rows


def verdict(rows: list[dict], sigmas: float = SIGMAS) -> tuple[bool, str]:
    """(accepted, the one line that says why): refused names the regression furthest beyond its threshold."""
    regressed = [r for r in rows if r["worse_by"] > r["threshold"]]
    if not regressed:
        return True, (f"accepted: {len(rows)} metrics, none worse than the release by more than {sigmas:g} x its "
                      f"seed std (" + ", ".join(f"{r['metric']} {r['candidate'] - r['released']:+.4f}" for r in rows)
                      + ")")
    r = max(regressed, key=lambda r: r["worse_by"] - r["threshold"])
    more = f"; {len(regressed) - 1} more metric(s) regressed" if len(regressed) > 1 else ""
    return False, (f"refused: {r['metric']} is worse by {r['worse_by']:.4f} ({r['candidate']:.4f} against the "
                   f"released {r['released']:.4f}), beyond the noise threshold {r['threshold']:.4f} "
                   f"({sigmas:g} x seed std {r['noise']:.4f}){more}")


def main(argv=None) -> int:
    p = ArgumentParser(prog="llmparts gate",
                       description="Refuse a candidate whose metrics regress beyond the release's seed noise.")
    p.add_argument("--candidate", required=True, help="the candidate's metrics.json")
    p.add_argument("--released", default=str(project_root() / RELEASED), help="the release's metrics.json")
    p.add_argument("--sigmas", type=float, default=SIGMAS, help="threshold in seed standard deviations")
    args = p.parse_args(argv)
    try:
        if not (math.isfinite(args.sigmas) and args.sigmas >= 0):
            raise GateError(f"--sigmas ({args.sigmas}) must be a finite number >= 0")
        rows = compare(load_metrics(args.released, "released"), load_metrics(args.candidate, "candidate"),
                       args.sigmas)
    except GateError as e:
        print(f"llmparts gate: error: {e}", file=sys.stderr)
        return 2
    accepted, line = verdict(rows, args.sigmas)
    print(f"llmparts gate: {line}", file=sys.stdout if accepted else sys.stderr)
    return 0 if accepted else 1
