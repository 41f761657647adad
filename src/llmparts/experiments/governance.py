"""Chapter 07, governance: what a team can show about its model, measured rather than asserted.

- Reproducibility: a short run of the book's recipe, twice with the same settings (bit-identical?), and
  once each with another thread count, another precision and another seed (how far do they move it?).
- Memorisation: the LLaMA recipe at three sizes trained long on a small slice of the text, scored at
  several steps with a membership test on per-line loss (ROC AUC) and with verbatim regurgitation.
- The released model (the ablation's LLaMA runs, seed 0 being the browser's weights) gets the same probes;
  its metrics, with their seed noise, become the model card (llmparts.model_card) and the release that
  `llmparts gate` holds candidates to.

run() writes results/governance/: MODEL_CARD.md and metrics.json (the release), lines.json (the per-line
losses the chapter's cells read).
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import torch

from .. import model_card, recipes
from ..atomic import write_text
from ..config import TrainConfig
from ..data import DATA_SHA256, DATA_URL, Dataset
from ..export import to_npz
from ..memorization import line_losses, passages, probe_lines, regurgitated, roc_auc
from ..model import GPT
from ..provenance import CORE_SOURCES, fingerprint, git_commit, source_name
from ..strings import STRINGS
from ..tables import count, loss, pipe_table, signed
from ..train import train
from .ablation import variant_task
from .base import TRAINING, Context, Experiment, Report, Result, Task, dataset, mean_std, numeric_train_settings, \
    train_config

OUT = "results/governance"
PROBE = dict(min_chars=20, max_chars=60, passage=50, prefix=20, seed=0)  # what the probes read
SIZES = {"small": dict(n_layer=2, n_embd=64), "book": {}, "large": dict(n_embd=256)}  # llama recipe overrides
# The reproducibility runs: the book's settings (bfloat16 autocast, one thread, seed 0), then one change each.
REPRO = {"reference": {}, "repeat": {}, "threads": {"threads": 2}, "float32": {"dtype": "float32"},
         "seed": {"seed": 1}}
SCALES = {
    "full": dict(repro_steps=200, eval_batches=20, slice_chars=30_000, steps=[50, 100, 200, 400, 800],
                 seeds=[0, 1], sizes=list(SIZES), lines=300, passages=200),
    "smoke": dict(repro_steps=4, eval_batches=2, slice_chars=4_000, steps=[2, 4], seeds=[0],
                  sizes=["small", "book"], lines=20, passages=10),
}


@dataclass
class GovernanceRecord:
    reproducibility: dict[str, dict]  # variant -> sha256, same_bits, max_weight_diff, val_loss, val_delta
    memorization: list[dict]          # one per size, seed and step: params, losses, auc, regurgitated shares
    leak: list[dict]                  # per size and step: means and stds over seeds (the figure and table)
    released: list[dict]              # one per seed of the released recipe: val_loss, auc, regurgitated shares
    card: dict                        # llmparts.model_card's evidence: the release in one dict


# ---------------------------------------------------------------- runs, in worker processes

def state_sha256(state: dict) -> str:
    """sha256 over a state dict's names and raw tensor bytes: equal only when every bit is equal."""
    h = hashlib.sha256()
    for name in sorted(state):
        h.update(name.encode() + b"\0")
        h.update(state[name].detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def train_repro(variant: str, scale: str, threads: int) -> dict:
    """One short run of the book's recipe with REPRO[variant]'s change; it sets its own thread count."""
    s, change = SCALES[scale], REPRO[variant]
    cfg = replace(train_config(scale, change.get("seed", 0), change.get("threads", 1)), max_iters=s["repro_steps"],
                  eval_interval=s["repro_steps"], eval_batches=s["eval_batches"],
                  final_eval_batches=s["eval_batches"], **({"dtype": change["dtype"]} if "dtype" in change else {}))
    result = train(recipes.llama(), cfg, dataset())
    state = {k: v.detach().cpu() for k, v in result.model.state_dict().items()}
    return {"sha256": state_sha256(state), "val_loss": result.final_val_loss, "state": state}


@lru_cache(maxsize=2)
def probes(scale: str | None) -> dict:
    """What the membership test and the regurgitation probe read. scale None: the released model (training
    split against validation split); else the memorisation runs (their slice against the text after it)."""
    data = dataset()
    text = data.tokenizer.decode(data.train.tolist())
    if scale is None:
        n, seen, unseen = SCALES["full"]["lines"], text, data.tokenizer.decode(data.val.tolist())
    else:
        s = SCALES[scale]
        n, seen, unseen = s["lines"], text[:s["slice_chars"]], text[s["slice_chars"]:2 * s["slice_chars"]]
    n_passages = SCALES[scale or "full"]["passages"]
    members, held_out = probe_lines(seen, unseen, n, PROBE["min_chars"], PROBE["max_chars"], PROBE["seed"])
    return {"members": members, "held_out": held_out,
            "member_passages": passages(seen, n_passages, PROBE["passage"], PROBE["seed"]),
            "control_passages": passages(unseen, n_passages, PROBE["passage"], PROBE["seed"])}


def probe(model, tokenizer, sets: dict) -> dict:
    """Per-line losses of members and held-out lines, and the share of passages regurgitated."""
    share = lambda texts: sum(regurgitated(model, tokenizer, texts, PROBE["prefix"])) / len(texts)  # noqa: E731
    return {"member_losses": line_losses(model, tokenizer, sets["members"]),
            "held_out_losses": line_losses(model, tokenizer, sets["held_out"]),
            "regurgitated": share(sets["member_passages"]), "control_regurgitated": share(sets["control_passages"])}


def train_memorization(size: str, seed: int, scale: str, threads: int) -> dict:
    """The LLaMA recipe at SIZES[size], trained on the slice, probed at each step of s["steps"] (each stage
    resumes the last one's checkpoint, the schedule pinned to the last step: one run, looked at several times)."""
    s, data = SCALES[scale], dataset()
    sliced = Dataset(train=data.train[:s["slice_chars"]], val=data.val, tokenizer=data.tokenizer)
    stages = []
    with tempfile.TemporaryDirectory() as run_dir:
        for k, step in enumerate(s["steps"]):
            cfg = TrainConfig(batch_size=TRAINING[scale]["batch_size"], seq_len=TRAINING[scale]["train_len"],
                              max_iters=step, lr_decay_iters=s["steps"][-1], eval_interval=step,
                              eval_batches=s["eval_batches"], final_eval_batches=s["eval_batches"], seed=seed,
                              threads=threads, checkpoint_interval=s["steps"][-1], out_dir=run_dir, resume=k > 0,
                              quiet=True)
            result = train(recipes.llama(**SIZES[size]), cfg, sliced)
            stages.append({"step": step, "train_loss": result.history[-1]["train_loss"],
                           "val_loss": result.final_val_loss, **probe(result.model, data.tokenizer, probes(scale))})
    return {"params": result.num_params, "stages": stages}


# ---------------------------------------------------------------- the experiment

class Governance(Experiment):
    name = "governance"  # results/governance.json
    sources = ("src/llmparts/memorization.py", "src/llmparts/model_card.py", "src/llmparts/export.py",
               "src/llmparts/experiments/ablation.py")
    record_type = GovernanceRecord

    def config(self, scale):
        return {**SCALES[scale], "probe": PROBE, "repro": REPRO,
                "sizes_config": {k: SIZES[k] for k in SCALES[scale]["sizes"]},
                "released": {"from": "ablation", "config": "llama", "seeds": TRAINING[scale]["seeds"],
                             "model": recipes.llama().to_dict(), "train": numeric_train_settings(scale)}}

    def seeds(self, config):
        return sorted(set(config["seeds"]) | set(config["released"]["seeds"]))

    def tasks(self, config, scale):
        repro = [Task(f"governance repro {v}", train_repro, dict(variant=v, scale=scale), cost=config["repro_steps"])
                 for v in REPRO]
        mem = [Task(f"governance memorization {size} seed {seed}", train_memorization,
                    dict(size=size, seed=seed, scale=scale), cost=config["steps"][-1] * (3 if size == "large" else 1))
               for size in config["sizes"] for seed in config["seeds"]]
        return repro + mem + [variant_task("llama", seed, scale) for seed in config["released"]["seeds"]]

    def run(self, config, outputs, context: Context) -> GovernanceRecord:
        repro = {v: outputs[f"governance repro {v}"] for v in REPRO}
        mem = [{"size": size, "seed": seed, "params": out["params"], **stage}
               for size in config["sizes"] for seed in config["seeds"]
               for out in [outputs[f"governance memorization {size} seed {seed}"]] for stage in out["stages"]]
        released, weights_sha = self.probe_released(config, outputs, context.scale)
        lines = page_lines(released[0], [r for r in mem if r["seed"] == config["seeds"][0]])
        mem, released = [membership(r) for r in mem], [membership(r) for r in released]
        card = model_card.evidence(
            config["released"], released, reproducibility_summary(repro), weights_sha256=weights_sha,
            data={"url": DATA_URL, "sha256": DATA_SHA256, **split_sizes()},
            provenance={"fingerprint": fingerprint(config, self.fingerprint_sources()), **git_commit(),
                        "torch": torch.__version__})
        record = GovernanceRecord(reproducibility=compare_repro(repro), memorization=mem, leak=summarize_leak(mem),
                                  released=released, card=card)
        write_release(context.root / OUT, card, lines)
        return record

    def fingerprint_sources(self):
        """What reproduce fingerprints for this experiment: the core, this module and its sources."""
        return CORE_SOURCES + (source_name(Path(__file__)),) + self.sources

    def probe_released(self, config, outputs, scale) -> tuple[list[dict], str]:
        """The released recipe's runs, probed like the memorisation runs; the sha256 of seed 0's .npz."""
        tokenizer, rows, sha = dataset().tokenizer, [], ""
        for seed in config["released"]["seeds"]:
            trained = outputs[f"ablation llama seed {seed}"]
            model = GPT(recipes.ablation_variant("llama"))
            model.load_state_dict(trained.state_dict)
            row = {"seed": seed, "val_loss": trained.run.val_loss, "params": trained.run.params,
                   **probe(model, tokenizer, probes(None if scale == "full" else scale))}
            rows.append(row)
            if seed == 0:
                with tempfile.TemporaryDirectory() as tmp:
                    path = to_npz(model, Path(tmp) / "w.npz", chars=tokenizer.chars)
                    sha = hashlib.sha256(path.read_bytes()).hexdigest()
        return rows, sha

    def describe(self, task, output):
        if isinstance(output, dict) and "stages" in output:
            last = output["stages"][-1]
            return f"train {last['train_loss']:.4f}, val {last['val_loss']:.4f}"
        if isinstance(output, dict):
            return f"val {output['val_loss']:.4f}, sha256 {output['sha256'][:12]}"
        return f"val {output.run.val_loss:.4f}"

    def report(self, result: Result) -> Report:
        return Report(variables={"governance": report_variables(result)},
                      tables={name: {lang: make(result, lang) for lang in STRINGS}
                              for name, make in REPORT_TABLES.items()},
                      figures={"governance_leak": lambda lang: report_leak_figure(result, lang)})


# ---------------------------------------------------------------- conclusions, computed once

def compare_repro(repro: dict) -> dict:
    ref = repro["reference"]
    out = {}
    for variant, r in repro.items():
        diff = max((r["state"][k].float() - ref["state"][k].float()).abs().max().item() for k in ref["state"])
        out[variant] = {"sha256": r["sha256"], "same_bits": r["sha256"] == ref["sha256"], "max_weight_diff": diff,
                        "val_loss": r["val_loss"], "val_delta": r["val_loss"] - ref["val_loss"]}
    return out


def reproducibility_summary(repro: dict) -> dict:
    """What the card says about reproducibility: does a repeat give the same bits, which changes do not."""
    compared = compare_repro(repro)
    return {"repeat_bit_identical": compared["repeat"]["same_bits"],
            "changes_bits": sorted(v for v, r in compared.items()
                                   if v not in ("reference", "repeat") and not r["same_bits"]),
            "seed_val_delta": abs(compared["seed"]["val_delta"])}


def summarize_leak(mem: list[dict]) -> list[dict]:
    rows = []
    for size in dict.fromkeys(r["size"] for r in mem):
        for step in dict.fromkeys(r["step"] for r in mem):
            runs = [r for r in mem if r["size"] == size and r["step"] == step]
            rows.append({"size": size, "step": step, "params": runs[0]["params"], "seeds": len(runs),
                         **{key: mean_std([r[key] for r in runs]) for key in
                            ("auc", "regurgitated", "control_regurgitated", "train_loss", "val_loss")}})
    return rows


def split_sizes() -> dict:
    data = dataset()
    return {"train_chars": len(data.train), "val_chars": len(data.val), "vocab_size": data.tokenizer.vocab_size}


def membership(row: dict) -> dict:
    """A probe row with its per-line losses replaced by the membership test's AUC and the two mean losses."""
    member, held_out = row["member_losses"], row["held_out_losses"]
    rest = {k: v for k, v in row.items() if k not in ("member_losses", "held_out_losses")}
    return {**rest, "auc": roc_auc([-x for x in member], [-x for x in held_out]),
            "member_loss": sum(member) / len(member), "held_out_loss": sum(held_out) / len(held_out)}


def page_lines(released: dict, runs: list[dict]) -> dict:
    """The per-line losses the chapter's cells read: the released model (the reader's weights) and each
    memorisation size at its last step."""
    def losses(row):
        return {k: [round(x, 4) for x in row[k]] for k in ("member_losses", "held_out_losses")}
    last = {r["size"]: r for r in runs}  # runs are in step order: the last row of a size is its last step
    return {"released": losses(released),
            "runs": {size: {"step": r["step"], "params": r["params"], **losses(r)} for size, r in last.items()}}


def write_release(folder: Path, card: dict, lines: dict):
    """MODEL_CARD.md and metrics.json (the release the gate compares against), lines.json (the page's data)."""
    write_text(folder / "MODEL_CARD.md", model_card.hf_card(card))
    write_text(folder / "metrics.json", json.dumps(model_card.release_metrics(card), indent=1) + "\n")
    write_text(folder / "lines.json", json.dumps(lines, separators=(",", ":")) + "\n")


# ---------------------------------------------------------------- the report: formats only

def pm(pair, fmt=loss) -> str:
    return f"{fmt(pair[0])} ± {fmt(pair[1])}"


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def report_pin(variant: str, row: dict, seed_delta: float, t: dict) -> str:
    """The verdict on one change: nothing, the bits only, or the metric as much as a new seed."""
    if variant == "reference":
        return "—"
    if variant == "seed":
        return t["pin_seed"]
    if row["same_bits"]:
        return t["pin_none"]
    return t["pin_metric"] if abs(row["val_delta"]) >= seed_delta else t["pin_bits"]


def report_repro(result: Result, lang: str) -> str:
    t, rows = STRINGS[lang]["governance"], result.record.reproducibility
    seed_delta = abs(rows["seed"]["val_delta"])
    yes, no = STRINGS[lang]["yes"], STRINGS[lang]["no"]
    body = [[t["variant_" + v], yes if r["same_bits"] else no, f"{r['max_weight_diff']:.2e}", loss(r["val_loss"]),
             signed(r["val_delta"]), report_pin(v, r, seed_delta, t)] for v, r in rows.items()]
    return pipe_table(t["repro_header"], body, t["repro_caption"].format(steps=result.config["repro_steps"]),
                      "governance_repro")


def report_leak_table(result: Result, lang: str) -> str:
    t, cfg = STRINGS[lang]["governance"], result.config
    per_step = TRAINING["full"]["batch_size"] * TRAINING["full"]["train_len"]
    body = [[t["size_" + r["size"]], count(r["params"]), count(r["step"]),
             f"{r['step'] * per_step / cfg['slice_chars']:.1f}",
             pm(r["train_loss"]), pm(r["val_loss"]), f"**{pm(r['auc'], lambda x: f'{x:.3f}')}**",
             pm(r["regurgitated"], pct), pct(r["control_regurgitated"][0])] for r in result.record.leak]
    return pipe_table(t["leak_header"], body, t["leak_caption"].format(
        chars=count(cfg["slice_chars"]), seeds=len(cfg["seeds"]), lines=cfg["lines"], passages=cfg["passages"],
        length=cfg["probe"]["passage"], prefix=cfg["probe"]["prefix"]), "governance_leak")


REPORT_TABLES = {"governance_repro": report_repro, "governance_leak": report_leak_table,
                 "model_card": lambda result, lang: model_card.report_model_card(result.record.card, lang),
                 "data_card": lambda result, lang: model_card.report_data_card(result.record.card, lang)}


def report_leak_figure(result: Result, lang: str):
    from ..figures import pyplot
    t, leak = STRINGS[lang]["governance"], result.record.leak
    plt = pyplot(lang)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.6, 3.8))
    colors = {"small": "#1f77b4", "book": "#2ca02c", "large": "#d62728"}
    for size in dict.fromkeys(r["size"] for r in leak):
        rows = [r for r in leak if r["size"] == size]
        steps = [r["step"] for r in rows]
        label = f"{t['size_' + size]} ({count(rows[0]['params'])})"
        for ax, key in ((left, "auc"), (right, "regurgitated")):
            means, stds = [r[key][0] for r in rows], [r[key][1] for r in rows]
            ax.fill_between(steps, [m - d for m, d in zip(means, stds)], [m + d for m, d in zip(means, stds)],
                            color=colors[size], alpha=0.2, linewidth=0)
            ax.plot(steps, means, "o-", color=colors[size], label=label)
        right.plot(steps, [r["control_regurgitated"][0] for r in rows], ":", color=colors[size])
    left.axhline(0.5, color="#888", linestyle="--", linewidth=1)
    left.set_ylim(0.44, 1.02)
    left.text(steps[-1], 0.49, t["fig_chance"], color="#666", fontsize=8, ha="right", va="top")
    for ax, ylabel in ((left, t["fig_auc"]), (right, t["fig_regurgitated"])):
        ax.set_xscale("log", base=2)
        ax.set_xticks(steps, [count(s) for s in steps])
        ax.minorticks_off()
        ax.set_xlabel(t["fig_x"])
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    left.legend(fontsize=8)
    right.set_title(t["fig_control"], fontsize=8)
    fig.tight_layout()
    return fig


def report_variables(result: Result) -> dict:
    """The `governance.*` keys of _variables.yml: chapter 07's prose."""
    record, card = result.record, result.record.card
    repro, metrics = record.reproducibility, card["metrics"]
    last = {r["size"]: r for r in record.leak}
    first = {r["size"]: r for r in reversed(record.leak)}
    per_step = TRAINING["full"]["batch_size"] * TRAINING["full"]["train_len"]
    released_chars = card["train"]["max_iters"] * card["train"]["batch_size"] * card["train"]["seq_len"]
    return {
        "repro_steps": count(result.config["repro_steps"]),
        "threads_max_diff": f"{repro['threads']['max_weight_diff']:.1e}",
        "float32_max_diff": f"{repro['float32']['max_weight_diff']:.1e}",
        "threads_delta": signed(repro["threads"]["val_delta"]),
        "float32_delta": signed(repro["float32"]["val_delta"]),
        "seed_delta": signed(repro["seed"]["val_delta"]),
        "val_loss": loss(metrics["val_loss"]["value"]),
        "val_loss_std": loss(metrics["val_loss"]["noise"]),
        "released_auc": f"{metrics['membership_auc']['value']:.3f}",
        "released_auc_std": f"{metrics['membership_auc']['noise']:.3f}",
        "released_regurgitated": pct(metrics["regurgitated"]["value"]),
        "released_control": pct(card["control_regurgitated"]["value"]),
        "released_seeds": str(len(card["seeds"])),
        "released_epochs": f"{released_chars / card['data']['train_chars']:.1f}",
        "slice_chars": count(result.config["slice_chars"]),
        "last_step": count(result.config["steps"][-1]),
        "first_step": count(result.config["steps"][0]),
        "last_epochs": f"{result.config['steps'][-1] * per_step / result.config['slice_chars']:.0f}",
        "lines": count(result.config["lines"]),
        **{f"{size}_auc_first": f"{first[size]['auc'][0]:.3f}" for size in last},
        **{f"{size}_auc_last": f"{last[size]['auc'][0]:.3f}" for size in last},
        **{f"{size}_regurgitated_last": pct(last[size]["regurgitated"][0]) for size in last},
        **{f"{size}_params": count(last[size]["params"]) for size in last},
    }


EXPERIMENT = Governance()
