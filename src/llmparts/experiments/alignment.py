"""Chapter 09, alignment: the book's LLaMA char model fine-tuned on examples of a target behaviour (SFT), then
trained with DPO on pairs it sampled and the reward ranked, at several beta, over seeds.

The base model is the ablation's LLaMA seed-0 run (the browser's model, trained once for both). Everything
after it runs in the main process: per seed, SFT, the preference pairs, and one DPO run per beta, each
measured on held-out prompts (reward, KL to the reference, repetition) and on ordinary validation text.
The science lives in llmparts.dpo and llmparts.reward; this module schedules it and formats it.
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass

import torch

from .. import dpo, recipes
from ..data import fixed_batches
from ..export import to_npz
from ..model import GPT
from ..reward import SPEAKER, VERSE_MAX, VERSE_MIN
from ..strings import STRINGS
from ..tables import loss, pipe_table, signed
from ..train import VAL_SEED, evaluate
from .ablation import variant_task
from .base import TRAINING, Context, Experiment, Report, Result, dataset, mean_std

SCALES = {
    "full": dict(sft_steps=30, sft_lr=1e-4, pair_prompts=512, per_prompt=4, dpo_steps=100, dpo_lr=2e-5,
                 betas=[0.01, 0.1, 1.0, 3.0], batch_size=16, eval_prompts=128, val_batches=20, samples_shown=3),
    "smoke": dict(sft_steps=2, sft_lr=1e-4, pair_prompts=16, per_prompt=4, dpo_steps=2, dpo_lr=2e-5,
                  betas=[0.1, 1.0], batch_size=4, eval_prompts=8, val_batches=2, samples_shown=2),
}
FILES = {"sft": "results/weights/char_llama_sft.npz", "dpo": "results/weights/char_llama_dpo.npz"}
METRICS = ("reward", "speaker", "verse", "kl", "repetition", "val_loss")


@dataclass
class AlignmentRecord:
    demonstrations: int       # fine-tuning examples: Romeo's speeches in the training text that earn the full reward
    runs: list[dict]          # one per stage (base, sft, dpo) and seed; dpo runs carry their beta and pair counts
    summary: dict             # stage key ("base", "sft", "beta=0.1", ...) -> metric -> [mean, std]; and the verdicts
    samples: dict             # stage key -> the first samples of seed 0
    weights: dict             # "sft" / "dpo" -> {file, bytes, sha256}


def stage_key(run: dict) -> str:
    return f"beta={run['beta']:g}" if run["stage"] == "dpo" else run["stage"]


def measured(model: GPT, reference: GPT, prompts: torch.Tensor, batches, decode, seed: int) -> dict:
    return {**dpo.measure(model, reference, prompts, decode, seed), "val_loss": evaluate(model, batches)}


def summarize(runs: list[dict], betas: list[float]) -> dict:
    """Mean and std over seeds per stage and metric, then the chapter's conclusions."""
    keys = list(dict.fromkeys(stage_key(r) for r in runs))
    stats = {key: {m: list(mean_std([r[m] for r in runs if stage_key(r) == key])) for m in METRICS} for key in keys}
    best = max(betas, key=lambda b: stats[f"beta={b:g}"]["reward"][0])
    smallest = f"beta={min(betas):g}"
    return {"stats": stats, "best_beta": best, "smallest_beta": min(betas),
            "sft_cost": stats["sft"]["val_loss"][0] - stats["base"]["val_loss"][0],
            "sft_gain": stats["sft"]["reward"][0] - stats["base"]["reward"][0],
            "dpo_gain": stats[f"beta={best:g}"]["reward"][0] - stats["sft"]["reward"][0],
            "smallest_change": stats[smallest]["reward"][0] - stats["sft"]["reward"][0]}


def export(model: GPT, path, chars: str) -> dict:
    to_npz(model, path, chars=chars)
    data = path.read_bytes()
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


class Alignment(Experiment):
    name = "alignment"  # results/alignment.json
    sources = ("src/llmparts/dpo.py", "src/llmparts/reward.py", "src/llmparts/export.py",
               "src/llmparts/experiments/ablation.py")
    record_type = AlignmentRecord

    def config(self, scale):
        return {**SCALES[scale], "seeds": TRAINING[scale]["seeds"], "base": {"from": "ablation", "config": "llama",
                "seed": 0, "iters": TRAINING[scale]["iters"]}, "model": recipes.llama().to_dict(),
                "speaker": SPEAKER, "verse": [VERSE_MIN, VERSE_MAX], "prompt_len": dpo.PROMPT_LEN,
                "completion_len": dpo.COMPLETION_LEN, "val_seed": VAL_SEED}

    def tasks(self, config, scale):
        return [variant_task(config["base"]["config"], config["base"]["seed"], scale)]

    def run(self, config, outputs, context: Context) -> AlignmentRecord:
        torch.set_num_threads(context.threads)
        (trained,) = outputs.values()
        base = GPT(recipes.llama())
        base.load_state_dict(trained.state_dict)
        base.eval()
        data = dataset()
        tok = data.tokenizer
        train_text, val_text = tok.decode(data.train.tolist()), tok.decode(data.val.tolist())
        examples = dpo.demonstrations(train_text, tok.encode)
        pair_pool, eval_pool = dpo.prompts(train_text, tok.encode), dpo.prompts(val_text, tok.encode)
        eval_prompts = eval_pool[torch.randperm(len(eval_pool), generator=torch.Generator().manual_seed(VAL_SEED))
                                 [:config["eval_prompts"]]]
        batches = fixed_batches(data.val, config["val_batches"], TRAINING[context.scale]["batch_size"],
                                recipes.llama().block_size, VAL_SEED)
        runs, samples, kept = [], {}, {}
        for seed in config["seeds"]:
            def record(stage, model, reference, **extra):
                m = measured(model, reference, eval_prompts, batches, tok.decode, seed)
                shown = m.pop("samples")[:config["samples_shown"]]
                run = {"stage": stage, "seed": seed, **extra, **m}
                runs.append(run)
                if seed == config["seeds"][0]:
                    samples[stage_key(run)] = shown
            record("base", base, base)
            sft = dpo.sft(copy.deepcopy(base), examples, config["sft_steps"], config["batch_size"], config["sft_lr"], seed)
            record("sft", sft, sft)
            generator = torch.Generator().manual_seed(seed)
            chosen_prompts = pair_pool[torch.randperm(len(pair_pool), generator=generator)[:config["pair_prompts"]]]
            chosen, rejected, r_chosen, r_rejected = dpo.preference_pairs(sft, chosen_prompts, tok.decode, generator,
                                                                          config["per_prompt"])
            pairs = {"pairs": len(chosen), "chosen_reward": r_chosen.mean().item() if len(chosen) else 0.0,
                     "rejected_reward": r_rejected.mean().item() if len(chosen) else 0.0}
            for beta in config["betas"]:
                policy = dpo.dpo(sft, chosen, rejected, beta, config["dpo_steps"], config["batch_size"],
                                 config["dpo_lr"], seed)
                record("dpo", policy, sft, beta=beta, **pairs)
                kept[(seed, beta)] = policy
            kept[(seed, "sft")] = sft
        summary = summarize(runs, config["betas"])
        first = config["seeds"][0]
        weights = {}
        for name, model in (("sft", kept[(first, "sft")]), ("dpo", kept[(first, summary["best_beta"])])):
            weights[name] = {"file": FILES[name], **export(model, context.root / FILES[name], tok.chars)}
        return AlignmentRecord(demonstrations=len(examples), runs=runs, summary=summary, samples=samples,
                               weights=weights)

    def report(self, result: Result) -> Report:
        return Report(variables={"alignment": report_variables(result)},
                      tables={name: {lang: make(result, lang) for lang in STRINGS}
                              for name, make in REPORT_TABLES.items()},
                      figures={"alignment_tradeoff": lambda lang: report_figure(result, lang)})


# ---------------------------------------------------------------- the report: formats only

def report_pm(pair, fmt=loss) -> str:
    return f"{fmt(pair[0])} ± {fmt(pair[1])}"


def report_share(x: float) -> str:
    return f"{x:.3f}"


def report_nats(x: float) -> str:
    return f"{x:.2f}"


def report_stage_name(key: str, lang: str) -> str:
    t = STRINGS[lang]["alignment"]
    return t[key] if key in ("base", "sft") else t["dpo"].format(beta=key.removeprefix("beta="))


def report_stages(result: Result, lang: str) -> str:
    t, stats = STRINGS[lang]["alignment"], result.record.summary["stats"]
    rows = [[report_stage_name(key, lang), report_pm(s["reward"], report_share), report_pm(s["speaker"], report_share),
             report_pm(s["verse"], report_share), report_pm(s["kl"], report_nats), report_pm(s["repetition"], report_share),
             report_pm(s["val_loss"])] for key, s in stats.items()]
    cfg = result.config
    caption = t["caption"].format(seeds=len(cfg["seeds"]), prompts=cfg["eval_prompts"], chars=cfg["completion_len"],
                                  steps=cfg["dpo_steps"])
    return pipe_table(t["header"], rows, caption, "alignment")


def report_cell(text: str) -> str:
    """A sample as one Markdown table cell: in code, each newline shown as ⏎, the pipe escaped."""
    return "`" + text.replace("\n", "⏎").replace("`", "'").replace("|", "\\|") + "`"


def report_samples(result: Result, lang: str) -> str:
    t = STRINGS[lang]["alignment"]
    rows = [[report_stage_name(key, lang), "<br>".join(report_cell(s) for s in shown)]
            for key, shown in result.record.samples.items()]
    return pipe_table(t["samples_header"], rows, t["samples_caption"].format(n=result.config["samples_shown"]),
                      "alignment_samples")


REPORT_TABLES = {"alignment": report_stages, "alignment_samples": report_samples}


def report_figure(result: Result, lang: str):
    """Reward against KL to the reference, one point per beta (mean ± std over seeds), the SFT model at 0."""
    from ..figures import pyplot
    t, s = STRINGS[lang]["alignment"], result.record.summary["stats"]
    plt = pyplot(lang)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.axhline(s["sft"]["reward"][0], color="#888888", linestyle="--", linewidth=1, label=t["fig_sft"])
    ax.axhline(s["base"]["reward"][0], color="#bbbbbb", linestyle=":", linewidth=1, label=t["fig_base"])
    for beta in result.config["betas"]:
        point = s[f"beta={beta:g}"]
        ax.errorbar(point["kl"][0], point["reward"][0], xerr=point["kl"][1], yerr=point["reward"][1], fmt="o",
                    capsize=4, color="#c0392b")
        ax.annotate(f"β = {beta:g}", (point["kl"][0], point["reward"][0]), textcoords="offset points", xytext=(6, 6))
    ax.set_xscale("symlog", linthresh=1)
    ax.set_xlabel(t["fig_x"])
    ax.set_ylabel(t["fig_y"])
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower left")
    return fig


def report_variables(result: Result) -> dict:
    """The `alignment.*` keys of _variables.yml: chapter 09's prose."""
    record, cfg, summary = result.record, result.config, result.record.summary
    stats = summary["stats"]
    stages = {report_var_key(key): {
        "reward": report_share(s["reward"][0]), "reward_std": report_share(s["reward"][1]),
        "speaker": report_share(s["speaker"][0]), "verse": report_share(s["verse"][0]),
        "kl": report_nats(s["kl"][0]), "repetition": report_share(s["repetition"][0]),
        "val_loss": loss(s["val_loss"][0])} for key, s in stats.items()}
    dpo_runs = [r for r in record.runs if r["stage"] == "dpo" and r["beta"] == cfg["betas"][0]]
    return {
        "seeds": str(len(cfg["seeds"])), "speaker": cfg["speaker"], "verse_min": str(cfg["verse"][0]),
        "verse_max": str(cfg["verse"][1]), "prompt_len": str(cfg["prompt_len"]),
        "completion_len": str(cfg["completion_len"]), "demonstrations": str(record.demonstrations),
        "sft_steps": str(cfg["sft_steps"]), "dpo_steps": str(cfg["dpo_steps"]), "batch_size": str(cfg["batch_size"]),
        "pair_prompts": str(cfg["pair_prompts"]), "per_prompt": str(cfg["per_prompt"]),
        "pairs": str(round(sum(r["pairs"] for r in dpo_runs) / len(dpo_runs))),
        "eval_prompts": str(cfg["eval_prompts"]), "betas": ", ".join(f"{b:g}" for b in cfg["betas"]),
        "best_beta": f"{summary['best_beta']:g}", "smallest_beta": f"{summary['smallest_beta']:g}",
        "sft_cost": signed(summary["sft_cost"]), "sft_gain": f"{summary['sft_gain']:+.3f}",
        "dpo_gain": f"{summary['dpo_gain']:+.3f}", "smallest_change": f"{summary['smallest_change']:+.3f}",
        "sft_mib": f"{record.weights['sft']['bytes'] / 2**20:.1f}", "dpo_mib": f"{record.weights['dpo']['bytes'] / 2**20:.1f}",
        "minutes": f"{result.provenance['wall_time_s'] / 60:.1f}",
        **stages,
        "best": stages[report_var_key(f"beta={summary['best_beta']:g}")],
        "smallest": stages[report_var_key(f"beta={summary['smallest_beta']:g}")],
    }


def report_var_key(key: str) -> str:
    """A stage key as a _variables.yml key: beta=0.1 -> beta_0_1."""
    return key.replace("beta=", "beta_").replace(".", "_")


EXPERIMENT = Alignment()
