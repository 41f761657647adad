"""checkpoint.py: a run's folder and checkpoints that are whole, recognised, and refused when they do not fit."""

import pytest
import torch

from llmparts.checkpoint import CheckpointError, RunDir, load_checkpoint, save_checkpoint


def test_truncated_checkpoint_is_refused(tmp_path):
    path = tmp_path / "ckpt.pt"
    save_checkpoint({"format": "llmparts-checkpoint-v1", "model": torch.zeros(1000)}, path)
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(CheckpointError, match="corrupt"):
        load_checkpoint(path)


def test_a_file_of_another_format_is_refused(tmp_path):
    path = tmp_path / "ckpt.pt"
    torch.save({"weights": torch.zeros(2)}, path)
    with pytest.raises(CheckpointError, match="is not a llmparts-checkpoint-v1 file"):
        load_checkpoint(path)


def test_failed_checkpoint_write_keeps_the_previous_one(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    save_checkpoint({"v": 1}, path)

    def crash(obj, f):
        f.write(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", crash)
    with pytest.raises(OSError):
        save_checkpoint({"v": 2}, path)
    assert torch.load(path, weights_only=True) == {"v": 1}


def test_a_run_without_out_dir_or_off_rank_0_writes_nothing(tmp_path):
    for run_dir in (RunDir(None), RunDir(str(tmp_path / "run"), is_main=False)):
        assert not run_dir.writes
        run_dir.log({"iter": 1})
        run_dir.save({"iter": 1})
    assert not (tmp_path / "run").exists()
