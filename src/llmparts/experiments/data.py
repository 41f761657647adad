"""Chapter 04, data: characters against byte-level BPE at equal compute, the same training on less text,
and hygiene — duplicates found by hashing, and a leak of validation text into training, measured.

The science lives in llmparts.datalab (the training runs, bits per character, the comparison with Hugging
Face `tokenizers`), llmparts.bpe and llmparts.hygiene; this module schedules it and formats it. One run
serves three parts of the chapter: the LLaMA recipe on all of the text, with characters, is the character
row of the tokenizer table, the last point of the data-scale curve and the leak's clean model.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import datalab
from ..strings import STRINGS
from ..tables import count, loss, pipe_table
from .base import Context, Experiment, Report, Result, Task

@dataclass
class DataRecord:
    speed: dict             # our BPE against tokenizers: seconds, ratios, same ids, same merges, the first tie
    tokenizer_leak: dict    # BPE merges learned with the validation text: how much shorter it gets
    hygiene: dict           # llmparts.hygiene.report on the training and validation splits
    tokenizers: list[dict]  # one per tokenizer and seed
    scale: list[dict]       # one per share of the training split and seed
    leak: list[dict]        # copies 0 (the clean model) and copies > 0, one per seed
    summary: dict           # means and standard deviations over seeds, and the noise (datalab.summarize)


def label(kwargs: dict) -> str:
    return str(kwargs.get("vocab_size", kwargs.get("fraction", kwargs.get("copies"))))


class Data(Experiment):
    name = "data"  # results/data.json
    sources = ("src/llmparts/datalab.py", "src/llmparts/bpe.py", "src/llmparts/hygiene.py")
    record_type = DataRecord

    def config(self, scale):
        return datalab.config_record(datalab.SCALES[scale])

    def tasks(self, config, scale):
        return [Task(f"data {fn.__name__.removeprefix('train_')} {label(kwargs)} seed {kwargs['seed']}", fn, kwargs,
                     cost=config["steps"]) for fn, kwargs in datalab.tasks(datalab.SCALES[scale])]

    def run(self, config, outputs, context: Context) -> DataRecord:
        record = {**datalab.measure(datalab.shakespeare(), datalab.SCALES[context.scale]), **datalab.collect(outputs.values())}
        return DataRecord(**record, summary=datalab.summarize(record))

    def describe(self, task, output):
        return ", ".join(f"{kind} {r[key]:.4f}" for kind, r in output.items()
                         for key in ("val_loss", "leaked_half_loss") if key in r)

    def report(self, result: Result) -> Report:
        return Report(variables={"data": report_variables(result)},
                      tables={name: {lang: make(result, lang) for lang in STRINGS} for name, make in REPORT_TABLES.items()},
                      figures={"data_scale": lambda lang: report_scale_figure(result, lang)})


# ---------------------------------------------------------------- the report: formats only

def pm(pair) -> str:
    return f"{loss(pair[0])} ± {loss(pair[1])}"


def share(fraction: float, lang: str) -> str:
    return STRINGS[lang]["data"]["all"] if fraction == 1 else f"1/{round(1 / fraction)}"


def report_tokenizers(result: Result, lang: str) -> str:
    t, s = STRINGS[lang]["data"], result.record.summary["tokenizers"]
    rows = [[t["char" if name == "char" else "bpe"].format(v=count(row["vocab_size"])), count(row["steps"]),
             f"{row['chars_per_token']:.2f}", f"{row['context_chars']:.0f}", count(row["embedding_params"]),
             pm(row["val_loss"]), f"**{pm(row['bits_per_char'])}**"] for name, row in s.items()]
    return pipe_table(t["tokenizers_header"], rows, t["tokenizers_caption"].format(seeds=len(result.config["seeds"])),
                      "data_tokenizers")


def report_scale(result: Result, lang: str) -> str:
    t, cfg = STRINGS[lang]["data"], result.config
    rows = [[share(row["fraction"], lang), count(row["train_chars"]), f"{row['epochs']:.1f}", pm(row["train_loss"]),
             pm(row["val_loss"]), pm(row["gap"])] for row in result.record.summary["scale"]]
    return pipe_table(t["scale_header"], rows, t["scale_caption"].format(steps=cfg["steps"], seeds=len(cfg["seeds"])),
                      "data_scale")


def report_hygiene(result: Result, lang: str) -> str:
    t, h = STRINGS[lang]["data"], result.record.hygiene
    rows = [[t[key], count(h[key]["items"]), count(h[key]["distinct"]), count(h[key]["repeats"]),
             f"{100 * h[key]['repeat_char_share']:.2f}%"]
            for key in ("lines", "lines_normalized", "long_lines", "long_lines_normalized", "passages")]
    near, overlap = h["near_duplicate_passages"], h["overlap"]
    rows.append([t["near"], count(near["passages"]), "—", t["pairs"].format(n=near["pairs"]), "—"])
    rows.append([t["overlap"], count(overlap["passages"]), "—",
                 t["of"].format(hits=overlap["with_overlap"], n=overlap["passages"]), "—"])
    return pipe_table(t["hygiene_header"], rows, t["hygiene_caption"], "data_hygiene")


def report_leak(result: Result, lang: str) -> str:
    t, leak = STRINGS[lang]["data"], result.record.summary["leak"]
    rows = [[t["clean"], pm(leak["clean_leaked"]), pm(leak["clean_held_out"])],
            [t["leaky"], pm(leak["leak_leaked"]), pm(leak["leak_held_out"])],
            [t["difference"], pm((-leak["drop"][0], leak["drop"][1])), pm(leak["held_out_change"])]]
    return pipe_table(t["leak_header"], rows, t["leak_caption"].format(chars=count(leak["leaked_chars"]),
                                                                       seeds=leak["seeds"]), "data_leak")


def report_speed(result: Result, lang: str) -> str:
    t, sp = STRINGS[lang]["data"], result.record.speed
    yes = STRINGS[lang]["yes"] if sp["same_ids"] else STRINGS[lang]["no"]
    same_set = STRINGS[lang]["yes"] if sp["same_merge_set"] else STRINGS[lang]["no"]
    rows = [[t["train_time"].format(m=sp["vocab_size"] - 256), f"{sp['ours_train_s']:.2f}", f"{sp['hf_train_s']:.3f}",
             f"{sp['train_speedup']:.1f}×"],
            [t["encode_time"], f"{sp['ours_encode_s']:.3f}", f"{sp['hf_encode_s']:.3f}", f"{sp['encode_speedup']:.1f}×"],
            [t["uncached_time"], f"{sp['ours_uncached_encode_s']:.2f}", f"{sp['hf_encode_s']:.3f}",
             f"{sp['uncached_speedup']:.1f}×"],
            [t["same_ids"], yes, yes, "—"],
            [t["same_merges"], same_set, same_set, "—"]]
    return pipe_table(t["speed_header"], rows, t["speed_caption"].format(repeats=sp["repeats"]), "data_speed")


REPORT_TABLES = {"data_tokenizers": report_tokenizers, "data_scale": report_scale, "data_hygiene": report_hygiene,
                 "data_leak": report_leak, "data_speed": report_speed}


def report_scale_figure(result: Result, lang: str):
    from ..figures import pyplot
    t, s = STRINGS[lang]["data"], result.record.summary["scale"]
    plt = pyplot(lang)
    fractions = [row["fraction"] for row in s]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for key, label, color in (("train_loss", t["fig_train"], "#1f77b4"), ("val_loss", t["fig_val"], "#d62728")):
        means, stds = [row[key][0] for row in s], [row[key][1] for row in s]
        ax.fill_between(fractions, [m - d for m, d in zip(means, stds)], [m + d for m, d in zip(means, stds)],
                        color=color, alpha=0.2, linewidth=0)
        ax.plot(fractions, means, "o-", color=color, label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(fractions, [share(row["fraction"], lang) + "\n" + t["fig_passes"].format(n=f"{row['epochs']:.1f}")
                              for row in s])
    ax.minorticks_off()
    ax.set_xlabel(t["fig_x"])
    ax.set_ylabel(t["fig_y"])
    ax.grid(alpha=0.3)
    ax.legend()
    return fig


def report_variables(result: Result) -> dict:
    """The `data.*` keys of _variables.yml: chapter 04's prose."""
    record, cfg = result.record, result.config
    s = record.summary
    tok = {name: {"vocab": count(row["vocab_size"]), "steps": count(row["steps"]),
                  "chars_per_token": f"{row['chars_per_token']:.2f}", "context_chars": f"{row['context_chars']:.0f}",
                  "embedding_params": count(row["embedding_params"]), "val_loss": loss(row["val_loss"][0]),
                  "bpc": loss(row["bits_per_char"][0]), "bpc_std": loss(row["bits_per_char"][1])}
           for name, row in s["tokenizers"].items()}
    c = s["comparison"]
    tok.update(noise=loss(c["noise"]), bpe_spread=loss(c["bpe_spread"]), smallest_gain=loss(c["smallest_gain"]),
               gain_in_noise=f"{c['smallest_gain'] / c['noise']:.0f}" if c["noise"] else "—")
    scale = {("all" if row["fraction"] == 1 else f"f{round(1 / row['fraction'])}"): {
        "epochs": f"{row['epochs']:.1f}", "train_loss": loss(row["train_loss"][0]),
        "val_loss": loss(row["val_loss"][0]), "gap": loss(row["gap"][0])} for row in s["scale"]}
    h, sp, tl, leak = record.hygiene, record.speed, record.tokenizer_leak, s["leak"]
    first = sp["first_difference"]
    return {
        "steps": str(cfg["steps"]), "seeds": str(len(cfg["seeds"])), "batch_size": str(cfg["batch_size"]),
        "seq_len": str(cfg["seq_len"]), "minutes": f"{result.provenance['wall_time_s'] / 60:.1f}",
        "tok": tok, "scale": scale,
        "speed": {"vocab": count(sp["vocab_size"]), "merges": count(sp["vocab_size"] - 256),
                  "repeats": str(sp["repeats"]), "val_chars": count(sp["val_chars"]), "val_tokens": count(sp["val_tokens"]),
                  "ours_train_s": f"{sp['ours_train_s']:.2f}", "hf_train_s": f"{sp['hf_train_s']:.3f}",
                  "train_speedup": f"{sp['train_speedup']:.1f}×", "ours_encode_s": f"{sp['ours_encode_s']:.3f}",
                  "hf_encode_s": f"{sp['hf_encode_s']:.3f}", "encode_speedup": f"{sp['encode_speedup']:.1f}×",
                  "ours_uncached_encode_s": f"{sp['ours_uncached_encode_s']:.2f}",
                  "uncached_speedup": f"{sp['uncached_speedup']:.1f}×",
                  "first_difference": "—" if first is None else str(first),
                  "first_difference_count": "—" if first is None else count(sp["first_difference_count"])},
        "tokenizer_leak": {"vocab": count(tl["vocab_size"]),
                           "clean_chars_per_token": f"{tl['clean_chars_per_token']:.3f}",
                           "leaky_chars_per_token": f"{tl['leaky_chars_per_token']:.3f}",
                           "fewer_tokens_pct": f"{100 * (1 - tl['leaky_tokens'] / tl['clean_tokens']):.1f}%"},
        "hygiene": {"line_repeat_pct": f"{100 * h['lines']['repeat_share']:.1f}%",
                    "line_repeat_char_pct": f"{100 * h['lines']['repeat_char_share']:.1f}%",
                    "long_line_repeats": str(h["long_lines"]["repeats"]),
                    "long_line_repeats_normalized": str(h["long_lines_normalized"]["repeats"]),
                    "near_pairs": str(h["near_duplicate_passages"]["pairs"]),
                    "passages": count(h["near_duplicate_passages"]["passages"]),
                    "overlap_hits": str(h["overlap"]["with_overlap"]), "overlap_passages": count(h["overlap"]["passages"])},
        "leak": {"leaked_chars": count(leak["leaked_chars"]), "clean_leaked": loss(leak["clean_leaked"][0]),
                 "leak_leaked": loss(leak["leak_leaked"][0]), "drop": loss(leak["drop"][0]),
                 "drop_std": loss(leak["drop"][1]), "clean_held_out": loss(leak["clean_held_out"][0]),
                 "leak_held_out": loss(leak["leak_held_out"][0]), "held_out_change": loss(-leak["held_out_change"][0]),
                 "held_out_change_std": loss(leak["held_out_change"][1])},
    }


EXPERIMENT = Data()
