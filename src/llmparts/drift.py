"""Drift on a stream of per-batch losses: build a stream that moves from one domain to another, watch it
with CUSUM, and measure detection delay against false alarms.

Pure NumPy (no torch): chapter 08's cells run this file unchanged in the reader's browser. The losses
themselves come from llmparts.driftlab, which scores text windows with the trained model; here a domain is
only a pool of per-window losses, and a batch's loss is the mean over its windows.

    share = mixing_share(300, start=100, ramp=100)              # 0 ... 0, rising to 1, then 1
    losses = stream(old_pool, new_pool, share, batch_size=8, rng=np.random.default_rng(0))
    s = cusum(losses, mean, std)                                # std: of one batch's loss, in-domain
    alarm = first_alarm(s, h=8.0)                               # batch index, or -1 for no alarm
"""

from __future__ import annotations

import numpy as np

K = 0.5  # CUSUM's slack, in standard deviations: tuned to catch a mean shift of 2K = 1 std quickly


def mixing_share(n_batches: int, start: int, ramp: int) -> np.ndarray:
    """The new domain's share of each batch: 0 before start, rising linearly over ramp batches, then 1.

    ramp=0 is an abrupt switch at start; start >= n_batches is a stream that never drifts.
    """
    if n_batches < 1 or start < 0 or ramp < 0:
        raise ValueError(f"n_batches ({n_batches!r}) must be >= 1, start ({start!r}) and ramp ({ramp!r}) >= 0")
    t = np.arange(n_batches, dtype=float)
    if ramp == 0:
        return (t >= start).astype(float)
    return np.clip((t - start + 1) / ramp, 0.0, 1.0)


def stream(old: np.ndarray, new: np.ndarray, share: np.ndarray, batch_size: int, rng) -> np.ndarray:
    """Per-batch mean loss: each window comes from the new pool with probability share[t], else from the old
    pool, drawn with replacement."""
    old, new, share = np.asarray(old, float), np.asarray(new, float), np.asarray(share, float)
    from_new = rng.random((len(share), batch_size)) < share[:, None]
    losses = np.where(from_new, rng.choice(new, from_new.shape), rng.choice(old, from_new.shape))
    return losses.mean(axis=1)


def reference(calibration: np.ndarray, batch_size: int) -> tuple[float, float]:
    """In-domain mean and standard deviation of one batch's loss, from per-window losses of held-out
    in-domain text: windows are independent, so a batch of n has the window std / sqrt(n)."""
    calibration = np.asarray(calibration, float)
    return float(calibration.mean()), float(calibration.std(ddof=1) / np.sqrt(batch_size))


def cusum(x: np.ndarray, mean: float, std: float, k: float = K) -> np.ndarray:
    """One-sided (upper) CUSUM: S_t = max(0, S_{t-1} + (x_t - mean) / std - k), S_{-1} = 0.

    S stays near 0 while the loss is in-domain and climbs by about (shift / std - k) per batch once it
    is higher: the sum of evidence that the loss went up, forgotten whenever it would go negative.
    """
    if not std > 0:
        raise ValueError(f"std ({std!r}) must be > 0")
    s, out = 0.0, np.empty(len(x))
    for t, z in enumerate((np.asarray(x, float) - mean) / std):
        s = max(0.0, s + z - k)
        out[t] = s
    return out


def first_alarm(s: np.ndarray, h: float) -> int:
    """The first batch whose CUSUM exceeds the threshold h, or -1 if none does."""
    above = np.flatnonzero(np.asarray(s) > h)
    return int(above[0]) if len(above) else -1


def alarms(old, new, calibration, thresholds, n_streams: int, n_batches: int, start: int, ramp: int,
           batch_size: int, seed: int, k: float = K) -> np.ndarray:
    """The first alarm, per threshold and stream: an array (len(thresholds), n_streams), -1 for none.

    Stream i draws from np.random.default_rng([seed, i]); every threshold watches the same streams.
    """
    mean, std = reference(calibration, batch_size)
    share = mixing_share(n_batches, start, ramp)
    out = np.empty((len(thresholds), n_streams), dtype=int)
    for i in range(n_streams):
        s = cusum(stream(old, new, share, batch_size, np.random.default_rng([seed, i])), mean, std, k)
        out[:, i] = [first_alarm(s, h) for h in thresholds]
    return out


def delay_and_false_alarms(null_alarms: np.ndarray, drift_alarms: np.ndarray, start: int) -> dict:
    """For one threshold: the share of no-drift streams that alarm at all (false alarms), and on drifting
    streams the share that alarm before the drift starts, the share never detected, and the delay (batches
    from the start of the drift to the alarm) of those detected in time (None when none was)."""
    null_alarms, drift_alarms = np.asarray(null_alarms), np.asarray(drift_alarms)
    early = drift_alarms[(drift_alarms >= 0) & (drift_alarms < start)]
    delays = drift_alarms[drift_alarms >= start] - start
    return {"false_alarm": float(np.mean(null_alarms >= 0)),
            "early": len(early) / len(drift_alarms),
            "missed": float(np.mean(drift_alarms < 0)),
            "delay_mean": float(delays.mean()) if len(delays) else None,
            "delay_std": float(delays.std(ddof=1)) if len(delays) > 1 else 0.0}
