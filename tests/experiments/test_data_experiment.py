"""experiments/data.py (chapter 04): the runs it asks for, its report, and what the chapter says about
the committed results/data.json."""

import json

import pytest

import booklib as B
from llmparts import datalab
from llmparts.data import dataset_path
from llmparts.experiments import REGISTRY
from llmparts.experiments.base import Result
from llmparts.experiments.data import EXPERIMENT, DataRecord
from llmparts.strings import STRINGS


def test_runs_cover_every_tokenizer_share_and_leak_once_per_seed():
    config = EXPERIMENT.config("full")
    tasks = EXPERIMENT.tasks(config, "full")
    assert len({t.key for t in tasks}) == len(tasks) == len(config["seeds"]) * (
        len(config["vocab_sizes"]) + len(config["fractions"]) + 1)
    assert config["fractions"] == [1 / 16, 1 / 8, 1 / 4, 1 / 2, 1] and config["vocab_sizes"] == [512, 768, 1280]
    assert config["model"] == datalab.model_config(65).to_dict()  # the LLaMA recipe


@pytest.fixture(scope="module")
def smoke_result():
    settings = datalab.SCALES["smoke"]
    record = datalab.run(settings, threads=1)
    return Result("data", EXPERIMENT.config("smoke"), {"wall_time_s": 60.0}, DataRecord(**record))


def test_report_has_its_tables_figure_and_variables_in_both_languages(smoke_result):
    report = EXPERIMENT.report(smoke_result)
    assert set(report.tables) == {"data_tokenizers", "data_scale", "data_hygiene", "data_leak", "data_speed"}
    for name, by_lang in report.tables.items():
        assert set(by_lang) == set(STRINGS)
        en, zh = by_lang["en"], by_lang["zh"]
        assert en.count("\n|") == zh.count("\n|") and "{#tbl-" + name + "}" in en
    for lang in STRINGS:
        assert len(report.figures["data_scale"](lang).axes[0].lines) == 2  # training and validation loss
    variables = report.variables["data"]
    assert variables["minutes"] == "1.0" and variables["steps"] == str(smoke_result.config["steps"])
    record = smoke_result.record
    char_bpc = datalab.mean_std([r["bits_per_char"] for r in record.tokenizers if r["tokenizer"] == "char"])[0]
    assert variables["tok"]["char"]["bpc"] == f"{char_bpc:.4f}"


# ---------------------------------------------------------------- chapter 04's claims about results/data.json

def committed() -> dict:
    return json.loads((B.ROOT / "results" / "data.json").read_text(encoding="utf-8"))


def test_every_bpe_beats_characters_far_beyond_the_noise_and_the_vocabularies_tie():
    s = committed()["summary"]
    tok, noise = s["tokenizers"], s["comparison"]["noise"]
    char = tok["char"]["bits_per_char"][0]
    bpe = sorted((t for name, t in tok.items() if name != "char"), key=lambda t: t["vocab_size"])
    assert len(bpe) == 3
    for t in bpe:
        assert t["bits_per_char"][0] < char - 10 * noise  # "about N times the spread": far beyond 2 sigma
    assert s["comparison"]["bpe_spread"] <= 2 * noise  # "within that noise"
    assert all(a["val_loss"][0] < b["val_loss"][0] for a, b in zip(bpe, bpe[1:]))  # loss per token rises
    for t in bpe:  # "about two characters per token", "twice as many characters" in one context
        assert 1.8 < t["chars_per_token"] < 2.5 and 1.8 * 64 < t["context_chars"] < 2.5 * 64
    assert all(a["steps"] > b["steps"] for a, b in zip(bpe, bpe[1:]))  # "fewer steps"


def test_shorter_runs_than_chapter_02_give_higher_losses_than_there():
    ablation = json.loads((B.ROOT / "results" / "ablation.json").read_text(encoding="utf-8"))
    llama = [r["val_loss"] for r in ablation["runs"] if r["config"] == "llama"]
    char = committed()["summary"]["tokenizers"]["char"]["val_loss"][0]
    assert committed()["config"]["steps"] < ablation["config"]["iters"] and char > max(llama)


def test_less_text_lowers_the_training_loss_raises_validation_and_widens_the_gap():
    rows = committed()["summary"]["scale"]  # smallest share first
    train = [r["train_loss"][0] for r in rows]
    val = [r["val_loss"][0] for r in rows]
    gap = [r["gap"][0] for r in rows]
    assert train == sorted(train) and val == sorted(val, reverse=True) and gap == sorted(gap, reverse=True)
    assert rows[-1]["fraction"] == 1 and rows[-1]["epochs"] < 1 and rows[0]["epochs"] > 10  # "less than once"
    assert rows[-1]["gap"][0] > 10 * rows[-1]["gap"][1]  # "not zero even with all of the text"
    half, full = rows[-2], rows[-1]
    assert half["val_loss"][0] - full["val_loss"][0] > 5 * (half["val_loss"][1] + full["val_loss"][1])  # "steeply"


def test_the_leak_lowers_the_leaked_half_beyond_the_noise_and_the_held_out_half_less():
    data = committed()
    leak = data["summary"]["leak"]
    assert leak["drop"][0] > 2 * leak["drop"][1]  # beyond the seed noise
    assert leak["held_out_change"][0] < 0  # "improves too"
    assert leak["drop"][0] > 2 * -leak["held_out_change"][0]  # "but only by": the leaked half gains far more
    train_chars = next(r["train_chars"] for r in data["scale"] if r["fraction"] == 1)
    assert 0.01 < leak["leaked_chars"] / train_chars < 0.1  # "a few percent of the training text"


def test_tinyshakespeare_is_clean_and_its_repeated_lines_are_speaker_names():
    from llmparts import hygiene
    h = committed()["hygiene"]
    assert h["overlap"]["with_overlap"] == 0
    counts = {}
    for line in hygiene.lines(dataset_path().read_text(encoding="utf-8")):
        counts[line] = counts.get(line, 0) + 1
    repeats = {line: n - 1 for line, n in counts.items() if n > 1}
    speakers = sum(n for line, n in repeats.items() if line.endswith(":") and line[:-1].upper() == line[:-1])
    assert speakers / sum(repeats.values()) > 0.8  # "most repeated lines are speaker names"
    assert "A horse! a horse! my kingdom for a horse!" in repeats
    assert h["long_lines"]["repeats"] <= h["long_lines_normalized"]["repeats"]


def test_speed_claims_hold_in_the_committed_results():
    sp = committed()["speed"]
    assert sp["same_ids"] and sp["same_merge_set"] and sp["same_merges_in_hf_tie_order"]
    assert sp["train_speedup"] > 1  # "training is where the Rust library wins"
    assert sp["encode_speedup"] < sp["train_speedup"]  # "encoding is closer"
    assert sp["ours_uncached_encode_s"] > sp["ours_encode_s"]  # the cache does most of the work
    assert sp["first_difference"] == 168 and sp["first_difference_count"] == 617


def test_a_tokenizer_that_saw_the_validation_text_needs_fewer_tokens_for_it():
    leak = committed()["tokenizer_leak"]
    assert 0 < 1 - leak["leaky_tokens"] / leak["clean_tokens"] < 0.1
