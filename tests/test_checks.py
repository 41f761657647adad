"""checks.py: one message shape for every bad argument, `NAME (VALUE) must RULE`."""

import argparse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmparts.checks import (check_bool, check_choice, check_cli_ints, check_generate_args, check_int, check_number,
                             check_sampling_args)


@pytest.mark.parametrize("value, minimum, message", [
    (0, 1, "n (0) must be a positive integer"),
    (-1, 0, "n (-1) must be a non-negative integer"),
    (1, 2, "n (1) must be an integer >= 2"),
    (2.0, 1, "n (2.0) must be a positive integer"),
    (True, 1, "n (True) must be a positive integer"),
    ("3", 1, "n ('3') must be a positive integer"),
])
def test_check_int_names_the_value_and_the_rule(value, minimum, message):
    with pytest.raises(ValueError) as err:
        check_int("n", value, minimum)
    assert str(err.value) == message


def test_valid_values_pass_silently():
    check_int("n", 0, minimum=0)
    check_number("x", 1e-3)
    check_bool("flag", False)
    check_choice("dtype", "float32", ("float32", "bfloat16"))
    check_sampling_args(0, None)
    check_generate_args(1, 0, 1.0, 40, block_size=1, use_cache=True)


@pytest.mark.parametrize("check, args, message", [
    (check_number, ("lr", float("inf")), "lr (inf) must be a finite number"),
    (check_number, ("lr", None), "lr (None) must be a finite number"),
    (check_bool, ("bias", "false"), "bias ('false') must be True or False"),
    (check_choice, ("dtype", "fp8", ("float32", "bfloat16")), "dtype ('fp8') must be one of 'float32', 'bfloat16'"),
])
def test_each_check_names_the_value_and_the_rule(check, args, message):
    with pytest.raises(ValueError) as err:
        check(*args)
    assert str(err.value) == message


@settings(max_examples=40, deadline=None)
@given(temperature=st.floats(max_value=-1e-12, allow_infinity=False), top_k=st.integers(-50, 0))
def test_negative_temperature_and_non_positive_top_k_are_rejected(temperature, top_k):
    with pytest.raises(ValueError) as err:
        check_sampling_args(temperature, None)
    assert str(err.value) == f"temperature ({temperature!r}) must be a number >= 0 (0 means greedy)"
    with pytest.raises(ValueError) as err:
        check_sampling_args(1.0, top_k)
    assert str(err.value) == f"top_k ({top_k!r}) must be a positive integer or None"


@pytest.mark.parametrize("args, message", [
    ((0, 5, 1.0, None, 64, True), "the prompt must hold at least one token"),
    ((1, -1, 1.0, None, 64, True), "max_new_tokens (-1) must be a non-negative integer"),
    ((60, 5, 1.0, None, 64, True), "prompt (60) + max_new_tokens (5) = 65 exceeds block_size (64), the KV cache's "
                                   "capacity; generate fewer tokens or pass use_cache=False"),
])
def test_generate_arguments_are_checked_before_any_work(args, message):
    with pytest.raises(ValueError) as err:
        check_generate_args(*args)
    assert str(err.value) == message
    check_generate_args(60, 5, 1.0, None, 64, use_cache=False)  # without a cache the context is cropped instead


def test_cli_counts_exit_2_with_one_line_naming_the_flag(capsys):
    parser = argparse.ArgumentParser(prog="tool")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--threads", type=int, default=None)
    check_cli_ints(parser, parser.parse_args(["--jobs", "2"]), ["jobs", "threads"])
    with pytest.raises(SystemExit) as exit_info:
        check_cli_ints(parser, parser.parse_args(["--jobs", "0"]), ["jobs", "threads"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.endswith("tool: error: --jobs (0) must be a positive integer\n")
