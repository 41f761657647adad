"""llmparts.experiments and llmparts.provenance: fingerprints, counted facts, task planning, the pipeline."""

import json
import subprocess
import sys

import pytest

from llmparts import experiments, provenance
from llmparts.provenance import REPO_ROOT, fingerprint, normalized_source

MODULE = '''"""Module docstring."""
import math


def area(r):
    """Area of a circle."""
    return math.pi * r ** 2  # pi r squared
'''


def write_module(folder, text):
    (folder / "m.py").write_text(text)
    return fingerprint({"iters": 10}, ["m.py"], root=folder)


def test_fingerprint_ignores_docstrings_comments_and_formatting(tmp_path):
    before = write_module(tmp_path, MODULE)
    edited = MODULE.replace('"""Area of a circle."""', '"""The area, pi r^2."""').replace("# pi r squared", "")
    edited = edited.replace('"""Module docstring."""', "# a comment instead of a docstring\n")
    assert write_module(tmp_path, edited.replace("r ** 2", "r**2")) == before


def test_fingerprint_changes_when_code_changes(tmp_path):
    before = write_module(tmp_path, MODULE)
    assert write_module(tmp_path, MODULE.replace("r ** 2", "r ** 3")) != before


def test_fingerprint_changes_when_config_changes(tmp_path):
    (tmp_path / "m.py").write_text(MODULE)
    assert fingerprint({"iters": 10}, ["m.py"], root=tmp_path) != fingerprint({"iters": 11}, ["m.py"], root=tmp_path)


def test_fingerprint_of_a_missing_source_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.py"):
        fingerprint({}, ["nope.py"], root=tmp_path)


def test_docstring_only_function_keeps_a_valid_body():
    assert "Pass" in normalized_source('def f():\n    """only a docstring"""\n')


def test_fingerprinted_sources_exist_and_exclude_report():
    for sources in experiments.SOURCES.values():
        assert "src/llmparts/report.py" not in sources
        for rel in sources:
            assert (REPO_ROOT / rel).is_file(), rel


def test_core_sources_cover_every_package_module_the_training_code_imports():
    import ast
    core = set(provenance.CORE_SOURCES)
    for rel in core - {"src/llmparts/experiments.py"}:  # experiments also imports report: formatting only
        tree = ast.parse((REPO_ROOT / rel).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                imported = f"src/llmparts/{node.module}.py"
                assert imported in core, f"{rel} imports {imported}, which the fingerprint does not cover"


def test_provenance_records_commit_runtime_and_smoke_flag():
    prov = provenance.provenance({"a": 1}, experiments.SOURCES["ablation"], threads=3, seeds=[0, 1],
                                 wall_time_s=1.234, smoke=True)
    assert len(prov["commit"]) == 40 and prov["threads"] == 3 and prov["seeds"] == [0, 1]
    assert prov["smoke"] is True and prov["wall_time_s"] == 1.23
    assert prov["fingerprint"] == fingerprint({"a": 1}, experiments.SOURCES["ablation"])


def test_llama2_facts_are_counted_from_the_model():
    facts = experiments.llama2_experiment(context=512, lengths=[512, 4096])
    p = facts["params"]
    assert p["total"] == 82_594_560 and p["total_untied"] == 87_313_152
    assert p["embedding"] == 6144 * 768
    assert p["attention"] == 12 * (2 * 768 * 768 + 2 * 768 * 384)  # wq, wo full; wk, wv for 8 of 16 heads
    assert p["feed_forward"] == 12 * 3 * 768 * 2048
    assert p["norms"] == 25 * 768
    kv = {row["attention"]: row for row in facts["kv_cache"]}
    assert (kv["MHA"]["bytes_per_token"], kv["GQA"]["bytes_per_token"], kv["MQA"]["bytes_per_token"]) == \
        (73_728, 36_864, 4_608)
    assert kv["GQA"]["bytes_at_context"] == 18 * 2**20
    assert facts["flops"]["per_token"] == 2 * (82_594_560 - 25 * 768) + 4 * 12 * 512 * 768
    first, last = facts["attention_cost"]["rows"]
    assert last["scores"] / first["scores"] == 64 and last["cached_positions"] / first["cached_positions"] == 8


def test_llama2_flops_show_the_two_per_weight_rule_and_the_attention_term_separately():
    flops = experiments.llama2_experiment(context=512, lengths=[512, 4096])["flops"]
    assert flops["matmul_flops"] == 2 * (82_594_560 - 25 * 768) == 165_150_720  # 0.165 GFLOP: weights only
    assert flops["attention_flops"] == 4 * 12 * 512 * 768 == 18_874_368  # q.k and w.v over 512 positions
    assert flops["per_token"] == 184_025_088  # 0.184 GFLOP: what the rule of thumb leaves out at T = 512
    assert round(flops["matmul_flops"] / 1e9, 3) == 0.165 and round(flops["per_token"] / 1e9, 3) == 0.184


def test_decode_memory_weights_outweigh_the_cache_until_the_crossover():
    mem = experiments.llama2_experiment(context=512, lengths=[512], batches=[1, 16, 32])["decode_memory"]
    assert mem["weights_bytes"] == 4 * 82_594_560 == 330_378_240  # float32 weights, read once per step
    assert mem["kv_bytes_per_token"] == 36_864
    assert mem["crossover_tokens"] == pytest.approx(330_378_240 / 36_864)  # 8,962.08 cached tokens
    assert mem["crossover_context_batch_1"] == 8963 and mem["crossover_batch_at_context"] == 18
    b1, b16, b32 = mem["rows"]
    assert b1["cache_bytes"] == 18 * 2**20 and b1["weights_bytes"] / b1["cache_bytes"] > 17  # weights ~17.5x
    assert b16["cache_over_weights"] < 1 < b32["cache_over_weights"]


def test_position_rows_tell_untouched_rows_from_trained_ones():
    import torch
    torch.manual_seed(0)
    initial = torch.randn(8, 4)
    trained = initial.clone()
    trained[:3] = torch.randn(3, 4)  # rows 0..2 moved by "training"
    trained[3:] *= 0.9  # rows 3..7: weight decay only
    rows = experiments.position_rows(initial, trained, train_len=3)
    assert rows["unseen_cosine"] == pytest.approx(1.0) and rows["unseen_norm_ratio"] == pytest.approx(0.9)
    assert rows["seen_cosine"] < 0.9


def test_learned_rows_beyond_the_training_length_get_no_gradient():
    import torch
    from llmparts.model import GPT, ModelConfig
    model = GPT(ModelConfig(**{**experiments.BASE_MODEL, "block_size": 256}))
    idx = torch.randint(0, 65, (2, 64))
    _, loss = model(idx, idx)
    loss.backward()
    grad = model.pos_emb.weight.grad
    assert grad[:64].abs().sum() > 0 and torch.count_nonzero(grad[64:]) == 0


def test_extrapolation_runs_over_the_ablations_seeds(tmp_path):
    scale = experiments.SCALES["full"]
    tasks = experiments.build_tasks(["extrapolation"], scale, 1, tmp_path / "w.npz")
    assert sorted((t["kwargs"]["kind"], t["kwargs"]["seed"]) for t in tasks) == \
        sorted((k, s) for k in experiments.EXTRAPOLATION for s in scale["seeds"])
    assert experiments.experiment_configs(scale)["extrapolation"]["seeds"] == \
        experiments.experiment_configs(scale)["ablation"]["seeds"]


def test_generation_outputs_match_with_and_without_cache_in_torch_and_numpy():
    scale = {"prompt_len": 8, "new_tokens": 12, "timing_repeats": 1}
    gen = experiments.generation_experiment(scale, threads=1)
    assert [r["attention"] for r in gen["torch"]] == ["MHA", "GQA", "MQA"]
    assert all(r["identical"] for r in gen["torch"]) and gen["numpy"]["identical"]
    assert [r["kv_bytes_per_token"] for r in gen["torch"]] == [4096, 2048, 1024]
    assert gen["torch"][1]["cache_bytes"] == 2048 * 20
    assert all(r["speedup"] > 0 for r in gen["torch"])


def test_weights_reuse_the_ablation_llama_seed0_run_instead_of_training_again(tmp_path):
    scale = experiments.SCALES["smoke"]
    tasks = experiments.build_tasks(["ablation", "weights"], scale, 1, tmp_path / "w.npz")
    assert len(tasks) == len(experiments.ABLATION) * len(scale["seeds"])
    exporting = [t for t in tasks if t["kwargs"].get("export_path")]
    assert len(exporting) == 1 and exporting[0]["kwargs"]["name"] == "llama" and exporting[0]["kwargs"]["seed"] == 0
    alone = experiments.build_tasks(["weights"], scale, 1, tmp_path / "w.npz")
    assert len(alone) == 1 and alone[0]["experiment"] == "weights"


def test_tasks_run_the_longest_first():
    tasks = experiments.build_tasks(list(experiments.EXPERIMENTS), experiments.SCALES["full"], 1, "w.npz")
    assert [t["kind"] for t in tasks[:3]] == ["hands_on", "extrapolation", "extrapolation"]
    assert all(t["threads"] == 1 for t in tasks)


def test_hands_on_uses_the_example_scripts_five_configs():
    tiny = experiments.load_tiny_modern()
    switches = list(tiny.CONFIGS.values())
    assert len(switches) == 5
    assert not any(switches[0].values()) and all(switches[-1].values())
    assert [sum(s.values()) for s in switches[1:4]] == [1, 1, 1]


@pytest.mark.parametrize("argv, message", [
    (["--only", "ablation,bogus"], "must name experiments from"),
    (["--jobs", "0"], "--jobs (0) must be at least 1"),
    (["--threads", "0"], "--threads (0) must be at least 1"),
])
def test_bad_arguments_exit_2_with_one_clear_message(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        experiments.parse_args(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_missing_dataset_exits_2_with_one_line_before_any_training(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TINYSHAKESPEARE", str(tmp_path / "absent.txt"))
    experiments.dataset.cache_clear()
    try:
        assert experiments.main(["--only", "ablation", "--smoke", "--out_dir", str(tmp_path)]) == 2
    finally:
        experiments.dataset.cache_clear()
    err = capsys.readouterr().err
    assert "absent.txt" in err and "is not a file" in err and "Traceback" not in err
    assert not (tmp_path / "results").exists()


def test_tiny_modern_rejects_zero_steps():
    proc = subprocess.run([sys.executable, str(REPO_ROOT / "examples" / "tiny_modern.py"), "--steps", "0"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "--steps (0) must be at least 1" in proc.stderr


@pytest.mark.slow
def test_smoke_pipeline_writes_fresh_results_tables_and_figures(tmp_path):
    assert experiments.main(["--smoke", "--out_dir", str(tmp_path), "--jobs", "2"]) == 0
    for name in ("ablation", "extrapolation", "hands_on", "generation", "llama2", "weights"):
        data = json.loads((tmp_path / "results" / f"{name}.json").read_text())
        prov = data["provenance"]
        assert prov["smoke"] is True
        assert prov["fingerprint"] == fingerprint(data["config"], prov["sources"])
    ablation = json.loads((tmp_path / "results" / "ablation.json").read_text())
    assert len(ablation["runs"]) == len(experiments.ABLATION) * len(experiments.SCALES["smoke"]["seeds"])
    weights = json.loads((tmp_path / "results" / "weights.json").read_text())
    assert (tmp_path / weights["file"]).stat().st_size == weights["bytes"] < 5_000_000
    assert (tmp_path / "_variables.yml").is_file()
    extrapolation = json.loads((tmp_path / "results" / "extrapolation.json").read_text())
    seeds = experiments.SCALES["smoke"]["seeds"]
    assert extrapolation["seeds"] == seeds and all(len(v) == len(seeds) for v in extrapolation["losses"].values())
    assert all(r["unseen_cosine"] > 0.999 for r in extrapolation["position_rows"])  # untrained rows: only decayed
    for lang in ("zh", "en"):
        assert (tmp_path / "images" / f"rope_extrapolation.{lang}.png").is_file()
        assert (tmp_path / "results" / "tables" / f"ablation.{lang}.md").is_file()
