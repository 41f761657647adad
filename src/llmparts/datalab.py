"""Chapter 04's experiments, as functions: a tokenizer, a share of the text, or a leak in, a plain record out.

- Tokenizers: characters vs byte-level BPE at a few vocabulary sizes, trained at equal compute,
  compared in bits per character (the loss per token means different things for different tokenizers).
- How much text: the LLaMA recipe on the first 1/16 ... all of the training split, for the same steps.
- Leak: half of the validation text copied into training; the loss on that half against the other half.

Every model is the LLaMA recipe of the book's experiments (4 layers, n_embd 128, 64-token context).
"""

from __future__ import annotations

import concurrent.futures as futures
import json
import math
import multiprocessing
import time
from dataclasses import dataclass

import torch

from .bpe import BPETokenizer
from .data import TRAIN_FRACTION, CharTokenizer, Dataset, fixed_batches
from .model import ModelConfig
from .train import VAL_SEED, TrainConfig, evaluate, flops_per_token, train

MODEL = dict(n_layer=4, n_head=4, n_embd=128, block_size=64, dropout=0.0, bias=False,
             use_rmsnorm=True, use_swiglu=True, use_rope=True, n_kv_head=2)
BATCH_SIZE, SEQ_LEN = 12, 64


def bits_per_char(loss_nats_per_token: float, n_tokens: int, n_chars: int) -> float:
    """Cross-entropy per token (nats) -> bits per character: times tokens per character, over ln 2."""
    return loss_nats_per_token * (n_tokens / n_chars) / math.log(2)


@dataclass
class TokenizedText:
    name: str
    tokenizer: object  # CharTokenizer or BPETokenizer: both have vocab_size, encode, decode
    train: torch.Tensor
    val: torch.Tensor
    val_chars: int

    @property
    def chars_per_token(self) -> float:
        return self.val_chars / len(self.val)

    def dataset(self) -> Dataset:
        return Dataset(train=self.train, val=self.val, tokenizer=self.tokenizer)


def split_text(text: str) -> tuple[str, str]:
    """The same 90/10 split by position as data.load_dataset (one character = one position)."""
    n_train = int(TRAIN_FRACTION * len(text))
    return text[:n_train], text[n_train:]


def tokenized(name: str, tokenizer, text: str) -> TokenizedText:
    """Encode each split on its own, so that no token crosses the cut between them."""
    train_text, val_text = split_text(text)
    as_ids = lambda s: torch.tensor(tokenizer.encode(s), dtype=torch.long)  # noqa: E731
    return TokenizedText(name, tokenizer, as_ids(train_text), as_ids(val_text), len(val_text))


def char_text(text: str) -> TokenizedText:
    return tokenized("char", CharTokenizer.from_text(text), text)


def model_config(vocab_size: int) -> ModelConfig:
    return ModelConfig(vocab_size=vocab_size, **MODEL)


def train_config(steps: int, seed: int, eval_batches: int, threads: int) -> TrainConfig:
    return TrainConfig(batch_size=BATCH_SIZE, seq_len=SEQ_LEN, max_iters=steps, eval_interval=steps,
                       final_eval_batches=eval_batches, seed=seed, threads=threads, quiet=True)


def equal_compute_steps(steps: int, vocab_size: int, reference_vocab: int) -> int:
    """Steps that cost a vocab_size model the training FLOPs of `steps` steps of the reference model:
    a larger vocabulary makes the output layer, and so every step, dearer."""
    reference = flops_per_token(model_config(reference_vocab), SEQ_LEN)
    return max(1, round(steps * reference / flops_per_token(model_config(vocab_size), SEQ_LEN)))


def loss_on(model, ids: torch.Tensor, eval_batches: int) -> float:
    """Mean loss over the same fixed windows of ids for every model (a shared yardstick)."""
    return evaluate(model, fixed_batches(ids, eval_batches, BATCH_SIZE, SEQ_LEN, seed=VAL_SEED))


# ---------------------------------------------------------------- the three experiments

def fit(train_ids: torch.Tensor, val_ids: torch.Tensor, tokenizer, steps: int, seed: int, eval_batches: int,
        threads: int):
    """The LLaMA recipe trained on train_ids; final_val_loss is measured on val_ids."""
    config = model_config(tokenizer.vocab_size)
    return train(config, train_config(steps, seed, eval_batches, threads),
                 Dataset(train=train_ids, val=val_ids, tokenizer=tokenizer))


def tokenizer_record(data: TokenizedText, result, steps: int, seed: int) -> dict:
    """What a tokenizer costs and buys: chars per token, embedding rows, context reach, bits per char."""
    config = result.model.config
    return {
        "tokenizer": data.name, "vocab_size": config.vocab_size, "seed": seed, "steps": steps,
        "val_loss": result.final_val_loss,
        "bits_per_char": bits_per_char(result.final_val_loss, len(data.val), data.val_chars),
        "chars_per_token": data.chars_per_token, "context_chars": SEQ_LEN * data.chars_per_token,
        "embedding_params": config.vocab_size * config.n_embd * (1 if config.tie_embeddings else 2),
        "params": result.num_params,
        "train_flops": flops_per_token(config, SEQ_LEN) * steps * BATCH_SIZE * SEQ_LEN,
        "wall_time_s": result.wall_time_s,
    }


def scale_record(subset: torch.Tensor, fraction: float, result, steps: int, seed: int, eval_batches: int) -> dict:
    """How a model trained on `subset` does on it (train) and on validation: the gap is memorisation."""
    return {
        "fraction": fraction, "seed": seed, "steps": steps, "train_chars": len(subset),
        "epochs": steps * BATCH_SIZE * SEQ_LEN / len(subset),
        "train_loss": loss_on(result.model, subset, eval_batches), "val_loss": result.final_val_loss,
        "wall_time_s": result.wall_time_s,
    }


def halves(val: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The validation split cut in two: the first half leaks into training, the second never does."""
    return val[:len(val) // 2], val[len(val) // 2:]


def leak_record(val: torch.Tensor, copies: int, result, seed: int, eval_batches: int) -> dict:
    """The loss on the leaked half (what a leaky evaluation reports) and on the half nobody trained on."""
    leaked, held_out = halves(val)
    return {
        "copies": copies, "seed": seed, "leaked_chars": len(leaked) * copies,
        "leaked_half_loss": loss_on(result.model, leaked, eval_batches),
        "held_out_half_loss": loss_on(result.model, held_out, eval_batches),
    }


# ---------------------------------------------------------------- ours against Hugging Face tokenizers

def hf_bpe_trainer_merges(text: str, vocab_size: int) -> list[tuple[bytes, bytes]]:
    """Hugging Face's BpeTrainer (Rust) on the same chunks of the same text; its merges as byte pairs."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

    from .bpe import SPLIT_PATTERN, byte_to_unicode
    hf = Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(SPLIT_PATTERN), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    hf.train_from_iterator([text], trainer)
    back = {ch: b for b, ch in byte_to_unicode().items()}
    merges = json.loads(hf.to_str())["model"]["merges"]
    return [tuple(bytes(back[ch] for ch in part) for part in merge) for merge in merges]


def hf_byte_order() -> list[int]:
    """The order BpeTrainer's ids give the 256 bytes (sorted by their GPT-2 character): its tie order."""
    from .bpe import byte_to_unicode
    table = byte_to_unicode()
    return sorted(range(256), key=lambda b: table[b])


def tokenizer_speed(text: str, vocab_size: int, repeats: int) -> dict:
    """Train and encode with our BPE and with tokenizers, best of `repeats` each, and compare the results.

    Training: the training split. Encoding: the whole validation split, from a cold start (a fresh
    tokenizer each time, so neither side profits from a cache filled by the previous repeat).
    """
    from .bpe import hf_tokenizer
    train_text, val_text = split_text(text)

    def best(fn):
        times, out = [], None
        for _ in range(repeats):
            t0 = time.perf_counter()
            out = fn()
            times.append(time.perf_counter() - t0)
        return out, min(times)

    ours, ours_train_s = best(lambda: BPETokenizer.train(train_text, vocab_size))
    theirs_merges, hf_train_s = best(lambda: hf_bpe_trainer_merges(train_text, vocab_size))
    ours_ids, ours_encode_s = best(lambda: BPETokenizer(ours.merges).encode(val_text))
    hf_ids, hf_encode_s = best(lambda: hf_tokenizer(ours).encode(val_text).ids)
    our_merges = [(ours.vocab[a], ours.vocab[b]) for a, b in ours.merges]
    in_hf_order = BPETokenizer.train(train_text, vocab_size, byte_order=hf_byte_order())
    first_difference = next((i for i, (a, b) in enumerate(zip(our_merges, theirs_merges)) if a != b), None)
    return {
        "vocab_size": vocab_size, "repeats": repeats, "train_chars": len(train_text), "val_chars": len(val_text),
        "ours_train_s": ours_train_s, "hf_train_s": hf_train_s, "train_speedup": ours_train_s / hf_train_s,
        "ours_encode_s": ours_encode_s, "hf_encode_s": hf_encode_s, "encode_speedup": ours_encode_s / hf_encode_s,
        "same_ids": ours_ids == hf_ids, "val_tokens": len(ours_ids),
        "same_merge_set": set(our_merges) == set(theirs_merges),
        "same_merges_in_hf_tie_order": [(in_hf_order.vocab[a], in_hf_order.vocab[b])
                                        for a, b in in_hf_order.merges] == theirs_merges,
        "first_difference": first_difference,
        "first_difference_count": None if first_difference is None else ours.merge_counts[first_difference],
    }


# ---------------------------------------------------------------- the whole chapter's experiment

SCALES = {
    "full": dict(steps=1000, seeds=[0, 1, 2], eval_batches=100, vocab_sizes=[512, 768, 1280],
                 fractions=[1 / 16, 1 / 8, 1 / 4, 1 / 2, 1], leak_copies=1, speed_vocab=1280, speed_repeats=3),
    "smoke": dict(steps=6, seeds=[0, 1], eval_batches=2, vocab_sizes=[300, 320],
                  fractions=[1 / 16, 1], leak_copies=1, speed_vocab=300, speed_repeats=1),
}


def config_record(scale: dict) -> dict:
    """What decides the numbers (hashed into the results' fingerprint)."""
    return {**scale, "model": MODEL, "batch_size": BATCH_SIZE, "seq_len": SEQ_LEN, "val_seed": VAL_SEED,
            "train": {k: v for k, v in train_config(scale["steps"], 0, scale["eval_batches"], 1).to_dict().items()
                      if k not in ("seed", "threads", "quiet", "out_dir", "resume", "device", "compile",
                                   "checkpoint_interval")}}


def tasks(scale: dict, merges: dict[int, list]) -> list[dict]:
    """Every training run, each seed: one per BPE vocabulary, one per share of the text, one leak.
    merges: vocab size -> the BPE merges, trained once in the parent process."""
    out = []
    for seed in scale["seeds"]:
        out += [{"kind": "tokenizer", "vocab_size": v, "merges": merges[v], "seed": seed} for v in scale["vocab_sizes"]]
        out += [{"kind": "scale", "fraction": f, "seed": seed} for f in scale["fractions"]]
        out.append({"kind": "leak", "copies": scale["leak_copies"], "seed": seed})
    return out


def run_task(task: dict, text: str, scale: dict, threads: int) -> dict:
    """One training run -> its records. The run on all of the text with characters serves three
    experiments at once: the character row of the tokenizer table, the last point of the data-scale
    curve, and the leak experiment's clean model."""
    torch.set_num_threads(threads)
    steps, seed, batches = scale["steps"], task["seed"], scale["eval_batches"]
    chars = char_text(text)
    if task["kind"] == "tokenizer":
        tokenizer = BPETokenizer(task["merges"])  # trained on the training split only
        data = tokenized(f"bpe{tokenizer.vocab_size}", tokenizer, text)
        bpe_steps = equal_compute_steps(steps, tokenizer.vocab_size, chars.tokenizer.vocab_size)
        result = fit(data.train, data.val, tokenizer, bpe_steps, seed, batches, threads)
        return {"tokenizer": tokenizer_record(data, result, bpe_steps, seed)}
    if task["kind"] == "scale":
        subset = chars.train[:int(task["fraction"] * len(chars.train))]
        result = fit(subset, chars.val, chars.tokenizer, steps, seed, batches, threads)
        records = {"scale": scale_record(subset, task["fraction"], result, steps, seed, batches)}
        if task["fraction"] == 1:
            records["tokenizer"] = tokenizer_record(chars, result, steps, seed)
            records["leak"] = leak_record(chars.val, 0, result, seed, batches)
        return records
    leaked, _ = halves(chars.val)
    train_ids = torch.cat([chars.train] + [leaked] * task["copies"])
    result = fit(train_ids, chars.val, chars.tokenizer, steps, seed, batches, threads)
    return {"leak": leak_record(chars.val, task["copies"], result, seed, batches)}


def run(text: str, scale: dict, jobs: int, threads: int, progress=print) -> dict:
    """The chapter's record: tokenizer speed and equality, hygiene, and every training run's rows."""
    from . import hygiene
    start = time.perf_counter()
    train_text, val_text = split_text(text)
    speed = tokenizer_speed(text, scale["speed_vocab"], scale["speed_repeats"])
    progress(f"data: tokenizer speed and equality in {time.perf_counter() - start:.0f} s")
    merges = {v: BPETokenizer.train(train_text, v).merges for v in scale["vocab_sizes"]}
    hygiene_record = hygiene.report(train_text, val_text)
    todo = tasks(scale, merges)
    rows = {"tokenizer": [], "scale": [], "leak": []}

    def collect(task, out, seconds):
        for kind, record in out.items():
            rows[kind].append(record)
        progress(f"data: [{sum(map(len, rows.values()))}] {task['kind']} "
                 f"{task.get('vocab_size', task.get('fraction', task.get('copies')))} seed {task['seed']} "
                 f"({seconds:.0f} s; {(time.perf_counter() - start) / 60:.1f} min so far)")

    if jobs == 1:
        for task in todo:
            t0 = time.perf_counter()
            collect(task, run_task(task, text, scale, threads), time.perf_counter() - t0)
    else:
        ctx = multiprocessing.get_context("spawn")  # each worker starts clean, with its own thread count
        with futures.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
            pending = {pool.submit(timed_task, task, text, scale, threads): task for task in todo}
            for done in futures.as_completed(pending):
                out, seconds = done.result()
                collect(pending[done], out, seconds)
    order = {"tokenizer": ("vocab_size", "seed"), "scale": ("fraction", "seed"), "leak": ("copies", "seed")}
    for kind, keys in order.items():
        rows[kind].sort(key=lambda r: tuple(r[k] for k in keys))
    return {"speed": speed, "hygiene": hygiene_record, "tokenizers": rows["tokenizer"], "scale": rows["scale"],
            "leak": rows["leak"], "wall_time_s": time.perf_counter() - start}


def timed_task(task: dict, text: str, scale: dict, threads: int):
    t0 = time.perf_counter()
    return run_task(task, text, scale, threads), time.perf_counter() - t0
