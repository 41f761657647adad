"""Speculative decoding, greedy: a small draft model guesses k tokens, the large model checks them in one pass.

Decoding one token at a time leaves the large model's matrix multiplications mostly waiting on memory:
a forward pass over k + 1 tokens costs little more than over one. So let a cheap draft model propose
k tokens, run the large (target) model once over the last accepted token and the k guesses, and keep the
guesses up to the first one the target would not have chosen; the target's own choice at that point
comes free with the same pass. Every kept token is the target's greedy choice, so the output is exactly
target.generate(..., temperature=0), only with fewer target passes when the draft guesses well.

Both models keep a KV cache; rejected guesses are forgotten by moving the cache's position back.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import torch

from .checks import check_int
from .model import GPT, KVCache


@dataclass
class SpeculativeStats:
    proposed: int = 0      # draft tokens offered to the target
    accepted: int = 0      # of those, how many the target agreed with
    target_passes: int = 0
    draft_passes: int = 0

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.proposed if self.proposed else 0.0


def check_speculative_args(target: GPT, draft: GPT, prompt_len: int, max_new_tokens: int, k: int):
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k ({k!r}) must be a positive integer (draft tokens per target pass)")
    check_int("max_new_tokens", max_new_tokens, minimum=0)
    if draft.config.vocab_size != target.config.vocab_size:
        raise ValueError(f"draft vocab_size ({draft.config.vocab_size}) must equal the target's "
                         f"({target.config.vocab_size}): the two models must share one tokenizer")
    capacity = min(target.config.block_size, draft.config.block_size)
    if prompt_len < 1:
        raise ValueError("the prompt must hold at least one token")
    if prompt_len + max_new_tokens > capacity:
        raise ValueError(f"prompt ({prompt_len}) + max_new_tokens ({max_new_tokens}) = {prompt_len + max_new_tokens} "
                         f"exceeds block_size ({capacity}), the smaller KV cache's capacity")


@torch.no_grad()
def speculative_generate(target: GPT, draft: GPT, idx, max_new_tokens: int, k: int = 4):
    """Greedy continuation of idx (1, T) by max_new_tokens tokens, equal to target.generate(idx, ..., temperature=0).

    Returns the tokens (1, T + max_new_tokens) and SpeculativeStats.
    """
    if idx.dim() != 2 or idx.shape[0] != 1:
        raise ValueError(f"idx (shape {tuple(idx.shape)}) must be one sequence, shape (1, T)")
    check_speculative_args(target, draft, idx.shape[1], max_new_tokens, k)
    capacity = min(target.config.block_size, draft.config.block_size)
    device = idx.device
    target_cache = KVCache(target.config, 1, device=device, dtype=target.tok_emb.weight.dtype)
    draft_cache = KVCache(draft.config, 1, device=device, dtype=draft.tok_emb.weight.dtype)
    tokens = idx[0].tolist()
    goal = len(tokens) + max_new_tokens
    stats = SpeculativeStats()
    while len(tokens) < goal:
        n_draft = min(k, goal - len(tokens), capacity - len(tokens))
        # 1. the draft guesses n_draft tokens, one pass each (its first pass also reads what it has not seen yet)
        guesses = []
        for _ in range(n_draft):
            unseen = (tokens + guesses)[draft_cache.pos:]
            logits, _ = draft(torch.tensor([unseen], device=device), cache=draft_cache)
            guesses.append(int(logits[0, -1].argmax()))
            stats.draft_passes += 1
        # 2. one target pass over the last accepted token and every guess: its choice after each of them
        unseen = (tokens + guesses)[target_cache.pos:]
        logits, _ = target(torch.tensor([unseen], device=device), cache=target_cache)
        choices = logits[0, -(n_draft + 1):].argmax(dim=-1).tolist()
        stats.target_passes += 1
        # 3. keep the guesses up to the first miss, then the target's own choice there
        n_ok = 0
        while n_ok < n_draft and guesses[n_ok] == choices[n_ok]:
            n_ok += 1
        tokens += (guesses[:n_ok] + [choices[n_ok]])[:goal - len(tokens)]
        stats.proposed += n_draft
        stats.accepted += n_ok
        # 4. forget what the caches hold beyond the kept tokens (the last token has not been fed yet)
        target_cache.pos = len(tokens) - 1
        draft_cache.pos = min(draft_cache.pos, len(tokens) - 1)
    return torch.tensor([tokens], device=device), stats


def train_draft(target: GPT, dataset=None, n_layer: int = 1, n_embd: int = 64, n_head: int = 4, n_kv_head: int = 2,
                iters: int = 1000, seed: int = 0, threads: int | None = 1) -> GPT:
    """A small LLaMA-recipe draft for target, trained by the book's own pipeline (train.train) on the same
    characters: same vocabulary and block_size as the target, a fraction of its parameters."""
    from .config import ModelConfig, TrainConfig
    from .train import train

    config = ModelConfig(vocab_size=target.config.vocab_size, block_size=target.config.block_size, n_layer=n_layer,
                         n_head=n_head, n_kv_head=n_kv_head, n_embd=n_embd, use_rmsnorm=True, use_swiglu=True,
                         use_rope=True)
    settings = TrainConfig(max_iters=iters, eval_interval=iters, final_eval_batches=20, seed=seed, threads=threads,
                           quiet=True)
    return train(config, settings, dataset).model.eval()


def measure(target: GPT, draft: GPT, prompt, new_tokens: int, ks=(1, 2, 3, 4, 6, 8), repeats: int = 3) -> list[dict]:
    """Acceptance rate and speedup over target.generate (greedy, cached) for each draft length k (a benchmark).

    The wall time is the median of `repeats` runs; speedup = plain time / speculative time.
    """
    plain_s = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        expected = target.generate(prompt, new_tokens, temperature=0)
        plain_s.append(time.perf_counter() - t0)
    plain = statistics.median(plain_s)
    rows = []
    for k in ks:
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            out, stats = speculative_generate(target, draft, prompt, new_tokens, k)
            times.append(time.perf_counter() - t0)
        rows.append({"k": k, "acceptance_rate": stats.acceptance_rate, "target_passes": stats.target_passes,
                     "tokens_per_target_pass": new_tokens / stats.target_passes,
                     "speedup": plain / statistics.median(times), "identical": bool(torch.equal(out, expected))})
    return rows
