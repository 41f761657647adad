"""Chapter 04's science (src/llmparts/datalab.py) at smoke scale: the records its runs write, the units
they convert, and what the chapter's cells and prose say about the tokenizer.
(The experiment's schedule, report and committed results: tests/experiments/test_data_experiment.py.)"""

import math

import pytest

from llmparts import datalab
from llmparts.data import dataset_path
from llmparts.flops import flops_per_token


@pytest.fixture(scope="module")
def record():
    scale = datalab.SCALES["smoke"]
    return {"config": datalab.config_record(scale), **datalab.run(scale, threads=1)}


def test_equal_compute_gives_a_larger_vocabulary_fewer_steps_of_the_same_flops():
    steps = {v: datalab.equal_compute_steps(1000, v, 65) for v in (65, 512, 768, 1280)}
    assert steps[65] == 1000 and steps[65] > steps[512] > steps[768] > steps[1280]
    per_token = {v: flops_per_token(datalab.model_config(v), datalab.SEQ_LEN) for v in steps}
    for v, n in steps.items():  # within half a step of the character model's budget
        assert abs(n * per_token[v] - 1000 * per_token[65]) <= 0.5 * per_token[v]


def test_bits_per_char_uses_the_whole_validation_text_ratio():
    # 2.5 characters per token: a loss of 2.5 * ln 2 nats per token is exactly 1 bit per character.
    assert datalab.bits_per_char(2.5 * math.log(2), 400, 1000) == pytest.approx(1.0)


def test_the_record_holds_every_run_and_its_units_agree(record):
    cfg = record["config"]
    seeds, vocab_sizes = cfg["seeds"], cfg["vocab_sizes"]
    names = {r["tokenizer"] for r in record["tokenizers"]}
    assert names == {"char"} | {f"bpe{v}" for v in vocab_sizes}
    assert len(record["tokenizers"]) == len(names) * len(seeds)
    for r in record["tokenizers"]:
        assert r["bits_per_char"] == pytest.approx(r["val_loss"] / math.log(2) / r["chars_per_token"])
        assert r["context_chars"] == pytest.approx(datalab.SEQ_LEN * r["chars_per_token"])
        assert r["embedding_params"] == r["vocab_size"] * datalab.model_config(65).n_embd  # tied: counted once
        assert r["steps"] == datalab.equal_compute_steps(cfg["steps"], r["vocab_size"], 65)
    char = next(r for r in record["tokenizers"] if r["tokenizer"] == "char")
    assert char["chars_per_token"] == 1.0 and char["vocab_size"] == 65
    bpe = sorted((r for r in record["tokenizers"] if r["seed"] == seeds[0] and r["tokenizer"] != "char"),
                 key=lambda r: r["vocab_size"])
    assert all(a["chars_per_token"] < b["chars_per_token"] for a, b in zip(bpe, bpe[1:]))

    assert sorted({r["fraction"] for r in record["scale"]}) == sorted(cfg["fractions"])
    for r in record["scale"]:
        assert r["epochs"] == pytest.approx(cfg["steps"] * datalab.BATCH_SIZE * datalab.SEQ_LEN / r["train_chars"])
    full = [r for r in record["scale"] if r["fraction"] == 1]
    assert [r["val_loss"] for r in full] == [r["val_loss"] for r in record["tokenizers"] if r["tokenizer"] == "char"]

    assert sorted((r["copies"], r["seed"]) for r in record["leak"]) == sorted(
        [(0, s) for s in seeds] + [(cfg["leak_copies"], s) for s in seeds])


def test_our_bpe_agrees_with_hugging_face_in_the_record(record):
    speed = record["speed"]
    assert speed["same_ids"] and speed["same_merge_set"] and speed["same_merges_in_hf_tie_order"]
    assert speed["val_tokens"] < speed["val_chars"]
    for key in ("ours_train_s", "hf_train_s", "ours_encode_s", "hf_encode_s", "ours_uncached_encode_s"):
        assert speed[key] > 0


def test_a_tokenizer_that_saw_the_validation_text_cuts_it_into_fewer_tokens(record):
    leak = record["tokenizer_leak"]
    assert leak["leaky_tokens"] < leak["clean_tokens"] < leak["val_chars"]
    assert leak["leaky_chars_per_token"] == pytest.approx(leak["val_chars"] / leak["leaky_tokens"])


def test_hygiene_in_the_record_counts_tinyshakespeare(record):
    h = record["hygiene"]
    assert h["lines"]["items"] == h["lines"]["distinct"] + h["lines"]["repeats"]
    assert h["long_lines"]["repeats"] <= h["long_lines_normalized"]["repeats"]
    assert h["overlap"]["n"] == 13 and 0 <= h["overlap"]["with_overlap"] <= h["overlap"]["passages"]


def test_leak_summary_pairs_runs_by_seed():
    leak = [{"copies": 0, "seed": 0, "leaked_chars": 0, "leaked_half_loss": 2.0, "held_out_half_loss": 2.1},
            {"copies": 0, "seed": 1, "leaked_chars": 0, "leaked_half_loss": 2.2, "held_out_half_loss": 2.3},
            {"copies": 1, "seed": 0, "leaked_chars": 9, "leaked_half_loss": 1.9, "held_out_half_loss": 2.1},
            {"copies": 1, "seed": 1, "leaked_chars": 9, "leaked_half_loss": 2.1, "held_out_half_loss": 2.3}]
    summary = datalab.summarize({"tokenizers": [], "scale": [], "leak": leak})["leak"]
    assert summary["drop"] == pytest.approx((0.1, 0.0))  # each seed's own clean model is its reference
    assert summary["held_out_change"] == pytest.approx((0.0, 0.0))
    assert summary["clean_leaked"][0] == pytest.approx(2.1)


def test_model_is_the_books_llama_recipe():
    from llmparts import recipes
    assert datalab.model_config(65) == recipes.LLAMA


# ---------------------------------------------------------------- what chapter 04 says about its cells and its code

import booklib as B  # noqa: E402


@pytest.mark.parametrize("lang", B.LANGS)
def test_merge_cell_learns_the_pieces_the_prose_names_with_falling_counts(lang):
    ns = B.run_cells_until(lang, "04-data", "paragraph = ")
    tok = ns["tok"]
    learned = [tok.vocab[i] for i in range(256, tok.vocab_size)]
    assert learned[:4] == [b" t", b"he", b" a", b"nd"]
    assert {b" to", b" the"} <= set(learned)
    assert tok.merges[learned.index(b" the")] == (256, 257)  # " t" + "he"
    assert all(a >= b for a, b in zip(tok.merge_counts, tok.merge_counts[1:]))


@pytest.mark.parametrize("lang", B.LANGS)
def test_chinese_cell_costs_three_bytes_per_character_until_bpe_learns_chinese(lang):
    ns = B.run_cells_until(lang, "04-data", "zh_tok = ")
    chinese, tok, zh_tok = ns["chinese"], ns["tok"], ns["zh_tok"]
    assert len(tok.encode(chinese)) == len(chinese.encode("utf-8")) == 3 * len(chinese)
    assert len(zh_tok.encode(chinese)) < len(chinese)  # "fewer tokens than it has characters"
    assert len(zh_tok.merges) == 100
    pieces = [zh_tok.decode([i]) for i in zh_tok.encode(chinese)]
    assert "我們" in pieces and "今天" in pieces and any("\ufffd" in p for p in pieces)
    assert zh_tok.decode(zh_tok.encode(chinese)) == chinese


def test_gpt2_table_puts_68_unprintable_bytes_after_the_printable_ones():
    from llmparts.bpe import byte_to_unicode
    table = byte_to_unicode()
    moved = [b for b, ch in table.items() if ord(ch) >= 256]
    assert len(moved) == 68 and ord(" ") in moved and ord("\n") in moved
    order = datalab.hf_byte_order()
    assert set(order[-68:]) == set(moved)
