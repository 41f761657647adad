"""Model and data cards generated from what the pipeline measured, never typed.

`evidence(...)` gathers the release into one dict: the recipe and its training settings, the metrics as
mean and seed spread, the reproducibility found, the sha256 of the weights and of the data, the code
fingerprint. From it come
- `hf_card`: MODEL_CARD.md in the shape Hugging Face model cards take (YAML front matter with language,
  license, tags, datasets, metrics and a model-index, then the card's sections); `export.to_hf(model, folder,
  card=hf_card(...))` writes it beside the weights;
- `release_metrics`: metrics.json, what `llmparts gate` holds a candidate to;
- `report_model_card` and `report_data_card`: the two cards as the book's tables, in either language.
"""

from __future__ import annotations

import json

from .strings import STRINGS
from .tables import count, loss, pipe_table

NAME = "char-llama"
# metric -> (the model-index type, lower is better?); the membership AUC and regurgitation are leaks.
METRICS = {"val_loss": ("loss", True), "membership_auc": ("roc_auc", True), "regurgitated": ("exact_match", True)}


def spread(values: list[float]) -> dict:
    """A metric over seeds: mean, sample std (0 for one seed) and the values."""
    n = len(values)
    mean = sum(values) / n
    std = (sum((v - mean) ** 2 for v in values) / (n - 1)) ** 0.5 if n > 1 else 0.0
    return {"value": mean, "noise": std, "seeds": n, "per_seed": list(values)}


def evidence(released: dict, runs: list[dict], reproducibility: dict, *, weights_sha256: str, data: dict,
             provenance: dict) -> dict:
    """The release in one dict. released: the recipe's config entry (model, train settings, seeds); runs:
    one probe row per seed (val_loss, auc, regurgitated, control_regurgitated, params)."""
    return {"name": NAME, "model": released["model"], "params": runs[0]["params"], "train": released["train"],
            "seeds": released["seeds"],
            "metrics": {"val_loss": spread([r["val_loss"] for r in runs]),
                        "membership_auc": spread([r["auc"] for r in runs]),
                        "regurgitated": spread([r["regurgitated"] for r in runs])},
            "control_regurgitated": spread([r["control_regurgitated"] for r in runs]),
            "reproducibility": reproducibility, "weights_sha256": weights_sha256, "data": data,
            "provenance": provenance}


def release_metrics(card: dict) -> dict:
    """metrics.json: each metric's value and seed noise, and which way is better."""
    return {"model": card["name"], "fingerprint": card.get("provenance", {}).get("fingerprint"),
            "metrics": {name: {"value": m["value"], "noise": m["noise"], "seeds": m["seeds"],
                               "lower_is_better": METRICS[name][1]} for name, m in card["metrics"].items()}}


def hf_card(card: dict) -> str:
    """MODEL_CARD.md: YAML front matter a model hub reads (free text quoted as JSON strings, which YAML
    reads as they are), then the card in English."""
    t, m = STRINGS["en"]["card"], card["model"]
    front = ["---", "language:", "- en", "license: mit", "library_name: transformers", "pipeline_tag: text-generation",
             "tags:", "- llama", "- character-level", "- llmparts", "datasets:", "- tiny_shakespeare"]
    front += ["metrics:"] + [f"- {METRICS[name][0]}" for name in card["metrics"]]
    front += ["model-index:", f"- name: {card['name']}", "  results:", "  - task:", "      type: text-generation",
              "    dataset:", "      type: tiny_shakespeare", "      name: tinyshakespeare", "      split: validation",
              "    metrics:"]
    for name, metric in card["metrics"].items():
        front += [f"    - type: {METRICS[name][0]}", f"      name: {json.dumps(t[name])}",
                  f"      value: {metric['value']:.4f}"]
    lines = front + ["---", "", f"# {card['name']}", "", t["summary"].format(
        params=count(card["params"]), layers=m["n_layer"], width=m["n_embd"], heads=m["n_head"],
        kv=m["n_kv_head"], block=m["block_size"], vocab=m["vocab_size"]), ""]
    lines += ["## " + t["use_title"], "", t["use"], "", "## " + t["limits_title"], "", t["limits"], ""]
    lines += ["## " + t["metrics_title"], "", "| " + " | ".join(t["metrics_header"]) + " |", "|---|---|---|"]
    for name, metric in card["metrics"].items():
        lines.append(f"| {t[name]} | {loss(metric['value'])} ± {loss(metric['noise'])} | {metric['seeds']} |")
    c, r, d, p = card["control_regurgitated"], card["reproducibility"], card["data"], card["provenance"]
    lines += ["", t["control"].format(value=loss(c["value"])), "", "## " + t["training_title"], ""]
    lines += [f"- {key}: `{value}`" for key, value in card["train"].items()] + [f"- seeds: `{card['seeds']}`", ""]
    lines += ["## " + t["repro_title"], "", t["repro"].format(
        repeat=t["yes"] if r["repeat_bit_identical"] else t["no"],
        changes=", ".join(STRINGS["en"]["governance"]["variant_" + v] for v in r["changes_bits"]) or t["none"]), ""]
    lines += ["## " + t["provenance_title"], "", f"- weights (.npz) sha256: `{card['weights_sha256']}`",
              f"- data: {d['url']}, sha256 `{d['sha256']}`", f"- code fingerprint: `{p['fingerprint']}`",
              f"- git commit: `{p['commit']}`" + (" (uncommitted changes)" if p.get("dirty") else ""),
              f"- torch: `{p['torch']}`", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- the book's tables (formats only)

def report_number(metric: str, x: float) -> str:
    """A loss or an AUC with four decimals, a share of passages in percent."""
    return f"{100 * x:.1f}%" if metric == "regurgitated" else loss(x)


def report_model_card(card: dict, lang: str) -> str:
    t, m, r = STRINGS[lang]["card"], card["model"], card["reproducibility"]
    rows = [[t["field_model"], t["summary_short"].format(params=count(card["params"]), layers=m["n_layer"],
                                                         width=m["n_embd"], heads=m["n_head"], kv=m["n_kv_head"])],
            [t["field_training"], t["training_short"].format(iters=count(card["train"]["max_iters"]),
                                                             batch=card["train"]["batch_size"],
                                                             seq=card["train"]["seq_len"], dtype=card["train"]["dtype"],
                                                             seeds=len(card["seeds"]))]]
    rows += [[t[name], f"{report_number(name, metric['value'])} ± {report_number(name, metric['noise'])}"]
             for name, metric in card["metrics"].items()]
    rows += [[t["field_control"], report_number("regurgitated", card["control_regurgitated"]["value"])],
             [t["field_repeat"], t["yes"] if r["repeat_bit_identical"] else t["no"]],
             [t["field_changes"],
              ", ".join(STRINGS[lang]["governance"]["variant_" + v] for v in r["changes_bits"]) or t["none"]],
             [t["field_use"], t["use"]], [t["field_limits"], t["limits"]],
             [t["field_weights"], f"`{card['weights_sha256'][:16]}…`"],
             [t["field_fingerprint"], f"`{card['provenance']['fingerprint'][:16]}…`"],
             [t["field_torch"], f"`{card['provenance']['torch']}`"]]
    return pipe_table(t["header"], rows, t["model_caption"], "model_card")


def report_data_card(card: dict, lang: str) -> str:
    t, d = STRINGS[lang]["card"], card["data"]
    rows = [[t["data_source"], t["data_source_value"].format(url=d["url"])],
            [t["data_sha"], f"`{d['sha256'][:16]}…`"],
            [t["data_size"], t["data_size_value"].format(train=count(d["train_chars"]), val=count(d["val_chars"]))],
            [t["data_vocab"], count(d["vocab_size"])],
            [t["data_licence"], t["data_licence_value"]],
            [t["data_gaps"], t["data_gaps_value"]]]
    return pipe_table(t["header"], rows, t["data_caption"], "data_card")
