"""llmparts.dpo: the DPO loss (by hand and against Hugging Face TRL), log-probabilities, the pair sampler,
the fine-tuning data and the two training loops."""

import math

import pytest
import torch

from llmparts import dpo, recipes
from llmparts.experiments.base import dataset
from llmparts.model import GPT
from llmparts.reward import score

T = dpo.PROMPT_LEN + dpo.COMPLETION_LEN


def small_llama(seed: int = 0) -> GPT:
    torch.manual_seed(seed)
    return GPT(recipes.llama(n_layer=1, n_embd=32)).eval()


def random_ids(n: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, 65, (n, T), generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------- the loss

def test_dpo_loss_of_one_pair_worked_by_hand():
    # log-ratios: chosen -10 - (-11) = +1, rejected -12 - (-11) = -1; margin 2; beta 0.5 -> -log sigmoid(1)
    loss = dpo.dpo_loss(torch.tensor([-10.0]), torch.tensor([-12.0]), torch.tensor([-11.0]), torch.tensor([-11.0]), 0.5)
    assert loss.item() == pytest.approx(math.log1p(math.exp(-1.0)), abs=1e-7)


def test_dpo_loss_is_log_2_while_the_policy_is_the_reference():
    logps = torch.tensor([-30.0, -7.5, -12.0])
    assert dpo.dpo_loss(logps, logps.flip(0), logps, logps.flip(0), 0.1).item() == pytest.approx(math.log(2), abs=1e-7)


def test_dpo_loss_gradient_raises_the_chosen_and_lowers_the_rejected():
    chosen, rejected = torch.tensor([-5.0], requires_grad=True), torch.tensor([-5.0], requires_grad=True)
    dpo.dpo_loss(chosen, rejected, torch.tensor([-5.0]), torch.tensor([-5.0]), 0.1).backward()
    assert chosen.grad.item() == pytest.approx(-0.05) and rejected.grad.item() == pytest.approx(0.05)  # beta/2 each


def test_dpo_loss_matches_trl_on_the_same_batch_to_1e_6(tmp_path, ordinary_scale):
    pytest.importorskip("trl")
    from datasets import Dataset
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaForCausalLM, PreTrainedTokenizerFast
    from trl import DPOConfig, DPOTrainer

    from llmparts.export import to_hf

    chars = dataset().tokenizer.chars
    tokenizer = Tokenizer(models.WordLevel({c: i for i, c in enumerate(chars)}, unk_token=" "))
    tokenizer.pre_tokenizer = pre_tokenizers.Split("", "isolated")  # one token per character, as ours
    hf_tokenizer = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="\n", pad_token="\n")

    def hf(seed):
        to_hf(ordinary_scale(GPT(recipes.llama()), std=0.1, seed=seed), tmp_path / str(seed))
        return LlamaForCausalLM.from_pretrained(tmp_path / str(seed)).eval()

    policy, reference = hf(0), hf(1)
    beta = 0.1
    args = DPOConfig(output_dir=str(tmp_path / "trl"), beta=beta, report_to="none", use_cpu=True, bf16=False)
    trainer = DPOTrainer(model=policy, ref_model=reference, args=args, processing_class=hf_tokenizer,
                         train_dataset=Dataset.from_dict({"prompt": ["a"], "chosen": ["b"], "rejected": ["c"]}))
    chosen, rejected = random_ids(4, seed=1), random_ids(4, seed=2)
    rejected[:, :dpo.PROMPT_LEN] = chosen[:, :dpo.PROMPT_LEN]  # a pair shares its prompt
    p = dpo.PROMPT_LEN
    batch = trainer.data_collator([{"prompt_ids": c[:p].tolist(), "chosen_ids": c[p:].tolist(),
                                    "rejected_ids": r[p:].tolist()} for c, r in zip(chosen, rejected)])
    with torch.no_grad():
        theirs = trainer.compute_loss(trainer.model, batch).item()

    def logps(model, ids):  # our log-probabilities, from the same network's logits
        return dpo.sequence_logps(lambda x: (model(x).logits, None), ids)

    with torch.no_grad():
        ours = dpo.dpo_loss(logps(policy, chosen), logps(policy, rejected), logps(reference, chosen),
                            logps(reference, rejected), beta).item()
    assert abs(ours - theirs) <= 1e-6
    assert abs(ours - math.log(2)) > 1e-2  # the two models differ: the batch is no trivial case


# ---------------------------------------------------------------- log-probabilities

def test_sequence_logps_sums_the_completion_characters_only():
    model, ids = small_llama(), random_ids(2)
    with torch.no_grad():
        logits, _ = model(ids)
        by_hand = sum(torch.log_softmax(logits[:, t - 1], -1).gather(-1, ids[:, t, None]).squeeze(-1)
                      for t in range(dpo.PROMPT_LEN, T))
        assert torch.allclose(dpo.sequence_logps(model, ids), by_hand, atol=1e-4)


# ---------------------------------------------------------------- data and the pair sampler

@pytest.fixture(scope="module")
def texts():
    tok = dataset().tokenizer
    return tok, tok.decode(dataset().train[:200_000].tolist())


def test_prompts_are_the_characters_that_end_a_speech(texts):
    tok, text = texts
    prompts = dpo.prompts(text, tok.encode)
    assert prompts.shape[1] == dpo.PROMPT_LEN and len(prompts) > 100
    assert all(tok.decode(row.tolist()).endswith("\n\n") for row in prompts)


def test_demonstrations_are_speeches_that_earn_the_full_reward(texts):
    tok, _ = texts
    full = tok.decode(dataset().train.tolist())
    rows = dpo.demonstrations(full, tok.encode)
    assert rows.shape[1] == T and len(rows) > 20
    for row in rows:
        text = tok.decode(row.tolist())
        assert text[:dpo.PROMPT_LEN].endswith("\n\n") and score(text[dpo.PROMPT_LEN:])["reward"] == 1.0


def test_pair_sampler_keeps_the_best_over_the_worst_sample_of_each_prompt(texts):
    tok, text = texts
    prompts = dpo.prompts(text, tok.encode)[:24]
    chosen, rejected, r_chosen, r_rejected = dpo.preference_pairs(small_llama(), prompts, tok.decode,
                                                                   torch.Generator().manual_seed(0), per_prompt=4)
    assert 0 < len(chosen) <= len(prompts) and chosen.shape == rejected.shape == (len(chosen), T)
    assert (r_chosen > r_rejected).all()
    assert torch.equal(chosen[:, :dpo.PROMPT_LEN], rejected[:, :dpo.PROMPT_LEN])  # one prompt per pair
    for ids, r in zip(torch.cat([chosen, rejected]), torch.cat([r_chosen, r_rejected])):
        assert score(tok.decode(ids[dpo.PROMPT_LEN:].tolist()))["reward"] == pytest.approx(r.item())
    prompt_set = {tuple(p.tolist()) for p in prompts}
    assert all(tuple(ids[:dpo.PROMPT_LEN].tolist()) in prompt_set for ids in chosen)


def test_pair_sampler_is_reproducible_from_its_generator(texts):
    tok, text = texts
    prompts = dpo.prompts(text, tok.encode)[:8]
    a, b = (dpo.preference_pairs(small_llama(), prompts, tok.decode, torch.Generator().manual_seed(3))[0]
            for _ in range(2))
    assert torch.equal(a, b)


# ---------------------------------------------------------------- training

def test_dpo_leaves_the_reference_frozen_and_widens_the_margin():
    reference, chosen, rejected = small_llama(), random_ids(8, 1), random_ids(8, 2)
    before = {k: v.clone() for k, v in reference.state_dict().items()}
    policy = dpo.dpo(reference, chosen, rejected, beta=0.1, steps=10, batch_size=4, lr=1e-3, seed=0)
    assert all(torch.equal(before[k], v) for k, v in reference.state_dict().items())
    with torch.no_grad():
        margin = lambda m: (dpo.sequence_logps(m, chosen) - dpo.sequence_logps(m, rejected)).mean().item()
        assert margin(policy) > margin(reference) + 1.0


def test_dpo_without_pairs_returns_the_reference_untrained():
    reference, empty = small_llama(), torch.zeros((0, T), dtype=torch.long)
    policy = dpo.dpo(reference, empty, empty, beta=0.1, steps=5, batch_size=4, lr=1e-3, seed=0)
    assert policy is not reference
    assert all(torch.equal(a, b) for a, b in zip(policy.state_dict().values(), reference.state_dict().values()))


def test_sft_lowers_the_completion_loss_of_its_examples():
    model, examples = small_llama(), random_ids(4)
    with torch.no_grad():
        before = dpo.sequence_logps(model, examples).mean().item()
    dpo.sft(model, examples, steps=20, batch_size=4, lr=3e-3, seed=0)
    with torch.no_grad():
        assert dpo.sequence_logps(model, examples).mean().item() > before + 5.0
