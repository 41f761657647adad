"""reproduce.py: the orchestrator runs any experiment through base.Experiment alone — its config, its runs
(each once, longest first), its record, its provenance — and keeps fresh results when asked to resume."""

import json
from dataclasses import dataclass

import pytest

from llmparts import reproduce
from llmparts.experiments import REGISTRY, base
from llmparts.provenance import fingerprint

CALLS = []


def square(x: int, threads: int) -> int:
    CALLS.append(x)
    return x * x


@dataclass
class SumRecord:
    total: int


class Squares(base.Experiment):
    """A made-up experiment: it asks for squares and records their sum."""
    name = "squares"
    record_type = SumRecord
    needs_data = False

    def __init__(self, name="squares", xs=(1, 2, 3)):
        self.name, self.xs = name, list(xs)

    def config(self, scale):
        return {"xs": self.xs, "scale": scale}

    def tasks(self, config, scale):
        return [base.Task(f"square {x}", square, {"x": x}, cost=x) for x in config["xs"]]

    def run(self, config, outputs, context):
        return SumRecord(total=sum(outputs.values()))


@pytest.fixture
def registry(monkeypatch):
    """Replace the book's experiments by made-up ones for one test."""
    experiments = {}
    monkeypatch.setattr(reproduce, "REGISTRY", experiments)
    monkeypatch.setattr(reproduce.report, "REGISTRY", experiments)
    CALLS.clear()
    return experiments


def test_an_experiment_is_run_and_saved_with_its_provenance(registry, tmp_path):
    registry["squares"] = Squares()
    assert reproduce.main(["--out_dir", str(tmp_path), "--jobs", "1", "--smoke"]) == 0
    saved = json.loads((tmp_path / "results" / "squares.json").read_text())
    assert saved["experiment"] == "squares" and saved["total"] == 14
    assert saved["config"] == {"xs": [1, 2, 3], "scale": "smoke"} and saved["provenance"]["smoke"] is True
    assert "tests/test_reproduce.py" in saved["provenance"]["sources"]
    assert saved["provenance"]["fingerprint"] == fingerprint(saved["config"], saved["provenance"]["sources"])
    assert CALLS == [3, 2, 1]  # longest first


def test_a_run_two_experiments_ask_for_is_run_once(registry, tmp_path):
    registry["squares"], registry["more"] = Squares(), Squares("more", xs=(3, 4))
    assert reproduce.main(["--out_dir", str(tmp_path), "--jobs", "1"]) == 0
    assert sorted(CALLS) == [1, 2, 3, 4]
    assert json.loads((tmp_path / "results" / "more.json").read_text())["total"] == 25


def test_resume_keeps_fresh_results_and_reruns_stale_ones(registry, tmp_path, capsys):
    registry["squares"], registry["more"] = Squares(), Squares("more", xs=(3, 4))
    assert reproduce.main(["--out_dir", str(tmp_path), "--jobs", "1"]) == 0
    registry["more"] = Squares("more", xs=(5,))  # a changed config makes its results stale
    CALLS.clear()
    assert reproduce.main(["--out_dir", str(tmp_path), "--jobs", "1", "--resume"]) == 0
    assert CALLS == [5]
    assert "squares: results are fresh, kept" in capsys.readouterr().out
    assert json.loads((tmp_path / "results" / "more.json").read_text())["total"] == 25
    CALLS.clear()
    assert reproduce.main(["--out_dir", str(tmp_path), "--jobs", "1", "--resume", "--smoke"]) == 0
    assert sorted(CALLS) == [1, 2, 3, 5]  # smoke results are not the full ones


def test_worker_processes_give_the_same_records(registry, tmp_path):
    registry["squares"] = Squares()
    assert reproduce.main(["--out_dir", str(tmp_path / "one"), "--jobs", "1"]) == 0
    assert reproduce.main(["--out_dir", str(tmp_path / "two"), "--jobs", "2"]) == 0
    one, two = (json.loads((tmp_path / d / "results" / "squares.json").read_text()) for d in ("one", "two"))
    assert one["total"] == two["total"] == 14


@pytest.mark.parametrize("argv, message", [
    (["--only", "ablation,bogus"], "--only ('ablation,bogus') must name experiments from ablation, "),
    (["--jobs", "0"], "--jobs (0) must be a positive integer"),
    (["--threads", "0"], "--threads (0) must be a positive integer"),
])
def test_bad_arguments_exit_2_with_one_clear_message(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        reproduce.parse_args(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("llmparts reproduce: error: ") and message in err and err.count("\n") == 1


def test_missing_dataset_exits_2_with_one_line_before_any_training(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TINYSHAKESPEARE", str(tmp_path / "absent.txt"))
    base.dataset.cache_clear()
    try:
        assert reproduce.main(["--only", "ablation", "--smoke", "--out_dir", str(tmp_path)]) == 2
    finally:
        base.dataset.cache_clear()
    err = capsys.readouterr().err
    assert "absent.txt" in err and "is not a file" in err and "Traceback" not in err
    assert not (tmp_path / "results").exists()


def test_the_registry_finds_every_experiment_module():
    assert list(REGISTRY) == ["ablation", "alignment", "data", "drift", "extrapolation", "generation", "governance",
                              "hands_on", "llama2", "serving", "weights"]
    assert all(isinstance(e, base.Experiment) and e.name == name for name, e in REGISTRY.items())


@pytest.mark.slow
def test_smoke_pipeline_writes_fresh_results_tables_and_figures(tmp_path):
    assert reproduce.main(["--smoke", "--out_dir", str(tmp_path), "--jobs", "2"]) == 0
    for name in REGISTRY:
        data = json.loads((tmp_path / "results" / f"{name}.json").read_text())
        prov = data["provenance"]
        assert prov["smoke"] is True
        assert prov["fingerprint"] == fingerprint(data["config"], prov["sources"])
    ablation = json.loads((tmp_path / "results" / "ablation.json").read_text())
    assert len(ablation["runs"]) == 7 * len(base.TRAINING["smoke"]["seeds"])
    assert set(ablation["summary"]["configs"]) == {r["config"] for r in ablation["runs"]}
    weights = json.loads((tmp_path / "results" / "weights.json").read_text())
    assert (tmp_path / weights["file"]).stat().st_size == weights["bytes"] < 5_000_000
    assert (tmp_path / "_variables.yml").is_file()
    extrapolation = json.loads((tmp_path / "results" / "extrapolation.json").read_text())
    seeds = base.TRAINING["smoke"]["seeds"]
    assert extrapolation["seeds"] == seeds and all(len(v) == len(seeds) for v in extrapolation["losses"].values())
    assert all(r["unseen_cosine"] > 0.999 for r in extrapolation["position_rows"])  # untrained rows: only decayed
    for lang in ("zh", "en"):
        assert (tmp_path / "images" / f"rope_extrapolation.{lang}.png").is_file()
        assert (tmp_path / "results" / "tables" / f"ablation.{lang}.md").is_file()
