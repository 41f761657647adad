"""The ablation: the baseline, each of LLaMA's parts alone, MQA, and all four, over several seeds.

Every variant trains on nanoGPT's CPU shakespeare_char recipe and is scored on the same fixed validation
batches. run() decides, once, what each part buys: a lower loss beyond the seeds' noise is *accuracy*; a
cheaper model (KV cache, parameters, normalization statistics) whose loss is not worse beyond the noise is
*economy*. It also checks whether the single parts' gains add up to the all-on run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import recipes
from ..model import kv_cache_bytes_per_token
from ..strings import STRINGS
from ..tables import count, loss, pipe_table, signed
from ..train import VAL_SEED, train
from .base import (TRAINING, Context, Experiment, Report, Result, Task, dataset, mean_std, numeric_train_settings,
                   train_config)

NOISE_FACTOR = 2  # a delta is beyond the noise when |delta| > NOISE_FACTOR x pooled seed std
PARAM_SAVING = 0.005  # fewer parameters count as a saving from 0.5% on (SwiGLU's rounding saves 0.02%)


@dataclass
class AblationRun:
    config: str  # the variant's name in recipes.ABLATION
    seed: int
    val_loss: float
    params: int
    kv_bytes_per_token: int
    norm_stats: int  # statistics per normalization: 1 for RMSNorm (rms), 2 for LayerNorm (mean and variance)
    tokens_per_sec: float
    mfu: float
    wall_time_s: float


@dataclass
class TrainedVariant:
    """What a worker sends back: the run's numbers and the trained weights (the browser's model is one of them)."""
    run: AblationRun
    state_dict: dict


@dataclass
class VariantSummary:
    mean: float
    std: float
    seeds: int
    params: int
    kv_bytes: int
    norm_stats: int
    tokens_per_sec: float
    delta: float  # mean - the baseline's mean
    beyond_noise: bool
    cheaper: bool
    verdict: str  # reference, accuracy, economy, cheaper_but_worse, worse or noise


@dataclass
class Additivity:
    predicted: float  # the baseline's mean + the four single-part deltas
    actual: float     # the llama variant's mean
    gap: float
    sum_of_deltas: float


@dataclass
class AblationSummary:
    configs: dict[str, VariantSummary]
    noise: float      # pooled seed std: root of the mean per-variant variance
    threshold: float  # NOISE_FACTOR x noise
    additivity: Additivity
    drop_pct: float   # how much lower the llama variant's loss is than the baseline's, in percent


@dataclass
class AblationRecord:
    runs: list[AblationRun]
    summary: AblationSummary


def train_variant(name: str, seed: int, scale: str, threads: int) -> TrainedVariant:
    model_config = recipes.ablation_variant(name)
    result = train(model_config, train_config(scale, seed, threads), dataset())
    run = AblationRun(config=name, seed=seed, val_loss=result.final_val_loss, params=result.num_params,
                      kv_bytes_per_token=kv_cache_bytes_per_token(model_config),
                      norm_stats=1 if model_config.use_rmsnorm else 2, tokens_per_sec=result.tokens_per_sec,
                      mfu=result.mfu, wall_time_s=result.wall_time_s)
    return TrainedVariant(run, {k: v.detach().cpu() for k, v in result.model.state_dict().items()})


def variant_task(name: str, seed: int, scale: str) -> Task:
    """Training one variant with one seed; the weights experiment asks for the llama variant's seed-0 run."""
    return Task(f"ablation {name} seed {seed}", train_variant, dict(name=name, seed=seed, scale=scale),
                cost=TRAINING[scale]["iters"])


def is_cheaper(variant: dict, base: dict) -> bool:
    """Cheaper than the baseline on some axis: KV bytes per token, parameters (by PARAM_SAVING or
    more), or statistics per normalization (RMSNorm: 1, LayerNorm: 2)."""
    return (variant["kv_bytes"] < base["kv_bytes"] or variant["params"] <= (1 - PARAM_SAVING) * base["params"]
            or variant["norm_stats"] < base["norm_stats"])


def verdict(delta: float, threshold: float, cheaper: bool) -> str:
    """The verdict on one part, from its loss change against the baseline and whether it saves anything.

    A part is
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


def summarize(runs: list[AblationRun]) -> AblationSummary:
    """Per variant: mean and std over seeds, delta against the baseline, and the verdict; then additivity."""
    by_variant: dict[str, list[AblationRun]] = {}
    for run in runs:
        by_variant.setdefault(run.config, []).append(run)
    missing = [name for name in recipes.ABLATION if name not in by_variant]
    if missing:
        raise ValueError(f"ablation results lack configs {missing}; expected all of {list(recipes.ABLATION)}")
    stats = {}
    for name in recipes.ABLATION:
        same = by_variant[name]
        m, s = mean_std([r.val_loss for r in same])
        stats[name] = dict(mean=m, std=s, seeds=len(same), params=same[0].params, kv_bytes=same[0].kv_bytes_per_token,
                           norm_stats=same[0].norm_stats,
                           tokens_per_sec=sum(r.tokens_per_sec for r in same) / len(same))
    noise = math.sqrt(sum(s["std"] ** 2 for s in stats.values()) / len(stats))
    threshold = NOISE_FACTOR * noise
    base = stats["baseline"]
    configs = {}
    for name, s in stats.items():
        delta = s["mean"] - base["mean"]
        cheaper = name != "baseline" and is_cheaper(s, base)
        configs[name] = VariantSummary(**s, delta=delta, beyond_noise=abs(delta) > threshold, cheaper=cheaper,
                                       verdict="reference" if name == "baseline" else verdict(delta, threshold, cheaper))
    predicted = base["mean"] + sum(configs[p].delta for p in recipes.SINGLE_PARTS)
    actual = configs["llama"].mean
    return AblationSummary(configs=configs, noise=noise, threshold=threshold,
                           additivity=Additivity(predicted=predicted, actual=actual, gap=abs(actual - predicted),
                                                 sum_of_deltas=predicted - base["mean"]),
                           drop_pct=100 * (base["mean"] - actual) / base["mean"])


class Ablation(Experiment):
    name = "ablation"
    record_type = AblationRecord

    def config(self, scale):
        t = TRAINING[scale]
        return {"iters": t["iters"], "seeds": t["seeds"], "batch_size": t["batch_size"],
                "block_size": recipes.BASELINE.block_size, "eval_batches": t["eval_batches"], "val_seed": VAL_SEED,
                "model": recipes.BASELINE_SETTINGS, "configs": recipes.ABLATION, "train": numeric_train_settings(scale)}

    def tasks(self, config, scale):
        return [variant_task(name, seed, scale) for seed in config["seeds"] for name in config["configs"]]

    def run(self, config, outputs, context: Context) -> AblationRecord:
        runs = [out.run for out in outputs.values()]
        return AblationRecord(runs=runs, summary=summarize(runs))

    def describe(self, task, output):
        return f"val {output.run.val_loss:.4f}, {output.run.tokens_per_sec:,.0f} tok/s"

    def report(self, result: Result) -> Report:
        summary, cfg = result.record.summary, result.config
        stats = summary.configs
        variables = {"ablation": {
            "iters": str(cfg["iters"]), "seeds": str(len(cfg["seeds"])),
            "batch_size": str(cfg["batch_size"]), "block_size": str(cfg["block_size"]),
            "noise": loss(summary.noise), "threshold": loss(summary.threshold), "noise_factor": str(NOISE_FACTOR),
        }}
        for name, s in stats.items():
            variables["ablation"][name] = {
                "val_loss": loss(s.mean), "val_loss_std": loss(s.std), "delta": signed(s.delta),
                "params": count(s.params), "kv_bytes": count(s.kv_bytes),
                **{f"verdict_{lang}": STRINGS[lang]["verdict"][s.verdict] for lang in ("en", "zh")},
            }
        variables["ablation"]["llama"]["drop_pct"] = f"{summary.drop_pct:.1f}%"
        add = summary.additivity
        variables["additivity"] = {"predicted": loss(add.predicted), "actual": loss(add.actual), "gap": loss(add.gap)}
        variables["train"] = {"tokens_per_sec": count(stats["baseline"].tokens_per_sec),
                              "threads": str(result.provenance["threads"])}
        return Report(variables=variables,
                      tables={"ablation": {lang: report_table(result, lang) for lang in STRINGS},
                              "additivity": {lang: report_additivity(result, lang) for lang in STRINGS}},
                      figures={"ablation": lambda lang: report_figure(result, lang)})


def report_table(result: Result, lang: str) -> str:
    s, summary, cfg = STRINGS[lang], result.record.summary, result.config
    rows = []
    for name, v in summary.configs.items():
        is_base = name == "baseline"
        rows.append([s["variant"][name], f"{loss(v.mean)} ± {loss(v.std)}", "—" if is_base else signed(v.delta),
                     "—" if is_base else s["yes" if v.beyond_noise else "no"], s["verdict"][v.verdict],
                     count(v.params), count(v.kv_bytes), count(v.tokens_per_sec)])
    caption = s["ablation"]["caption"].format(iters=cfg["iters"], n=len(cfg["seeds"]), factor=NOISE_FACTOR,
                                              noise=loss(summary.noise), threshold=loss(summary.threshold),
                                              saving=f"{PARAM_SAVING:.1%}")
    return pipe_table(s["ablation"]["header"], rows, caption, "ablation")


def report_additivity(result: Result, lang: str) -> str:
    s, summary = STRINGS[lang], result.record.summary
    t, add = s["additivity"], summary.additivity
    rows = [[t["single"].format(part=s["variant"][p]), signed(summary.configs[p].delta)] for p in recipes.SINGLE_PARTS]
    rows += [[t["sum"], signed(add.sum_of_deltas)], [t["predicted"], loss(add.predicted)],
             [t["actual"], loss(add.actual)], [t["gap"], loss(add.gap)]]
    return pipe_table(t["header"], rows, t["caption"], "additivity")


def report_figure(result: Result, lang: str):
    """A dot plot: each variant's mean over seeds with a ± std bar, against the baseline's noise band.

    Dots, not bars: a bar's length would start from an arbitrary axis floor and exaggerate the gaps."""
    from ..figures import VERDICT_COLORS, pyplot
    s, summary = STRINGS[lang], result.record.summary
    stats, names = summary.configs, list(summary.configs)
    plt = pyplot(lang)
    fig, ax = plt.subplots(figsize=(7.2, 4.2))
    base = stats["baseline"].mean
    ax.axvspan(base - summary.threshold, base + summary.threshold, color="#bbbbbb", alpha=0.35, linewidth=0)
    ax.axvline(base, color="black", linestyle="--", linewidth=1)
    ys = list(range(len(names)))[::-1]  # baseline on top
    for y, name in zip(ys, names):
        ax.errorbar(stats[name].mean, y, xerr=stats[name].std, fmt="o", markersize=7, capsize=4,
                    color=VERDICT_COLORS[stats[name].verdict])
    ax.set_yticks(ys, [s["variant_short"][name] for name in names])
    ax.set_xlabel(s["ablation"]["axis"].format(n=len(result.config["seeds"])))
    ax.grid(axis="x", alpha=0.3)
    seen = list(dict.fromkeys(stats[name].verdict for name in names))
    handles = [plt.Line2D([], [], marker="o", linestyle="", color=VERDICT_COLORS[v]) for v in seen]
    handles.append(plt.Rectangle((0, 0), 1, 1, color="#bbbbbb", alpha=0.35))
    labels = [s["verdict"][v] for v in seen] + [s["ablation"]["noise_band"].format(k=NOISE_FACTOR)]
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0, fontsize="small")
    return fig


EXPERIMENT = Ablation()
