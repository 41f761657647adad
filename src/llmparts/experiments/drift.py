"""Chapter 08, drift: the book's trained LLaMA char model meets text it was not trained on.

Three measurements on the ablation's LLaMA seed-0 run (the model the browser runs, trained once for both):
- the domains: what the char vocabulary and a byte-level BPE (chapter 04's, learned on the training split)
  make of held-out Shakespeare, modern English and Chinese, and the model's loss on the first two;
- detection: streams whose batches drift gradually from Shakespeare to modern English, watched by CUSUM
  on the per-batch loss; over thresholds and many streams, the detection delay against the false alarms
  on streams that never drift. The threshold for the stated false-alarm rate is chosen on one set of
  no-drift streams and checked on another;
- adaptation: the model fine-tuned on a little modern English, both domains' losses over the steps, with
  seeds: the gain on the new domain against the forgetting of Shakespeare.

The per-window losses (the pools the streams draw from) are saved in the record, rounded, so the page's
cells rebuild any stream in the reader's browser from results/drift.json.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .. import drift, driftlab, recipes
from ..bpe import BPETokenizer
from ..data import fixed_batches
from ..strings import STRINGS
from ..tables import count, loss, pipe_table
from .ablation import variant_task
from .base import TRAINING, Context, Experiment, Report, Result, dataset, mean_std, numeric_train_settings

DECIMALS = 4  # the pools are rounded before anything is measured on them: the page sees the same numbers

SCALES = {
    "full": dict(window=64, calibration=400, pool=600, batch_size=8, n_batches=300, start=100, ramp=100,
                 streams=300, thresholds=[1, 2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 20], rate=0.05, bpe_vocab=512,
                 finetune=dict(chars=20000, steps=200, eval_every=20, lr=3e-4, batch_size=12, eval_batches=20,
                               seeds=[0, 1, 2], replay_rows=[0, 6])),
    "smoke": dict(window=64, calibration=40, pool=60, batch_size=4, n_batches=60, start=20, ramp=20,
                  streams=20, thresholds=[2, 4, 8], rate=0.2, bpe_vocab=300,
                  finetune=dict(chars=5000, steps=4, eval_every=2, lr=3e-4, batch_size=4, eval_batches=2,
                                seeds=[0, 1], replay_rows=[0, 2])),
}
SELECT_SEED, HOLDOUT_SEED, DRIFT_SEED = 1, 2, 3  # three independent families of streams


@dataclass
class DriftRecord:
    domains: dict          # shakespeare, en, zh -> driftlab.tokenizer_stats (+ dropped share, mean loss)
    pools: dict            # calibration, shakespeare, modern -> per-window losses (nats per character)
    reference: dict        # the in-domain mean and std of one batch's loss, from the calibration windows
    detector: list[dict]   # one per threshold: delay_and_false_alarms, and the false alarms on the held-out streams
    operating: dict        # the smallest threshold whose false alarms stay within the stated rate
    adaptation: list[dict] # per replay setting and seed: {"seed", "replay_rows", "curve": [{"step", "shakespeare", "modern"}]}
    summary: dict          # per replay setting: means and stds per step, gain and forgetting (summarize_adaptation)


def settings(scale: str) -> dict:
    return SCALES[scale]


class Drift(Experiment):
    name = "drift"  # results/drift.json
    sources = ("src/llmparts/drift.py", "src/llmparts/driftlab.py", "src/llmparts/bpe.py",
               "src/llmparts/experiments/ablation.py")
    record_type = DriftRecord

    def config(self, scale):
        snap = driftlab.manifest()
        return {**settings(scale), "from": "ablation", "config": "llama", "seed": 0,
                "iters": TRAINING[scale]["iters"], "model": recipes.llama().to_dict(),
                "train": numeric_train_settings(scale), "k": drift.K,
                "snapshot": {"commit": snap["commit"], **{lang: f["sha256"] for lang, f in snap["files"].items()}}}

    def seeds(self, config):
        return config["finetune"]["seeds"]

    def tasks(self, config, scale):
        return [variant_task(config["config"], config["seed"], scale)]

    def run(self, config, outputs, context: Context) -> DriftRecord:
        (trained,) = outputs.values()
        torch.set_num_threads(context.threads)
        return DriftRecord(**measure(config, trained.state_dict))

    def describe(self, task, output):
        return f"val {output.run.val_loss:.4f}"

    def report(self, result: Result) -> Report:
        return Report(variables={"drift": report_variables(result)},
                      tables={name: {lang: make(result, lang) for lang in STRINGS} for name, make in REPORT_TABLES.items()},
                      figures={"drift_tradeoff": lambda lang: report_tradeoff_figure(result, lang),
                               "drift_adapt": lambda lang: report_adapt_figure(result, lang)})


def measure(cfg: dict, state_dict: dict) -> dict:
    data = dataset()
    chars = data.tokenizer.chars
    model = driftlab.load_model(recipes.llama(), state_dict)
    texts = {"shakespeare": data.tokenizer.decode(data.val.tolist()), "en": driftlab.load_snapshot("en"),
             "zh": driftlab.load_snapshot("zh")}
    bpe = BPETokenizer.train(data.tokenizer.decode(data.train.tolist()), cfg["bpe_vocab"])
    domains = {name: driftlab.tokenizer_stats(text, chars, bpe) for name, text in texts.items()}

    # Modern English in the char vocabulary: unknown characters dropped. Its first half is the pool of text
    # a team could fine-tune on; its second half is the held-out text the stream and the scores use.
    modern, dropped = driftlab.in_vocab(texts["en"], chars)
    domains["en"]["dropped_share"] = dropped / len(texts["en"])
    modern_ids = torch.tensor(data.tokenizer.encode(modern), dtype=torch.long)
    adapt_ids, held_ids = modern_ids[: len(modern_ids) // 2], modern_ids[len(modern_ids) // 2:]

    w = cfg["window"]
    shakespeare = driftlab.windows(data.val, cfg["calibration"] + cfg["pool"], w, seed=0)
    pools = {"calibration": driftlab.window_losses(model, shakespeare[: cfg["calibration"]]),
             "shakespeare": driftlab.window_losses(model, shakespeare[cfg["calibration"]:]),
             "modern": driftlab.window_losses(model, driftlab.windows(held_ids, cfg["pool"], w, seed=0))}
    pools = {name: np.round(p, DECIMALS) for name, p in pools.items()}
    domains["shakespeare"]["window_loss"] = float(pools["shakespeare"].mean())
    domains["en"]["window_loss"] = float(pools["modern"].mean())

    detector, operating = detect(cfg, pools)
    adaptation = [{"seed": seed, "replay_rows": rows,
                   "curve": adapt(cfg, state_dict, data, adapt_ids, held_ids, seed, rows)}
                  for rows in cfg["finetune"]["replay_rows"] for seed in cfg["finetune"]["seeds"]]
    mean, std = drift.reference(pools["calibration"], cfg["batch_size"])
    return {"domains": domains, "pools": {name: p.tolist() for name, p in pools.items()},
            "reference": {"mean": mean, "std": std}, "detector": detector, "operating": operating,
            "adaptation": adaptation, "summary": summarize_adaptation(adaptation)}


def detect(cfg: dict, pools: dict) -> tuple[list[dict], dict]:
    """Every threshold on the same streams: no-drift streams to choose it, others to check it, drifting ones."""
    common = dict(calibration=pools["calibration"], thresholds=cfg["thresholds"], n_streams=cfg["streams"],
                  n_batches=cfg["n_batches"], batch_size=cfg["batch_size"], k=drift.K)
    never = dict(old=pools["shakespeare"], new=pools["shakespeare"], start=cfg["n_batches"], ramp=0)
    select = drift.alarms(**never, **common, seed=SELECT_SEED)
    holdout = drift.alarms(**never, **common, seed=HOLDOUT_SEED)
    drifting = drift.alarms(old=pools["shakespeare"], new=pools["modern"], start=cfg["start"], ramp=cfg["ramp"],
                            **common, seed=DRIFT_SEED)
    rows = [{"h": h, **drift.delay_and_false_alarms(select[i], drifting[i], cfg["start"]),
             "holdout_false_alarm": float(np.mean(holdout[i] >= 0))} for i, h in enumerate(cfg["thresholds"])]
    within = [row for row in rows if row["false_alarm"] <= cfg["rate"]]
    operating = dict(within[0] if within else rows[-1], within_rate=bool(within))
    return rows, operating


def adapt(cfg: dict, state_dict: dict, data, adapt_ids, held_ids, seed: int, replay_rows: int) -> list[dict]:
    """One fine-tuning run; with replay_rows > 0, that many windows of each batch are Shakespeare's training text."""
    f, w = cfg["finetune"], cfg["window"]
    model = driftlab.load_model(recipes.llama(), state_dict)
    eval_sets = {"shakespeare": fixed_batches(data.val, f["eval_batches"], f["batch_size"], w, seed=0),
                 "modern": fixed_batches(held_ids, f["eval_batches"], f["batch_size"], w, seed=0)}
    return driftlab.finetune(model, adapt_ids[: f["chars"]], eval_sets, f["steps"], f["eval_every"], f["lr"],
                             f["batch_size"], w, seed, replay_ids=data.train if replay_rows else None,
                             replay_rows=replay_rows)


def summarize_adaptation(adaptation: list[dict]) -> dict:
    """Per replay setting ("0", "6", ...): both losses' mean and std at every step, and the gain on modern
    English and the forgetting of Shakespeare from the first evaluation to the last (mean, std over seeds)."""
    out = {}
    for rows in sorted({run["replay_rows"] for run in adaptation}):
        runs = [run["curve"] for run in adaptation if run["replay_rows"] == rows]
        by_step = [{"step": point["step"], **{name: mean_std([curve[i][name] for curve in runs])
                                              for name in ("shakespeare", "modern")}}
                   for i, point in enumerate(runs[0])]
        best = min(range(len(by_step)), key=lambda i: by_step[i]["modern"][0])
        out[str(rows)] = {"by_step": by_step,
                          "gain": mean_std([c[0]["modern"] - c[-1]["modern"] for c in runs]),
                          "forgetting": mean_std([c[-1]["shakespeare"] - c[0]["shakespeare"] for c in runs]),
                          "best_step": by_step[best]["step"],
                          "best_gain": mean_std([c[0]["modern"] - c[best]["modern"] for c in runs]),
                          "best_forgetting": mean_std([c[best]["shakespeare"] - c[0]["shakespeare"] for c in runs])}
    return out


# ---------------------------------------------------------------- the report: formats only

def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def delay(row: dict) -> str:
    return "—" if row["delay_mean"] is None else f"{row['delay_mean']:.1f} ± {row['delay_std']:.1f}"


def pm(pair) -> str:
    return f"{loss(pair[0])} ± {loss(pair[1])}"


def report_domains(result: Result, lang: str) -> str:
    t, d = STRINGS[lang]["drift"], result.record.domains
    rows = [[t[name], count(row["chars"]), count(row["distinct"]), pct(row["unknown_share"]),
             f"{row['bytes_per_char']:.2f}", f"{row['bpe_tokens_per_char']:.2f}",
             loss(row["window_loss"]) if "window_loss" in row else t["cannot"]] for name, row in d.items()]
    return pipe_table(t["domains_header"], rows, t["domains_caption"].format(
        vocab=result.config["bpe_vocab"], window=result.config["window"]), "drift_domains")


def report_detector(result: Result, lang: str) -> str:
    t, cfg = STRINGS[lang]["drift"], result.config
    rows = [[f"{row['h']:g}", pct(row["false_alarm"]), pct(row["holdout_false_alarm"]), pct(row["early"]),
             pct(row["missed"]), delay(row)] for row in result.record.detector]
    return pipe_table(t["detector_header"], rows, t["detector_caption"].format(
        streams=cfg["streams"], n=cfg["n_batches"], start=cfg["start"], ramp=cfg["ramp"], b=cfg["batch_size"]),
        "drift_detector")


def report_adapt(result: Result, lang: str) -> str:
    t, s, f = STRINGS[lang]["drift"], result.record.summary, result.config["finetune"]
    plain, replay = (s[str(rows)]["by_step"] for rows in f["replay_rows"])
    rows = [[str(a["step"]), pm(a["modern"]), pm(a["shakespeare"]), pm(b["modern"]), pm(b["shakespeare"])]
            for a, b in zip(plain, replay)]
    return pipe_table(t["adapt_header"], rows, t["adapt_caption"].format(
        chars=count(f["chars"]), lr=f"{f['lr']:g}", seeds=len(f["seeds"]), replay=f["replay_rows"][1],
        batch=f["batch_size"]), "drift_adapt")


REPORT_TABLES = {"drift_domains": report_domains, "drift_detector": report_detector, "drift_adapt": report_adapt}


def report_tradeoff_figure(result: Result, lang: str):
    from ..figures import pyplot
    t, rows, op = STRINGS[lang]["drift"], result.record.detector, result.record.operating
    plt = pyplot(lang)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    xs = [100 * r["false_alarm"] for r in rows]
    ys = [np.nan if r["delay_mean"] is None else r["delay_mean"] for r in rows]
    ax.plot(xs, ys, "o-", color="#1f77b4")
    for r, x, y in zip(rows, xs, ys):
        ax.annotate(f"h={r['h']:g}", (x, y), textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.axvline(100 * result.config["rate"], color="#d62728", linestyle="--", label=t["fig_rate"])
    ax.plot([100 * op["false_alarm"]], [np.nan if op["delay_mean"] is None else op["delay_mean"]], "o", color="#d62728", markersize=10, fillstyle="none")
    ax.set_xlabel(t["fig_tradeoff_x"])
    ax.set_ylabel(t["fig_tradeoff_y"])
    ax.grid(alpha=0.3)
    ax.legend()
    return fig


def report_adapt_figure(result: Result, lang: str):
    from ..figures import pyplot
    t, f = STRINGS[lang]["drift"], result.config["finetune"]
    plt = pyplot(lang)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for rows, style in zip(f["replay_rows"], ("-", "--")):
        s = result.record.summary[str(rows)]["by_step"]
        steps = [row["step"] for row in s]
        for key, color in (("modern", "#d62728"), ("shakespeare", "#1f77b4")):
            means, stds = np.array([row[key][0] for row in s]), np.array([row[key][1] for row in s])
            ax.fill_between(steps, means - stds, means + stds, color=color, alpha=0.2, linewidth=0)
            label = t["fig_" + key] + ("" if rows == 0 else t["fig_replay"].format(n=rows, b=f["batch_size"]))
            ax.plot(steps, means, style, marker="o", color=color, markersize=3, label=label)
    ax.set_xlabel(t["fig_adapt_x"])
    ax.set_ylabel(t["fig_adapt_y"])
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def report_variables(result: Result) -> dict:
    """The `drift.*` keys of _variables.yml: chapter 08's prose."""
    r, cfg = result.record, result.config
    d, op, s, f = r.domains, r.operating, r.summary, cfg["finetune"]
    return {
        "minutes": f"{result.provenance['wall_time_s'] / 60:.1f}", "vocab": str(cfg["model"]["vocab_size"]),
        "bpe_vocab": str(cfg["bpe_vocab"]), "window": str(cfg["window"]),
        "domains": {name: {"chars": count(row["chars"]), "distinct": count(row["distinct"]),
                           "unknown_distinct": count(row["unknown_distinct"]), "unknown": pct(row["unknown_share"]),
                           "bytes_per_char": f"{row['bytes_per_char']:.2f}",
                           "bpe_tokens_per_char": f"{row['bpe_tokens_per_char']:.2f}",
                           **({"loss": loss(row["window_loss"])} if "window_loss" in row else {}),
                           **({"dropped": pct(row["dropped_share"])} if "dropped_share" in row else {})}
                    for name, row in d.items()},
        "loss_gap": loss(d["en"]["window_loss"] - d["shakespeare"]["window_loss"]),
        "reference": {"mean": loss(r.reference["mean"]), "std": loss(r.reference["std"])},
        "stream": {"batch_size": str(cfg["batch_size"]), "n_batches": str(cfg["n_batches"]),
                   "start": str(cfg["start"]), "ramp": str(cfg["ramp"]), "streams": str(cfg["streams"]),
                   "calibration": str(cfg["calibration"]), "pool": str(cfg["pool"])},
        "rate": pct(cfg["rate"]), "k": f"{cfg['k']:g}",
        "operating": {"h": f"{op['h']:g}", "false_alarm": pct(op["false_alarm"]),
                      "holdout": pct(op["holdout_false_alarm"]), "early": pct(op["early"]), "missed": pct(op["missed"]),
                      "delay": "—" if op["delay_mean"] is None else f"{op['delay_mean']:.1f}",
                      "delay_std": f"{op['delay_std']:.1f}",
                      "share_at_alarm": "—" if op["delay_mean"] is None else
                      pct(drift.mixing_share(cfg["n_batches"], cfg["start"], cfg["ramp"])[cfg["start"] + round(op["delay_mean"])])},
        "adapt": {"chars": count(f["chars"]), "steps": str(f["steps"]), "lr": f"{f['lr']:g}",
                  "seeds": str(len(f["seeds"])), "batch_size": str(f["batch_size"]),
                  "replay_rows": str(f["replay_rows"][1]),
                  **{("plain" if rows == 0 else "replay"): report_adapt_variables(s[str(rows)])
                     for rows in f["replay_rows"]}},
    }



def report_adapt_variables(s: dict) -> dict:
    first, last = s["by_step"][0], s["by_step"][-1]
    return {"modern_before": loss(first["modern"][0]), "modern_after": loss(last["modern"][0]),
            "shakespeare_before": loss(first["shakespeare"][0]), "shakespeare_after": loss(last["shakespeare"][0]),
            "gain": loss(s["gain"][0]), "gain_std": loss(s["gain"][1]),
            "forgetting": loss(s["forgetting"][0]), "forgetting_std": loss(s["forgetting"][1])}


EXPERIMENT = Drift()
