"""experiments/extrapolation.py: learned positions against RoPE beyond the training length, over the ablation's seeds."""

import pytest
import torch

from llmparts import recipes
from llmparts.experiments import REGISTRY
from llmparts.experiments.base import Result
from llmparts.experiments.extrapolation import (EXPERIMENT, POSITIONS, ExtrapolationRecord, PositionRows,
                                                position_rows)
from llmparts.model import GPT


def make_result() -> Result:
    """Two seeds per scheme at mean -/+ 0.02: every std is 0.028284."""
    config = {**EXPERIMENT.config("full"), "eval_lengths": [32, 64, 128, 256], "seeds": [0, 1]}
    outputs = {f"extrapolation {kind} seed {seed}": {"losses": [v + d for v in means], "params": 800_000}
               for kind, means in (("learned", (1.95, 1.93, 2.40, 2.79)), ("rope", (1.84, 1.82, 1.95, 2.11)))
               for seed, d in ((0, -0.02), (1, 0.02))}
    for seed, (seen, unseen_min, ratio) in enumerate(((0.40, 0.99999994, 0.90), (0.30, 0.99999988, 0.92))):
        outputs[f"extrapolation learned seed {seed}"]["position_rows"] = PositionRows(
            rows=256, train_len=64, seen_cosine=seen, unseen_cosine=1.0, unseen_min_cosine=unseen_min,
            seen_norm_ratio=2.5, unseen_norm_ratio=ratio)
    return Result("extrapolation", config, {}, EXPERIMENT.run(config, outputs, context=None))


def test_runs_cover_both_schemes_over_the_ablations_seeds():
    config = EXPERIMENT.config("full")
    assert config["seeds"] == REGISTRY["ablation"].config("full")["seeds"]
    assert sorted((t.kwargs["kind"], t.kwargs["seed"]) for t in EXPERIMENT.tasks(config, "full")) == \
        sorted((k, s) for k in POSITIONS for s in config["seeds"])
    assert config["configs"] == {"learned": {}, "rope": {"use_rope": True}}


def test_the_two_models_differ_only_in_their_positions():
    learned, rope = (recipes.ablation_variant(POSITIONS[k], block_size=256).to_dict() for k in POSITIONS)
    assert {k for k in learned if learned[k] != rope[k]} == {"use_rope"}


def test_summary_is_mean_and_std_over_seeds_per_length():
    record = make_result().record
    assert record.summary["learned"].mean == pytest.approx([1.95, 1.93, 2.40, 2.79])
    assert record.summary["rope"].std == pytest.approx([0.0282843] * 4, abs=1e-6)
    assert record.losses["rope"][1] == pytest.approx([1.86, 1.84, 1.97, 2.13])


def test_position_rows_tell_untouched_rows_from_trained_ones():
    torch.manual_seed(0)
    initial = torch.randn(8, 4)
    trained = initial.clone()
    trained[:3] = torch.randn(3, 4)  # rows 0..2 moved by "training"
    trained[3:] *= 0.9  # rows 3..7: weight decay only
    rows = position_rows(initial, trained, train_len=3)
    assert rows.unseen_cosine == pytest.approx(1.0) and rows.unseen_norm_ratio == pytest.approx(0.9)
    assert rows.seen_cosine < 0.9


def test_learned_rows_beyond_the_training_length_get_no_gradient():
    model = GPT(recipes.ablation_variant("baseline", block_size=256))
    idx = torch.randint(0, 65, (2, 64))
    _, loss = model(idx, idx)
    loss.backward()
    grad = model.pos_emb.weight.grad
    assert grad[:64].abs().sum() > 0 and torch.count_nonzero(grad[64:]) == 0


def test_variables_and_tables():
    report = EXPERIMENT.report(make_result())
    assert report.variables["extrapolation"] == {
        "train_len": "64", "max_len": "256", "seeds": "2", "block_size": "256", "last_trained_row": "63",
        "last_row": "255", "learned": {"at_train": "1.9300", "at_max": "2.7900", "at_max_std": "0.0283"},
        "rope": {"at_train": "1.8200", "at_max": "2.1100", "at_max_std": "0.0283"},
        "rows": {"unseen_cosine": "1.0000", "seen_cosine": "0.35", "unseen_norm_ratio": "0.91"}}
    zh, en = report.tables["extrapolation"]["zh"], report.tables["extrapolation"]["en"]
    assert "| 64（訓練長度） | 1.9300 ± 0.0283 | 1.8200 ± 0.0283 |" in zh
    assert "| 256 | 2.7900 ± 0.0283 | 2.1100 ± 0.0283 |" in zh
    assert "第 64–255 列從沒收到梯度" in zh and "rows 64–255 never receive a gradient" in en


def test_the_record_round_trips_through_json():
    from llmparts.experiments.base import from_json, to_json
    record = make_result().record
    assert from_json(ExtrapolationRecord, to_json(record)) == record
