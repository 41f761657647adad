"""experiments/governance.py (chapter 07): its runs, its record at smoke scale, the release files it writes,
and what the chapter says about the committed results/governance.json."""

import json

import pytest
import yaml

import booklib as B
from llmparts import gate, model_card
from llmparts.experiments import REGISTRY
from llmparts.experiments.base import Context, Result
from llmparts.experiments.governance import EXPERIMENT, REPRO, SCALES, state_sha256
from llmparts.strings import STRINGS


def test_released_runs_are_the_ablations_llama_runs_and_every_other_run_is_its_own():
    config = EXPERIMENT.config("full")
    tasks = EXPERIMENT.tasks(config, "full")
    ablation = REGISTRY["ablation"]
    shared = {t.key for t in ablation.tasks(ablation.config("full"), "full")} & {t.key for t in tasks}
    assert len(shared) == len(config["released"]["seeds"]) == 3
    assert len({t.key for t in tasks}) == len(tasks) == len(REPRO) + len(config["sizes"]) * len(config["seeds"]) + 3
    assert config["released"]["train"] == ablation.config("full")["train"]


def test_state_sha256_changes_with_one_bit():
    import torch
    state = {"w": torch.zeros(3)}
    flipped = {"w": torch.tensor([0.0, -0.0, 0.0])}  # -0.0 == 0.0, but its sign bit differs
    assert state_sha256(state) == state_sha256({"w": torch.zeros(3)}) != state_sha256(flipped)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    config = EXPERIMENT.config("smoke")
    outputs = {t.label: t.fn(**t.kwargs, threads=1) for t in EXPERIMENT.tasks(config, "smoke")}
    root = tmp_path_factory.mktemp("governance")
    record = EXPERIMENT.run(config, outputs, Context("smoke", 1, root))
    return Result("governance", config, {"wall_time_s": 1.0}, record), root


def test_the_same_run_twice_is_bit_identical_and_another_seed_is_not(smoke):
    repro = smoke[0].record.reproducibility
    assert repro["repeat"]["same_bits"] and repro["repeat"]["max_weight_diff"] == 0
    assert not repro["seed"]["same_bits"] and repro["seed"]["max_weight_diff"] > 0


def test_every_size_is_probed_at_every_step_with_an_auc_and_shares_in_range(smoke):
    result, _ = smoke
    leak = result.record.leak
    assert [(r["size"], r["step"]) for r in leak] == [(s, n) for s in SCALES["smoke"]["sizes"] for n in SCALES["smoke"]["steps"]]
    for row in result.record.memorization + result.record.released:
        assert 0 <= row["auc"] <= 1 and 0 <= row["regurgitated"] <= 1 and 0 <= row["control_regurgitated"] <= 1
        assert "member_losses" not in row  # the per-line losses go to lines.json, not into the record


def test_release_files_are_a_hub_card_a_metrics_file_the_gate_reads_and_the_pages_lines(smoke):
    result, root = smoke
    folder = root / "results" / "governance"
    card_text = (folder / "MODEL_CARD.md").read_text()
    assert card_text == model_card.hf_card(result.record.card)
    meta = yaml.safe_load(card_text.split("---\n")[1])
    assert meta["model-index"][0]["results"][0]["metrics"][0]["value"] == \
        round(result.record.card["metrics"]["val_loss"]["value"], 4)
    released = gate.load_metrics(folder / "metrics.json", "released")
    assert set(released) == set(model_card.METRICS)
    assert gate.verdict(gate.compare(released, released))[0]  # the release passes its own gate
    lines = json.loads((folder / "lines.json").read_text())
    n = SCALES["smoke"]["lines"]
    assert len(lines["released"]["member_losses"]) == len(lines["released"]["held_out_losses"]) == n
    assert set(lines["runs"]) == set(SCALES["smoke"]["sizes"])
    assert all(run["step"] == SCALES["smoke"]["steps"][-1] for run in lines["runs"].values())


def test_report_has_its_tables_figure_and_variables_in_both_languages(smoke):
    report = EXPERIMENT.report(smoke[0])
    assert set(report.tables) == {"governance_repro", "governance_leak", "model_card", "data_card"}
    for name, by_lang in report.tables.items():
        assert set(by_lang) == set(STRINGS)
        assert by_lang["en"].count("\n|") == by_lang["zh"].count("\n|") and "{#tbl-" + name + "}" in by_lang["en"]
    for lang in STRINGS:
        left, right = report.figures["governance_leak"](lang).axes
        assert len(left.lines) == len(SCALES["smoke"]["sizes"]) + 1  # one per size and the chance line
    assert report.variables["governance"]["repro_steps"] == str(SCALES["smoke"]["repro_steps"])


# ---------------------------------------------------------------- chapter 07's claims about the committed results

def committed():
    return json.loads((B.ROOT / "results" / "governance.json").read_text(encoding="utf-8"))


def test_committed_card_and_metrics_are_what_the_generator_makes_of_the_record():
    card, folder = committed()["card"], B.ROOT / "results" / "governance"
    assert (folder / "MODEL_CARD.md").read_text(encoding="utf-8") == model_card.hf_card(card)
    assert json.loads((folder / "metrics.json").read_text()) == json.loads(json.dumps(model_card.release_metrics(card)))


def test_the_card_names_the_weights_the_browser_loads_and_the_fingerprint_of_its_results():
    weights = json.loads((B.ROOT / "results" / "weights.json").read_text())
    data = committed()
    assert data["card"]["weights_sha256"] == weights["sha256"]
    assert data["card"]["provenance"]["fingerprint"] == data["provenance"]["fingerprint"]


def test_the_aucs_the_page_recomputes_from_lines_json_are_the_records():
    from llmparts.memorization import roc_auc
    data, lines = committed(), json.loads((B.ROOT / "results/governance/lines.json").read_text())
    released = lines["released"]
    assert abs(roc_auc([-x for x in released["member_losses"]], [-x for x in released["held_out_losses"]])
               - data["released"][0]["auc"]) < 0.01  # lines.json keeps 4 decimals: a few more ties
    for size, run in lines["runs"].items():
        row = next(r for r in data["memorization"] if r["size"] == size and r["seed"] == data["config"]["seeds"][0]
                   and r["step"] == run["step"])
        assert abs(roc_auc([-x for x in run["member_losses"]], [-x for x in run["held_out_losses"]]) - row["auc"]) < 0.01


def test_leak_grows_with_steps_and_size_from_chance_after_one_pass_and_recitation_comes_last():
    data = committed()
    leak = {(r["size"], r["step"]): r for r in data["leak"]}
    first, last = data["config"]["steps"][0], data["config"]["steps"][-1]
    sizes = data["config"]["sizes"]
    assert all(abs(leak[s, first]["auc"][0] - 0.5) < 0.03 for s in sizes)  # "no size gives anything away"
    assert all(leak[s, last]["auc"][0] > leak[s, first]["auc"][0] for s in sizes)
    assert [leak[s, last]["auc"][0] for s in sizes] == sorted(leak[s, last]["auc"][0] for s in sizes)
    assert data["card"]["metrics"]["membership_auc"]["value"] > 0.55  # "clearly above one half"
    regurgitating = [(s, n) for (s, n), r in leak.items() if r["regurgitated"][0] > 0]
    assert regurgitating == [("large", last)]  # "only the large model at the last step"
    assert all(r["control_regurgitated"][0] == 0 for r in leak.values())


def test_at_full_scale_repeats_and_two_threads_keep_the_bits_float32_moves_them_but_not_the_loss():
    repro = committed()["reproducibility"]
    assert repro["repeat"]["same_bits"] and repro["threads"]["same_bits"]
    assert not repro["float32"]["same_bits"] and abs(repro["float32"]["val_delta"]) < 5e-5  # "agrees to four decimals"
    assert not repro["seed"]["same_bits"] and abs(repro["seed"]["val_delta"]) > 100 * abs(repro["float32"]["val_delta"])
