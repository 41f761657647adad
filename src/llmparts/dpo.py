"""Chapter 09, post-training the char model: supervised fine-tuning on examples of the target behaviour,
then Direct Preference Optimization (Rafailov et al., 2023) on pairs the fine-tuned model sampled and the
reward (llmparts.reward) ranked.

Every sequence is a prompt of PROMPT_LEN characters (the end of a speech: "...\\n\\n") and a completion of
COMPLETION_LEN characters, together one block of the book's model. Losses and log-probabilities count the
completion only.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from .model import GPT
from .reward import SPEAKER, repetition, score

PROMPT_LEN, COMPLETION_LEN = 8, 56  # together the model's block_size of 64


# ---------------------------------------------------------------- the data: prompts and examples

def speech_starts(text: str) -> list[int]:
    """Where each speech after the first begins: the index just after a blank line, with a full prompt before it."""
    return [i + 2 for i in range(len(text) - 1) if text[i:i + 2] == "\n\n" and i + 2 >= PROMPT_LEN
            and i + 2 + COMPLETION_LEN <= len(text)]


def prompts(text: str, encode) -> torch.Tensor:
    """Every PROMPT_LEN characters that end a speech in text, as ids (N, PROMPT_LEN)."""
    return torch.tensor([encode(text[i - PROMPT_LEN:i]) for i in speech_starts(text)], dtype=torch.long)


def demonstrations(text: str, encode, speaker: str = SPEAKER) -> torch.Tensor:
    """The fine-tuning set: every speech of speaker in text whose first COMPLETION_LEN characters earn the full
    reward, with its prompt, as ids (N, PROMPT_LEN + COMPLETION_LEN)."""
    rows = [text[i - PROMPT_LEN:i + COMPLETION_LEN] for i in speech_starts(text)
            if score(text[i:i + COMPLETION_LEN], speaker)["reward"] == 1]
    return torch.tensor([encode(row) for row in rows], dtype=torch.long)


# ---------------------------------------------------------------- log-probabilities and the DPO loss

def sequence_logps(model: GPT, ids: torch.Tensor) -> torch.Tensor:
    """log p(completion | prompt) of each row of ids (B, PROMPT_LEN + completion): a sum over the completion."""
    logits, _ = model(ids[:, :-1])
    logps = torch.log_softmax(logits.float(), dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    return logps[:, PROMPT_LEN - 1:].sum(dim=-1)  # position t predicts token t + 1: the completion starts at PROMPT_LEN


def dpo_loss(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta: float) -> torch.Tensor:
    """The DPO loss of a batch of pairs, from sequence log-probabilities under the policy and the reference.

    Each log-ratio log pi(y|x) - log pi_ref(y|x) is the implicit reward divided by beta; the loss is the
    logistic loss of the chosen completion's implicit reward beating the rejected one's.
    """
    chosen_ratio = policy_chosen - ref_chosen
    rejected_ratio = policy_rejected - ref_rejected
    return -F.logsigmoid(beta * (chosen_ratio - rejected_ratio)).mean()


# ---------------------------------------------------------------- sampling and the pair sampler

@torch.no_grad()
def sample(model: GPT, prompt_ids: torch.Tensor, generator: torch.Generator, temperature: float = 1.0) -> torch.Tensor:
    """One completion of COMPLETION_LEN characters per prompt row: ids (N, PROMPT_LEN + COMPLETION_LEN)."""
    was_training = model.training
    model.eval()
    out = model.generate(prompt_ids, COMPLETION_LEN, temperature=temperature, generator=generator)
    model.train(was_training)
    return out


def preference_pairs(model: GPT, prompt_ids: torch.Tensor, decode, generator: torch.Generator, per_prompt: int = 4):
    """Sample per_prompt completions of each prompt, rank them by the reward, and keep the best and the worst
    as (chosen, rejected) where their rewards differ. Returns chosen ids, rejected ids (M, T) and their rewards."""
    ids = sample(model, prompt_ids.repeat_interleave(per_prompt, dim=0), generator)
    rewards = torch.tensor([score(decode(row[PROMPT_LEN:].tolist()))["reward"] for row in ids])
    ids, rewards = ids.view(len(prompt_ids), per_prompt, -1), rewards.view(len(prompt_ids), per_prompt)
    best, worst = rewards.argmax(dim=1), rewards.argmin(dim=1)
    rows = torch.arange(len(prompt_ids))
    keep = rewards[rows, best] > rewards[rows, worst]
    return (ids[rows, best][keep], ids[rows, worst][keep], rewards[rows, best][keep], rewards[rows, worst][keep])


# ---------------------------------------------------------------- training

def sft(model: GPT, examples: torch.Tensor, steps: int, batch_size: int, lr: float, seed: int) -> GPT:
    """Supervised fine-tuning, in place: cross-entropy on the completion characters of random examples."""
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    model.train()
    for _ in range(steps):
        batch = examples[torch.randint(len(examples), (batch_size,), generator=generator)]
        logits, _ = model(batch[:, :-1])
        targets = batch[:, 1:].clone()
        targets[:, :PROMPT_LEN - 1] = -100  # the prompt is given, not learned
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=-100)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return model.eval()


def dpo(reference: GPT, chosen: torch.Tensor, rejected: torch.Tensor, beta: float, steps: int, batch_size: int,
        lr: float, seed: int) -> GPT:
    """A copy of reference trained with the DPO loss on the pairs; the reference itself stays frozen.
    Without pairs there is nothing to prefer: the copy is returned untrained."""
    policy = copy.deepcopy(reference).eval()
    if len(chosen) == 0:
        return policy
    with torch.no_grad():
        reference.eval()
        ref_chosen, ref_rejected = sequence_logps(reference, chosen), sequence_logps(reference, rejected)
    policy.train()
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(policy.parameters(), lr=lr, weight_decay=0.0)
    for _ in range(steps):
        rows = torch.randint(len(chosen), (batch_size,), generator=generator)
        logps = sequence_logps(policy, torch.cat([chosen[rows], rejected[rows]]))
        loss = dpo_loss(logps[:batch_size], logps[batch_size:], ref_chosen[rows], ref_rejected[rows], beta)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return policy.eval()


# ---------------------------------------------------------------- measuring a model

@torch.no_grad()
def measure(model: GPT, reference: GPT, prompt_ids: torch.Tensor, decode, seed: int) -> dict:
    """Sample one completion per prompt and report its mean reward (and halves), the KL to the reference
    estimated on those samples (nats per completion), the samples' repetition, and the texts."""
    ids = sample(model, prompt_ids, torch.Generator().manual_seed(seed))
    texts = [decode(row[PROMPT_LEN:].tolist()) for row in ids]
    scores = [score(text) for text in texts]
    kl = (sequence_logps(model, ids) - sequence_logps(reference, ids)).mean().item()
    n = len(texts)
    return {"reward": sum(s["reward"] for s in scores) / n, "speaker": sum(s["speaker"] for s in scores) / n,
            "verse": sum(s["verse"] for s in scores) / n, "kl": kl,
            "repetition": sum(repetition(t) for t in texts) / n, "samples": texts}
