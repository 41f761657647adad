"""flops.py: the FLOP count behind MFU, and the meter that leaves out a run's first step."""

import torch

from llmparts.config import ModelConfig
from llmparts.flops import SpeedMeter, flops_per_token, peak_flops
from llmparts.model import GPT
from llmparts.recipes import BASELINE


def test_flops_per_token_is_6n_plus_attention_term():
    n_without_positions = GPT(BASELINE).num_params() - 64 * 128
    assert flops_per_token(BASELINE, 64) == 6 * n_without_positions + 12 * 4 * 128 * 64


def test_flops_with_rope_count_every_parameter():
    config = ModelConfig(use_rope=True)
    assert flops_per_token(config, 64) == 6 * GPT(config).num_params() + 12 * 4 * 128 * 64


def test_counting_flops_builds_nothing_and_draws_no_random_numbers():
    torch.manual_seed(0)
    before = torch.get_rng_state()
    flops_per_token(ModelConfig.llama2(), 512)
    assert torch.equal(torch.get_rng_state(), before)


def test_meter_leaves_out_the_first_step_unless_it_is_the_only_one():
    meter = SpeedMeter(BASELINE, tokens_per_step=768, seq_len=64, peak=peak_flops("cpu", 1), steps=3)
    for _ in range(3):
        meter.start()
        meter.stop()
    assert meter.steps == 2 and meter.tokens_per_sec > 0 and meter.mfu > 0
    single = SpeedMeter(BASELINE, tokens_per_step=768, seq_len=64, peak=1.0, steps=1)
    single.start()
    single.stop()
    assert single.steps == 1
    assert SpeedMeter(BASELINE, 768, 64, 1.0, steps=5).tokens_per_sec == 0.0  # nothing timed yet
