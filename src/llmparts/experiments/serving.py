"""Chapter 06, serving: what the KV cache, batching, continuous batching, quantization and speculative
decoding buy when the book's char model answers many requests, and when the KV cache outweighs the weights.

The engine lives in llmparts.batching, serve, quantize, speculative and numpy_serving (the simulator of
static and continuous batching); this module schedules two kinds of training runs — the book's LLaMA char
model (the ablation's llama seed-0 run, shared) and a small draft model per seed for speculative decoding —
and measures the rest in the main process, speeds as ratios taken side by side in one run. The simulator is
checked against the real server: the same closed-loop load, the engine's decode steps counted by /health.
"""

from __future__ import annotations

import http.client
import json
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch

from .. import numpy_serving, recipes, serve
from ..batching import step_time_vs_context, throughput_vs_batch_size
from ..data import fixed_batches
from ..export import to_npz
from ..model import GPT, kv_cache_bytes_per_token
from ..quantize import benchmark, quantization_report
from ..speculative import measure
from ..strings import STRINGS
from ..tables import count, loss, mib, pipe_table, signed, times
from ..train import VAL_SEED, train
from .ablation import variant_task
from .base import TRAINING, Context, Experiment, Report, Result, Task, dataset, mean_std, train_config
from .llama2 import CONTEXT as LLAMA2_CONTEXT
from .llama2 import count_params, decode_memory

# The draft model of speculative decoding: the LLaMA recipe with one layer of width 64 (head_dim 16).
DRAFT = dict(n_layer=1, n_embd=64)

SCALES = {
    "full": dict(contexts=[16, 64, 128, 256, 512, 1024], timing_block_size=1024, step_repeats=7,
                 batch_sizes=[1, 2, 4, 8, 16, 32], batch_prompt=8, batch_tokens=48, batch_repeats=3,
                 quant_groups=[32, 128], quant_tokens=60, quant_repeats=5,
                 draft_seeds=[0, 1, 2], spec_ks=[1, 2, 3, 4, 6, 8], spec_tokens=48, spec_repeats=3,
                 spec_prompts=["ROMEO:\n", "First Citizen:\n", "KING HENRY:\n"],
                 sim_requests=96, sim_clients=16, sim_slots=[1, 2, 4, 8, 16], sim_seeds=[0, 1, 2, 3, 4],
                 load_slots=[4, 8], memory_batches=[1, 8, 32]),
    "smoke": dict(contexts=[16, 64], timing_block_size=64, step_repeats=2,
                  batch_sizes=[1, 4], batch_prompt=8, batch_tokens=8, batch_repeats=1,
                  quant_groups=[32], quant_tokens=8, quant_repeats=1,
                  draft_seeds=[0, 1], spec_ks=[1, 4], spec_tokens=12, spec_repeats=1, spec_prompts=["ROMEO:\n"],
                  sim_requests=24, sim_clients=8, sim_slots=[2, 4], sim_seeds=[0, 1],
                  load_slots=[4], memory_batches=[1, 8]),
}


@dataclass
class ServingRecord:
    model: dict          # the served model: params, validation loss, block_size
    cache: list[dict]    # per context length: ms per token without and with the KV cache (batching.step_time_vs_context)
    batch: list[dict]    # per batch size: tokens/s and ms per decode step (batching.throughput_vs_batch_size)
    simulation: list[dict]  # per slot count: static and continuous, mean and std over request-length seeds
    load: list[dict]     # per slot count and mode: the real server's load test, and the simulator's prediction
    quant: list[dict]    # per variant: bytes, validation loss, tokens/s (quantize.quantization_report + benchmark)
    drafts: list[dict]   # per draft seed: params, validation loss
    spec: list[dict]     # per k: acceptance and speedup, mean and std over draft seeds
    memory: list[dict]   # per model and weight format: where the KV cache outweighs the weights
    summary: dict        # the conclusions the chapter states


def train_draft(seed: int, scale: str, threads: int) -> dict:
    """The draft model for speculative decoding, trained like every model of the book."""
    result = train(recipes.llama(**DRAFT), train_config(scale, seed, threads), dataset())
    return {"val_loss": result.final_val_loss, "params": result.num_params,
            "state_dict": {k: v.detach().cpu() for k, v in result.model.state_dict().items()}}


def simulate(lengths, n_slots: int, continuous: bool, n_clients: int) -> dict:
    """numpy_serving's simulator on a closed-loop load: tokens per decode step and latency in steps."""
    admitted, finished = numpy_serving.simulate_batching(lengths, n_slots, continuous, n_clients=n_clients)
    return numpy_serving.batching_summary(lengths, admitted, finished, numpy_serving.client_arrivals(finished, n_clients))


def summarize_simulation(lengths_by_seed: list, n_slots: int, n_clients: int) -> dict:
    """Static and continuous batching of the same loads, mean and std over the request-length seeds."""
    runs = {mode: [simulate(lengths, n_slots, mode == "continuous", n_clients) for lengths in lengths_by_seed]
            for mode in ("static", "continuous")}
    ratios = [c["tokens_per_step"] / s["tokens_per_step"] for c, s in zip(runs["continuous"], runs["static"])]
    return {"slots": n_slots, **{mode: {key: mean_std([r[key] for r in rs]) for key in rs[0]} for mode, rs in runs.items()},
            "throughput_ratio": mean_std(ratios)}


def engine_steps(port: int) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/health")
    return json.loads(conn.getresponse().read())["steps"]


def load_point(weights: Path, slots: int, continuous: bool, n_requests: int, n_clients: int, threads: int) -> dict:
    """The real server under serve.load_test, and the decode steps its engine ran for that load alone."""
    port = serve.free_port()
    flags = [] if continuous else ["--static"]
    proc = serve.start_server_process(port, "--weights", str(weights), "--slots", str(slots), "--threads",
                                      str(threads), *flags)
    try:
        serve.timed_request(port, serve.PROMPTS[0], 4)  # first-touch allocations
        before = engine_steps(port)
        result = serve.load_test(port, n_requests, n_clients, seed=0)
        result["engine_steps"] = engine_steps(port) - before
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    return result


class Serving(Experiment):
    name = "serving"  # results/serving.json
    sources = ("src/llmparts/batching.py", "src/llmparts/sampling.py", "src/llmparts/quantize.py",
               "src/llmparts/speculative.py", "src/llmparts/serve.py", "src/llmparts/numpy_serving.py",
               "src/llmparts/numpy_model.py", "src/llmparts/export.py", "src/llmparts/experiments/ablation.py",
               "src/llmparts/experiments/llama2.py")
    record_type = ServingRecord

    def config(self, scale):
        t = TRAINING[scale]
        return {**SCALES[scale], "target": {"from": "ablation", "config": "llama", "seed": 0, "iters": t["iters"]},
                "draft": recipes.llama(**DRAFT).to_dict(), "draft_iters": t["iters"], "eval_batches": t["eval_batches"],
                "batch_size": t["batch_size"], "seq_len": t["train_len"], "llama2_context": LLAMA2_CONTEXT}

    def seeds(self, config):
        return config["draft_seeds"]

    def tasks(self, config, scale):
        target = variant_task("llama", 0, scale)
        drafts = [Task(f"serving draft seed {seed}", train_draft, dict(seed=seed, scale=scale), cost=config["draft_iters"] // 8)
                  for seed in config["draft_seeds"]]
        return [target, *drafts]

    def describe(self, task, output):
        return f"val {output['val_loss']:.4f}" if isinstance(output, dict) else f"val {output.run.val_loss:.4f}"

    def run(self, config, outputs, context: Context) -> ServingRecord:
        torch.set_num_threads(context.threads)
        trained = outputs["ablation llama seed 0"]
        target = GPT(recipes.ablation_variant("llama"))
        target.load_state_dict(trained.state_dict)
        target.eval()
        data = dataset()

        torch.manual_seed(0)  # speed does not depend on the weights: an untrained model with a longer context
        timing_model = GPT(recipes.llama(block_size=config["timing_block_size"])).eval()
        cache = step_time_vs_context(timing_model, config["contexts"], config["step_repeats"])
        batch = throughput_vs_batch_size(target, config["batch_sizes"], config["batch_prompt"], config["batch_tokens"],
                                         config["batch_repeats"])

        batches = fixed_batches(data.val, config["eval_batches"], config["batch_size"], config["seq_len"], seed=VAL_SEED)
        quant = quantization_report(target, batches, config["quant_groups"])
        speeds = {row["variant"]: row for row in benchmark(target, batches, config["quant_tokens"],
                                                           config["quant_repeats"], config["quant_groups"][0])}
        for row in quant:
            row["tokens_per_sec"] = speeds.get(row["variant"], {}).get("tokens_per_sec")

        drafts, spec_runs = [], []
        for seed in config["draft_seeds"]:
            out = outputs[f"serving draft seed {seed}"]
            draft = GPT(recipes.llama(**DRAFT))
            draft.load_state_dict(out["state_dict"])
            draft.eval()
            drafts.append({"seed": seed, "params": out["params"], "val_loss": out["val_loss"]})
            for text in config["spec_prompts"]:
                prompt = torch.tensor([data.tokenizer.encode(text)])
                for row in measure(target, draft, prompt, config["spec_tokens"], config["spec_ks"], config["spec_repeats"]):
                    spec_runs.append({"seed": seed, "prompt": text, **row})
        spec = []
        for k in config["spec_ks"]:
            rows = [r for r in spec_runs if r["k"] == k]
            by_seed = {s: [r for r in rows if r["seed"] == s] for s in config["draft_seeds"]}
            spec.append({"k": k, "identical": all(r["identical"] for r in rows),
                         **{key: mean_std([sum(r[key] for r in rs) / len(rs) for rs in by_seed.values()])
                            for key in ("acceptance_rate", "tokens_per_target_pass", "speedup")}})

        lengths_by_seed = [serve.request_lengths(config["sim_requests"], seed) for seed in config["sim_seeds"]]
        simulation = [summarize_simulation(lengths_by_seed, n, config["sim_clients"]) for n in config["sim_slots"]]

        load = []
        with tempfile.TemporaryDirectory() as tmp:
            weights = Path(tmp) / "char_llama.npz"
            to_npz(target, weights, chars=data.tokenizer.chars)
            lengths = serve.request_lengths(config["sim_requests"], 0)  # load_test's own draw (seed 0)
            for slots in config["load_slots"]:
                for mode, continuous in (("continuous", True), ("static", False)):
                    real = load_point(weights, slots, continuous, config["sim_requests"], config["sim_clients"],
                                      context.threads)
                    sim = simulate(lengths, slots, continuous, config["sim_clients"])
                    load.append({"slots": slots, "mode": mode, **real, "sim_steps": sim["steps"],
                                 "sim_tokens_per_step": sim["tokens_per_step"]})

        memory = []
        ours = recipes.ablation_variant("llama")
        for name, config_, params, ctx in (("char", ours, trained.run.params, ours.block_size),
                                           ("llama2", recipes.LLAMA2, sum(count_params(recipes.LLAMA2).values()),
                                            config["llama2_context"])):
            for fmt, bytes_per_param in (("float32", 4), ("int8", 1)):
                m = decode_memory(params, kv_cache_bytes_per_token(config_), ctx, config["memory_batches"], bytes_per_param)
                memory.append({"model": name, "weights": fmt, "params": params, "weights_bytes": m.weights_bytes,
                               "kv_bytes_per_token": m.kv_bytes_per_token, "context": ctx,
                               "crossover_tokens": m.crossover_tokens, "crossover_batch": m.crossover_batch_at_context})

        return ServingRecord(model={"params": trained.run.params, "val_loss": trained.run.val_loss,
                                    "block_size": ours.block_size},
                             cache=cache, batch=batch, simulation=simulation, load=load, quant=quant, drafts=drafts,
                             spec=spec, memory=memory, summary=summarize(cache, batch, simulation, load, quant, spec))

    def report(self, result: Result) -> Report:
        return Report(variables={"serving": report_variables(result)},
                      tables={name: {lang: make(result, lang) for lang in STRINGS} for name, make in REPORT_TABLES.items()},
                      figures={"serving_cache": lambda lang: report_cache_figure(result, lang),
                               "serving_batching": lambda lang: report_batching_figure(result, lang)})


def summarize(cache, batch, simulation, load, quant, spec) -> dict:
    """The chapter's conclusions, computed once: ratios measured side by side in one run."""
    by_mode = {(r["slots"], r["mode"]): r for r in load}
    slots = max(r["slots"] for r in load)
    on, off = by_mode[slots, "continuous"], by_mode[slots, "static"]
    sim = next(s for s in simulation if s["slots"] == slots) if any(s["slots"] == slots for s in simulation) else None
    variants = {r["variant"]: r for r in quant}
    best = max(spec, key=lambda r: r["speedup"][0])
    return {
        "cache_speedup_first": cache[0]["speedup"], "cache_speedup_last": cache[-1]["speedup"],
        "cache_uncached_growth": cache[-1]["uncached_ms"] / cache[0]["uncached_ms"],
        "cache_cached_growth": cache[-1]["cached_ms"] / cache[0]["cached_ms"],
        "context_growth": cache[-1]["context"] / cache[0]["context"],
        "batch_throughput_gain": batch[-1]["tokens_per_s"] / batch[0]["tokens_per_s"],
        "batch_latency_growth": batch[-1]["ms_per_token"] / batch[0]["ms_per_token"],
        "load_slots": slots,
        "load_throughput_ratio": on["tokens_per_s"] / off["tokens_per_s"],
        "load_p50_ratio": on["latency_p50_s"] / off["latency_p50_s"],
        "load_steps_ratio_real": off["engine_steps"] / on["engine_steps"],
        "load_steps_ratio_sim": off["sim_steps"] / on["sim_steps"],
        "sim_throughput_ratio": None if sim is None else sim["throughput_ratio"][0],
        "sim_max_step_error": max(abs(r["engine_steps"] - r["sim_steps"]) / r["sim_steps"] for r in load),
        "int8_loss_delta": variants["int8 per channel"]["loss_delta"],
        "int8_bytes_ratio": variants["float32"]["linear_bytes"] / variants["int8 per channel"]["linear_bytes"],
        "torch_int8_loss_delta": variants["torch dynamic int8"]["loss_delta"],
        "spec_best_k": best["k"], "spec_best_speedup": best["speedup"][0],
        "spec_identical": all(r["identical"] for r in spec),
    }


# ---------------------------------------------------------------- the report: formats only

def pm(pair, fmt="{:.2f}") -> str:
    return f"{fmt.format(pair[0])} ± {fmt.format(pair[1])}"


def kib(n_bytes: float) -> str:
    return f"{n_bytes / 1024:,.1f} KiB"


def report_cache(result: Result, lang: str) -> str:
    t = STRINGS[lang]["serving"]
    rows = [[count(r["context"]), f"{r['uncached_ms']:.2f}", f"{r['cached_ms']:.2f}", f"{1000 / r['uncached_ms']:,.0f}",
             f"{1000 / r['cached_ms']:,.0f}", times(r["speedup"])] for r in result.record.cache]
    return pipe_table(t["cache_header"], rows, t["cache_caption"].format(block=result.config["timing_block_size"],
                                                                        repeats=result.config["step_repeats"]),
                      "serving_cache")


def report_batch(result: Result, lang: str) -> str:
    t, rows_in = STRINGS[lang]["serving"], result.record.batch
    base = rows_in[0]
    rows = [[str(r["batch"]), f"{r['tokens_per_s']:,.0f}", times(r["tokens_per_s"] / base["tokens_per_s"]),
             f"{r['ms_per_token']:.2f}", times(r["ms_per_token"] / base["ms_per_token"])] for r in rows_in]
    cfg = result.config
    return pipe_table(t["batch_header"], rows, t["batch_caption"].format(prompt=cfg["batch_prompt"],
                                                                        tokens=cfg["batch_tokens"]), "serving_batch")


def report_simulation(result: Result, lang: str) -> str:
    t, cfg = STRINGS[lang]["serving"], result.config
    rows = [[str(s["slots"]), pm(s["static"]["tokens_per_step"]), pm(s["continuous"]["tokens_per_step"]),
             pm(s["throughput_ratio"]), pm(s["static"]["latency_p50"], "{:.1f}"), pm(s["continuous"]["latency_p50"], "{:.1f}")]
            for s in result.record.simulation]
    return pipe_table(t["sim_header"], rows, t["sim_caption"].format(n=cfg["sim_requests"], clients=cfg["sim_clients"],
                                                                    seeds=len(cfg["sim_seeds"])), "serving_simulation")


def report_load(result: Result, lang: str) -> str:
    t, cfg = STRINGS[lang]["serving"], result.config
    rows = [[str(r["slots"]), t[r["mode"]], f"{r['tokens_per_s']:,.0f}", f"{r['latency_p50_s']:.3f}",
             f"{r['latency_p99_s']:.3f}", count(r["engine_steps"]), count(r["sim_steps"]),
             f"{1000 * r['wall_s'] / r['engine_steps']:.2f}"] for r in result.record.load]
    return pipe_table(t["load_header"], rows, t["load_caption"].format(n=cfg["sim_requests"], clients=cfg["sim_clients"]),
                      "serving_load")


def report_quant(result: Result, lang: str) -> str:
    t = STRINGS[lang]["serving"]
    base = next(r for r in result.record.quant if r["variant"] == "float32")
    rows = []
    for r in result.record.quant:
        speed = r["tokens_per_sec"]
        rows.append([t["variants"][r["variant"]], "—" if r["linear_bytes"] is None else kib(r["linear_bytes"]),
                     kib(r["state_bytes"]), loss(r["val_loss"]), signed(r["loss_delta"]),
                     "—" if speed is None else f"{speed:,.0f}",
                     "—" if speed is None else times(speed / base["tokens_per_sec"])])
    return pipe_table(t["quant_header"], rows, t["quant_caption"].format(batches=result.config["eval_batches"]),
                      "serving_quant")


def report_spec(result: Result, lang: str) -> str:
    t, cfg = STRINGS[lang]["serving"], result.config
    rows = [[str(r["k"]), pm(r["acceptance_rate"]), pm(r["tokens_per_target_pass"]), pm(r["speedup"]),
             STRINGS[lang]["yes"] if r["identical"] else STRINGS[lang]["no"]] for r in result.record.spec]
    d = result.record.drafts
    caption = t["spec_caption"].format(seeds=len(d), params=count(d[0]["params"]),
                                       prompts=len(cfg["spec_prompts"]), tokens=cfg["spec_tokens"])
    return pipe_table(t["spec_header"], rows, caption, "serving_spec")


def report_memory(result: Result, lang: str) -> str:
    t = STRINGS[lang]["serving"]
    rows = [[t["models"][r["model"]], r["weights"], mib(r["weights_bytes"]), count(r["kv_bytes_per_token"]),
             count(r["crossover_tokens"]), count(r["context"]), count(r["crossover_batch"])] for r in result.record.memory]
    return pipe_table(t["memory_header"], rows, t["memory_caption"], "serving_memory")


REPORT_TABLES = {"serving_cache": report_cache, "serving_batch": report_batch, "serving_simulation": report_simulation,
                 "serving_load": report_load, "serving_quant": report_quant, "serving_spec": report_spec,
                 "serving_memory": report_memory}


def report_cache_figure(result: Result, lang: str):
    from ..figures import pyplot
    t, rows = STRINGS[lang]["serving"], result.record.cache
    plt = pyplot(lang)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    contexts = [r["context"] for r in rows]
    ax.plot(contexts, [r["uncached_ms"] for r in rows], "o-", color="#d62728", label=t["fig_uncached"])
    ax.plot(contexts, [r["cached_ms"] for r in rows], "o-", color="#1f77b4", label=t["fig_cached"])
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(contexts, [str(c) for c in contexts])
    ax.minorticks_off()
    ax.set_xlabel(t["fig_context"])
    ax.set_ylabel(t["fig_ms"])
    ax.grid(alpha=0.3)
    ax.legend()
    return fig


def report_batching_figure(result: Result, lang: str):
    from ..figures import pyplot
    t, sims = STRINGS[lang]["serving"], result.record.simulation
    plt = pyplot(lang)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    slots = [s["slots"] for s in sims]
    for mode, color in (("static", "#d62728"), ("continuous", "#1f77b4")):
        means = [s[mode]["tokens_per_step"][0] for s in sims]
        stds = [s[mode]["tokens_per_step"][1] for s in sims]
        ax.errorbar(slots, means, yerr=stds, fmt="o-", color=color, capsize=3, label=t["fig_sim"].format(mode=t[mode]))
    for mode, marker in (("static", "s"), ("continuous", "D")):
        real = [r for r in result.record.load if r["mode"] == mode]
        ax.plot([r["slots"] for r in real], [r["tokens"] / r["engine_steps"] for r in real], marker, markersize=9,
                markerfacecolor="none", color="#d62728" if mode == "static" else "#1f77b4",
                label=t["fig_real"].format(mode=t[mode]))
    draws = [serve.request_lengths(result.config["sim_requests"], seed) for seed in result.config["sim_seeds"]]
    free_tokens = sum(sum(d) / (sum(d) - len(d)) for d in draws) / len(draws)  # the prompt passes' first tokens
    ax.plot(slots, [n * free_tokens for n in slots], ":", color="#888", label=t["fig_ideal"])
    ax.set_xscale("log", base=2)
    ax.set_xticks(slots, [str(s) for s in slots])
    ax.minorticks_off()
    ax.set_xlabel(t["fig_slots"])
    ax.set_ylabel(t["fig_tokens_per_step"])
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def report_variables(result: Result) -> dict:
    """The `serving.*` keys of _variables.yml: chapter 06's prose."""
    r, s, cfg = result.record, result.record.summary, result.config
    load = {f"{row['mode']}_{row['slots']}": {"tokens_per_s": f"{row['tokens_per_s']:,.0f}",
                                             "p50": f"{row['latency_p50_s']:.3f}", "p99": f"{row['latency_p99_s']:.3f}",
                                             "steps": count(row["engine_steps"]), "sim_steps": count(row["sim_steps"])}
            for row in r.load}
    memory = {f"{row['model']}_{row['weights']}": {"crossover": count(row["crossover_tokens"]),
                                                   "batch": count(row["crossover_batch"]), "context": count(row["context"])}
              for row in r.memory}
    quant = {row["variant"].replace(" ", "_"): {"delta": signed(row["loss_delta"]), "val_loss": loss(row["val_loss"])}
             for row in r.quant}
    spec_k1 = r.spec[0]
    return {
        "minutes": f"{result.provenance['wall_time_s'] / 60:.1f}",
        "params": count(r.model["params"]), "val_loss": loss(r.model["val_loss"]), "block_size": str(r.model["block_size"]),
        "timing_block": str(cfg["timing_block_size"]),
        "cache_speedup_first": times(s["cache_speedup_first"]), "cache_speedup_last": times(s["cache_speedup_last"]),
        "cache_uncached_growth": times(s["cache_uncached_growth"]), "cache_cached_growth": times(s["cache_cached_growth"]),
        "context_growth": times(s["context_growth"]),
        "batch_max": str(r.batch[-1]["batch"]), "batch_throughput_gain": times(s["batch_throughput_gain"]),
        "batch_latency_growth": times(s["batch_latency_growth"]),
        "requests": str(cfg["sim_requests"]), "clients": str(cfg["sim_clients"]), "load_slots": str(s["load_slots"]),
        "load_throughput_ratio": times(s["load_throughput_ratio"]), "load_p50_ratio": f"{s['load_p50_ratio']:.2f}",
        "load_steps_ratio_real": times(s["load_steps_ratio_real"]), "load_steps_ratio_sim": times(s["load_steps_ratio_sim"]),
        "sim_throughput_ratio": "—" if s["sim_throughput_ratio"] is None else times(s["sim_throughput_ratio"]),
        "sim_max_step_error_pct": f"{100 * s['sim_max_step_error']:.0f}%",
        **{f"sim_error_{mode}_pct": f"{100 * max(abs(x['engine_steps'] - x['sim_steps']) / x['sim_steps'] for x in r.load if x['mode'] == mode):.0f}%"
           for mode in ("continuous", "static")},
        "threads": str(result.provenance["threads"]),
        "load": load, "memory": memory, "quant": quant,
        "int8_bytes_ratio": times(s["int8_bytes_ratio"]),
        "draft_params": count(r.drafts[0]["params"]), "draft_seeds": str(len(r.drafts)),
        "draft_val_loss": loss(mean_std([d["val_loss"] for d in r.drafts])[0]),
        "spec_k1_acceptance": f"{spec_k1['acceptance_rate'][0]:.2f}", "spec_k1_speedup": times(spec_k1["speedup"][0]),
        "spec_best_k": str(s["spec_best_k"]), "spec_best_speedup": times(s["spec_best_speedup"]),
    }


EXPERIMENT = Serving()
