"""llmparts.reward: chapter 09's programmatic reward, on completions worked out by hand."""

import pytest

from llmparts.reward import SPEAKER, VERSE_MAX, VERSE_MIN, repetition, reward, score, verse_lines

VERSE = "But soft, what light through yonder window"  # 42 characters: verse-like
assert VERSE_MIN <= len(VERSE) <= VERSE_MAX


def test_romeo_speaking_verse_earns_the_full_reward():
    assert score(f"ROMEO:\n{VERSE}\n{VERSE}\nAnd") == {"speaker": 1.0, "verse": 1.0, "reward": 1.0}


def test_another_speaker_earns_only_the_verse_half():
    assert score(f"JULIET:\n{VERSE}\n") == {"speaker": 0.0, "verse": 1.0, "reward": 0.5}


def test_the_name_must_be_the_whole_first_line():
    assert score(f"ROMEO: {VERSE}\n")["speaker"] == 0.0          # the speech on the name's line
    assert score(f"FRIAR ROMEO:\n{VERSE}\n")["speaker"] == 0.0   # another name that contains it
    assert score("ROMEO:")["speaker"] == 0.0                      # the name line never finished


def test_verse_half_is_the_share_of_judged_lines_of_verse_length():
    short, long = "Ay.", "x" * (VERSE_MAX + 1)
    assert score(f"ROMEO:\n{VERSE}\n{short}\n{long}\n{VERSE}\n") == {"speaker": 1.0, "verse": 0.5, "reward": 0.75}


def test_verse_bounds_are_inclusive():
    assert verse_lines("x" * VERSE_MIN + "\n" + "x" * VERSE_MAX + "\n") == [True, True]
    assert verse_lines("x" * (VERSE_MIN - 1) + "\n") == [False]


def test_the_unfinished_last_line_counts_only_once_it_is_long_enough():
    assert verse_lines(f"{VERSE}\nAnd so") == [True]                      # too short to judge yet
    assert verse_lines(f"{VERSE}\n" + "x" * VERSE_MIN) == [True, True]      # long enough: verse-like so far
    assert verse_lines(f"{VERSE}\n" + "x" * (VERSE_MAX + 1)) == [True, False]  # already too long


def test_no_judged_line_earns_no_verse():
    assert score("ROMEO:\nAy") == {"speaker": 1.0, "verse": 0.0, "reward": 0.5}
    assert reward("") == 0.0


def test_speaker_can_be_chosen():
    assert reward(f"JULIET:\n{VERSE}\n", speaker="JULIET") == 1.0 and SPEAKER == "ROMEO"


@pytest.mark.parametrize("text, expected", [("a b c d", 0.0), ("the the the the", 0.75), ("The the", 0.5), ("", 0.0)])
def test_repetition_is_the_share_of_words_seen_before(text, expected):
    assert repetition(text) == expected


def test_chapter_claim_forty_copies_of_one_word_earn_the_full_point_and_only_repetition_tells():
    degenerate = "ROMEO:\n" + "\n".join(["love " * 8] * 5)  # lines of 40 characters: verse length, no verse
    assert reward(degenerate) == 1.0 and repetition(degenerate) > 0.9


def test_chapter_claim_the_first_cells_example_earns_the_full_point():
    text = ("ROMEO:\nBut soft, what light through yonder window breaks?\n"
            "It is the east, and Juliet is the sun.")
    assert reward(text) == 1.0
