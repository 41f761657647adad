"""results/*.json -> _variables.yml, results/tables/*.{zh,en}.md and images/*.{zh,en}.png.

Nothing here trains or times anything: it only summarises and formats what `llmparts.experiments`
measured, so the book never shows a number typed in by hand. Each results file is
{"experiment": NAME, "config": {...}, "provenance": {...}, ...measurements} (see experiments.py).

    python -m llmparts.report [--results results] [--out .]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
COMMAND = "make reproduce  (llmparts reproduce; or python -m llmparts.report to re-render from results/)"
EXPERIMENTS = ("ablation", "extrapolation", "hands_on", "generation", "llama2")
ABLATION_CONFIGS = ("baseline", "rmsnorm", "swiglu", "rope", "gqa", "mqa", "llama")
SINGLE_PARTS = ("rmsnorm", "swiglu", "rope", "gqa")  # the four parts the llama config switches on
NOISE_FACTOR = 2  # a delta is beyond the noise when |delta| > NOISE_FACTOR x pooled seed std
PARAM_SAVING = 0.005  # fewer parameters count as a saving from 0.5% on (SwiGLU's rounding saves 0.02%)

LABELS = {
    "en": {
        "baseline": "baseline (LayerNorm, GELU, learned positions, MHA)", "rmsnorm": "+RMSNorm",
        "swiglu": "+SwiGLU", "rope": "+RoPE", "gqa": "GQA (2 KV heads)", "mqa": "MQA (1 KV head)",
        "llama": "LLaMA recipe (all four, 2 KV heads)",
    },
    "zh": {
        "baseline": "基準（LayerNorm、GELU、學習式位置、MHA）", "rmsnorm": "+RMSNorm",
        "swiglu": "+SwiGLU", "rope": "+RoPE", "gqa": "GQA（2 個 KV 頭）", "mqa": "MQA（1 個 KV 頭）",
        "llama": "LLaMA 配方（四個全開，2 個 KV 頭）",
    },
}
# Short labels for the figures' axes, in each language.
SHORT_LABELS = {
    "en": {"baseline": "baseline", "rmsnorm": "+RMSNorm", "swiglu": "+SwiGLU", "rope": "+RoPE", "gqa": "GQA",
           "mqa": "MQA", "llama": "LLaMA"},
    "zh": {"baseline": "基準", "rmsnorm": "+RMSNorm", "swiglu": "+SwiGLU", "rope": "+RoPE", "gqa": "GQA",
           "mqa": "MQA", "llama": "LLaMA 配方"},
}
VERDICTS = {
    "en": {"accuracy": "accuracy", "economy": "economy", "cheaper_but_worse": "cheaper but worse",
           "noise": "within noise", "worse": "worse", "reference": "reference"},
    "zh": {"accuracy": "準", "economy": "省", "cheaper_but_worse": "省了但更差", "noise": "雜訊內", "worse": "更差",
           "reference": "基準"},
}
VERDICT_COLORS = {"accuracy": "#1f77b4", "economy": "#2ca02c", "cheaper_but_worse": "#ff7f0e", "noise": "#7f7f7f",
                  "worse": "#d62728", "reference": "#404040"}
# Every word the figures show, per language (tests/test_glossary.py checks the zh ones).
FIGURE_TEXT = {
    "en": {"learned": "learned positions", "rope": "RoPE", "train_len": "training length {n}",
           "untrained": "learned rows {first}–{last}: never trained",
           "eval_len": "evaluation length (characters)", "val_loss": "validation loss",
           "band": "shaded: ± 1 std over {n} seeds",
           "ablation_x": "validation loss (mean ± std over {n} seeds)",
           "noise_band": "baseline ± {k}× noise"},
    "zh": {"learned": "學習式位置", "rope": "RoPE", "train_len": "訓練長度 {n}",
           "untrained": "學習式位置表第 {first}–{last} 列：從未訓練",
           "eval_len": "評估長度（字元）", "val_loss": "驗證損失",
           "band": "陰影：{n} 個種子的 ± 1 標準差",
           "ablation_x": "驗證損失（{n} 個種子的平均 ± 標準差）",
           "noise_band": "基準 ± {k} 倍雜訊"},
}


# ---------------------------------------------------------------- formatting

def loss(x: float) -> str:
    return f"{x:.4f}"


def signed(x: float) -> str:
    return f"{x:+.4f}"


def count(n: float) -> str:
    return f"{n:,.0f}"


def gflop(n: float) -> str:
    return f"{n / 1e9:.3f} GFLOP"


def mib(n_bytes: float) -> str:
    return f"{n_bytes / 2**20:.1f} MiB"


def times(x: float) -> str:
    return f"{x:.1f}×"


def pipe_table(header: list[str], rows: list[list[str]], caption: str, name: str) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + f"\n\n: {caption} {{#tbl-{name}}}\n"


# ---------------------------------------------------------------- ablation statistics

def mean_std(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (n - 1); the std of a single value is 0."""
    m = sum(values) / len(values)
    if len(values) < 2:
        return m, 0.0
    return m, math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


def is_cheaper(config: dict, base: dict) -> bool:
    """Cheaper than the baseline on some axis: KV bytes per token, parameters (by PARAM_SAVING or
    more), or statistics per normalization (RMSNorm: 1, LayerNorm: 2)."""
    return (config["kv_bytes"] < base["kv_bytes"] or config["params"] <= (1 - PARAM_SAVING) * base["params"]
            or config["norm_stats"] < base["norm_stats"])


def verdict(delta: float, threshold: float, cheaper: bool) -> str:
    """The verdict on one part, from its loss change against the baseline and whether it saves anything.

    threshold is NOISE_FACTOR x the pooled seed noise. A part is
    - accuracy           when it lowers the loss by more than the threshold (whatever it costs);
    - economy            when it is cheaper and its loss is not worse by more than the threshold;
    - cheaper_but_worse  when it is cheaper but its loss is worse by more than the threshold;
    - worse              when it saves nothing and its loss is worse by more than the threshold;
    - noise              when it saves nothing and its loss moved less than the threshold.
    So "economy" can fail: a cheap part that costs real loss is not called economical.
    """
    if delta < -threshold:
        return "accuracy"
    if delta > threshold:
        return "cheaper_but_worse" if cheaper else "worse"
    return "economy" if cheaper else "noise"


def summarize_ablation(result: dict) -> dict:
    """Per config: mean/std over seeds, delta vs baseline, beyond-noise flag and verdict; plus additivity.

    Noise is the pooled seed std (root of the mean per-config variance); the verdict comes from
    `verdict` with the threshold NOISE_FACTOR x noise and `is_cheaper`.
    """
    by_config: dict[str, list[dict]] = {}
    for run in result["runs"]:
        by_config.setdefault(run["config"], []).append(run)
    missing = [c for c in ABLATION_CONFIGS if c not in by_config]
    if missing:
        raise ValueError(f"ablation results lack configs {missing}; expected all of {list(ABLATION_CONFIGS)}")
    stats = {}
    for name in ABLATION_CONFIGS:
        runs = by_config[name]
        m, s = mean_std([r["val_loss"] for r in runs])
        stats[name] = {
            "mean": m, "std": s, "seeds": len(runs),
            "params": runs[0]["params"], "kv_bytes": runs[0]["kv_bytes_per_token"],
            "norm_stats": runs[0]["norm_stats"],
            "tokens_per_sec": sum(r["tokens_per_sec"] for r in runs) / len(runs),
        }
    noise = math.sqrt(sum(s["std"] ** 2 for s in stats.values()) / len(stats))
    threshold = NOISE_FACTOR * noise
    base = stats["baseline"]
    for name, s in stats.items():
        s["delta"] = s["mean"] - base["mean"]
        s["beyond_noise"] = abs(s["delta"]) > threshold
        s["cheaper"] = name != "baseline" and is_cheaper(s, base)
        s["verdict"] = "reference" if name == "baseline" else verdict(s["delta"], threshold, s["cheaper"])
    predicted = base["mean"] + sum(stats[p]["delta"] for p in SINGLE_PARTS)
    actual = stats["llama"]["mean"]
    return {
        "configs": stats, "noise": noise, "threshold": threshold,
        "additivity": {"predicted": predicted, "actual": actual, "gap": abs(actual - predicted),
                       "sum_of_deltas": predicted - base["mean"]},
        "drop_pct": 100 * (base["mean"] - actual) / base["mean"],
    }


def summarize_extrapolation(result: dict) -> dict:
    """Per position scheme and evaluation length: mean and std of the validation loss over seeds."""
    summary = {}
    for kind, per_seed in result["losses"].items():
        columns = list(zip(*per_seed))  # one tuple of seed losses per evaluation length
        pairs = [mean_std(list(col)) for col in columns]
        summary[kind] = {"mean": [m for m, _ in pairs], "std": [s for _, s in pairs]}
    return summary


# ---------------------------------------------------------------- variables

def build_variables(results: dict) -> dict:
    ab, ab_sum = results["ablation"], summarize_ablation(results["ablation"])
    cfg = ab["config"]
    variables = {"ablation": {
        "iters": str(cfg["iters"]), "seeds": str(len(cfg["seeds"])),
        "batch_size": str(cfg["batch_size"]), "block_size": str(cfg["block_size"]),
        "noise": loss(ab_sum["noise"]), "threshold": loss(ab_sum["threshold"]),
        "noise_factor": str(NOISE_FACTOR),
    }}
    for name in ABLATION_CONFIGS:
        s = ab_sum["configs"][name]
        variables["ablation"][name] = {
            "val_loss": loss(s["mean"]), "val_loss_std": loss(s["std"]), "delta": signed(s["delta"]),
            "params": count(s["params"]), "kv_bytes": count(s["kv_bytes"]),
            "verdict_en": VERDICTS["en"][s["verdict"]], "verdict_zh": VERDICTS["zh"][s["verdict"]],
        }
    variables["ablation"]["llama"]["drop_pct"] = f"{ab_sum['drop_pct']:.1f}%"
    add = ab_sum["additivity"]
    variables["additivity"] = {"predicted": loss(add["predicted"]), "actual": loss(add["actual"]),
                               "gap": loss(add["gap"])}

    ex, ex_sum = results["extrapolation"], summarize_extrapolation(results["extrapolation"])
    lengths, train_len = ex["lengths"], ex["config"]["train_len"]
    at = {length: i for i, length in enumerate(lengths)}
    block = ex["config"]["block_size"]
    variables["extrapolation"] = {"train_len": str(train_len), "max_len": str(max(lengths)),
                                  "seeds": str(len(ex["losses"]["rope"])), "block_size": str(block),
                                  "last_trained_row": str(train_len - 1), "last_row": str(block - 1)}
    for kind in ("learned", "rope"):
        variables["extrapolation"][kind] = {"at_train": loss(ex_sum[kind]["mean"][at[train_len]]),
                                            "at_max": loss(ex_sum[kind]["mean"][at[max(lengths)]]),
                                            "at_max_std": loss(ex_sum[kind]["std"][at[max(lengths)]])}
    rows = ex["position_rows"]
    variables["extrapolation"]["rows"] = {
        "unseen_cosine": f"{min(r['unseen_min_cosine'] for r in rows):.4f}",
        "seen_cosine": f"{sum(r['seen_cosine'] for r in rows) / len(rows):.2f}",
        "unseen_norm_ratio": f"{sum(r['unseen_norm_ratio'] for r in rows) / len(rows):.2f}"}

    ho = results["hands_on"]
    variables["hands_on"] = {"steps": str(ho["config"]["steps"]), "minutes": f"{ho['wall_time_s'] / 60:.1f}"}

    ll = results["llama2"]
    kv = {row["attention"]: row for row in ll["kv_cache"]}
    variables["llama2"] = {
        "params": count(ll["params"]["total"]), "params_untied": count(ll["params"]["total_untied"]),
        "kv_bytes_per_token": count(kv["GQA"]["bytes_per_token"]),
        "kv_bytes_per_token_mha": count(kv["MHA"]["bytes_per_token"]),
        "kv_mib_512": mib(kv["GQA"]["bytes_at_context"]), "kv_mib_512_mha": mib(kv["MHA"]["bytes_at_context"]),
        "flops_per_token": gflop(ll["flops"]["per_token"]), "flops_matmul": gflop(ll["flops"]["matmul_flops"]),
        "flops_attention": gflop(ll["flops"]["attention_flops"]), "flops_context": str(ll["flops"]["context"]),
    }
    mem = ll["decode_memory"]
    at_context = {r["batch"]: r for r in mem["rows"]}
    variables["llama2"]["decode"] = {
        "weights_mib": mib(mem["weights_bytes"]), "weights_over_cache": times(1 / at_context[1]["cache_over_weights"]),
        "crossover_tokens": count(mem["crossover_tokens"]), "crossover_batch": str(mem["crossover_batch_at_context"]),
        "context": str(mem["context"])}

    gen = results["generation"]
    rows = {row["attention"]: row for row in gen["torch"]}
    identical = all(r["identical"] for r in gen["torch"]) and gen["numpy"]["identical"]
    variables["generation"] = {
        "new_tokens": str(gen["config"]["new_tokens"]),
        "speedup_mha": times(rows["MHA"]["speedup"]), "speedup_gqa": times(rows["GQA"]["speedup"]),
        "speedup_mqa": times(rows["MQA"]["speedup"]), "numpy_speedup": times(gen["numpy"]["speedup"]),
        "identical_en": "identical" if identical else "different",
        "identical_zh": "完全相同" if identical else "不同",
    }
    variables["train"] = {"tokens_per_sec": count(ab_sum["configs"]["baseline"]["tokens_per_sec"]),
                          "threads": str(ab["provenance"]["threads"])}
    return variables


def flat_keys(tree: dict, prefix: str = "") -> list[str]:
    keys = []
    for k, v in tree.items():
        keys += flat_keys(v, f"{prefix}{k}.") if isinstance(v, dict) else [prefix + k]
    return keys


def yaml_lines(tree: dict, indent: int = 0) -> list[str]:
    """Nested mappings of strings as YAML; a JSON string is a valid YAML double-quoted scalar."""
    lines = []
    for key, value in tree.items():
        if isinstance(value, dict):
            lines += [" " * indent + f"{key}:"] + yaml_lines(value, indent + 2)
        else:
            lines.append(" " * indent + f"{key}: {json.dumps(value, ensure_ascii=False)}")
    return lines


def variables_yaml(variables: dict) -> str:
    header = ["# GENERATED by llmparts.report from results/*.json. Do not edit by hand: run",
              f"#   {COMMAND}",
              "# Keys (use in chapters as {{< var KEY >}}):"]
    header += [f"#   {key}" for key in flat_keys(variables)]
    return "\n".join(header + yaml_lines(variables)) + "\n"


# ---------------------------------------------------------------- tables

def ablation_table(results: dict, lang: str) -> str:
    ab, summary = results["ablation"], summarize_ablation(results["ablation"])
    cfg, zh = ab["config"], lang == "zh"
    header = (["組態", "驗證損失（平均 ± 標準差）", "Δ（對基準）", "超出雜訊？", "判定", "參數",
               "KV 位元組/token", "訓練 tokens/秒"] if zh else
              ["Config", "Val loss (mean ± std)", "Δ vs baseline", "Beyond noise?", "Verdict", "Params",
               "KV bytes/token", "Training tokens/s"])
    yes, no = ("是", "否") if zh else ("yes", "no")
    rows = []
    for name in ABLATION_CONFIGS:
        s = summary["configs"][name]
        is_base = name == "baseline"
        rows.append([LABELS[lang][name], f"{loss(s['mean'])} ± {loss(s['std'])}",
                     "—" if is_base else signed(s["delta"]), "—" if is_base else (yes if s["beyond_noise"] else no),
                     VERDICTS[lang][s["verdict"]], count(s["params"]), count(s["kv_bytes"]),
                     count(s["tokens_per_sec"])])
    n, iters, noise = len(cfg["seeds"]), cfg["iters"], loss(summary["noise"])
    threshold = loss(summary["threshold"])
    caption = (f"消融實驗：每個組態訓練 {iters} 步、{n} 個種子，在固定的驗證批次上量最終損失。"
               f"Δ 的絕對值大於 {NOISE_FACTOR} 倍合併種子標準差（{noise}，即 {threshold}）才算超出雜訊。"
               f"「準」= 損失降低超出雜訊；「省」= 比基準便宜（KV 快取、參數少 {PARAM_SAVING:.1%} 以上，或正規化統計量較少），"
               f"而且損失沒有變差超出雜訊；「省了但更差」= 便宜，但損失變差超出雜訊；「更差」= 沒省什麼，損失變差超出雜訊"
               if zh else
               f"Ablation: final validation loss on fixed validation batches after {iters} iterations, "
               f"{n} seeds per config. A delta is beyond noise when its absolute value exceeds {NOISE_FACTOR}× the pooled "
               f"seed std ({noise}), that is {threshold}. Accuracy = loss lower beyond noise; economy = cheaper than the "
               f"baseline (fewer KV-cache bytes, {PARAM_SAVING:.1%} or more fewer parameters, or fewer normalization "
               f"statistics) and loss not worse beyond noise; cheaper but worse = cheaper, with loss worse beyond noise; "
               f"worse = nothing saved, loss worse beyond noise")
    return pipe_table(header, rows, caption, "ablation")


def additivity_table(results: dict, lang: str) -> str:
    summary = summarize_ablation(results["ablation"])
    stats, add, zh = summary["configs"], summary["additivity"], lang == "zh"
    rows = [[("單獨 " if zh else "single ") + LABELS[lang][p] + (" 的 Δ" if zh else " Δ"), signed(stats[p]["delta"])]
            for p in SINGLE_PARTS]
    rows += [["四個 Δ 相加" if zh else "sum of the four Δ", signed(add["sum_of_deltas"])],
             ["預測：基準 + Δ 總和" if zh else "predicted: baseline + sum of Δ", loss(add["predicted"])],
             ["實際：LLaMA 配方" if zh else "actual: LLaMA recipe", loss(add["actual"])],
             ["差距（實際與預測之差的絕對值）" if zh else "gap (absolute difference, actual vs predicted)",
              loss(add["gap"])]]
    header = ["項目", "驗證損失 / Δ"] if zh else ["Item", "Val loss / Δ"]
    caption = ("可加性：四個零件各自的改善相加，對照四個全開的實際結果（種子平均）" if zh else
               "Additivity: the single-part deltas added up, against the all-on run (means over seeds)")
    return pipe_table(header, rows, caption, "additivity")


def extrapolation_table(results: dict, lang: str) -> str:
    ex, zh = results["extrapolation"], lang == "zh"
    summary = summarize_extrapolation(ex)
    train_len = ex["config"]["train_len"]
    rows = []
    for i, length in enumerate(ex["lengths"]):
        label = str(length) + (("（訓練長度）" if zh else " (training length)") if length == train_len else "")
        rows.append([label] + [f"{loss(summary[k]['mean'][i])} ± {loss(summary[k]['std'][i])}" for k in ("learned", "rope")])
    header = (["評估長度（字元）", "學習式位置（平均 ± 標準差）", "RoPE（平均 ± 標準差）"] if zh else
              ["Eval length (characters)", "Learned positions (mean ± std)", "RoPE (mean ± std)"])
    n, block = len(ex["losses"]["rope"]), ex["config"]["block_size"]
    caption = (f"外推：兩種位置方案都在長度 {train_len} 的序列上訓練（{n} 個種子），再量更長序列的驗證損失。"
               f"學習式位置表有 {block} 列，但訓練只用到前 {train_len} 列；第 {train_len}–{block - 1} 列從沒收到梯度，"
               f"仍是初始化時的隨機值" if zh else
               f"Extrapolation: both position schemes trained on sequences of length {train_len} ({n} seeds), "
               f"validation loss at longer lengths. The learned table has {block} rows, but training only uses the "
               f"first {train_len}; rows {train_len}–{block - 1} never receive a gradient and keep their random "
               f"initial values")
    return pipe_table(header, rows, caption, "extrapolation")


def hands_on_label(switches: dict, lang: str) -> str:
    on = [k for k, v in switches.items() if v]
    names = {"rmsnorm": "RMSNorm", "swiglu": "SwiGLU", "rope": "RoPE"}
    if not on:
        return "基準" if lang == "zh" else "baseline"
    if len(on) == len(switches):
        return "三個全開（LLaMA 配方）" if lang == "zh" else "all three (LLaMA recipe)"
    return " ".join("+" + names[k] for k in on)


def hands_on_table(results: dict, lang: str) -> str:
    ho, zh = results["hands_on"], lang == "zh"
    base = ho["rows"][0]["val_loss"]
    rows = [[hands_on_label(r["switches"], lang), loss(r["val_loss"]), count(r["params"]),
             "—" if i == 0 else signed(r["val_loss"] - base)] for i, r in enumerate(ho["rows"])]
    header = ["組態", "驗證損失", "參數", "Δ"] if zh else ["Config", "Val loss", "Params", "Δ"]
    steps, minutes = ho["config"]["steps"], f"{ho['wall_time_s'] / 60:.1f}"
    caption = (f"examples/tiny_modern.py 的輸出：每個組態 {steps} 步、單一種子；整支程式在這台機器上跑了 {minutes} 分鐘"
               if zh else
               f"Output of examples/tiny_modern.py: {steps} steps per config, one seed; the whole script "
               f"took {minutes} minutes here")
    return pipe_table(header, rows, caption, "hands_on")


def generation_table(results: dict, lang: str) -> str:
    gen, zh = results["generation"], lang == "zh"
    same, diff = ("完全相同", "不同") if zh else ("identical", "different")
    rows = [[f"PyTorch {r['attention']}", str(r["n_kv_head"]), count(r["kv_bytes_per_token"]),
             count(r["cache_bytes"]), count(r["tokens_per_sec_no_cache"]), count(r["tokens_per_sec_cache"]),
             times(r["speedup"]), same if r["identical"] else diff] for r in gen["torch"]]
    npy = gen["numpy"]
    rows.append([f"NumPy {npy['attention']}", str(npy["n_kv_head"]), count(npy["kv_bytes_per_token"]),
                 count(npy["cache_bytes"]), count(npy["tokens_per_sec_no_cache"]),
                 count(npy["tokens_per_sec_cache"]), times(npy["speedup"]), same if npy["identical"] else diff])
    header = (["實作與注意力", "KV 頭數", "快取位元組/token", "快取總位元組", "無快取 tokens/秒", "有快取 tokens/秒",
               "加速", "貪婪解碼的輸出"] if zh else
              ["Implementation", "KV heads", "Cache bytes/token", "Cache bytes", "Tokens/s without cache",
               "Tokens/s with cache", "Speedup", "Greedy output"])
    c = gen["config"]
    caption = (f"生成速度：提示 {c['prompt_len']} 個 token、生成 {c['new_tokens']} 個，有無 KV 快取的比較；"
               f"貪婪解碼的輸出逐 token 比對" if zh else
               f"Generation: a {c['prompt_len']}-token prompt and {c['new_tokens']} new tokens, with and without "
               f"the KV cache; greedy outputs compared token by token")
    return pipe_table(header, rows, caption, "generation")


def llama2_params_table(results: dict, lang: str) -> str:
    p, zh = results["llama2"]["params"], lang == "zh"
    total = p["total"]
    parts = [("embedding", "詞嵌入（與輸出層共用）", "token embedding (tied with the output head)"),
             ("attention", "注意力（wq、wk、wv、wo，全部層）", "attention (wq, wk, wv, wo; all layers)"),
             ("feed_forward", "前饋層（SwiGLU，全部層）", "feed-forward (SwiGLU; all layers)"),
             ("norms", "正規化（RMSNorm 權重）", "norms (RMSNorm weights)")]
    rows = [[zh_label if zh else en_label, count(p[key]), f"{100 * p[key] / total:.2f}%"]
            for key, zh_label, en_label in parts]
    rows.append(["**總計**" if zh else "**total**", f"**{count(total)}**", "100.00%"])
    rows.append(["輸出層不共用時的總計" if zh else "total with an untied output head", count(p["total_untied"]), "—"])
    header = ["元件", "參數", "占比"] if zh else ["Component", "Parameters", "Share"]
    caption = "LLaMA2 預設組態的參數分解（由程式逐一清點）" if zh else \
        "Parameter breakdown of the LLaMA2 preset (counted by code)"
    return pipe_table(header, rows, caption, "llama2_params")


def llama2_kv_table(results: dict, lang: str) -> str:
    ll, zh = results["llama2"], lang == "zh"
    context = ll["config"]["context"]
    rows = [[r["attention"], str(r["n_kv_head"]), count(r["bytes_per_token"]), mib(r["bytes_at_context"])]
            for r in ll["kv_cache"]]
    header = (["注意力", "KV 頭數", "位元組/token", f"{context} 個 token 的整個快取"] if zh else
              ["Attention", "KV heads", "Bytes per token", f"Whole cache at {context} tokens"])
    caption = ("LLaMA2 預設組態的 KV 快取大小（fp32：2 × 層數 × KV 頭數 × 頭維度 × 4 位元組/token）" if zh else
               "KV-cache size of the LLaMA2 preset (fp32: 2 × layers × KV heads × head dim × 4 bytes per token)")
    return pipe_table(header, rows, caption, "llama2_kv_cache")


def attention_cost_table(results: dict, lang: str) -> str:
    ac, zh = results["llama2"]["attention_cost"], lang == "zh"
    rows = [[count(r["length"]), count(r["scores"]), count(r["cached_positions"]), mib(r["kv_bytes"]),
             gflop(r["flops_per_token"])] for r in ac["rows"]]
    first, last = ac["rows"][0], ac["rows"][-1]
    rows.append([f"{count(last['length'])} / {count(first['length'])}", times(last["scores"] / first["scores"]),
                 times(last["cached_positions"] / first["cached_positions"]), times(last["kv_bytes"] / first["kv_bytes"]),
                 times(last["flops_per_token"] / first["flops_per_token"])])
    header = (["序列長度", "注意力分數（每層每頭，平方成長）", "快取位置（每層每頭，線性成長）", "KV 快取（GQA，fp32）",
               "生成一個 token 的 FLOPs"] if zh else
              ["Sequence length", "Attention scores per layer per head (quadratic)",
               "Cached positions per layer per head (linear)", "KV cache (GQA, fp32)", "FLOPs per generated token"])
    caption = ("注意力的成本隨序列長度成長：分數矩陣是平方、KV 快取是線性；每個 token 的 FLOPs 是權重的 2 × 參數，"
               "加上注意力的 4 × 層數 × 長度 × 寬度（LLaMA2 預設組態）" if zh else
               "How attention cost grows with sequence length: the score matrix is quadratic, the KV cache linear; "
               "FLOPs per token are 2 × weights plus attention's 4 × layers × length × width (LLaMA2 preset)")
    return pipe_table(header, rows, caption, "attention_cost")


def decode_memory_table(results: dict, lang: str) -> str:
    mem, zh = results["llama2"]["decode_memory"], lang == "zh"
    rows = []
    for r in mem["rows"]:
        larger = (("快取" if zh else "cache") if r["cache_bytes"] > r["weights_bytes"] else
                  ("權重" if zh else "weights"))
        rows.append([str(r["batch"]), count(r["context"]), mib(r["cache_bytes"]), mib(r["weights_bytes"]),
                     f"{r['cache_over_weights']:.2f}", larger])
    header = (["批次（序列數）", "每條序列的上下文（token）", "KV 快取（GQA，fp32）", "權重（fp32）", "快取 ÷ 權重",
               "每步讀得比較多的"] if zh else
              ["Batch (sequences)", "Context per sequence (tokens)", "KV cache (GQA, fp32)", "Weights (fp32)",
               "Cache ÷ weights", "Larger read per step"])
    cross = count(mem["crossover_tokens"])
    caption = (f"解碼每一步要從記憶體讀的兩樣東西：全部權重（每步都一樣）和整份 KV 快取（隨批次 × 上下文成長）。"
               f"快取要累積到約 {cross} 個 token（整個批次加起來）才追上權重（LLaMA2 預設組態）" if zh else
               f"The two things every decoding step reads from memory: all the weights (the same every step) and the "
               f"whole KV cache (growing with batch × context). The cache catches up with the weights only at about {cross} "
               f"cached tokens, summed over the batch (LLaMA2 preset)")
    return pipe_table(header, rows, caption, "decode_memory")


TABLES = {
    "ablation": ablation_table, "additivity": additivity_table, "extrapolation": extrapolation_table,
    "hands_on": hands_on_table, "generation": generation_table, "llama2_params": llama2_params_table,
    "llama2_kv_cache": llama2_kv_table, "attention_cost": attention_cost_table, "decode_memory": decode_memory_table,
}


# ---------------------------------------------------------------- figures

def cjk_font_path() -> str:
    """A font file that draws the zh figures' labels, Noto Sans CJK first, from matplotlib's own font search
    (no fontconfig needed); fail with one line naming the package rather than draw boxes. Checked before
    `make reproduce` trains anything (scripts/system_deps.py cjk-font)."""
    from matplotlib import font_manager, ft2font
    zh_text = (*LABELS["zh"].values(), *VERDICTS["zh"].values(), *SHORT_LABELS["zh"].values(),
               *FIGURE_TEXT["zh"].values())
    needed = {ord(ch) for text in zh_text for ch in text if ord(ch) > 127}
    files = sorted(font_manager.findSystemFonts(),
                   key=lambda f: (Path(f).name != "NotoSansCJK-Regular.ttc", "CJK" not in Path(f).name, f))
    for path in files:
        try:
            if needed.issubset(ft2font.FT2Font(path).get_charmap()):
                return path
        except (OSError, RuntimeError, ValueError):
            continue  # a file matplotlib cannot read draws nothing
    raise RuntimeError(f"no font among the {len(files)} that matplotlib finds draws the zh figures' characters "
                       "(they would come out as boxes); install one: sudo apt-get install -y fonts-noto-cjk")


def _pyplot(lang: str):
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import font_manager
    import matplotlib.pyplot as plt
    plt.style.use("default")  # the same starting point for every figure, whatever ran before
    if lang == "zh":
        path = cjk_font_path()
        font_manager.fontManager.addfont(path)
        plt.rcParams["font.family"] = font_manager.FontProperties(fname=path).get_name()
    return plt


def _save(fig, path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150, bbox_inches="tight", metadata={"Software": None})


def rope_extrapolation_figure(results: dict, lang: str, path: Path):
    ex, text = results["extrapolation"], FIGURE_TEXT[lang]
    summary, lengths = summarize_extrapolation(ex), ex["lengths"]
    train_len, block = ex["config"]["train_len"], ex["config"]["block_size"]
    n = len(ex["losses"]["rope"])
    plt = _pyplot(lang)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.axvspan(train_len, max(lengths), color="#d62728", alpha=0.06, linewidth=0,
               label=text["untrained"].format(first=train_len, last=block - 1))
    for kind, marker, color in (("learned", "o-", "#d62728"), ("rope", "s-", "#1f77b4")):
        mean, std = summary[kind]["mean"], summary[kind]["std"]
        ax.fill_between(lengths, [m - s for m, s in zip(mean, std)], [m + s for m, s in zip(mean, std)],
                        color=color, alpha=0.25, linewidth=0)
        ax.plot(lengths, mean, marker, color=color, label=text[kind])
    ax.axvline(train_len, color="black", linestyle="--", linewidth=1, label=text["train_len"].format(n=train_len))
    ax.set_xlabel(text["eval_len"])
    ax.set_ylabel(text["val_loss"])
    ax.set_xticks(lengths)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0, title=text["band"].format(n=n),
              title_fontsize="small", fontsize="small")
    _save(fig, path)
    plt.close(fig)


def ablation_figure(results: dict, lang: str, path: Path):
    """A dot plot: each config's mean over seeds with a ± std bar, against the baseline's noise band.

    Dots, not bars: a bar's length would start from an arbitrary axis floor and exaggerate the gaps."""
    summary, text, n = summarize_ablation(results["ablation"]), FIGURE_TEXT[lang], len(results["ablation"]["config"]["seeds"])
    plt = _pyplot(lang)
    stats = summary["configs"]
    fig, ax = plt.subplots(figsize=(7.2, 4.2))
    base = stats["baseline"]["mean"]
    ax.axvspan(base - summary["threshold"], base + summary["threshold"], color="#bbbbbb", alpha=0.35, linewidth=0)
    ax.axvline(base, color="black", linestyle="--", linewidth=1)
    ys = list(range(len(ABLATION_CONFIGS)))[::-1]  # baseline on top
    for y, c in zip(ys, ABLATION_CONFIGS):
        ax.errorbar(stats[c]["mean"], y, xerr=stats[c]["std"], fmt="o", markersize=7, capsize=4,
                    color=VERDICT_COLORS[stats[c]["verdict"]])
    ax.set_yticks(ys, [SHORT_LABELS[lang][c] for c in ABLATION_CONFIGS])
    ax.set_xlabel(text["ablation_x"].format(n=n))
    ax.grid(axis="x", alpha=0.3)
    seen = []
    for c in ABLATION_CONFIGS:
        if stats[c]["verdict"] not in seen:
            seen.append(stats[c]["verdict"])
    handles = [plt.Line2D([], [], marker="o", linestyle="", color=VERDICT_COLORS[v]) for v in seen]
    handles.append(plt.Rectangle((0, 0), 1, 1, color="#bbbbbb", alpha=0.35))
    labels = [VERDICTS[lang][v] for v in seen] + [text["noise_band"].format(k=NOISE_FACTOR)]
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0, fontsize="small")
    _save(fig, path)
    plt.close(fig)


FIGURES = {"rope_extrapolation": rope_extrapolation_figure, "ablation": ablation_figure}


# ---------------------------------------------------------------- main

def load_results(results_dir: Path) -> dict:
    results = {}
    for name in EXPERIMENTS:
        path = Path(results_dir) / f"{name}.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing; run `make reproduce` (or `llmparts reproduce --only {name}`)")
        results[name] = json.loads(path.read_text(encoding="utf-8"))
    return results


def write_report(results_dir: Path, out_dir: Path, figures: bool = True) -> list[Path]:
    """Write _variables.yml, results/tables/*.md and (optionally) images/*.png under out_dir."""
    results, out_dir = load_results(results_dir), Path(out_dir)
    written = []
    out_dir.mkdir(parents=True, exist_ok=True)
    var_path = out_dir / "_variables.yml"
    var_path.write_text(variables_yaml(build_variables(results)), encoding="utf-8")
    written.append(var_path)
    for name, make_table in TABLES.items():
        for lang in ("zh", "en"):
            path = out_dir / "results" / "tables" / f"{name}.{lang}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(make_table(results, lang), encoding="utf-8")
            written.append(path)
    if figures:
        for name, make_figure in FIGURES.items():
            for lang in ("zh", "en"):
                path = out_dir / "images" / f"{name}.{lang}.png"
                make_figure(results, lang, path)
                written.append(path)
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="llmparts.report", description=__doc__.split("\n")[0])
    parser.add_argument("--results", type=Path, default=REPO_ROOT / "results", help="folder of results/*.json")
    parser.add_argument("--out", type=Path, default=REPO_ROOT,
                        help="root to write _variables.yml, results/tables/ and images/ under")
    parser.add_argument("--no_figures", action="store_true", help="skip the PNGs (tables and variables only)")
    args = parser.parse_args(argv)
    try:
        written = write_report(args.results, args.out, figures=not args.no_figures)
    except (FileNotFoundError, RuntimeError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"report: wrote {len(written)} files under {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
