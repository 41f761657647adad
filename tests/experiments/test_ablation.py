"""experiments/ablation.py: what each part buys, decided once from the seeds' losses, and how the book shows it."""

import pytest

from llmparts import recipes
from llmparts.experiments.ablation import EXPERIMENT, AblationRecord, AblationRun, summarize, verdict
from llmparts.experiments.base import Result

# Two seeds per variant at mean +/- 0.01: every std is 0.014142, so noise = 0.0141 and the
# beyond-noise threshold is 2 x 0.014142 = 0.0283.
MEANS = {"baseline": 1.80, "rmsnorm": 1.81, "swiglu": 1.70, "rope": 1.65, "gqa": 1.83, "mqa": 1.85, "llama": 1.58}
PARAMS = {"baseline": 802_816, "rmsnorm": 802_816, "swiglu": 802_688, "rope": 794_624, "gqa": 769_024,
          "mqa": 752_640, "llama": 728_576}
KV = {"baseline": 4096, "rmsnorm": 4096, "swiglu": 4096, "rope": 4096, "gqa": 2048, "mqa": 1024, "llama": 2048}
NORM_STATS = {"rmsnorm": 1, "llama": 1}


def make_runs(**changes) -> list[AblationRun]:
    """changes: variant -> dict of fields to override in both of its runs."""
    return [AblationRun(**{"config": name, "seed": seed, "val_loss": MEANS[name] + sign * 0.01,
                           "params": PARAMS[name], "kv_bytes_per_token": KV[name],
                           "norm_stats": NORM_STATS.get(name, 2), "tokens_per_sec": 10_000.0 + 1000 * seed,
                           "mfu": 0.1, "wall_time_s": 100.0, **changes.get(name, {})})
            for name in MEANS for seed, sign in ((0, -1), (1, 1))]


def make_result(runs=None) -> Result:
    runs = make_runs() if runs is None else runs
    config = {**EXPERIMENT.config("full"), "seeds": [0, 1]}
    return Result("ablation", config, {"threads": 1}, AblationRecord(runs=runs, summary=summarize(runs)))


def test_variants_are_the_recipes_ablation_over_every_seed():
    config = EXPERIMENT.config("full")
    tasks = EXPERIMENT.tasks(config, "full")
    assert [(t.kwargs["name"], t.kwargs["seed"]) for t in tasks] == \
        [(name, seed) for seed in config["seeds"] for name in recipes.ABLATION]
    assert config["model"] == recipes.BASELINE_SETTINGS and config["configs"] == recipes.ABLATION


def test_summary_has_seed_means_deltas_noise_and_additivity():
    summary = summarize(make_runs())
    stats = summary.configs
    assert stats["swiglu"].mean == pytest.approx(1.70)
    assert stats["swiglu"].std == pytest.approx(0.0141421, abs=1e-6)
    assert stats["rope"].delta == pytest.approx(-0.15)
    assert summary.noise == pytest.approx(0.0141421, abs=1e-6)
    assert summary.additivity.predicted == pytest.approx(1.80 + 0.01 - 0.10 - 0.15 + 0.03)
    assert summary.additivity.gap == pytest.approx(0.01)
    assert summary.drop_pct == pytest.approx(100 * 0.22 / 1.80)


def test_verdicts_follow_loss_beyond_noise_and_cost_savings():
    stats = summarize(make_runs()).configs
    # GQA (+0.03) and MQA (+0.05) save KV bytes but lose more than the 0.0283 threshold: not "economy".
    assert {name: s.verdict for name, s in stats.items()} == {
        "baseline": "reference", "rmsnorm": "economy", "swiglu": "accuracy", "rope": "accuracy",
        "gqa": "cheaper_but_worse", "mqa": "cheaper_but_worse", "llama": "accuracy"}
    assert stats["gqa"].beyond_noise and stats["gqa"].cheaper and not stats["rmsnorm"].beyond_noise


def test_a_variant_without_savings_is_within_noise_or_worse_not_economy():
    runs = make_runs(rmsnorm={"norm_stats": 2},  # pretend it saved nothing
                     swiglu={"val_loss": 1.90})   # worse by 0.10, far beyond the 0.0283 threshold
    stats = summarize(runs).configs
    assert stats["rmsnorm"].verdict == "noise"
    assert stats["swiglu"].verdict == "worse"  # SwiGLU's 128 fewer parameters (rounding, 0.02%) are not a saving


@pytest.mark.parametrize("delta, cheaper, expected", [
    (-0.05, False, "accuracy"), (-0.05, True, "accuracy"),
    (0.01, True, "economy"), (-0.01, True, "economy"), (0.0283, True, "economy"),  # at the threshold: not beyond
    (0.03, True, "cheaper_but_worse"), (0.03, False, "worse"),
    (0.01, False, "noise"), (-0.01, False, "noise"),
])
def test_economy_needs_a_saving_and_a_loss_not_worse_than_twice_the_noise(delta, cheaper, expected):
    assert verdict(delta, threshold=0.0283, cheaper=cheaper) == expected


def test_missing_variant_is_refused_by_name():
    with pytest.raises(ValueError, match=r"lack configs \['mqa'\]"):
        summarize([r for r in make_runs() if r.config != "mqa"])


def test_the_record_round_trips_through_json_with_its_conclusions():
    from llmparts.experiments.base import from_json, to_json
    record = make_result().record
    assert from_json(AblationRecord, to_json(record)) == record


def test_variables_hold_every_contract_key_with_formatted_values():
    v = EXPERIMENT.report(make_result()).variables
    a = v["ablation"]
    assert (a["iters"], a["seeds"], a["batch_size"], a["block_size"], a["noise"]) == ("2000", "2", "12", "64", "0.0141")
    assert (a["threshold"], a["noise_factor"]) == ("0.0283", "2")
    assert a["swiglu"] == {"val_loss": "1.7000", "val_loss_std": "0.0141", "delta": "-0.1000", "params": "802,688",
                           "kv_bytes": "4,096", "verdict_en": "accuracy", "verdict_zh": "準"}
    assert (a["rmsnorm"]["delta"], a["rmsnorm"]["verdict_zh"], a["rmsnorm"]["verdict_en"]) == ("+0.0100", "省", "economy")
    assert (a["mqa"]["verdict_en"], a["mqa"]["verdict_zh"]) == ("cheaper but worse", "省了但更差")
    assert a["gqa"]["kv_bytes"] == "2,048" and a["llama"]["params"] == "728,576"
    # Enough digits to see RoPE's missing position table: 794,624 against the baseline's 802,816.
    assert (a["rope"]["params"], a["baseline"]["params"]) == ("794,624", "802,816")
    assert a["llama"]["drop_pct"] == "12.2%"
    assert v["additivity"] == {"predicted": "1.5900", "actual": "1.5800", "gap": "0.0100"}
    assert v["train"] == {"tokens_per_sec": "10,500", "threads": "1"}


def test_tables_carry_the_summary_in_each_language():
    tables = EXPERIMENT.report(make_result()).tables
    en, zh = tables["ablation"]["en"], tables["ablation"]["zh"]
    assert "| +SwiGLU | 1.7000 ± 0.0141 | -0.1000 | yes | accuracy | 802,688 | 4,096 | 10,500 |" in en
    assert "| GQA (2 KV heads) | 1.8300 ± 0.0141 | +0.0300 | yes | cheaper but worse | 769,024 | 2,048 | 10,500 |" in en
    assert "| +RMSNorm | 1.8100 ± 0.0141 | +0.0100 | 否 | 省 | 802,816 | 4,096 | 10,500 |" in zh
    add = tables["additivity"]["en"]
    assert "| sum of the four Δ | -0.2100 |" in add and "| actual: LLaMA recipe | 1.5800 |" in add


def test_the_figure_is_drawn_in_both_languages():
    figure = EXPERIMENT.report(make_result()).figures["ablation"]
    for lang in ("zh", "en"):
        fig = figure(lang)
        ax = fig.axes[0]
        by_height = dict(zip(ax.get_yticks(), (t.get_text() for t in ax.get_yticklabels())))
        assert by_height[max(by_height)] == ("基準" if lang == "zh" else "baseline")  # baseline on top
        fig.clf()
