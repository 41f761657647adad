"""llmparts.report on a small hand-made results set: the numbers, verdicts and files it must produce."""

import json

import pytest

from llmparts import report

LANGS = ("zh", "en")
# Two seeds per config at mean +/- 0.01: every std is 0.014142, so noise = 0.0141 and the
# beyond-noise threshold is 2 x 0.014142 = 0.0283.
MEANS = {"baseline": 1.80, "rmsnorm": 1.81, "swiglu": 1.70, "rope": 1.65, "gqa": 1.83, "mqa": 1.85, "llama": 1.58}
PARAMS = {"baseline": 802_816, "rmsnorm": 802_816, "swiglu": 802_688, "rope": 794_624, "gqa": 769_024,
          "mqa": 752_640, "llama": 728_576}
KV = {"baseline": 4096, "rmsnorm": 4096, "swiglu": 4096, "rope": 4096, "gqa": 2048, "mqa": 1024, "llama": 2048}
NORM_STATS = {"rmsnorm": 1, "llama": 1}


def make_results():
    runs = [{"config": name, "seed": seed, "val_loss": MEANS[name] + sign * 0.01, "params": PARAMS[name],
             "kv_bytes_per_token": KV[name], "norm_stats": NORM_STATS.get(name, 2),
             "tokens_per_sec": 10_000.0 + 1000 * seed, "wall_time_s": 100.0}
            for name in MEANS for seed, sign in ((0, -1), (1, 1))]
    return {
        "ablation": {"config": {"iters": 2000, "seeds": [0, 1], "batch_size": 12, "block_size": 64},
                     "provenance": {"threads": 1}, "runs": runs},
        # Two seeds per scheme at mean -/+ 0.02: every std is 0.028284.
        "extrapolation": {"config": {"train_len": 64, "block_size": 256}, "lengths": [32, 64, 128, 256],
                          "losses": {"learned": [[v + d for v in (1.95, 1.93, 2.40, 2.79)] for d in (-0.02, 0.02)],
                                     "rope": [[v + d for v in (1.84, 1.82, 1.95, 2.11)] for d in (-0.02, 0.02)]},
                          "position_rows": [{"rows": 256, "train_len": 64, "seen_cosine": 0.40, "unseen_cosine": 1.0,
                                             "unseen_min_cosine": 0.99999994, "seen_norm_ratio": 2.5,
                                             "unseen_norm_ratio": 0.90},
                                            {"rows": 256, "train_len": 64, "seen_cosine": 0.30, "unseen_cosine": 1.0,
                                             "unseen_min_cosine": 0.99999988, "seen_norm_ratio": 2.6,
                                             "unseen_norm_ratio": 0.92}]},
        "hands_on": {"config": {"steps": 2500}, "wall_time_s": 246.0, "rows": [
            {"switches": {"rmsnorm": False, "swiglu": False, "rope": False}, "val_loss": 1.6361, "params": 620_000},
            {"switches": {"rmsnorm": True, "swiglu": False, "rope": False}, "val_loss": 1.6389, "params": 620_000},
            {"switches": {"rmsnorm": True, "swiglu": True, "rope": True}, "val_loss": 1.6108, "params": 610_000}]},
        "generation": {"config": {"prompt_len": 64, "new_tokens": 256}, "torch": [
            {"attention": a, "n_kv_head": h, "kv_bytes_per_token": 1024 * h, "cache_bytes": 1024 * h * 320,
             "tokens_per_sec_cache": 900.0, "tokens_per_sec_no_cache": 900.0 / s, "speedup": s, "identical": True}
            for a, h, s in (("MHA", 4, 6.25), ("GQA", 2, 5.0), ("MQA", 1, 4.44))],
            "numpy": {"attention": "GQA", "n_kv_head": 2, "kv_bytes_per_token": 2048, "cache_bytes": 655_360,
                      "tokens_per_sec_cache": 300.0, "tokens_per_sec_no_cache": 20.0, "speedup": 15.0,
                      "identical": True}},
        "llama2": {"config": {"context": 512},
                   "params": {"embedding": 4_718_592, "attention": 21_233_664, "feed_forward": 56_623_104,
                              "norms": 19_200, "total": 82_594_560, "total_untied": 87_313_152},
                   "kv_cache": [{"attention": "MHA", "n_kv_head": 16, "bytes_per_token": 73_728,
                                 "bytes_at_context": 73_728 * 512},
                                {"attention": "GQA", "n_kv_head": 8, "bytes_per_token": 36_864,
                                 "bytes_at_context": 36_864 * 512},
                                {"attention": "MQA", "n_kv_head": 1, "bytes_per_token": 4_608,
                                 "bytes_at_context": 4_608 * 512}],
                   "flops": {"context": 512, "matmul_flops": 165_150_720, "attention_flops": 18_874_368,
                             "per_token": 184_025_088},
                   "attention_cost": {"rows": [{"length": 512, "scores": 512 ** 2, "cached_positions": 512,
                                                "kv_bytes": 36_864 * 512, "flops_per_token": 184_025_088},
                                               {"length": 4096, "scores": 4096 ** 2, "cached_positions": 4096,
                                                "kv_bytes": 36_864 * 4096, "flops_per_token": 316_145_664}]},
                   "decode_memory": {"weights_bytes": 330_378_240, "kv_bytes_per_token": 36_864,
                                     "crossover_tokens": 330_378_240 / 36_864, "crossover_batch_at_context": 18,
                                     "context": 512,
                                     "rows": [{"batch": b, "context": 512, "cache_bytes": b * 512 * 36_864,
                                               "weights_bytes": 330_378_240,
                                               "cache_over_weights": b * 512 * 36_864 / 330_378_240}
                                              for b in (1, 16, 32)]}},
    }


def write_results(folder, results):
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in results.items():
        (folder / f"{name}.json").write_text(json.dumps({"experiment": name, **data}))
    return folder


def test_ablation_summary_has_seed_means_deltas_noise_and_additivity():
    summary = report.summarize_ablation(make_results()["ablation"])
    stats = summary["configs"]
    assert stats["swiglu"]["mean"] == pytest.approx(1.70)
    assert stats["swiglu"]["std"] == pytest.approx(0.0141421, abs=1e-6)
    assert stats["rope"]["delta"] == pytest.approx(-0.15)
    assert summary["noise"] == pytest.approx(0.0141421, abs=1e-6)
    assert summary["additivity"]["predicted"] == pytest.approx(1.80 + 0.01 - 0.10 - 0.15 + 0.03)
    assert summary["additivity"]["gap"] == pytest.approx(0.01)
    assert summary["drop_pct"] == pytest.approx(100 * 0.22 / 1.80)


def test_verdicts_follow_loss_beyond_noise_and_cost_savings():
    stats = report.summarize_ablation(make_results()["ablation"])["configs"]
    verdicts = {name: s["verdict"] for name, s in stats.items()}
    # GQA (+0.03) and MQA (+0.05) save KV bytes but lose more than the 0.0283 threshold: not "economy".
    assert verdicts == {"baseline": "reference", "rmsnorm": "economy", "swiglu": "accuracy", "rope": "accuracy",
                        "gqa": "cheaper_but_worse", "mqa": "cheaper_but_worse", "llama": "accuracy"}
    assert stats["gqa"]["beyond_noise"] and not stats["rmsnorm"]["beyond_noise"]


@pytest.mark.parametrize("delta, cheaper, expected", [
    (-0.05, False, "accuracy"), (-0.05, True, "accuracy"),
    (0.01, True, "economy"), (-0.01, True, "economy"), (0.0283, True, "economy"),  # at the threshold: not beyond
    (0.03, True, "cheaper_but_worse"), (0.03, False, "worse"),
    (0.01, False, "noise"), (-0.01, False, "noise"),
])
def test_economy_needs_a_saving_and_a_loss_not_worse_than_twice_the_noise(delta, cheaper, expected):
    assert report.verdict(delta, threshold=0.0283, cheaper=cheaper) == expected


def test_the_economy_verdict_can_fail_on_real_shaped_data():
    results = make_results()
    for run in results["ablation"]["runs"]:
        if run["config"] == "gqa":
            run["val_loss"] -= 0.03  # 1.80: a tie with the baseline
    stats = report.summarize_ablation(results["ablation"])["configs"]
    assert stats["gqa"]["verdict"] == "economy" and stats["mqa"]["verdict"] == "cheaper_but_worse"
    assert stats["mqa"]["cheaper"] and not stats["swiglu"]["cheaper"]


def test_a_config_without_savings_is_within_noise_or_worse_not_economy():
    results = make_results()
    for run in results["ablation"]["runs"]:
        if run["config"] == "rmsnorm":
            run["norm_stats"] = 2  # pretend it saved nothing
        if run["config"] == "swiglu":
            run["val_loss"] += 0.20  # 1.90: worse by 0.10, far beyond the 0.0283 threshold
    stats = report.summarize_ablation(results["ablation"])["configs"]
    assert stats["rmsnorm"]["verdict"] == "noise"
    # SwiGLU's 128 fewer parameters (rounding, 0.02%) are not a saving.
    assert stats["swiglu"]["verdict"] == "worse"


def test_missing_ablation_config_is_refused_by_name():
    results = make_results()
    results["ablation"]["runs"] = [r for r in results["ablation"]["runs"] if r["config"] != "mqa"]
    with pytest.raises(ValueError, match=r"lack configs \['mqa'\]"):
        report.summarize_ablation(results["ablation"])


def test_variables_hold_every_contract_key_with_formatted_values():
    v = report.build_variables(make_results())
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
    assert v["extrapolation"] == {"train_len": "64", "max_len": "256", "seeds": "2", "block_size": "256",
                                  "last_trained_row": "63", "last_row": "255",
                                  "learned": {"at_train": "1.9300", "at_max": "2.7900", "at_max_std": "0.0283"},
                                  "rope": {"at_train": "1.8200", "at_max": "2.1100", "at_max_std": "0.0283"},
                                  "rows": {"unseen_cosine": "1.0000", "seen_cosine": "0.35",
                                           "unseen_norm_ratio": "0.91"}}
    assert v["hands_on"] == {"steps": "2500", "minutes": "4.1"}
    assert v["llama2"] == {"params": "82,594,560", "params_untied": "87,313,152", "kv_bytes_per_token": "36,864",
                           "kv_bytes_per_token_mha": "73,728", "kv_mib_512": "18.0 MiB", "kv_mib_512_mha": "36.0 MiB",
                           # 2 FLOPs per weight alone, the attention term at T = 512, and their sum
                           "flops_matmul": "0.165 GFLOP", "flops_attention": "0.019 GFLOP",
                           "flops_per_token": "0.184 GFLOP", "flops_context": "512",
                           "decode": {"weights_mib": "315.1 MiB", "weights_over_cache": "17.5×",
                                      "crossover_tokens": "8,962", "crossover_batch": "18", "context": "512"}}
    assert v["generation"] == {"new_tokens": "256", "speedup_mha": "6.2×", "speedup_gqa": "5.0×",
                               "speedup_mqa": "4.4×", "numpy_speedup": "15.0×", "identical_en": "identical",
                               "identical_zh": "完全相同"}
    assert v["train"] == {"tokens_per_sec": "10,500", "threads": "1"}


def test_one_differing_greedy_output_makes_generation_not_identical():
    results = make_results()
    results["generation"]["numpy"]["identical"] = False
    g = report.build_variables(results)["generation"]
    assert (g["identical_en"], g["identical_zh"]) == ("different", "不同")


def test_ablation_table_rows_carry_the_summary_in_each_language():
    results = make_results()
    en = report.ablation_table(results, "en")
    assert "| +SwiGLU | 1.7000 ± 0.0141 | -0.1000 | yes | accuracy | 802,688 | 4,096 | 10,500 |" in en
    assert "| GQA (2 KV heads) | 1.8300 ± 0.0141 | +0.0300 | yes | cheaper but worse | 769,024 | 2,048 | 10,500 |" in en
    zh = report.ablation_table(results, "zh")
    assert "| +RMSNorm | 1.8100 ± 0.0141 | +0.0100 | 否 | 省 | 802,816 | 4,096 | 10,500 |" in zh


def test_additivity_and_extrapolation_tables_hold_the_numbers():
    results = make_results()
    add = report.additivity_table(results, "en")
    assert "| sum of the four Δ | -0.2100 |" in add and "| actual: LLaMA recipe | 1.5800 |" in add
    ex = report.extrapolation_table(results, "zh")
    assert "| 64（訓練長度） | 1.9300 ± 0.0283 | 1.8200 ± 0.0283 |" in ex
    assert "| 256 | 2.7900 ± 0.0283 | 2.1100 ± 0.0283 |" in ex
    assert "第 64–255 列從沒收到梯度" in ex
    assert "rows 64–255 never receive a gradient" in report.extrapolation_table(results, "en")


def test_extrapolation_summary_is_mean_and_std_over_seeds_per_length():
    summary = report.summarize_extrapolation(make_results()["extrapolation"])
    assert summary["learned"]["mean"] == pytest.approx([1.95, 1.93, 2.40, 2.79])
    assert summary["rope"]["std"] == pytest.approx([0.0282843] * 4, abs=1e-6)


def test_decode_memory_table_says_which_read_is_larger_and_where_they_cross():
    en = report.decode_memory_table(make_results(), "en")
    assert "| 1 | 512 | 18.0 MiB | 315.1 MiB | 0.06 | weights |" in en
    assert "| 16 | 512 | 288.0 MiB | 315.1 MiB | 0.91 | weights |" in en
    assert "| 32 | 512 | 576.0 MiB | 315.1 MiB | 1.83 | cache |" in en
    assert "about 8,962 cached tokens" in en
    assert "| 32 | 512 | 576.0 MiB | 315.1 MiB | 1.83 | 快取 |" in report.decode_memory_table(make_results(), "zh")


def test_attention_cost_table_shows_quadratic_and_linear_growth():
    table = report.attention_cost_table(make_results(), "en")
    assert "| 4,096 / 512 | 64.0× | 8.0× | 8.0× | 1.7× |" in table
    assert "| 4,096 | 16,777,216 | 4,096 | 144.0 MiB | 0.316 GFLOP |" in table
    assert "| 512 | 262,144 | 512 | 18.0 MiB | 0.184 GFLOP |" in table


@pytest.mark.parametrize("name", sorted(report.TABLES))
@pytest.mark.parametrize("lang", LANGS)
def test_every_table_is_a_well_formed_pipe_table_with_its_caption_id(name, lang):
    text = report.TABLES[name](make_results(), lang)
    table, caption = text.rstrip("\n").split("\n\n")
    rows = table.split("\n")
    widths = {row.count("|") for row in rows}
    assert len(widths) == 1, f"{name}.{lang}: rows have different cell counts {widths}"
    assert set(rows[1]) <= {"|", "-"}
    assert caption.startswith(": ") and caption.endswith(f"{{#tbl-{name}}}") and "|" not in caption


def test_write_report_creates_all_files_and_pngs_are_deterministic(tmp_path):
    results_dir = write_results(tmp_path / "results", make_results())
    written = report.write_report(results_dir, tmp_path / "a")
    names = {p.relative_to(tmp_path / "a").as_posix() for p in written}
    expected = {"_variables.yml"}
    expected |= {f"results/tables/{t}.{lang}.md" for t in report.TABLES for lang in LANGS}
    expected |= {f"images/{f}.{lang}.png" for f in report.FIGURES for lang in LANGS}
    assert names == expected
    report.write_report(results_dir, tmp_path / "b")
    for name in expected:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_variables_file_says_it_is_generated_and_lists_its_keys(tmp_path):
    import yaml
    results_dir = write_results(tmp_path / "results", make_results())
    report.write_report(results_dir, tmp_path, figures=False)
    text = (tmp_path / "_variables.yml").read_text(encoding="utf-8")
    assert text.startswith("# GENERATED by llmparts.report")
    assert "make reproduce" in text.splitlines()[1]
    assert "#   ablation.llama.drop_pct" in text and "#   generation.identical_zh" in text
    assert yaml.safe_load(text) == report.build_variables(make_results())


def test_missing_results_file_exits_2_naming_it(tmp_path, capsys):
    results = make_results()
    del results["generation"]
    results_dir = write_results(tmp_path / "results", results)
    assert report.main(["--results", str(results_dir), "--out", str(tmp_path), "--no_figures"]) == 2
    err = capsys.readouterr().err
    assert "generation.json is missing" in err and "--only generation" in err


def test_missing_cjk_font_fails_with_the_install_command(monkeypatch):
    from pathlib import Path

    import matplotlib
    from matplotlib import font_manager

    latin_only = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"  # ships with matplotlib
    monkeypatch.setattr(font_manager, "findSystemFonts", lambda *a, **k: [str(latin_only)])
    with pytest.raises(RuntimeError, match=r"no font among the 1 .* install one: sudo apt-get install -y fonts-noto-cjk"):
        report.cjk_font_path()


def test_cjk_font_is_chosen_because_it_draws_the_zh_labels(monkeypatch):
    from pathlib import Path

    import matplotlib
    from matplotlib import font_manager

    found = report.cjk_font_path()  # `make test` installs fonts-noto-cjk first where it can
    latin_only = str(Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf")
    monkeypatch.setattr(font_manager, "findSystemFonts", lambda *a, **k: [latin_only, found])
    assert report.cjk_font_path() == found
