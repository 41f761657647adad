"""gate.py and `llmparts gate`: a candidate is refused only when a metric regresses beyond the seed noise."""

import json
import subprocess
import sys

import pytest

from llmparts import gate


def metrics(**values):
    """A metrics.json body: name -> (value, noise), lower is better except for names ending in _up."""
    return {"model": "m", "metrics": {name: {"value": v, "noise": s, "seeds": 3, "lower_is_better": not name.endswith("_up")}
                                      for name, (v, s) in values.items()}}


def write(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(body if isinstance(body, str) else json.dumps(body))
    return path


def llmparts_gate(*args):
    """The command as a person types it: `llmparts gate ...` (here through python -m llmparts.cli)."""
    proc = subprocess.run([sys.executable, "-m", "llmparts.cli", "gate", *map(str, args)], capture_output=True,
                          text=True, timeout=120)
    return proc.returncode, proc.stdout.strip().splitlines(), proc.stderr.strip().splitlines()


RELEASED = metrics(val_loss=(1.50, 0.01), membership_auc=(0.52, 0.005), accuracy_up=(0.80, 0.02))


# ---------------------------------------------------------------- the rule

def test_a_regression_within_two_seed_stds_is_accepted_and_one_beyond_is_refused():
    within = gate.compare(RELEASED["metrics"], metrics(val_loss=(1.519, 0), membership_auc=(0.52, 0),
                                                       accuracy_up=(0.80, 0))["metrics"])
    assert gate.verdict(within)[0] is True
    beyond = gate.compare(RELEASED["metrics"], metrics(val_loss=(1.521, 0), membership_auc=(0.52, 0),
                                                       accuracy_up=(0.80, 0))["metrics"])
    accepted, line = gate.verdict(beyond)
    assert accepted is False
    assert "val_loss is worse by 0.0210" in line and "threshold 0.0200" in line and "seed std 0.0100" in line


def test_higher_is_better_metrics_regress_downwards_and_improvements_never_refuse():
    down = metrics(val_loss=(1.40, 0), membership_auc=(0.40, 0), accuracy_up=(0.75, 0))["metrics"]
    accepted, line = gate.verdict(gate.compare(RELEASED["metrics"], down))
    assert not accepted and line.startswith("refused: accuracy_up is worse by 0.0500")
    up = metrics(val_loss=(1.40, 0), membership_auc=(0.40, 0), accuracy_up=(0.95, 0))["metrics"]
    assert gate.verdict(gate.compare(RELEASED["metrics"], up))[0]


def test_the_refusal_names_the_metric_furthest_beyond_its_threshold_and_counts_the_rest():
    worse = metrics(val_loss=(1.53, 0), membership_auc=(0.60, 0), accuracy_up=(0.80, 0))["metrics"]
    _, line = gate.verdict(gate.compare(RELEASED["metrics"], worse))
    assert line.startswith("refused: membership_auc") and "1 more metric(s) regressed" in line


def test_a_release_without_seed_noise_refuses_any_regression():
    released = metrics(val_loss=(1.5, 0.0))["metrics"]
    assert not gate.verdict(gate.compare(released, metrics(val_loss=(1.5001, 0))["metrics"]))[0]
    assert gate.verdict(gate.compare(released, metrics(val_loss=(1.5, 0))["metrics"]))[0]


# ---------------------------------------------------------------- the command as typed

def test_cli_accepts_with_exit_0_and_one_line(tmp_path):
    released, cand = write(tmp_path, "r.json", RELEASED), write(tmp_path, "c.json", RELEASED)
    code, out, err = llmparts_gate("--released", released, "--candidate", cand)
    assert code == 0 and len(out) == 1 and out[0].startswith("llmparts gate: accepted: 3 metrics") and not err


def test_cli_refuses_with_exit_1_and_one_line_naming_metric_delta_and_threshold(tmp_path):
    released = write(tmp_path, "r.json", RELEASED)
    cand = write(tmp_path, "c.json", metrics(val_loss=(1.60, 0), membership_auc=(0.52, 0), accuracy_up=(0.8, 0)))
    code, out, err = llmparts_gate("--released", released, "--candidate", cand)
    assert code == 1 and not out and err == [
        "llmparts gate: refused: val_loss is worse by 0.1000 (1.6000 against the released 1.5000), beyond the noise "
        "threshold 0.0200 (2 x seed std 0.0100)"]


def test_cli_sigmas_moves_the_threshold(tmp_path):
    released = write(tmp_path, "r.json", RELEASED)
    cand = write(tmp_path, "c.json", metrics(val_loss=(1.525, 0), membership_auc=(0.52, 0), accuracy_up=(0.8, 0)))
    assert llmparts_gate("--released", released, "--candidate", cand)[0] == 1
    assert llmparts_gate("--released", released, "--candidate", cand, "--sigmas", "3")[0] == 0


@pytest.mark.parametrize("candidate, words", [
    (None, "candidate metrics (MISSING) do not exist"),
    ("{not json", "candidate metrics (PATH) are not valid JSON: Expecting property name"),
    ({"metrics": {}}, "must hold a non-empty object under \"metrics\""),
    ({"metrics": {"val_loss": {"value": "1.5", "noise": 0, "lower_is_better": True}}}, "val_loss.value ('1.5')"),
    ({"metrics": {"val_loss": {"value": 1.5, "noise": -1, "lower_is_better": True}}}, "must be a finite number >= 0"),
    (metrics(val_loss=(1.5, 0)), "the candidate lacks metric(s) membership_auc, accuracy_up"),
], ids=["missing", "malformed", "empty", "string-value", "negative-noise", "lacks-metric"])
def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, candidate, words):
    released = write(tmp_path, "r.json", RELEASED)
    path = tmp_path / "missing.json" if candidate is None else write(tmp_path, "c.json", candidate)
    code, out, err = llmparts_gate("--released", released, "--candidate", path)
    words = words.replace("MISSING", str(path)).replace("PATH", str(path))
    assert code == 2 and not out and len(err) == 1 and err[0].startswith("llmparts gate: error: ") and words in err[0]


def test_cli_refuses_a_negative_sigmas_and_a_missing_candidate_flag(tmp_path):
    released = write(tmp_path, "r.json", RELEASED)
    code, _, err = llmparts_gate("--released", released, "--candidate", released, "--sigmas", "-1")
    assert code == 2 and err == ["llmparts gate: error: --sigmas (-1.0) must be a finite number >= 0"]
    code, _, err = llmparts_gate("--released", released)
    assert code == 2 and len(err) == 1 and "--candidate" in err[0]
