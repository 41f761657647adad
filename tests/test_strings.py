"""strings.py: the zh and en tables hold the same keys, the same placeholders and headers of the same width."""

import string

import pytest

from llmparts.strings import LANGS, STRINGS


def leaves(tree, prefix=""):
    """key path -> value for every string and list of strings in tree."""
    found = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            found.update(leaves(value, f"{prefix}{key}."))
        else:
            found[prefix + key] = value
    return found


def placeholders(value) -> set[str]:
    texts = value if isinstance(value, list) else [value]
    return {field for text in texts for _, field, _, _ in string.Formatter().parse(text) if field is not None}


ZH, EN = leaves(STRINGS["zh"]), leaves(STRINGS["en"])


def test_the_book_has_two_editions():
    assert LANGS == ("zh", "en")


def test_every_key_exists_in_both_languages():
    assert sorted(set(ZH) - set(EN)) == [] and sorted(set(EN) - set(ZH)) == []


@pytest.mark.parametrize("key", sorted(EN))
def test_both_languages_fill_in_the_same_values_and_have_the_same_shape(key):
    assert type(ZH[key]) is type(EN[key]), key
    if isinstance(EN[key], list):
        assert len(ZH[key]) == len(EN[key]), f"{key}: a header needs as many columns in zh as in en"
        assert all(isinstance(v, str) and v for v in ZH[key] + EN[key])
    assert placeholders(ZH[key]) == placeholders(EN[key]), key
    assert ZH[key] and EN[key]
