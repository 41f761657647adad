"""experiments/drift.py (chapter 08): the run it shares, the experiment at smoke scale, its report, and what
the chapter says about the committed results/drift.json."""

import json
import math
import shutil

import pytest
import torch

import booklib as B
from llmparts import drift, driftlab, notebook, recipes
from llmparts.experiments import REGISTRY
from llmparts.experiments import drift as experiment
from llmparts.experiments.base import Result
from llmparts.experiments.drift import EXPERIMENT, DriftRecord
from llmparts.model import GPT
from llmparts.strings import STRINGS


def test_drift_scores_the_browsers_model_and_trains_nothing_of_its_own():
    weights = REGISTRY["weights"]
    (task,) = EXPERIMENT.tasks(EXPERIMENT.config("full"), "full")
    (shared,) = weights.tasks(weights.config("full"), "full")
    assert task.key == shared.key  # the ablation's LLaMA seed-0 run: one training for all three
    assert EXPERIMENT.config("full")["model"] == recipes.llama().to_dict()


def test_config_pins_the_snapshot_so_a_new_one_makes_the_results_stale():
    config, manifest = EXPERIMENT.config("full"), driftlab.manifest(B.ROOT)
    assert config["snapshot"] == {"commit": manifest["commit"],
                                  **{lang: f["sha256"] for lang, f in manifest["files"].items()}}


@pytest.fixture(scope="module")
def smoke_result():
    torch.manual_seed(0)
    config = EXPERIMENT.config("smoke")
    record = experiment.measure(config, GPT(recipes.llama()).state_dict())
    return Result("drift", json.loads(json.dumps(config)), {"wall_time_s": 60.0}, DriftRecord(**record))


def test_smoke_run_measures_every_threshold_and_seed(smoke_result):
    record, config = smoke_result.record, smoke_result.config
    assert [row["h"] for row in record.detector] == config["thresholds"]
    f = config["finetune"]
    assert [(run["replay_rows"], run["seed"]) for run in record.adaptation] == [
        (rows, seed) for rows in f["replay_rows"] for seed in f["seeds"]]
    steps = list(range(0, config["finetune"]["steps"] + 1, config["finetune"]["eval_every"]))
    assert [p["step"] for p in record.adaptation[0]["curve"]] == steps
    assert {len(p) for p in record.pools.values()} == {config["calibration"], config["pool"]}
    assert all(v == round(v, experiment.DECIMALS) for v in record.pools["modern"])  # what the page rebuilds from
    assert record.domains["zh"]["unknown_share"] > 0.5 and "window_loss" not in record.domains["zh"]


def test_report_has_its_tables_figures_and_variables_in_both_languages(smoke_result):
    report = EXPERIMENT.report(smoke_result)
    assert set(report.tables) == {"drift_domains", "drift_detector", "drift_adapt"}
    for name, by_lang in report.tables.items():
        assert set(by_lang) == set(STRINGS)
        assert by_lang["en"].count("\n|") == by_lang["zh"].count("\n|") and "{#tbl-" + name + "}" in by_lang["en"]
    for lang in STRINGS:
        assert len(report.figures["drift_adapt"](lang).axes[0].lines) == 4  # both domains, with and without replay
        assert len(report.figures["drift_tradeoff"](lang).axes[0].lines) == 3  # thresholds, rate, chosen one
    variables = report.variables["drift"]
    assert variables["minutes"] == "1.0" and variables["vocab"] == "65"
    assert variables["operating"]["h"] == f"{smoke_result.record.operating['h']:g}"


# ---------------------------------------------------------------- chapter 08's claims about results/drift.json

def committed() -> dict:
    return json.loads((B.ROOT / "results" / "drift.json").read_text(encoding="utf-8"))


def test_chinese_is_mostly_outside_the_char_vocabulary_and_modern_english_barely():
    d = committed()["domains"]
    assert d["shakespeare"]["unknown_share"] == 0.0
    assert d["zh"]["unknown_share"] > 0.5 and d["en"]["unknown_share"] < 0.05
    assert d["en"]["dropped_share"] == d["en"]["unknown_share"]  # dropped, all of them, and said so


def test_bpe_encodes_everything_and_chinese_costs_bytes_not_merges():
    d = committed()["domains"]
    assert d["zh"]["bytes_per_char"] > 2.5 and d["en"]["bytes_per_char"] < 1.01  # mostly three-byte characters
    # merges learned on Shakespeare shorten English to under one token per character, but Chinese keeps
    # (nearly) one token per byte
    assert d["en"]["bpe_tokens_per_char"] < 0.6 and d["zh"]["bpe_tokens_per_char"] > 4 * d["en"]["bpe_tokens_per_char"]
    assert d["zh"]["bpe_tokens_per_char"] > 0.95 * d["zh"]["bytes_per_char"]


def test_modern_english_costs_the_model_far_more_than_held_out_shakespeare():
    d, ref = committed()["domains"], committed()["reference"]
    gap = d["en"]["window_loss"] - d["shakespeare"]["window_loss"]
    assert gap > 4 * ref["std"]  # far beyond one batch's noise


def test_the_chosen_threshold_keeps_false_alarms_within_the_stated_rate_on_fresh_streams():
    result = committed()
    config, op = result["config"], result["operating"]
    assert op["within_rate"] and op["false_alarm"] <= config["rate"]
    bound = config["rate"] + 2 * math.sqrt(config["rate"] * (1 - config["rate"]) / config["streams"])
    assert op["holdout_false_alarm"] <= bound
    assert op["missed"] == 0.0 and op["delay_mean"] < config["ramp"]  # found before the drift is complete


def test_a_higher_threshold_trades_fewer_false_alarms_for_a_longer_delay():
    rows = committed()["detector"]
    false_alarms = [row["false_alarm"] for row in rows]
    delays = [row["delay_mean"] for row in rows if row["delay_mean"] is not None]  # h=1 alarms before any drift
    assert false_alarms == sorted(false_alarms, reverse=True) and delays == sorted(delays)
    assert false_alarms[0] > 0.5 > false_alarms[-1]


def test_fine_tuning_alone_forgets_more_shakespeare_than_it_gains_on_modern_english():
    plain = committed()["summary"]["0"]
    (gain, gain_std), (forgetting, forgetting_std) = plain["gain"], plain["forgetting"]
    assert gain > 5 * max(gain_std, 1e-3) and forgetting > 5 * max(forgetting_std, 1e-3)
    assert forgetting > gain


def test_replaying_shakespeare_keeps_most_of_the_gain_and_cuts_the_forgetting():
    result = committed()
    plain, replay = (result["summary"][str(rows)] for rows in result["config"]["finetune"]["replay_rows"])
    assert replay["forgetting"][0] < plain["forgetting"][0] / 2
    assert replay["gain"][0] > plain["gain"][0] / 2


def test_the_pools_the_page_uses_rebuild_the_recorded_reference():
    result = committed()
    mean, std = drift.reference(result["pools"]["calibration"], result["config"]["batch_size"])
    assert (mean, std) == (result["reference"]["mean"], result["reference"]["std"])


def test_a_tenth_of_modern_english_moves_a_batch_by_about_half_its_spread():
    d, ref = committed()["domains"], committed()["reference"]
    shift = 0.1 * (d["en"]["window_loss"] - d["shakespeare"]["window_loss"]) / ref["std"]
    assert 0.35 < shift < 0.75  # "about half of one batch's spread": no single batch can show it


def test_a_threshold_of_4_alarms_on_almost_every_stream_that_never_drifts():
    (row,) = [row for row in committed()["detector"] if row["h"] == 4]
    assert row["false_alarm"] > 0.9


@pytest.fixture
def book_files(tmp_path, monkeypatch):
    """The page's working folder: the files _quarto.yml hands Pyodide, from the committed results."""
    for name, (path, _) in notebook.BOOK_FILES.items():
        shutil.copy(B.ROOT / path, tmp_path / name)
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("lang", B.LANGS)
def test_tokenizer_cell_shows_every_character_of_the_sentence_unknown_and_three_bytes_each(lang, book_files, capsys):
    ns = B.run_cells_until(lang, "08-drift", "byte_level = BPETokenizer()")
    assert len(ns["unknown"]) == len(ns["sentence"])  # Chinese punctuation included
    assert len(ns["byte_level"].encode(ns["sentence"])) == 3 * len(ns["sentence"])
    assert "65" in capsys.readouterr().out  # the error names the vocabulary's size


@pytest.mark.parametrize("lang", B.LANGS)
def test_detector_cell_alarms_after_the_drift_starts_and_before_the_ramp_ends(lang, book_files):
    ns = B.run_cells_until(lang, "08-drift", "drift.first_alarm(s, h)")
    assert ns["h"] == committed()["operating"]["h"]
    assert ns["start"] <= ns["alarm"] < ns["start"] + ns["ramp"]
    assert ns["s"][: ns["start"]].max() < ns["h"]  # quiet before the drift, at this seed


def test_most_of_the_gain_comes_early_while_the_forgetting_keeps_growing():
    by_step = committed()["summary"]["0"]["by_step"]
    modern = [row["modern"][0] for row in by_step]
    shakespeare = [row["shakespeare"][0] for row in by_step]
    assert modern[0] - modern[2] > 0.6 * (modern[0] - modern[-1])  # "the first few dozen steps"
    assert shakespeare == sorted(shakespeare)  # rises at every evaluation
    late = len(by_step) // 2
    assert shakespeare[-1] - shakespeare[late] > 3 * abs(modern[-1] - modern[late])  # "a lot ... for a little"
