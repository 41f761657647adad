"""experiments/alignment.py (chapter 09): the runs it asks for, a smoke-scale run and its report, and what
the chapter says about the committed results/alignment.json."""

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import booklib as B
from llmparts import recipes
from llmparts.experiments.alignment import EXPERIMENT, FILES, AlignmentRecord, report_cell
from llmparts.experiments.base import Context, Result
from llmparts.experiments.weights import EXPERIMENT as WEIGHTS
from llmparts.model import GPT
from llmparts.numpy_model import NumpyGPT
from llmparts.strings import STRINGS


def test_base_model_is_the_browsers_model_trained_once():
    ours, theirs = EXPERIMENT.tasks(EXPERIMENT.config("full"), "full"), WEIGHTS.tasks(WEIGHTS.config("full"), "full")
    assert [t.key for t in ours] == [t.key for t in theirs]  # reproduce runs the shared task once


def test_full_scale_config_sweeps_beta_over_the_seeds():
    config = EXPERIMENT.config("full")
    assert len(config["betas"]) >= 3 and len(config["seeds"]) >= 3
    assert config["prompt_len"] + config["completion_len"] == recipes.llama().block_size


@pytest.fixture(scope="module")
def smoke_result(tmp_path_factory):
    root = tmp_path_factory.mktemp("alignment")
    config = EXPERIMENT.config("smoke")
    base = SimpleNamespace(state_dict=GPT(recipes.llama()).state_dict())  # what the shared task sends back
    record = EXPERIMENT.run(config, {"base": base}, Context("smoke", 1, root))
    return root, Result("alignment", config, {"wall_time_s": 90.0}, record)


def test_smoke_run_measures_every_stage_and_beta_for_every_seed(smoke_result):
    _, result = smoke_result
    config, runs = result.config, result.record.runs
    assert len(runs) == len(config["seeds"]) * (2 + len(config["betas"]))
    for run in runs:
        assert 0 <= run["reward"] <= 1 and np.isfinite(run["kl"]) and np.isfinite(run["val_loss"])
        if run["stage"] in ("base", "sft"):
            assert run["kl"] == 0.0  # measured against itself
    assert set(result.record.summary["stats"]) == {"base", "sft"} | {f"beta={b:g}" for b in config["betas"]}


def test_smoke_run_exports_sft_and_dpo_weights_the_numpy_twin_loads(smoke_result):
    root, result = smoke_result
    for name, path in FILES.items():
        assert result.record.weights[name]["bytes"] == (root / path).stat().st_size
        model = NumpyGPT.from_npz(root / path)
        assert model.config == recipes.llama()


def test_record_survives_json(smoke_result):
    _, result = smoke_result
    data = json.loads(json.dumps({"config": result.config, "provenance": result.provenance,
                                  **result.record.__dict__}))
    assert EXPERIMENT.load(data).record == result.record


def test_report_has_its_tables_figure_and_variables_in_both_languages(smoke_result):
    _, result = smoke_result
    report = EXPERIMENT.report(result)
    assert set(report.tables) == {"alignment", "alignment_samples"}
    for name, by_lang in report.tables.items():
        assert set(by_lang) == set(STRINGS)
        assert by_lang["en"].count("\n|") == by_lang["zh"].count("\n|") and "{#tbl-" + name + "}" in by_lang["en"]
    for lang in STRINGS:
        assert len(report.figures["alignment_tradeoff"](lang).axes[0].lines) >= 2
    v = report.variables["alignment"]
    assert v["minutes"] == "1.5" and v["speaker"] == "ROMEO"
    assert v["best"] == v[f"beta_{result.record.summary['best_beta']:g}".replace(".", "_")]


@pytest.mark.parametrize("text, cell", [("ROMEO:\nAy", "`ROMEO:⏎Ay`"), ("a|b", "`a\\|b`"), ("x`y", "`x'y`"),
                                        ("$$ *a* _b_", "`$$ *a* _b_`")])
def test_samples_become_one_literal_markdown_cell(text, cell):
    assert report_cell(text) == cell


# ---------------------------------------------------------------- chapter 09's claims about results/alignment.json

def committed() -> dict:
    return json.loads((B.ROOT / "results" / "alignment.json").read_text(encoding="utf-8"))


def stats() -> dict:
    return committed()["summary"]["stats"]


def test_sft_raises_the_reward_far_beyond_the_seeds_and_costs_loss_on_ordinary_text():
    s = stats()
    assert s["sft"]["reward"][0] - s["base"]["reward"][0] > 3 * (s["sft"]["reward"][1] + s["base"]["reward"][1])
    assert s["sft"]["speaker"][0] > 0.5 > s["base"]["speaker"][0]
    assert s["sft"]["val_loss"][0] > s["base"]["val_loss"][0]


def test_committed_weights_are_the_ones_the_page_loads():
    record = committed()
    for name, path in FILES.items():
        assert record["weights"][name]["bytes"] == (B.ROOT / path).stat().st_size


def test_dpo_at_the_best_beta_beats_sft_beyond_the_seeds_spread():
    s, best = stats(), committed()["summary"]["best_beta"]
    dpo = s[f"beta={best:g}"]
    assert dpo["reward"][0] - s["sft"]["reward"][0] > dpo["reward"][1] + s["sft"]["reward"][1]
    assert best != min(committed()["config"]["betas"])


def test_smallest_beta_travels_furthest_and_loses_reward_and_the_speaker_without_looping():
    s, summary = stats(), committed()["summary"]
    small, best = s[f"beta={summary['smallest_beta']:g}"], s[f"beta={summary['best_beta']:g}"]
    assert small["kl"][0] == max(v["kl"][0] for v in s.values()) and small["kl"][0] > 5 * best["kl"][0]
    assert small["reward"][0] < s["sft"]["reward"][0] and small["speaker"][0] < s["sft"]["speaker"][0]
    assert abs(small["repetition"][0] - s["sft"]["repetition"][0]) < 0.01  # degraded, but not a loop
    assert small["val_loss"][0] > s["sft"]["val_loss"][0]


def test_smallest_beta_samples_break_the_name_line():
    shown = committed()["samples"][f"beta={committed()['summary']['smallest_beta']:g}"]
    assert any(not text.startswith("ROMEO:\n") for text in shown)
