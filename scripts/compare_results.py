"""Compare two results/ folders value by value, timings aside: did a change keep every number?

    python scripts/compare_results.py OLD/results NEW/results

Every results/NAME.json of OLD must exist in NEW with every value equal (floats bit for bit), except
- timings, which change from run to run: any key named like TIMING_KEYS, wherever it stands;
- the provenance fields that name the code rather than measure anything: PROVENANCE_KEYS.
A key only NEW has (a conclusion now saved in the record, say) is listed, not counted as a difference.
Exit status 0 when nothing differs, 1 otherwise, 2 on bad usage.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

TIMING_KEYS = ("wall_time_s", "task_wall_time_s", "tokens_per_sec", "tokens_per_sec_cache", "tokens_per_sec_no_cache",
               "speedup", "mfu", "minutes")
PROVENANCE_KEYS = ("commit", "dirty", "fingerprint", "sources")


def compare(old, new, path: str, out: dict):
    """Walk old and new together; record in out what was compared, ignored, added or different."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in old:
            where = f"{path}.{key}" if path else key
            if key in TIMING_KEYS:
                out["timings"] += 1
            elif path == "provenance" and key in PROVENANCE_KEYS:
                out["provenance"].add(key)
            elif key not in new:
                out["missing"].append(where)
            else:
                compare(old[key], new[key], where, out)
        out["added"] += [f"{path}.{key}" if path else key for key in new if key not in old]
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new)):
            compare(a, b, f"{path}[{i}]", out)
    else:
        out["compared"] += 1
        if type(old) is not type(new) or old != new:
            out["different"].append(f"{path}: {old!r} -> {new!r}")


def compare_folders(old_dir: Path, new_dir: Path) -> tuple[list[str], bool]:
    """One line per results file, and whether every one is identical."""
    lines, same = [], True
    for old_path in sorted(Path(old_dir).glob("*.json")):
        new_path = Path(new_dir) / old_path.name
        if not new_path.is_file():
            lines.append(f"{old_path.name}: MISSING from {new_dir}")
            same = False
            continue
        out = {"compared": 0, "timings": 0, "provenance": set(), "missing": [], "added": [], "different": []}
        compare(json.loads(old_path.read_text(encoding="utf-8")), json.loads(new_path.read_text(encoding="utf-8")),
                "", out)
        verdict = "IDENTICAL" if not (out["missing"] or out["different"]) else "DIFFERENT"
        same &= verdict == "IDENTICAL"
        line = (f"{old_path.name}: {verdict}: {out['compared']} values equal"
                f"{'' if verdict == 'IDENTICAL' else ' or not'}; ignored {out['timings']} timings and provenance "
                f"{', '.join(sorted(out['provenance'])) or 'nothing'}")
        if out["added"]:
            line += f"; only in new: {', '.join(out['added'])}"
        lines.append(line)
        lines += [f"  differs: {d}" for d in out["different"][:20]] + [f"  missing: {m}" for m in out["missing"][:20]]
    return lines, same


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or not all(Path(a).is_dir() for a in argv):
        print("usage: python scripts/compare_results.py OLD/results NEW/results (two folders)", file=sys.stderr)
        return 2
    lines, same = compare_folders(Path(argv[0]), Path(argv[1]))
    print("\n".join(lines))
    print("every number identical, timings aside" if same else "NUMBERS DIFFER")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
