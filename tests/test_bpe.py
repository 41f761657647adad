"""The book's byte-level BPE (src/llmparts/bpe.py): exact round trips, the same ids and merges as
Hugging Face `tokenizers`, clear errors, and JSON files that load back to the same tokenizer."""

import ast
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmparts import bpe
from llmparts.bpe import BPEError, BPETokenizer, byte_to_unicode, hf_tokenizer, split_chunks
from llmparts.data import TRAIN_FRACTION, dataset_path
from llmparts.datalab import bits_per_char, hf_bpe_trainer_merges, hf_byte_order

tokenizers = pytest.importorskip("tokenizers")

MIXED = ("To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n"
         "我喜歡你。今天天氣很好，我們去散步吧！ 2024 年 12 月 — naïve café 🙂\n") * 3


@pytest.fixture(scope="module")
def splits():
    text = dataset_path().read_text(encoding="utf-8")
    n_train = int(TRAIN_FRACTION * len(text))
    return text[:n_train], text[n_train:]


@pytest.fixture(scope="module")
def shakespeare_bpe(splits):
    return BPETokenizer.train(splits[0], 512)


def merges_as_bytes(tok: BPETokenizer) -> list[tuple[bytes, bytes]]:
    return [(tok.vocab[a], tok.vocab[b]) for a, b in tok.merges]


# ---------------------------------------------------------------- the algorithm

def test_train_learns_the_textbook_merges():
    # Wikipedia's example: aa -> Z, then ab -> Y (a tie with Za, broken by the smaller ids), then ZY -> X.
    tok = BPETokenizer.train("aaabdaaabac", 259)
    assert merges_as_bytes(tok) == [(b"a", b"a"), (b"a", b"b"), (b"aa", b"ab")]
    assert tok.merge_counts == [4, 2, 2]
    assert tok.encode("aaabdaaabac") == [258, ord("d"), 258, ord("a"), ord("c")]


def test_vocab_256_is_plain_utf8_bytes():
    tok = BPETokenizer.train("hello", 256)
    assert tok.merges == [] and tok.vocab_size == 256
    assert tok.encode("héllo 你") == list("héllo 你".encode("utf-8"))


def test_training_stops_when_nothing_is_left_to_merge():
    tok = BPETokenizer.train("ab ab", 10_000)
    assert merges_as_bytes(tok) == [(b"a", b"b"), (b" ", b"ab")]


def test_merges_never_cross_a_chunk_and_counts_never_rise(shakespeare_bpe):
    assert split_chunks("Hello, world!\n\nROMEO: 'tis 2024_x") == [
        "Hello", ",", " world", "!", "\n", "\n", "ROMEO", ":", " '", "tis", " 2024", "_", "x"]
    assert all(a >= b for a, b in zip(shakespeare_bpe.merge_counts, shakespeare_bpe.merge_counts[1:]))
    for token in shakespeare_bpe.vocab[256:]:  # a space only ever starts a token (or the token is all spaces)
        assert b" " not in token.lstrip(b" ") or token.strip(b" ") == b""


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_chunks_join_back_into_any_text(text):
    assert "".join(split_chunks(text)) == text


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_round_trip_is_exact_on_random_unicode(text):
    tok = _mixed_tokenizer()
    assert tok.decode(tok.encode(text)) == text


@settings(max_examples=50, deadline=None)
@given(st.text(min_size=1, max_size=200), st.integers(256, 400))
def test_a_tokenizer_trained_on_any_text_round_trips_it(text, vocab_size):
    tok = BPETokenizer.train(text, vocab_size)
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    assert len(ids) <= len(text.encode("utf-8"))


_MIXED_TOKENIZER = []


def _mixed_tokenizer() -> BPETokenizer:
    if not _MIXED_TOKENIZER:
        _MIXED_TOKENIZER.append(BPETokenizer.train(MIXED, 400))
    return _MIXED_TOKENIZER[0]


def test_chinese_costs_three_byte_tokens_per_character_without_chinese_merges(shakespeare_bpe):
    sentence = "我喜歡你"
    assert shakespeare_bpe.encode(sentence) == list(sentence.encode("utf-8"))  # no Chinese in Shakespeare
    assert len(shakespeare_bpe.encode(sentence)) == 3 * len(sentence)
    chinese = BPETokenizer.train("我喜歡你。" * 20, 256 + 20)
    assert len(chinese.encode(sentence)) < len(sentence)  # trained on it, BPE beats characters


def test_compresses_shakespeare(shakespeare_bpe, splits):
    val = splits[1]
    ids = shakespeare_bpe.encode(val)
    assert shakespeare_bpe.decode(ids) == val
    assert len(val) / len(ids) > 1.8  # 256 merges already almost halve the sequence


# ---------------------------------------------------------------- Hugging Face tokenizers

def test_same_ids_as_hugging_face_on_the_whole_validation_text(shakespeare_bpe, splits):
    hf = hf_tokenizer(shakespeare_bpe)
    val = splits[1]
    ours = shakespeare_bpe.encode(val)
    assert hf.encode(val).ids == ours
    assert hf.decode(ours) == val
    for text in (MIXED, "我喜歡你", "  leading and trailing  \n\n", "tab\tand_underscore__x²"):
        assert hf.encode(text).ids == shakespeare_bpe.encode(text), text


@pytest.mark.slow
def test_trainer_matches_hugging_face_bpe_trainer_up_to_tie_breaking(splits):
    train_text = splits[0]
    theirs = hf_bpe_trainer_merges(train_text, 1280)
    # Told to break ties in the order tokenizers' ids give the bytes, our trainer learns the same merges.
    assert merges_as_bytes(BPETokenizer.train(train_text, 1280, byte_order=hf_byte_order())) == theirs
    # By default, ties go to the smaller byte value; tokenizers ranks the 68 unprintable bytes (space
    # and newline among them) after the printable ones. The first tie the two orders break differently:
    ours = BPETokenizer.train(train_text, 1280)
    mine = merges_as_bytes(ours)
    first = next(i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b)
    assert first == 168
    assert mine[first] == (b" ", b"v") and theirs[first] == (b"u", b"st")
    assert ours.merge_counts[first] == ours.merge_counts[first + 1] == 617  # a tie, taken in the other order
    assert mine[first + 1] == theirs[first]
    assert set(mine) == set(theirs)  # the same merges, in a different order


def test_hf_vocabulary_is_written_with_gpt2_byte_characters():
    table = byte_to_unicode()
    assert len(set(table.values())) == 256
    assert table[ord(" ")] == "Ġ" and table[ord("\n")] == "Ċ" and table[ord("A")] == "A"


# ---------------------------------------------------------------- errors, saving and loading

def test_bad_training_input_gets_one_clear_line():
    with pytest.raises(BPEError, match=r"training text is empty"):
        BPETokenizer.train("", 300)
    with pytest.raises(BPEError, match=r"vocab_size \(255\) must be an integer >= 256"):
        BPETokenizer.train("some text", 255)
    with pytest.raises(BPEError, match=r"byte_order must list each of the 256 byte values exactly once"):
        BPETokenizer.train("some text", 300, byte_order=[0] * 256)


def test_decode_rejects_ids_outside_the_vocabulary(shakespeare_bpe):
    with pytest.raises(BPEError, match=r"token id 512 is not in the vocabulary of 512 tokens"):
        shakespeare_bpe.decode([72, 512])
    with pytest.raises(BPEError, match=r"token id 'x' is not an integer"):
        shakespeare_bpe.decode(["x"])
    assert shakespeare_bpe.decode([shakespeare_bpe.encode("我")[0]]) == "\ufffd"  # a third of a character


def test_save_and_load_give_the_same_tokenizer(shakespeare_bpe, tmp_path):
    path = shakespeare_bpe.save(tmp_path / "bpe.json")
    loaded = BPETokenizer.load(path)
    assert loaded.merges == shakespeare_bpe.merges and loaded.vocab == shakespeare_bpe.vocab
    assert loaded.encode(MIXED) == shakespeare_bpe.encode(MIXED)


@pytest.mark.parametrize("content, message", [
    ("{not json", r"is corrupt: not JSON"),
    ('{"merges": []}', r'is not a llmparts-bpe-v1 file'),
    (json.dumps({"format": "llmparts-bpe-v1", "split_pattern": r"\S+", "merges": []}), r"splits text with"),
    (json.dumps({"format": "llmparts-bpe-v1", "split_pattern": bpe.SPLIT_PATTERN, "merges": [[1, 2, 3]]}),
     r'"merges" must be a list of \[a, b\] pairs'),
    (json.dumps({"format": "llmparts-bpe-v1", "split_pattern": bpe.SPLIT_PATTERN, "merges": [[97, 256]]}),
     r"merge 0 \(97, 256\) must join two ids below 256"),
    (json.dumps({"format": "llmparts-bpe-v1", "split_pattern": bpe.SPLIT_PATTERN,
                 "merges": [[97, 98], [97, 98]]}), r"merge 1 \(97, 98\) repeats merge 0"),
])
def test_a_corrupt_merges_file_gets_one_clear_line(tmp_path, content, message):
    path = tmp_path / "bpe.json"
    path.write_text(content)
    with pytest.raises(BPEError, match=message) as info:
        BPETokenizer.load(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_missing_merges_file(tmp_path):
    with pytest.raises(BPEError, match=r"no merges file at"):
        BPETokenizer.load(tmp_path / "nope.json")


def test_runs_without_torch_or_numpy():
    # The module is fetched into the reader's browser: only the standard library (tokenizers lazily).
    tree = ast.parse(open(bpe.__file__, encoding="utf-8").read())
    top_level = {alias.name.split(".")[0] for node in tree.body if isinstance(node, ast.Import)
                 for alias in node.names} | {node.module.split(".")[0] for node in tree.body
                                             if isinstance(node, ast.ImportFrom)}
    assert top_level <= {"__future__", "json", "re", "collections", "pathlib"}


# ---------------------------------------------------------------- bits per character

def test_bits_per_char_of_a_character_model_is_its_loss_in_bits():
    assert bits_per_char(math.log(2), 1000, 1000) == pytest.approx(1.0)
    assert bits_per_char(1.5, 500, 500) == pytest.approx(1.5 / math.log(2))


def test_bits_per_char_is_the_total_information_over_the_characters():
    # A model uniform over 512 tokens pays log2(512) = 9 bits per token; at 2.5 characters per token
    # that is 9 / 2.5 bits per character, whatever the tokenizer.
    n_chars, n_tokens = 10_000, 4_000
    assert bits_per_char(math.log(512), n_tokens, n_chars) == pytest.approx(9 * n_tokens / n_chars)
