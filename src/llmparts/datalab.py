"""Chapter 04's experiments, as functions: a tokenizer, a share of the text, or a leak in, a plain record out.

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

from .bpe import BPETokenizer, split_chunks
from .data import TRAIN_FRACTION, CharTokenizer, Dataset, fixed_batches
from .flops import flops_per_token
from .model import ModelConfig
from .train import VAL_SEED, TrainConfig, evaluate, train

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


CHARS = 65  # tinyshakespeare's characters: the vocabulary the other models are compared with


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


# ---------------------------------------------------------------- tables, figure and variables, in both languages

TEXT = {
    "en": {
        "tokenizer": "Tokenizer (vocabulary)", "char": "characters ({v})", "bpe": "BPE ({v})",
        "steps": "Steps (same FLOPs)", "chars_per_token": "Characters per token",
        "context": "64 tokens reach (characters)", "embedding": "Embedding parameters",
        "val_loss": "Val loss per token", "bpc": "Bits per character",
        "tokenizers_caption": "Characters against byte-level BPE at equal training compute: the LLaMA recipe, "
                              "{seeds} seeds each (mean ± std), the same validation text; BPE trained on the "
                              "training split only. Compare tokenizers by the last column",
        "share": "Share of the training split", "chars": "Characters", "epochs": "Passes over it",
        "train_loss": "Loss on its training text", "val": "Validation loss", "gap": "Gap (val − train)",
        "scale_caption": "The LLaMA recipe on the first part of the training split, {steps} steps each, "
                         "{seeds} seeds (mean ± std)",
        "all": "all",
        "check": "Check", "items": "Items", "distinct": "Distinct", "repeats": "Repeats of an earlier one",
        "repeat_chars": "Share of the characters",
        "lines": "non-empty lines, exact", "lines_normalized": "non-empty lines, normalised",
        "long_lines": "lines of 30+ characters, exact", "long_lines_normalized": "lines of 30+ characters, normalised",
        "passages": "speeches (blocks between blank lines), exact",
        "near": "speeches of 5+ words, MinHash near duplicates (Jaccard ≥ 0.5)", "pairs": "{n} pairs",
        "overlap": "validation speeches sharing a 13-word sequence with training", "of": "{hits} of {n}",
        "hygiene_caption": "Duplicates in tinyshakespeare, found by hashing (llmparts.hygiene)",
        "model": "Model", "leaked_half": "Loss on the leaked half", "held_out_half": "Loss on the held-out half",
        "clean": "trained on the training split", "leaky": "trained on it plus the leaked half",
        "difference": "difference (paired by seed)",
        "leak_caption": "A leak, measured: the first half of the validation split copied once into training "
                        "({chars} characters); {seeds} seeds, mean ± std",
        "what": "Measured", "ours": "llmparts.bpe (Python)", "theirs": "tokenizers (Rust)",
        "ratio": "Time, ours / theirs",
        "train_time": "train {m} merges on the training split (s)", "encode_time": "encode the validation split (s)",
        "uncached_time": "the same, ours without its cache of encoded chunks (s)",
        "same_ids": "same token ids on the validation split", "same_merges": "same set of merges",
        "yes": "yes", "no": "no",
        "speed_caption": "Our BPE against Hugging Face tokenizers, best of {repeats} runs on this machine",
        "fig_x": "share of the training split (log scale)", "fig_y": "loss (nats per character)",
        "fig_train": "on its own training text", "fig_val": "on the validation text", "fig_passes": "{n} passes",
    },
    "zh": {
        "tokenizer": "分詞器（詞彙表）", "char": "字元（{v}）", "bpe": "BPE（{v}）",
        "steps": "步數（同樣的 FLOPs）", "chars_per_token": "每個 token 的字元數",
        "context": "64 個 token 涵蓋的字元數", "embedding": "嵌入參數",
        "val_loss": "每個 token 的驗證損失", "bpc": "每字元位元數",
        "tokenizers_caption": "同樣的訓練運算量下，字元與位元組層級 BPE 的比較：LLaMA 配方，各 {seeds} 個種子"
                              "（平均 ± 標準差），同一份驗證文字；BPE 只用訓練集學習。比較分詞器要看最後一欄",
        "share": "用了訓練集的多少", "chars": "字元數", "epochs": "讀過幾遍", "train_loss": "在自己訓練文字上的損失",
        "val": "驗證損失", "gap": "差距（驗證 − 訓練）",
        "scale_caption": "LLaMA 配方只用訓練集的前一部分，各訓練 {steps} 步、{seeds} 個種子（平均 ± 標準差）",
        "all": "全部",
        "check": "檢查", "items": "項目數", "distinct": "不同的", "repeats": "重複前面出現過的",
        "repeat_chars": "占字元的比例",
        "lines": "非空行，完全相同", "lines_normalized": "非空行，正規化後相同",
        "long_lines": "30 字元以上的行，完全相同", "long_lines_normalized": "30 字元以上的行，正規化後相同",
        "passages": "台詞段落（空行之間的區塊），完全相同",
        "near": "5 個單字以上的台詞段落，MinHash 近似重複（Jaccard ≥ 0.5）", "pairs": "{n} 對",
        "overlap": "和訓練文字共用連續 13 個單字的驗證段落", "of": "{n} 段中 {hits} 段",
        "hygiene_caption": "用雜湊找出 tinyshakespeare 裡的重複（llmparts.hygiene）",
        "model": "模型", "leaked_half": "外洩那一半的損失", "held_out_half": "保留那一半的損失",
        "clean": "只用訓練集訓練", "leaky": "訓練集加上外洩的那一半",
        "difference": "差值（依種子配對）",
        "leak_caption": "量一次外洩：驗證集前一半複製一份放進訓練資料（{chars} 個字元）；{seeds} 個種子，平均 ± 標準差",
        "what": "量測項目", "ours": "llmparts.bpe（Python）", "theirs": "tokenizers（Rust）", "ratio": "時間：我們 / 它們",
        "train_time": "在訓練集上學 {m} 個合併（秒）", "encode_time": "編碼整個驗證集（秒）",
        "uncached_time": "同上，但我們的不用已編碼片段的快取（秒）",
        "same_ids": "驗證集上的 token id 完全相同", "same_merges": "學到的合併集合相同",
        "yes": "是", "no": "否",
        "speed_caption": "我們的 BPE 與 Hugging Face tokenizers 的比較，這台機器上 {repeats} 次取最快",
        "fig_x": "用了訓練集的多少（對數刻度）", "fig_y": "損失（每字元 nats）",
        "fig_train": "在自己的訓練文字上", "fig_val": "在驗證文字上", "fig_passes": "讀 {n} 遍",
    },
}


def fmt_loss(x: float) -> str:
    return f"{x:.4f}"


def fmt_pm(ms: tuple[float, float]) -> str:
    return f"{ms[0]:.4f} ± {ms[1]:.4f}"


def fmt_count(n: float) -> str:
    return f"{n:,.0f}"


def fmt_share(fraction: float, lang: str) -> str:
    return TEXT[lang]["all"] if fraction == 1 else f"1/{round(1 / fraction)}"


def pipe_table(header: list[str], rows: list[list[str]], caption: str, name: str) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + f"\n\n: {caption} {{#tbl-{name}}}\n"


def tokenizers_table(record: dict, lang: str) -> str:
    t, s = TEXT[lang], summarize(record)["tokenizers"]
    rows = [[t["char" if name == "char" else "bpe"].format(v=fmt_count(row["vocab_size"])),
             fmt_count(row["steps"]), f"{row['chars_per_token']:.2f}", f"{row['context_chars']:.0f}",
             fmt_count(row["embedding_params"]), fmt_pm(row["val_loss"]), f"**{fmt_pm(row['bits_per_char'])}**"]
            for name, row in s.items()]
    header = [t[k] for k in ("tokenizer", "steps", "chars_per_token", "context", "embedding", "val_loss", "bpc")]
    return pipe_table(header, rows, t["tokenizers_caption"].format(seeds=len(record["config"]["seeds"])),
                      "data-tokenizers")


def scale_table(record: dict, lang: str) -> str:
    t, s = TEXT[lang], summarize(record)["scale"]
    rows = [[fmt_share(f, lang), fmt_count(row["train_chars"]), f"{row['epochs']:.1f}", fmt_pm(row["train_loss"]),
             fmt_pm(row["val_loss"]), fmt_pm(row["gap"])] for row in s for f in [row["fraction"]]]
    header = [t[k] for k in ("share", "chars", "epochs", "train_loss", "val", "gap")]
    cfg = record["config"]
    return pipe_table(header, rows, t["scale_caption"].format(steps=cfg["steps"], seeds=len(cfg["seeds"])),
                      "data-scale")


def hygiene_table(record: dict, lang: str) -> str:
    t, h = TEXT[lang], record["hygiene"]
    rows = [[t[key], fmt_count(h[key]["items"]), fmt_count(h[key]["distinct"]), fmt_count(h[key]["repeats"]),
             f"{100 * h[key]['repeat_char_share']:.2f}%"]
            for key in ("lines", "lines_normalized", "long_lines", "long_lines_normalized", "passages")]
    near, overlap = h["near_duplicate_passages"], h["overlap"]
    rows.append([t["near"], fmt_count(near["passages"]), "—", t["pairs"].format(n=near["pairs"]), "—"])
    rows.append([t["overlap"], fmt_count(overlap["passages"]), "—",
                 t["of"].format(hits=overlap["with_overlap"], n=overlap["passages"]), "—"])
    header = [t[k] for k in ("check", "items", "distinct", "repeats", "repeat_chars")]
    return pipe_table(header, rows, t["hygiene_caption"], "data-hygiene")


def leak_table(record: dict, lang: str) -> str:
    t, leak = TEXT[lang], summarize(record)["leak"]
    rows = [[t["clean"], fmt_pm(leak["clean_leaked"]), fmt_pm(leak["clean_held_out"])],
            [t["leaky"], fmt_pm(leak["leak_leaked"]), fmt_pm(leak["leak_held_out"])],
            [t["difference"], fmt_pm((-leak["drop"][0], leak["drop"][1])), fmt_pm(leak["held_out_change"])]]
    header = [t["model"], t["leaked_half"], t["held_out_half"]]
    return pipe_table(header, rows, t["leak_caption"].format(chars=fmt_count(leak["leaked_chars"]),
                                                            seeds=leak["seeds"]), "data-leak")


def speed_table(record: dict, lang: str) -> str:
    t, sp = TEXT[lang], record["speed"]
    yes = lambda ok: t["yes"] if ok else t["no"]  # noqa: E731
    rows = [[t["train_time"].format(m=sp["vocab_size"] - 256), f"{sp['ours_train_s']:.2f}", f"{sp['hf_train_s']:.3f}",
             f"{sp['train_speedup']:.1f}×"],
            [t["encode_time"], f"{sp['ours_encode_s']:.3f}", f"{sp['hf_encode_s']:.3f}", f"{sp['encode_speedup']:.1f}×"],
            [t["uncached_time"], f"{sp['ours_uncached_encode_s']:.2f}", f"{sp['hf_encode_s']:.3f}",
             f"{sp['uncached_speedup']:.1f}×"],
            [t["same_ids"], yes(sp["same_ids"]), yes(sp["same_ids"]), "—"],
            [t["same_merges"], yes(sp["same_merge_set"]), yes(sp["same_merge_set"]), "—"]]
    header = [t["what"], t["ours"], t["theirs"], t["ratio"]]
    return pipe_table(header, rows, t["speed_caption"].format(repeats=sp["repeats"]), "data-speed")


TABLES = {"data_tokenizers": tokenizers_table, "data_scale": scale_table, "data_hygiene": hygiene_table,
          "data_leak": leak_table, "data_speed": speed_table}


def scale_figure(record: dict, lang: str, path, plt):
    """Training and validation loss against the share of the text, seed bands; plt: a pyplot set up for lang."""
    t, s = TEXT[lang], summarize(record)["scale"]
    fractions = [row["fraction"] for row in s]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for key, label, color in (("train_loss", t["fig_train"], "#1f77b4"), ("val_loss", t["fig_val"], "#d62728")):
        means = [row[key][0] for row in s]
        stds = [row[key][1] for row in s]
        ax.plot(fractions, means, "o-", color=color, label=label)
        ax.fill_between(fractions, [m - d for m, d in zip(means, stds)], [m + d for m, d in zip(means, stds)],
                        color=color, alpha=0.2)
    ax.set_xscale("log", base=2)
    ax.set_xticks(fractions, [fmt_share(row["fraction"], lang) + "\n" + t["fig_passes"].format(n=f"{row['epochs']:.1f}")
                              for row in s])
    ax.set_xlabel(t["fig_x"])
    ax.set_ylabel(t["fig_y"])
    ax.grid(alpha=0.3)
    ax.legend()
    fig.savefig(path, dpi=150, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)


def build_variables(record: dict) -> dict:
    """The `data.*` keys of _variables.yml (chapter 04's prose)."""
    s, cfg = summarize(record), record["config"]
    c = s["comparison"]
    comparison = {"noise": fmt_loss(c["noise"]), "bpe_spread": fmt_loss(c["bpe_spread"]),
                  "smallest_gain": fmt_loss(c["smallest_gain"]),
                  "gain_in_noise": f"{c['smallest_gain'] / c['noise']:.0f}" if c["noise"] else "—"}
    tok = {name: {"vocab": fmt_count(row["vocab_size"]), "steps": fmt_count(row["steps"]),
                  "chars_per_token": f"{row['chars_per_token']:.2f}", "context_chars": f"{row['context_chars']:.0f}",
                  "embedding_params": fmt_count(row["embedding_params"]), "params": fmt_count(row["params"]),
                  "val_loss": fmt_loss(row["val_loss"][0]), "bpc": fmt_loss(row["bits_per_char"][0]),
                  "bpc_std": fmt_loss(row["bits_per_char"][1])}
           for name, row in s["tokenizers"].items()}
    scale = {("all" if f == 1 else f"f{round(1 / f)}"): {
        "epochs": f"{row['epochs']:.1f}", "train_loss": fmt_loss(row["train_loss"][0]),
        "val_loss": fmt_loss(row["val_loss"][0]), "gap": fmt_loss(row["gap"][0])}
        for row in s["scale"] for f in [row["fraction"]]}
    h, sp, leak = record["hygiene"], record["speed"], s["leak"]
    return {"data": {
        "steps": str(cfg["steps"]), "seeds": str(len(cfg["seeds"])), "batch_size": str(cfg["batch_size"]),
        "seq_len": str(cfg["seq_len"]),
        "tok": {**tok, **comparison}, "scale": scale,
        "speed": {"vocab": fmt_count(sp["vocab_size"]), "merges": fmt_count(sp["vocab_size"] - 256),
                  "repeats": str(sp["repeats"]), "val_chars": fmt_count(sp["val_chars"]),
                  "val_tokens": fmt_count(sp["val_tokens"]), "ours_train_s": f"{sp['ours_train_s']:.2f}",
                  "hf_train_s": f"{sp['hf_train_s']:.3f}", "train_speedup": f"{sp['train_speedup']:.1f}×",
                  "ours_encode_s": f"{sp['ours_encode_s']:.3f}", "hf_encode_s": f"{sp['hf_encode_s']:.3f}",
                  "encode_speedup": f"{sp['encode_speedup']:.1f}×",
                  "ours_uncached_encode_s": f"{sp['ours_uncached_encode_s']:.2f}",
                  "uncached_speedup": f"{sp['uncached_speedup']:.1f}×",
                  "first_difference": "—" if sp["first_difference"] is None else str(sp["first_difference"]),
                  "first_difference_count": "—" if sp["first_difference"] is None else
                  fmt_count(sp["first_difference_count"])},
        "hygiene": {"line_repeat_pct": f"{100 * h['lines']['repeat_share']:.1f}%",
                    "line_repeat_char_pct": f"{100 * h['lines']['repeat_char_share']:.1f}%",
                    "long_line_repeats": str(h["long_lines"]["repeats"]),
                    "long_line_repeats_normalized": str(h["long_lines_normalized"]["repeats"]),
                    "near_pairs": str(h["near_duplicate_passages"]["pairs"]),
                    "passages": fmt_count(h["near_duplicate_passages"]["passages"]),
                    "overlap_hits": str(h["overlap"]["with_overlap"]),
                    "overlap_passages": fmt_count(h["overlap"]["passages"])},
        "tokenizer_leak": {"vocab": fmt_count(record["tokenizer_leak"]["vocab_size"]),
                           "clean_chars_per_token": f"{record['tokenizer_leak']['clean_chars_per_token']:.3f}",
                           "leaky_chars_per_token": f"{record['tokenizer_leak']['leaky_chars_per_token']:.3f}",
                           "fewer_tokens_pct": f"{100 * (1 - record['tokenizer_leak']['leaky_tokens'] / record['tokenizer_leak']['clean_tokens']):.1f}%"},
        "leak": {"leaked_chars": fmt_count(leak["leaked_chars"]), "clean_leaked": fmt_loss(leak["clean_leaked"][0]),
                 "leak_leaked": fmt_loss(leak["leak_leaked"][0]), "drop": fmt_loss(leak["drop"][0]),
                 "drop_std": fmt_loss(leak["drop"][1]), "clean_held_out": fmt_loss(leak["clean_held_out"][0]),
                 "leak_held_out": fmt_loss(leak["leak_held_out"][0]),
                 "held_out_change": fmt_loss(-leak["held_out_change"][0]),
                 "held_out_change_std": fmt_loss(leak["held_out_change"][1])},
    }}
