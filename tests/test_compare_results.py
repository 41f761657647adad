"""scripts/compare_results.py: two results folders agree on every number, timings and code provenance aside."""

import json
import math

import scriptlib

compare_results = scriptlib.load("compare_results")

RECORD = {"experiment": "ablation", "config": {"iters": 2000},
          "provenance": {"commit": "a" * 40, "fingerprint": "f1", "sources": ["x.py"], "wall_time_s": 10.0,
                         "threads": 1},
          "runs": [{"config": "baseline", "val_loss": 1.8123456789, "tokens_per_sec": 9000.0, "mfu": 0.1}]}


def folders(tmp_path, new_record):
    for name, record in (("old", RECORD), ("new", new_record)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "ablation.json").write_text(json.dumps(record))
    return tmp_path / "old", tmp_path / "new"


def test_timings_and_code_provenance_are_ignored_and_new_keys_listed(tmp_path):
    new = json.loads(json.dumps(RECORD))
    new["provenance"].update(commit="b" * 40, fingerprint="f2", sources=["y.py"], wall_time_s=99.0)
    new["runs"][0].update(tokens_per_sec=1.0, mfu=0.5)
    new["summary"] = {"noise": 0.01}
    lines, same = compare_results.compare_folders(*folders(tmp_path, new))
    assert same and lines[0].startswith("ablation.json: IDENTICAL") and "only in new: summary" in lines[0]


def test_a_loss_that_moved_in_its_last_bit_is_a_difference(tmp_path, capsys):
    new = json.loads(json.dumps(RECORD))
    new["runs"][0]["val_loss"] = math.nextafter(1.8123456789, 2.0)
    old_dir, new_dir = folders(tmp_path, new)
    assert compare_results.main([str(old_dir), str(new_dir)]) == 1
    out = capsys.readouterr().out
    assert "ablation.json: DIFFERENT" in out and f"runs[0].val_loss: 1.8123456789 -> {new['runs'][0]['val_loss']!r}" in out


def test_a_missing_value_or_file_is_a_difference(tmp_path):
    new = json.loads(json.dumps(RECORD))
    del new["provenance"]["threads"]
    old_dir, new_dir = folders(tmp_path, new)
    (old_dir / "llama2.json").write_text("{}")
    lines, same = compare_results.compare_folders(old_dir, new_dir)
    assert not same and "  missing: provenance.threads" in lines and any("llama2.json: MISSING" in x for x in lines)
