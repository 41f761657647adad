"""llmparts.drift: the CUSUM detector, the drifting streams, and delay against false alarms."""

import numpy as np
import pytest

from llmparts import drift


def test_cusum_matches_values_worked_by_hand():
    # S_t = max(0, S_{t-1} + x_t - 0.5) with mean 0 and std 1:
    # 0 - 0.5 -> 0; 0 + 2 - 0.5 = 1.5; 1.5 + 1.5 = 3; 3 - 3.5 -> 0; 0 + 1.5 - 0.5 = 1
    s = drift.cusum(np.array([0.0, 2.0, 2.0, -3.0, 1.5]), mean=0.0, std=1.0)
    assert s.tolist() == [0.0, 1.5, 3.0, 0.0, 1.0]
    assert drift.first_alarm(s, h=2.0) == 2 and drift.first_alarm(s, h=3.0) == -1  # strictly above h


def test_cusum_standardizes_by_the_reference_mean_and_std():
    x = np.array([10.0, 14.0, 14.0])  # (x - 10) / 2 = 0, 2, 2
    assert drift.cusum(x, mean=10.0, std=2.0).tolist() == [0.0, 1.5, 3.0]
    with pytest.raises(ValueError, match=r"std \(0.0\) must be > 0"):
        drift.cusum(x, mean=10.0, std=0.0)


def run_lengths(shift: float, h: float, n: int, length: int, seed: int) -> np.ndarray:
    """Batches until CUSUM's first alarm on N(shift, 1) noise (the alarm's index + 1)."""
    rng = np.random.default_rng(seed)
    out = np.array([drift.first_alarm(drift.cusum(rng.normal(shift, 1.0, length), 0.0, 1.0), h) for _ in range(n)])
    assert (out >= 0).all(), "every run must alarm within its length"
    return out + 1


def test_in_control_run_length_matches_the_textbook_336_for_h4_k05():
    # One-sided CUSUM, k = 0.5, h = 4: average run length 336 without a shift (Montgomery, Introduction
    # to Statistical Quality Control; Siegmund's approximation gives 338). 400 runs: standard error ~17.
    lengths = run_lengths(0.0, 4.0, n=400, length=4000, seed=0)
    assert 280 < lengths.mean() < 400


def test_a_one_std_shift_is_caught_in_about_8_batches_for_h4_k05():
    # The textbook out-of-control run length for a 1-sigma shift is 8.38.
    lengths = run_lengths(1.0, 4.0, n=400, length=200, seed=1)
    assert 7.0 < lengths.mean() < 10.0


def test_mixing_share_rises_linearly_over_the_ramp_and_stays_at_one():
    assert drift.mixing_share(6, start=2, ramp=2).tolist() == [0, 0, 0.5, 1, 1, 1]
    assert drift.mixing_share(4, start=1, ramp=0).tolist() == [0, 1, 1, 1]  # abrupt
    assert drift.mixing_share(4, start=4, ramp=0).tolist() == [0, 0, 0, 0]  # never drifts
    with pytest.raises(ValueError, match=r"start \(-1\)"):
        drift.mixing_share(4, start=-1, ramp=0)


def test_stream_draws_from_the_new_pool_in_proportion_to_the_share():
    share = drift.mixing_share(2000, start=1000, ramp=0)
    losses = drift.stream(np.zeros(10), np.ones(10), share, batch_size=4, rng=np.random.default_rng(0))
    assert losses[:1000].max() == 0.0 and losses[1000:].min() == 1.0
    half = drift.stream(np.zeros(10), np.ones(10), np.full(2000, 0.5), batch_size=4, rng=np.random.default_rng(0))
    assert abs(half.mean() - 0.5) < 0.02  # 8000 windows: standard error 0.006


def test_reference_is_the_window_std_over_the_root_of_the_batch_size():
    mean, std = drift.reference(np.array([1.0, 3.0]), batch_size=4)
    assert mean == 2.0 and std == pytest.approx(np.sqrt(2.0) / 2)


@pytest.fixture(scope="module")
def pools():
    rng = np.random.default_rng(7)
    old = rng.normal(1.5, 0.3, 600)
    # The reference from the old pool itself: a reference estimated from other windows is off by a little,
    # which moves every false-alarm rate (the chapter's experiment measures that case).
    return {"old": old, "new": rng.normal(1.8, 0.3, 600), "calibration": old}


def test_no_drift_streams_alarm_within_the_rate_their_threshold_was_chosen_for(pools):
    thresholds = [2, 4, 6, 8, 10, 12]
    common = dict(old=pools["old"], new=pools["old"], calibration=pools["calibration"], thresholds=thresholds,
                  n_streams=200, n_batches=200, start=200, ramp=0, batch_size=8)
    rate = 0.05
    select = drift.alarms(**common, seed=1)
    h = next(i for i in range(len(thresholds)) if np.mean(select[i] >= 0) <= rate)
    fresh = drift.alarms(**common, seed=2)  # other streams, the same threshold
    assert np.mean(fresh[h] >= 0) <= rate + 3 * np.sqrt(rate * (1 - rate) / 200)
    assert np.mean(select[0] >= 0) > 0.5  # the lowest threshold does raise false alarms: the choice matters


def test_an_abrupt_shift_is_detected_within_a_few_batches_and_a_higher_threshold_waits_longer(pools):
    # new - old = 0.3 per window; a batch of 8 has std 0.3 / sqrt(8): a shift of about 2.8 stds
    common = dict(old=pools["old"], new=pools["new"], calibration=pools["calibration"], n_streams=100,
                  n_batches=200, start=100, ramp=0, batch_size=8, seed=3)
    found = drift.alarms(**common, thresholds=[4, 12])
    low, high = (drift.delay_and_false_alarms(np.full(100, -1), found[i], start=100) for i in range(2))
    assert low["missed"] == high["missed"] == 0.0
    assert low["delay_mean"] < 4 and low["delay_mean"] < high["delay_mean"] < 8  # about (h + 1.17) / (2.3 ...)
    assert high["early"] == 0.0


def test_delay_and_false_alarms_counts_early_missed_and_delays():
    out = drift.delay_and_false_alarms(null_alarms=np.array([-1, 5, -1, -1]), drift_alarms=np.array([3, 12, 14, -1]),
                                       start=10)
    assert out["false_alarm"] == 0.25 and out["early"] == 0.25 and out["missed"] == 0.25
    assert out["delay_mean"] == 3.0 and out["delay_std"] == pytest.approx(np.sqrt(2.0))
    assert drift.delay_and_false_alarms(np.array([-1]), np.array([-1]), start=1)["delay_mean"] is None
