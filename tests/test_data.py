import functools
import hashlib
import http.server
import threading
import urllib.request
from pathlib import Path

import pytest
import torch

from llmparts import data
from llmparts.data import (DATA_SHA256, DataError, dataset_path, fixed_batches, get_batch,
                           load_dataset)


@pytest.fixture(scope="module")
def ds():
    return load_dataset()


@pytest.fixture(scope="module")  # set up before no_env removes $TINYSHAKESPEARE
def real_file():
    return Path(dataset_path()).resolve()  # absolute: some tests change the working directory


@pytest.fixture
def no_env(monkeypatch, tmp_path):
    """No $TINYSHAKESPEARE and an empty working directory: dataset_path must download."""
    monkeypatch.delenv("TINYSHAKESPEARE", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def local_server(tmp_path_factory):
    """An HTTP server on 127.0.0.1 serving a folder: the download is tested without the internet."""
    root = tmp_path_factory.mktemp("served")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    server.root, server.url = root, f"http://127.0.0.1:{server.server_address[1]}/"
    yield server
    server.shutdown()
    server.server_close()


def test_dataset_path_prefers_env_and_checks_its_sha256(real_file):
    assert hashlib.sha256(real_file.read_bytes()).hexdigest() == DATA_SHA256


def test_dataset_travels_with_the_repository_and_needs_no_network(monkeypatch):
    repo = Path(__file__).resolve().parents[1]
    committed = repo / "data/tinyshakespeare/input.txt"
    assert committed.stat().st_size == 1_115_394
    assert hashlib.sha256(committed.read_bytes()).hexdigest() == DATA_SHA256
    assert "tinyshakespeare" in (committed.parent / "README.md").read_text(encoding="utf-8")

    def no_network(*args, **kwargs):
        raise AssertionError("dataset_path() went to the network although the file is in the repository")

    monkeypatch.delenv("TINYSHAKESPEARE", raising=False)
    monkeypatch.chdir(repo)
    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    assert dataset_path() == Path("data/tinyshakespeare/input.txt")


def test_env_pointing_to_missing_file_is_refused_with_the_path(monkeypatch, tmp_path):
    monkeypatch.setenv("TINYSHAKESPEARE", str(tmp_path / "nope.txt"))
    with pytest.raises(DataError, match=r"TINYSHAKESPEARE \(.*nope.txt\) is not a file"):
        dataset_path()


def test_wrong_file_is_refused_with_what_to_do(monkeypatch, tmp_path):
    wrong = tmp_path / "input.txt"
    wrong.write_text("not shakespeare")
    monkeypatch.setenv("TINYSHAKESPEARE", str(wrong))
    with pytest.raises(DataError, match="expected 86c4e6aa.*delete it"):
        dataset_path()


def test_deleted_file_is_downloaded_over_http_verified_and_then_reused(no_env, monkeypatch, real_file, local_server):
    (local_server.root / "input.txt").write_bytes(real_file.read_bytes())
    monkeypatch.setattr(data, "DATA_URL", local_server.url + "input.txt")
    path = dataset_path()
    assert path == Path("data/tinyshakespeare/input.txt")
    assert path.read_bytes() == real_file.read_bytes()
    assert [p.name for p in path.parent.iterdir()] == ["input.txt"]  # no temporary file left behind
    (local_server.root / "input.txt").unlink()  # the server has nothing now: a second download would fail
    assert dataset_path() == path


def test_download_with_wrong_content_writes_nothing(no_env, monkeypatch, local_server):
    (local_server.root / "input.txt").write_text("tampered")
    monkeypatch.setattr(data, "DATA_URL", local_server.url + "input.txt")
    with pytest.raises(DataError, match="nothing was written"):
        dataset_path()
    assert [p for p in no_env.rglob("*") if p.is_file()] == []


def test_failed_download_and_no_file_gives_one_clear_message(no_env, monkeypatch, local_server):
    url = local_server.url + "missing/input.txt"  # the server answers 404
    monkeypatch.setattr(data, "DATA_URL", url)
    with pytest.raises(DataError) as e:
        dataset_path()
    assert f"download from {url} failed" in str(e.value) and "404" in str(e.value)
    assert "set TINYSHAKESPEARE" in str(e.value)
    assert "\n" not in str(e.value)


def test_vocabulary_has_65_characters_and_round_trips(ds):
    tok = ds.tokenizer
    assert tok.vocab_size == 65 == len(tok.chars)
    assert tok.chars[:3] == "\n !"
    text = "ROMEO:\nWherefore art thou?"
    assert tok.decode(tok.encode(text)) == text


def test_unknown_character_is_named(ds):
    with pytest.raises(ValueError, match="character '€' is not in the vocabulary of 65"):
        ds.tokenizer.encode("ROMEO€")


def test_split_is_90_10_by_position(ds, real_file):
    assert (len(ds.train), len(ds.val)) == (1_003_854, 111_540)
    text = real_file.read_text()
    assert ds.tokenizer.decode(ds.train[:20]) == text[:20]
    assert ds.tokenizer.decode(ds.val[-20:]) == text[-20:]
    assert ds.train.dtype == ds.val.dtype == torch.long


def test_batch_targets_are_inputs_shifted_by_one(ds):
    x, y = get_batch(ds.train, 8, 32, torch.Generator().manual_seed(3))
    assert x.shape == y.shape == (8, 32)
    assert torch.equal(x[:, 1:], y[:, :-1])
    text = ds.tokenizer.decode(ds.train.tolist())
    for row_x, row_y in zip(x, y):
        window = ds.tokenizer.decode(row_x) + ds.tokenizer.decode(row_y[-1:])
        assert window in text


def test_batches_follow_the_generator_seed(ds):
    a = get_batch(ds.train, 4, 16, torch.Generator().manual_seed(1))
    b = get_batch(ds.train, 4, 16, torch.Generator().manual_seed(1))
    c = get_batch(ds.train, 4, 16, torch.Generator().manual_seed(2))
    assert torch.equal(a[0], b[0]) and not torch.equal(a[0], c[0])


def test_fixed_batches_are_the_same_text_for_every_caller(ds):
    first = fixed_batches(ds.val, 3, 4, 16, seed=0)
    again = fixed_batches(ds.val, 3, 4, 16, seed=0)
    other = fixed_batches(ds.val, 3, 4, 16, seed=1)
    assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(first, again))
    assert not torch.equal(first[0][0], other[0][0])


def test_seq_len_as_long_as_the_data_is_refused():
    with pytest.raises(ValueError, match=r"seq_len \(10\) must be shorter than the token sequence \(10 tokens\)"):
        get_batch(torch.arange(10), 2, 10)
