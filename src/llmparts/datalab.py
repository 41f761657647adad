"""Chapter 04's experiments, as functions: a tokenizer, a share of the text, or a leak in, a plain record out.

experiments/data.py schedules them for `llmparts reproduce` and formats what they measure.

- Tokenizers: characters vs byte-level BPE at a few vocabulary sizes, trained at equal compute,
  compared in bits per character (the loss per token means different things for different tokenizers).
- How much text: the LLaMA recipe on the first 1/16 ... all of the training split, for the same steps.
- Leak: half of the validation text copied into training; the loss on that half against the other half.

Every model is the LLaMA recipe of the book's experiments (4 layers, n_embd 128, 64-token context).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from functools import lru_cache

import torch

from . import recipes
from .bpe import BPETokenizer, split_chunks
from .data import TRAIN_FRACTION, CharTokenizer, Dataset, fixed_batches
from .flops import flops_per_token
from .model import ModelConfig
from .train import VAL_SEED, TrainConfig, evaluate, train

BATCH_SIZE, SEQ_LEN = 12, 64  # the book's training batches: 12 windows of 64 tokens


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


CHARS = 65  # tinyshakespeare's characters: the vocabulary the other models are compared with


def model_config(vocab_size: int) -> ModelConfig:
    """The LLaMA recipe of the book's experiments, with this vocabulary."""
    return recipes.llama(vocab_size=vocab_size)


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
    # The same merges without the chunk cache: every occurrence of every word goes through the merge loop.
    t0 = time.perf_counter()
    uncached = [i for chunk in split_chunks(val_text) for i in ours.encode_chunk(chunk)]
    ours_uncached_s = time.perf_counter() - t0
    hf_ids, hf_encode_s = best(lambda: hf_tokenizer(ours).encode(val_text).ids)
    our_merges = [(ours.vocab[a], ours.vocab[b]) for a, b in ours.merges]
    in_hf_order = BPETokenizer.train(train_text, vocab_size, byte_order=hf_byte_order())
    first_difference = next((i for i, (a, b) in enumerate(zip(our_merges, theirs_merges)) if a != b), None)
    return {
        "vocab_size": vocab_size, "repeats": repeats, "train_chars": len(train_text), "val_chars": len(val_text),
        "ours_train_s": ours_train_s, "hf_train_s": hf_train_s, "train_speedup": ours_train_s / hf_train_s,
        "ours_encode_s": ours_encode_s, "hf_encode_s": hf_encode_s, "encode_speedup": ours_encode_s / hf_encode_s,
        "ours_uncached_encode_s": ours_uncached_s, "uncached_speedup": ours_uncached_s / hf_encode_s,
        "same_ids": ours_ids == hf_ids == uncached, "val_tokens": len(ours_ids),
        "same_merge_set": set(our_merges) == set(theirs_merges),
        "same_merges_in_hf_tie_order": [(in_hf_order.vocab[a], in_hf_order.vocab[b])
                                        for a, b in in_hf_order.merges] == theirs_merges,
        "first_difference": first_difference,
        "first_difference_count": None if first_difference is None else ours.merge_counts[first_difference],
    }


def tokenizer_leak(text: str, vocab_size: int) -> dict:
    """A milder leak: BPE merges learned from all of the text, validation included. How much shorter does
    the validation text get (more characters per token) than with merges learned from the training split?"""
    train_text, val_text = split_text(text)
    clean = len(BPETokenizer.train(train_text, vocab_size).encode(val_text))
    leaky = len(BPETokenizer.train(text, vocab_size).encode(val_text))
    return {"vocab_size": vocab_size, "val_chars": len(val_text), "clean_tokens": clean, "leaky_tokens": leaky,
            "clean_chars_per_token": len(val_text) / clean, "leaky_chars_per_token": len(val_text) / leaky}


# ---------------------------------------------------------------- the training runs, one per worker task

def config_record(settings: dict) -> dict:
    """What decides the numbers (saved with the results and hashed into their fingerprint)."""
    train = train_config(settings["steps"], 0, settings["eval_batches"], 1).to_dict()
    skip = ("seed", "threads", "quiet", "out_dir", "resume", "device", "compile", "checkpoint_interval")
    return {**settings, "model": model_config(CHARS).to_dict(), "batch_size": BATCH_SIZE, "seq_len": SEQ_LEN,
            "val_seed": VAL_SEED, "train": {k: v for k, v in train.items() if k not in skip}}


@lru_cache(maxsize=1)
def shakespeare() -> str:
    from .data import dataset_path
    return dataset_path().read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def chars() -> TokenizedText:
    return char_text(shakespeare())


@lru_cache(maxsize=None)
def bpe_text(vocab_size: int) -> TokenizedText:
    """BPE learned from the training split only (once per worker process), each split encoded on its own."""
    train_text, _ = split_text(shakespeare())
    return tokenized(f"bpe{vocab_size}", BPETokenizer.train(train_text, vocab_size), shakespeare())


def train_tokenizer(vocab_size: int, seed: int, steps: int, eval_batches: int, threads: int) -> dict:
    """A BPE model, trained for the steps that cost what `steps` character steps cost."""
    data = bpe_text(vocab_size)
    bpe_steps = equal_compute_steps(steps, vocab_size, chars().tokenizer.vocab_size)
    result = fit(data.train, data.val, data.tokenizer, bpe_steps, seed, eval_batches, threads)
    return {"tokenizers": tokenizer_record(data, result, bpe_steps, seed)}


def train_share(fraction: float, seed: int, steps: int, eval_batches: int, threads: int) -> dict:
    """The character model on the first `fraction` of the training split. On all of it, the same run is also
    the character row of the tokenizer table and the leak experiment's clean model."""
    data = chars()
    subset = data.train[:int(fraction * len(data.train))]
    result = fit(subset, data.val, data.tokenizer, steps, seed, eval_batches, threads)
    records = {"scale": scale_record(subset, fraction, result, steps, seed, eval_batches)}
    if fraction == 1:
        records["tokenizers"] = tokenizer_record(data, result, steps, seed)
        records["leak"] = leak_record(data.val, 0, result, seed, eval_batches)
    return records


def train_leak(copies: int, seed: int, steps: int, eval_batches: int, threads: int) -> dict:
    """The character model on the training split plus `copies` copies of the first half of validation."""
    data = chars()
    leaked, _ = halves(data.val)
    result = fit(torch.cat([data.train] + [leaked] * copies), data.val, data.tokenizer, steps, seed, eval_batches,
                 threads)
    return {"leak": leak_record(data.val, copies, result, seed, eval_batches)}


# ---------------------------------------------------------------- the whole chapter's experiment

SCALES = {
    "full": dict(steps=1000, seeds=[0, 1, 2], eval_batches=100, vocab_sizes=[512, 768, 1280],
                 fractions=[1 / 16, 1 / 8, 1 / 4, 1 / 2, 1], leak_copies=1, speed_vocab=1280, speed_repeats=3),
    "smoke": dict(steps=6, seeds=[0, 1], eval_batches=2, vocab_sizes=[300, 320],
                  fractions=[1 / 16, 1], leak_copies=1, speed_vocab=300, speed_repeats=1),
}


def tasks(settings: dict) -> list[tuple]:
    """Every training run, each seed: (function, keyword arguments)."""
    common = {"steps": settings["steps"], "eval_batches": settings["eval_batches"]}
    out = []
    for seed in settings["seeds"]:
        out += [(train_tokenizer, {"vocab_size": v, "seed": seed, **common}) for v in settings["vocab_sizes"]]
        out += [(train_share, {"fraction": f, "seed": seed, **common}) for f in settings["fractions"]]
        out.append((train_leak, {"copies": settings["leak_copies"], "seed": seed, **common}))
    return out


def collect(outputs) -> dict:
    """The runs' records, by kind, in a fixed order."""
    rows = {"tokenizers": [], "scale": [], "leak": []}
    for output in outputs:
        for kind, record in output.items():
            rows[kind].append(record)
    order = {"tokenizers": ("vocab_size", "seed"), "scale": ("fraction", "seed"), "leak": ("copies", "seed")}
    for kind, keys in order.items():
        rows[kind].sort(key=lambda r: tuple(r[k] for k in keys))
    return rows


def measure(text: str, settings: dict) -> dict:
    """What the main process measures: tokenizer speed and equality, the tokenizer leak, hygiene."""
    from . import hygiene
    train_text, val_text = split_text(text)
    return {"speed": tokenizer_speed(text, settings["speed_vocab"], settings["speed_repeats"]),
            "tokenizer_leak": tokenizer_leak(text, settings["speed_vocab"]),
            "hygiene": hygiene.report(train_text, val_text)}


def run(settings: dict, threads: int = 1) -> dict:
    """Every run one after the other, then the measurements and the summary: the chapter's record."""
    outputs = [fn(**kwargs, threads=threads) for fn, kwargs in tasks(settings)]
    record = {**measure(shakespeare(), settings), **collect(outputs)}
    return {**record, "summary": summarize(record)}


# ---------------------------------------------------------------- summaries (what the tables and the prose show)

def mean_std(values) -> tuple[float, float]:
    """Mean and sample standard deviation (n - 1); 0 for a single value."""
    values = list(values)
    m = sum(values) / len(values)
    if len(values) < 2:
        return m, 0.0
    return m, math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


def summarize(record: dict) -> dict:
    """Means and standard deviations over seeds, per tokenizer, per share of the text, and for the leak."""
    tokenizers = {}
    for name in dict.fromkeys(r["tokenizer"] for r in sorted(record["tokenizers"], key=lambda r: r["vocab_size"])):
        runs = [r for r in record["tokenizers"] if r["tokenizer"] == name]
        first = runs[0]
        tokenizers[name] = {
            "vocab_size": first["vocab_size"], "steps": first["steps"], "chars_per_token": first["chars_per_token"],
            "context_chars": first["context_chars"], "embedding_params": first["embedding_params"],
            "params": first["params"], "train_flops": first["train_flops"], "seeds": len(runs),
            "val_loss": mean_std(r["val_loss"] for r in runs), "bits_per_char": mean_std(r["bits_per_char"] for r in runs),
        }
    scale = []  # one row per share of the text, smallest first
    for fraction in sorted({r["fraction"] for r in record["scale"]}):
        runs = [r for r in record["scale"] if r["fraction"] == fraction]
        scale.append({
            "fraction": fraction, "train_chars": runs[0]["train_chars"], "epochs": runs[0]["epochs"], "seeds": len(runs),
            "train_loss": mean_std(r["train_loss"] for r in runs), "val_loss": mean_std(r["val_loss"] for r in runs),
            "gap": mean_std(r["val_loss"] - r["train_loss"] for r in runs),
        })
    clean = [r for r in record["leak"] if r["copies"] == 0]
    leaky = [r for r in record["leak"] if r["copies"] > 0]
    by_seed = {r["seed"]: r for r in clean}
    leak = {
        "copies": leaky[0]["copies"], "leaked_chars": leaky[0]["leaked_chars"], "seeds": len(leaky),
        "clean_leaked": mean_std(r["leaked_half_loss"] for r in clean),
        "clean_held_out": mean_std(r["held_out_half_loss"] for r in clean),
        "leak_leaked": mean_std(r["leaked_half_loss"] for r in leaky),
        "leak_held_out": mean_std(r["held_out_half_loss"] for r in leaky),
        # paired by seed: the leak's effect with the seed's own luck taken out
        "drop": mean_std(by_seed[r["seed"]]["leaked_half_loss"] - r["leaked_half_loss"] for r in leaky),
        "held_out_change": mean_std(r["held_out_half_loss"] - by_seed[r["seed"]]["held_out_half_loss"] for r in leaky),
    }
    # Seed noise in bits per character, pooled over the tokenizers; the BPE gain over characters against it.
    noise = math.sqrt(sum(t["bits_per_char"][1] ** 2 for t in tokenizers.values()) / max(1, len(tokenizers)))
    bpe = [t["bits_per_char"][0] for name, t in tokenizers.items() if name != "char"]
    comparison = {"noise": noise, "bpe_spread": max(bpe) - min(bpe) if bpe else 0.0,
                  "smallest_gain": (tokenizers["char"]["bits_per_char"][0] - max(bpe)) if bpe and "char" in tokenizers
                  else 0.0}
    return {"tokenizers": tokenizers, "comparison": comparison, "scale": scale, "leak": leak}
