"""tokenizer.py: one id per character, the same class for the training data and the NumPy twin in the browser."""

import pytest

from llmparts.tokenizer import CharTokenizer


def test_ids_follow_sorted_character_order_and_round_trip():
    tok = CharTokenizer.from_text("hello world")
    assert tok.chars == " dehlorw" and tok.vocab_size == 8
    assert tok.encode("hold") == [3, 5, 4, 1]
    assert tok.decode(tok.encode("hello world")) == "hello world"


def test_a_list_of_characters_is_the_same_vocabulary_as_a_string():
    assert CharTokenizer(["a", "b"]).chars == CharTokenizer("ab").chars == "ab"


def test_unknown_characters_are_named():
    tok = CharTokenizer("\n !abcdefghij")
    with pytest.raises(ValueError, match=r"^character '€' is not in the vocabulary of 13 characters$"):
        tok.encode("abc€")
    with pytest.raises(ValueError, match=r"^characters \['Z', 'z'\] are not in the vocabulary of 13 characters$"):
        tok.encode("zaZ")


def test_repeated_characters_are_refused():
    with pytest.raises(ValueError, match=r"chars \('aba'\) must not repeat a character"):
        CharTokenizer("aba")


def test_the_numpy_twin_and_the_data_use_this_tokenizer():
    from llmparts import data, numpy_model
    assert numpy_model.CharTokenizer is CharTokenizer and data.CharTokenizer is CharTokenizer


def test_tokenizer_module_imports_neither_torch_nor_numpy_at_import_time():
    import ast
    import llmparts.tokenizer as module
    tree = ast.parse(open(module.__file__, encoding="utf-8").read())
    top_level = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    names = [a.name for n in top_level for a in n.names] + [n.module or "" for n in top_level]
    assert not any(name.split(".")[0] in ("torch", "numpy") for name in names), names
