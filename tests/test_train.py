import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace

import pytest
import torch

from llmparts import train as train_mod
from llmparts.checkpoint import CheckpointError, TrainingInterrupted, load_checkpoint
from llmparts.config import ModelConfig, TrainConfig
from llmparts.data import fixed_batches, load_dataset
from llmparts.model import GPT
from llmparts.train import evaluate, get_lr, precision_context, train

TINY = ModelConfig(n_layer=1, n_head=2, n_embd=16, block_size=16)
TINY_ARGS = ["--n_layer", "1", "--n_head", "2", "--n_embd", "16", "--block_size", "16", "--seq_len", "16",
             "--batch_size", "4", "--warmup_iters", "2", "--eval_batches", "2", "--final_eval_batches", "2",
             "--threads", "1", "--quiet"]


def tiny_config(**overrides) -> TrainConfig:
    base = dict(batch_size=4, seq_len=16, max_iters=12, warmup_iters=2, eval_interval=4, eval_batches=2,
                final_eval_batches=2, checkpoint_interval=4, threads=1, quiet=True)
    return TrainConfig(**{**base, **overrides})


@pytest.fixture(scope="module")
def ds():
    return load_dataset()


def same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_lr_warms_up_linearly_then_decays_by_cosine_to_min_lr():
    cfg = TrainConfig(lr=1e-3, min_lr=1e-4, warmup_iters=10, max_iters=110)
    warm = [get_lr(i, cfg) for i in range(10)]
    assert warm == sorted(warm) and warm[0] == pytest.approx(1e-3 / 11)
    assert get_lr(10, cfg) == pytest.approx(1e-3)
    assert get_lr(60, cfg) == pytest.approx((1e-3 + 1e-4) / 2)  # cosine midpoint
    assert get_lr(110, cfg) == get_lr(500, cfg) == pytest.approx(1e-4)


def test_evaluate_is_the_mean_fixed_batch_loss_in_eval_mode(ds):
    torch.manual_seed(0)
    model = GPT(replace(TINY, dropout=0.5))
    batches = fixed_batches(ds.val, 3, 4, 16, seed=0)
    loss = evaluate(model, batches)
    assert model.training  # mode restored
    model.eval()
    with torch.no_grad():
        expected = sum(model(x, y)[1].item() for x, y in batches) / 3
    assert loss == pytest.approx(expected, rel=1e-6)
    assert evaluate(model, batches) == loss  # no dropout in eval mode: repeatable


def test_training_lowers_the_loss_and_reports_its_speed(ds):
    result = train(TINY, tiny_config(max_iters=40, eval_interval=20, lr=1e-2), ds)
    assert [h["iter"] for h in result.history] == [20, 40]
    assert set(result.history[0]) == {"iter", "train_loss", "val_loss", "lr"}
    assert result.history[-1]["val_loss"] < 3.5 < 4.17  # ln(65) = 4.17 is the untrained loss
    assert result.num_params == result.model.num_params()
    assert result.tokens_per_sec > 0 and 0 < result.mfu < 1
    assert result.wall_time_s > 0


def test_same_seed_same_threads_gives_identical_losses(ds):
    a = train(TINY, tiny_config(), ds)
    b = train(TINY, tiny_config(), ds)
    c = train(TINY, tiny_config(seed=7), ds)
    assert a.history == b.history and a.final_val_loss == b.final_val_loss
    assert same_weights(a.model, b.model)
    assert a.history != c.history


def test_out_dir_holds_config_log_and_checkpoint(ds, tmp_path):
    train(TINY, tiny_config(out_dir=str(tmp_path)), ds)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["model"]["n_embd"] == 16 and config["train"]["max_iters"] == 12
    log = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert [r["iter"] for r in log] == [4, 8, 12]
    state = load_checkpoint(tmp_path / "ckpt.pt")
    assert state["iter"] == 12 and state["history"] == log and len(state["tokenizer_chars"]) == 65
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.pt", "config.json", "log.jsonl"]


def test_run_extended_with_resume_matches_one_long_run(ds, tmp_path):
    # The schedule is pinned to 12 iterations, so stopping at 8 (an eval boundary) is a pause, not a shorter run.
    full = train(TINY, tiny_config(lr_decay_iters=12, max_iters=12), ds)
    first = train(TINY, tiny_config(lr_decay_iters=12, max_iters=8, out_dir=str(tmp_path)), ds)
    assert first.history == full.history[:2]
    resumed = train(TINY, tiny_config(lr_decay_iters=12, max_iters=12, out_dir=str(tmp_path), resume=True), ds)
    assert resumed.history == full.history
    assert resumed.final_val_loss == full.final_val_loss
    assert same_weights(resumed.model, full.model)
    log = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert log == full.history


@pytest.mark.slow
def test_sigint_saves_a_checkpoint_that_resumes_to_the_uninterrupted_result(ds, tmp_path):
    args = [sys.executable, "-m", "llmparts.train", *TINY_ARGS, "--max_iters", "2000", "--eval_interval", "250",
            "--checkpoint_interval", "100000", "--out_dir", str(tmp_path)]
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
    log = tmp_path / "log.jsonl"
    deadline = time.time() + 60
    while not (log.exists() and log.read_text()) and time.time() < deadline:  # the first eval is at iter 250
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted by SIGINT after iter" in err and "--resume" in err
    stopped_at = load_checkpoint(tmp_path / "ckpt.pt")["iter"]
    assert 250 <= stopped_at < 2000
    cfg = tiny_config(max_iters=2000, eval_interval=250, checkpoint_interval=100000, out_dir=str(tmp_path))
    resumed = train(TINY, replace(cfg, resume=True), ds)
    full = train(TINY, replace(cfg, out_dir=None), ds)
    assert resumed.history == full.history and len(full.history) == 8
    assert same_weights(resumed.model, full.model)


def test_signal_mid_interval_checkpoints_and_resumes_to_the_uninterrupted_result(ds, tmp_path, monkeypatch):
    full = train(TINY, tiny_config(), ds)
    real_get_batch = train_mod.get_batch
    calls = []

    def get_batch_then_signal(*args):
        calls.append(1)
        if len(calls) == 6:
            os.kill(os.getpid(), signal.SIGTERM)  # arrives mid-step; the step finishes first
        return real_get_batch(*args)

    monkeypatch.setattr(train_mod, "get_batch", get_batch_then_signal)
    with pytest.raises(TrainingInterrupted, match="SIGTERM after iter 6"):
        train(TINY, tiny_config(out_dir=str(tmp_path)), ds)
    assert load_checkpoint(tmp_path / "ckpt.pt")["iter"] == 6  # between the evals at 4 and 8
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handlers restored
    resumed = train(TINY, tiny_config(out_dir=str(tmp_path), resume=True), ds)
    assert resumed.history == full.history  # iter 8's train loss averages steps from both sides of the stop
    assert same_weights(resumed.model, full.model)


def test_corrupt_checkpoint_is_refused(ds, tmp_path):
    (tmp_path / "ckpt.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="corrupt or not a checkpoint.*delete it"):
        train(TINY, tiny_config(out_dir=str(tmp_path), resume=True), ds)


def test_mismatched_checkpoint_names_the_differing_settings(ds, tmp_path):
    train(TINY, tiny_config(out_dir=str(tmp_path)), ds)
    with pytest.raises(CheckpointError, match=r"n_embd=16 \(now 32\)"):
        train(replace(TINY, n_embd=32), tiny_config(out_dir=str(tmp_path), resume=True), ds)
    with pytest.raises(CheckpointError, match=r"lr=0.001 \(now 0.002\)"):
        train(TINY, tiny_config(out_dir=str(tmp_path), resume=True, lr=2e-3), ds)


def test_resume_without_a_checkpoint_says_so(ds, tmp_path):
    with pytest.raises(CheckpointError, match="no checkpoint at"):
        train(TINY, tiny_config(out_dir=str(tmp_path), resume=True), ds)


def test_seq_len_longer_than_block_size_is_refused(ds):
    with pytest.raises(ValueError, match=r"seq_len \(32\) must be <= block_size \(16\)"):
        train(TINY, tiny_config(seq_len=32), ds)


def test_unavailable_device_is_refused(ds):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(ValueError, match=r"device \('cuda'\) is not available"):
        train(TINY, tiny_config(device="cuda"), ds)


def test_bfloat16_autocast_trains_close_to_float32(ds):
    fp32 = train(TINY, tiny_config(dtype="float32"), ds)
    bf16 = train(TINY, tiny_config(dtype="bfloat16"), ds)
    assert bf16.final_val_loss == pytest.approx(fp32.final_val_loss, abs=0.05)
    assert bf16.final_val_loss != fp32.final_val_loss


def test_low_precision_on_cpu_autocasts_and_uses_math_attention():
    with precision_context("cpu", "bfloat16"):
        assert torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.bfloat16
        assert torch.backends.cuda.math_sdp_enabled() and not torch.backends.cuda.flash_sdp_enabled()
    with precision_context("cpu", "float32"):
        assert not torch.is_autocast_enabled("cpu") and torch.backends.cuda.flash_sdp_enabled()


@pytest.mark.slow
def test_two_process_ddp_matches_one_process_with_the_same_global_batch(tmp_path):
    common = [*TINY_ARGS, "--max_iters", "8", "--eval_interval", "4", "--lr", "1e-2", "--dtype", "float32"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    single = subprocess.run([sys.executable, "-m", "llmparts.train", *common, "--out_dir", str(tmp_path / "one")],
                            env=env, capture_output=True, text=True, timeout=120)
    assert single.returncode == 0, single.stderr
    ddp = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                          "-m", "llmparts.train", *common, "--out_dir", str(tmp_path / "two")],
                         env=env, capture_output=True, text=True, timeout=180)
    assert ddp.returncode == 0, ddp.stderr
    assert json.loads((tmp_path / "two/config.json").read_text())["world_size"] == 2
    one, two = (load_checkpoint(tmp_path / name / "ckpt.pt") for name in ("one", "two"))
    for key in one["model"]:
        torch.testing.assert_close(two["model"][key], one["model"][key], atol=1e-5, rtol=1e-5)
    for a, b in zip(one["history"], two["history"], strict=True):
        assert b["val_loss"] == pytest.approx(a["val_loss"], abs=1e-5)
        assert b["train_loss"] == pytest.approx(a["train_loss"], abs=1e-5)
    assert one["model"]["blocks.0.attn.wq.weight"].ne(GPT(TINY).state_dict()["blocks.0.attn.wq.weight"]).any()
