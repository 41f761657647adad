"""Extrapolation: learned positions against RoPE, trained at 64 characters, evaluated on longer text.

Both models are the baseline with room for 256 positions; only the position scheme differs. Training at
64 sends no gradient to the learned table's rows beyond 64, so run() also measures how far training moved
the rows it saw and the rows it never saw.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .. import recipes
from ..data import fixed_batches
from ..model import GPT
from ..strings import STRINGS
from ..tables import loss, pipe_table
from ..train import VAL_SEED, evaluate, train
from .base import (TRAINING, Context, Experiment, Report, Result, Task, dataset, mean_std, numeric_train_settings,
                   train_config)

POSITIONS = {"learned": "baseline", "rope": "rope"}  # position scheme -> its ablation variant
SETTINGS = {
    "full": dict(block_size=256, eval_lengths=[32, 64, 96, 128, 192, 256], eval_batches=50),
    "smoke": dict(block_size=256, eval_lengths=[32, 64, 96, 128, 192, 256], eval_batches=2),
}


@dataclass
class PositionRows:
    """How far training moved the learned position table: per row, the cosine between its initial and
    trained vector and its trained/initial norm ratio, averaged over the rows training saw and those it did not."""
    rows: int
    train_len: int
    seen_cosine: float
    unseen_cosine: float
    unseen_min_cosine: float
    seen_norm_ratio: float
    unseen_norm_ratio: float


@dataclass
class Curve:
    mean: list[float]  # per evaluation length, over seeds
    std: list[float]


@dataclass
class ExtrapolationRecord:
    lengths: list[int]
    seeds: list[int]
    losses: dict[str, list[list[float]]]  # scheme -> per seed -> per evaluation length
    params: dict[str, int]
    position_rows: list[PositionRows]     # the learned scheme's table, per seed
    summary: dict[str, Curve]


def position_rows(initial: torch.Tensor, trained: torch.Tensor, train_len: int) -> PositionRows:
    """A row that got no gradient keeps its direction (cosine 1) and only shrinks by weight decay."""
    cos = torch.nn.functional.cosine_similarity(initial, trained, dim=-1)
    ratio = trained.norm(dim=-1) / initial.norm(dim=-1)
    seen, unseen = slice(0, train_len), slice(train_len, None)
    return PositionRows(rows=initial.shape[0], train_len=train_len, seen_cosine=cos[seen].mean().item(),
                        unseen_cosine=cos[unseen].mean().item(), unseen_min_cosine=cos[unseen].min().item(),
                        seen_norm_ratio=ratio[seen].mean().item(), unseen_norm_ratio=ratio[unseen].mean().item())


def train_scheme(kind: str, seed: int, scale: str, threads: int) -> dict:
    settings = SETTINGS[scale]
    # block_size is the longest eval length; training at train_len sends no gradient to the learned rows beyond it.
    model_config = recipes.ablation_variant(POSITIONS[kind], block_size=settings["block_size"])
    result = train(model_config, train_config(scale, seed, threads), dataset())
    losses = [evaluate(result.model, fixed_batches(dataset().val, settings["eval_batches"],
                                                   TRAINING[scale]["batch_size"], length, seed=VAL_SEED))
              for length in settings["eval_lengths"]]
    out = {"losses": losses, "params": result.num_params}
    if result.model.pos_emb is not None:
        torch.manual_seed(seed)  # train() builds its model right after this call: the same initial table
        initial = GPT(model_config).pos_emb.weight.detach()
        out["position_rows"] = position_rows(initial, result.model.pos_emb.weight.detach().cpu(),
                                             TRAINING[scale]["train_len"])
    return out


class Extrapolation(Experiment):
    name = "extrapolation"
    record_type = ExtrapolationRecord

    def config(self, scale):
        settings, t = SETTINGS[scale], TRAINING[scale]
        return {"train_len": t["train_len"], "block_size": settings["block_size"],
                "eval_lengths": settings["eval_lengths"], "eval_batches": settings["eval_batches"],
                "seeds": t["seeds"], "model": recipes.BASELINE_SETTINGS,
                "configs": {kind: recipes.ABLATION[variant] for kind, variant in POSITIONS.items()},
                "train": numeric_train_settings(scale)}

    def tasks(self, config, scale):
        return [Task(f"extrapolation {kind} seed {seed}", train_scheme, dict(kind=kind, seed=seed, scale=scale),
                     cost=TRAINING[scale]["iters"]) for seed in config["seeds"] for kind in POSITIONS]

    def run(self, config, outputs, context: Context) -> ExtrapolationRecord:
        seeds = config["seeds"]
        out = {(kind, seed): outputs[f"extrapolation {kind} seed {seed}"] for kind in POSITIONS for seed in seeds}
        losses = {kind: [out[kind, seed]["losses"] for seed in seeds] for kind in POSITIONS}
        summary = {}
        for kind, per_seed in losses.items():
            pairs = [mean_std(list(column)) for column in zip(*per_seed)]  # one column of seed losses per length
            summary[kind] = Curve(mean=[m for m, _ in pairs], std=[s for _, s in pairs])
        return ExtrapolationRecord(lengths=config["eval_lengths"], seeds=seeds, losses=losses,
                                   params={kind: out[kind, seeds[0]]["params"] for kind in POSITIONS},
                                   position_rows=[out["learned", seed]["position_rows"] for seed in seeds],
                                   summary=summary)

    def describe(self, task, output):
        return ", ".join(f"{v:.3f}" for v in output["losses"])

    def report(self, result: Result) -> Report:
        record, cfg = result.record, result.config
        train_len, block, lengths = cfg["train_len"], cfg["block_size"], record.lengths
        at = {length: i for i, length in enumerate(lengths)}
        variables = {"train_len": str(train_len), "max_len": str(max(lengths)), "seeds": str(len(record.seeds)),
                     "block_size": str(block), "last_trained_row": str(train_len - 1), "last_row": str(block - 1)}
        for kind in POSITIONS:
            curve = record.summary[kind]
            variables[kind] = {"at_train": loss(curve.mean[at[train_len]]), "at_max": loss(curve.mean[at[max(lengths)]]),
                               "at_max_std": loss(curve.std[at[max(lengths)]])}
        rows = record.position_rows
        variables["rows"] = {"unseen_cosine": f"{min(r.unseen_min_cosine for r in rows):.4f}",
                             "seen_cosine": f"{sum(r.seen_cosine for r in rows) / len(rows):.2f}",
                             "unseen_norm_ratio": f"{sum(r.unseen_norm_ratio for r in rows) / len(rows):.2f}"}
        return Report(variables={"extrapolation": variables},
                      tables={"extrapolation": {lang: report_table(result, lang) for lang in STRINGS}},
                      figures={"rope_extrapolation": lambda lang: report_figure(result, lang)})


def report_table(result: Result, lang: str) -> str:
    t, record, cfg = STRINGS[lang]["extrapolation"], result.record, result.config
    train_len, block = cfg["train_len"], cfg["block_size"]
    rows = []
    for i, length in enumerate(record.lengths):
        label = t["training_length"].format(length=length) if length == train_len else str(length)
        rows.append([label] + [f"{loss(record.summary[k].mean[i])} ± {loss(record.summary[k].std[i])}"
                               for k in POSITIONS])
    caption = t["caption"].format(train_len=train_len, n=len(record.seeds), block=block, last=block - 1)
    return pipe_table(t["header"], rows, caption, "extrapolation")


def report_figure(result: Result, lang: str):
    from ..figures import pyplot
    t, record, cfg = STRINGS[lang]["extrapolation"], result.record, result.config
    lengths, train_len, block = record.lengths, cfg["train_len"], cfg["block_size"]
    plt = pyplot(lang)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.axvspan(train_len, max(lengths), color="#d62728", alpha=0.06, linewidth=0,
               label=t["untrained"].format(first=train_len, last=block - 1))
    for kind, marker, color in (("learned", "o-", "#d62728"), ("rope", "s-", "#1f77b4")):
        mean, std = record.summary[kind].mean, record.summary[kind].std
        ax.fill_between(lengths, [m - s for m, s in zip(mean, std)], [m + s for m, s in zip(mean, std)],
                        color=color, alpha=0.25, linewidth=0)
        ax.plot(lengths, mean, marker, color=color, label=t[kind])
    ax.axvline(train_len, color="black", linestyle="--", linewidth=1, label=t["train_len"].format(n=train_len))
    ax.set_xlabel(t["eval_len"])
    ax.set_ylabel(t["val_loss"])
    ax.set_xticks(lengths)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0, title=t["band"].format(n=len(record.seeds)),
              title_fontsize="small", fontsize="small")
    return fig


EXPERIMENT = Extrapolation()
