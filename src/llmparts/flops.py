"""How fast training runs: FLOPs per token, the hardware's assumed peak, and the meter behind tokens/s and MFU.

MFU (model FLOPs utilization, from the PaLM paper) is the FLOPs the model needs per second of training
divided by what the hardware could do at its peak: it says how much of the machine the loop keeps busy.
"""

from __future__ import annotations

import time

import torch

from .config import ModelConfig
from .model import GPT


def flops_per_token(config: ModelConfig, seq_len: int) -> float:
    """Training FLOPs per token (forward + backward), as in the PaLM paper's appendix B.

    6 * N: every weight in a matmul costs 2 FLOPs forward and 4 backward per token; N leaves out the
    learned position table (a lookup) but keeps the tied embedding once, since it is the output matmul.
    12 * L * H * D * T: attention's scores (q.k) and weighted sum (w.v), each 2 * T * H * D per token
    forward, times 3 for backward, over L layers. H * D = n_embd for MHA, GQA and MQA alike.
    """
    with torch.device("meta"):  # shapes only: no memory, no initialization, no draw from the random generator
        n = GPT(config).num_params()
    if not config.use_rope:
        n -= config.block_size * config.n_embd
    return 6 * n + 12 * config.n_layer * config.n_head * config.head_dim * seq_len


def peak_flops(device: str, threads: int) -> float:
    """The assumed peak FLOP/s that MFU is measured against.

    CPU: 64 float32 FLOPs per cycle per core (two 512-bit FMA pipes of 16 lanes, as on an AMD Zen 5 core) at
    a 2.6 GHz clock, times the threads torch uses; bfloat16 runs are measured against the same float32 peak,
    so their MFU says how much faster they got. CUDA: an A100's 312 TFLOP/s bfloat16 tensor-core peak.
    """
    if device.startswith("cuda"):
        return 312e12
    return threads * 64 * 2.6e9


class SpeedMeter:
    """Tokens/s and MFU over the timed steps of a run of `steps` steps.

    The run's first step is not timed, since it pays for compilation and first-touch allocations, unless
    it is the only step there is.
    """

    def __init__(self, config: ModelConfig, tokens_per_step: int, seq_len: int, peak: float, steps: int):
        self.tokens_per_step = tokens_per_step
        self.flops_per_step = flops_per_token(config, seq_len) * tokens_per_step
        self.peak = peak
        self.first_timed = 0 if steps == 1 else 1
        self.seen, self.steps, self.seconds = 0, 0, 0.0

    def start(self):
        self.t0 = time.perf_counter()

    def stop(self):
        if self.seen >= self.first_timed:
            self.seconds += time.perf_counter() - self.t0
            self.steps += 1
        self.seen += 1

    @property
    def tokens_per_sec(self) -> float:
        return self.tokens_per_step * self.steps / self.seconds if self.steps else 0.0

    @property
    def mfu(self) -> float:
        return self.flops_per_step * self.steps / self.seconds / self.peak if self.steps else 0.0
