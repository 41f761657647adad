import json
import re
import subprocess
import sys
import types

import pytest

from llmparts import cli, data

TINY = ["--n_layer", "1", "--n_head", "2", "--n_embd", "16", "--block_size", "16", "--seq_len", "16",
        "--batch_size", "4", "--max_iters", "20", "--eval_interval", "10", "--warmup_iters", "2",
        "--eval_batches", "2", "--final_eval_batches", "2", "--threads", "1", "--quiet"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    assert cli.main(["train", *TINY, "--use_rmsnorm", "--use_swiglu", "--use_rope", "--n_kv_head", "1",
                     "--out_dir", str(out)]) == 0
    return out


def exit_code(argv) -> int:
    """main's return value, or the code argparse exits with."""
    try:
        return cli.main(argv)
    except SystemExit as e:
        return e.code


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_train_writes_the_run_with_the_books_switches(run_dir):
    config = json.loads((run_dir / "config.json").read_text())["model"]
    assert (config["use_rmsnorm"], config["use_swiglu"], config["use_rope"], config["n_kv_head"]) == (
        True, True, True, 1)
    assert len((run_dir / "log.jsonl").read_text().splitlines()) == 2
    assert (run_dir / "ckpt.pt").is_file()


@pytest.mark.parametrize("argv, message", [
    (["--n_head", "3"], r"n_embd \(128\) must be divisible by n_head \(3\)"),
    (["--n_kv_head", "3"], r"n_head \(4\) must be divisible by n_kv_head \(3\)"),
    (["--batch_size", "0"], r"batch_size \(0\) must be a positive integer"),
    (["--seq_len", "128"], r"seq_len \(128\) must be <= block_size \(64\)"),
    (["--dtype", "fp8"], r"argument --dtype: invalid choice: 'fp8'"),
    (["--max_iters", "ten"], r"argument --max_iters: invalid int value: 'ten'"),
    (["--bogus"], r"unrecognized arguments: --bogus"),
])
def test_usage_errors_exit_2_with_one_line(argv, message, capsys):
    assert exit_code(["train", *argv]) == 2
    err = one_line_error(capsys)
    assert err.startswith("llmparts train: error: ")
    assert re.search(message, err)


def test_missing_dataset_without_network_exits_2(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("TINYSHAKESPEARE", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(data, "DATA_URL", "file:///nonexistent/input.txt")
    assert cli.main(["train", *TINY]) == 2
    assert "download from file:///nonexistent/input.txt failed" in one_line_error(capsys)


def test_console_script_exit_code_is_2_on_usage_error():
    proc = subprocess.run([sys.executable, "-m", "llmparts.cli", "train", "--n_head", "3"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == "llmparts train: error: n_embd (128) must be divisible by n_head (3)\n"


def test_sample_continues_the_prompt_and_is_seeded(run_dir, capsys):
    argv = ["sample", "--run", str(run_dir), "--prompt", "ROMEO:", "--max_new_tokens", "40", "--seed", "1"]
    assert cli.main(argv) == 0
    first = capsys.readouterr().out
    assert first.startswith("ROMEO:") and len(first) == len("ROMEO:") + 40 + 1  # + print's newline
    assert cli.main(argv) == 0
    assert capsys.readouterr().out == first
    assert cli.main(argv[:-1] + ["2"]) == 0
    assert capsys.readouterr().out != first


def test_sample_beyond_block_size_crops_the_context(run_dir, capsys):
    assert cli.main(["sample", "--run", str(run_dir), "--prompt", "A", "--max_new_tokens", "50"]) == 0
    assert len(capsys.readouterr().out) == 1 + 50 + 1


def test_greedy_sample_is_the_same_with_and_without_the_cache(run_dir):
    cached = cli.sample_text(run_dir, "KING", 12, 0.0, None, seed=0)  # 4 + 12 <= block_size 16: cached
    uncached = cli.sample_text(run_dir, "KING", 20, 0.0, None, seed=0)  # too long for the cache
    assert len(cached) == 16 and uncached[:16] == cached


@pytest.mark.parametrize("argv, message", [
    (["--prompt", "ROMEO€"], "character '€' is not in the vocabulary"),
    (["--temperature", "-1"], r"temperature \(-1.0\) must be a number >= 0"),
    (["--top_k", "0"], r"top_k \(0\) must be a positive integer"),
])
def test_bad_sample_input_exits_2_naming_it(run_dir, argv, message, capsys):
    assert cli.main(["sample", "--run", str(run_dir), *argv]) == 2
    assert re.search(message, one_line_error(capsys))


def test_sample_from_a_missing_run_exits_2(tmp_path, capsys):
    assert cli.main(["sample", "--run", str(tmp_path / "nope")]) == 2
    assert "no checkpoint at" in one_line_error(capsys)


def test_reproduce_delegates_its_arguments_to_the_orchestrator(monkeypatch):
    seen = []
    fake = types.ModuleType("llmparts.reproduce")
    fake.main = lambda argv: seen.append(argv) or 0
    monkeypatch.setitem(sys.modules, "llmparts.reproduce", fake)
    assert cli.main(["reproduce", "--smoke", "--out_dir", "build/smoke"]) == 0
    assert seen == [["--smoke", "--out_dir", "build/smoke"]]


def test_train_subcommand_is_python_m_llmparts_train(monkeypatch):
    seen = []
    monkeypatch.setattr(cli, "train_main", lambda argv, prog: seen.append((argv, prog)) or 0)
    assert cli.main(["train", "--use_rope"]) == 0
    assert seen == [(["--use_rope"], "llmparts train")]
    proc = subprocess.run([sys.executable, "-m", "llmparts.train", "--n_head", "3"], capture_output=True, text=True,
                          timeout=60)
    assert (proc.returncode, proc.stderr) == (2, "python -m llmparts.train: error: n_embd (128) must be divisible by "
                                                 "n_head (3)\n")


def test_no_command_prints_usage_and_exits_2(capsys):
    assert cli.main([]) == 2
    assert capsys.readouterr().err.startswith("usage: llmparts {train,sample,reproduce,bench,serve,gate}")


def test_unknown_command_exits_2(capsys):
    assert cli.main(["fly"]) == 2
    assert "unknown command 'fly'" in one_line_error(capsys)


def test_bench_compares_against_the_eager_reference_and_writes_json(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert cli.main(["bench", "--rounds", "1", "--steps", "1", "--new_tokens", "8", "--no_compile",
                     "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    training = result["training"]
    assert list(training) == ["reference", "fused_adamw", "fused_adamw+bf16 flash_attn", "fused_adamw+bf16 math_attn",
                              "default"]
    assert training["reference"]["speedup_vs_reference"] == 1.0
    reference = training["reference"]
    assert (reference["dtype"], reference["fused_adamw"], reference["compile"]) == ("float32", False, False)
    assert training["fused_adamw+bf16 flash_attn"]["cpu_attention"] == "FLASH_ATTENTION"
    assert training["default"]["dtype"] == "bfloat16"
    for r in training.values():
        assert r["tokens_per_sec"] == pytest.approx(12 * 64 / (r["ms_per_iter"] / 1000))
    generation = result["generation"]
    assert [(g["implementation"], g["attention"]) for g in generation] == [
        ("PyTorch", "MHA"), ("PyTorch", "GQA"), ("PyTorch", "MQA"), ("NumPy", "GQA")]
    assert all(g["identical"] for g in generation)
    assert [g["cache_bytes"] for g in generation] == [2 * 4 * k * 32 * 4 * 9 for k in (4, 2, 1, 2)]
    assert result["numpy_forward"]["numpy_ms"] > 0
    assert "reference" in capsys.readouterr().out


def test_bench_rejects_a_zero_count(capsys):
    assert exit_code(["bench", "--rounds", "0"]) == 2
    assert "--rounds (0) must be a positive integer" in one_line_error(capsys)
