"""atomic.py: a file is replaced whole or not at all."""

import pytest

from llmparts.atomic import atomic_write, write_text


def test_write_replaces_the_file_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "sub" / "out.json"
    write_text(path, "one")
    write_text(path, "two ✓")
    assert path.read_text(encoding="utf-8") == "two ✓"
    assert [p.name for p in path.parent.iterdir()] == ["out.json"]


def test_a_failing_write_keeps_the_previous_content(tmp_path):
    path = tmp_path / "ckpt.pt"
    path.write_bytes(b"old")
    with pytest.raises(OSError, match="disk full"):
        with atomic_write(path, "wb") as f:
            f.write(b"half")
            raise OSError("disk full")
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.pt"]


def test_nothing_appears_until_the_write_is_complete(tmp_path):
    path = tmp_path / "weights.npz"
    with atomic_write(path, "wb") as f:
        f.write(b"data")
        assert not path.exists()
    assert path.read_bytes() == b"data"
