"""Hash-based hygiene (src/llmparts/hygiene.py): duplicates, near duplicates, train/validation overlap."""

import numpy as np

from llmparts import hygiene

VERSE = ["Now is the winter of our discontent", "Made glorious summer by this sun of York;",
         "And all the clouds that lour'd upon our house", "In the deep bosom of the ocean buried."]


def test_exact_duplicate_lines_are_counted_once_per_repeat():
    text = "\n".join(["ROMEO:", VERSE[0], "JULIET:", VERSE[1], "ROMEO:", VERSE[0], "", "ROMEO:"])
    found = hygiene.duplicates(hygiene.lines(text))
    assert found["items"] == 7 and found["distinct"] == 4 and found["repeats"] == 3
    assert found["top"][0] == ("ROMEO:", 3)
    assert found["repeat_char_share"] == (2 * len("ROMEO:") + len(VERSE[0])) / sum(
        len(s) for s in hygiene.lines(text))


def test_normalised_lines_catch_case_and_punctuation_variants():
    lines = ["Ay, my lord.", "ay my lord", "AY -- MY LORD!", "No, my lord."]
    assert hygiene.duplicates(lines)["repeats"] == 0
    assert hygiene.duplicates(lines, key=hygiene.normalize)["repeats"] == 2


def test_passages_are_the_blocks_between_blank_lines():
    text = "A:\nline one\nline two\n\nB:\nline three\n\n\n  \nC:\nfour\n"
    assert hygiene.passages(text) == ["A:\nline one\nline two", "B:\nline three", "C:\nfour"]


def test_minhash_agreement_estimates_jaccard_similarity():
    a = {(str(i),) for i in range(200)}
    b = {(str(i),) for i in range(100, 300)}  # Jaccard 100 / 300
    sig_a, sig_b = hygiene.minhash(a, num_perm=512), hygiene.minhash(b, num_perm=512)
    assert abs(np.mean(sig_a == sig_b) - 1 / 3) < 0.07
    assert np.array_equal(hygiene.minhash(a, num_perm=16), hygiene.minhash(set(sorted(a)), num_perm=16))


def test_near_duplicate_passages_finds_the_planted_pair_and_nothing_else():
    speech = " ".join(VERSE)
    edited = speech.replace("glorious", "glorious, glorious").replace("buried.", "buried!")
    others = [f"Speech {i}: " + " ".join(f"word{i}x{j}" for j in range(30)) for i in range(40)]
    texts = others[:10] + [speech] + others[10:] + [edited]
    pairs = hygiene.near_duplicate_passages(texts, n=5, threshold=0.5)
    assert [(p["a"], p["b"]) for p in pairs] == [(10, len(texts) - 1)]
    assert 0.5 <= pairs[0]["jaccard"] < 1


def test_overlap_finds_a_validation_passage_that_shares_a_13_gram_with_training():
    train = "\n\n".join(VERSE * 2)
    copied = "X:\n" + " ".join(VERSE[:2])  # 14 words of training text, across a line break
    fresh = "Y:\n" + " ".join(f"fresh{i}" for i in range(20))
    short = "Z:\nToo short."
    found = hygiene.overlap(" ".join(VERSE), [copied, fresh, short], n=13)
    assert found == {"n": 13, "passages": 2, "with_overlap": 1, "share": 0.5}
    assert hygiene.overlap(train, [fresh], n=13)["with_overlap"] == 0


def test_digest_is_stable_across_runs():
    assert hygiene.digest("ROMEO:") == hygiene.digest("ROMEO:") != hygiene.digest("ROMEO: ")
    assert hygiene.digest("ROMEO:") == 0x4e0ef9252163543e  # blake2b, 8 bytes: not Python's per-process hash()
