"""The experiments behind every number in the book: `llmparts reproduce` -> results/*.json -> report.

    llmparts reproduce                        # everything (< 60 min on 2 cores), then the report
    llmparts reproduce --only ablation,llama2 # a subset
    llmparts reproduce --smoke --out_dir build/smoke   # the whole pipeline at tiny scale, for CI

Experiments: ablation (7 configs x seeds on nanoGPT's CPU shakespeare_char recipe), extrapolation
(learned positions vs RoPE, trained at 64, evaluated up to 256, over the ablation's seeds), hands_on (examples/tiny_modern.py),
generation (tokens/s with and without the KV cache, torch and NumPy), llama2 (the preset's parameters,
KV cache and FLOPs, counted by code) and weights (the all-on char model exported for the browser).
Training runs are independent, so they go to --jobs worker processes with --threads threads each.
Every results/NAME.json carries its provenance (see provenance.py).
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import hashlib
import importlib.util
import json
import math
import multiprocessing
import os
import sys
import time
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from . import report
from .data import DataError, fixed_batches, load_dataset
from .model import GPT, ModelConfig, kv_cache_bytes_per_token
from .provenance import CORE_SOURCES, REPO_ROOT, provenance
from .train import VAL_SEED, TrainConfig, evaluate, train

EXPERIMENTS = ("ablation", "extrapolation", "hands_on", "generation", "llama2", "weights")

# nanoGPT's CPU shakespeare_char recipe: the book's experiment model.
BASE_MODEL = dict(vocab_size=65, n_layer=4, n_head=4, n_embd=128, block_size=64, dropout=0.0, bias=False)
LLAMA_PARTS = dict(use_rmsnorm=True, use_swiglu=True, use_rope=True, n_kv_head=2)
ABLATION = {
    "baseline": {},
    "rmsnorm": {"use_rmsnorm": True},
    "swiglu": {"use_swiglu": True},
    "rope": {"use_rope": True},
    "gqa": {"n_kv_head": 2},
    "mqa": {"n_kv_head": 1},
    "llama": LLAMA_PARTS,
}
# Positions are the only difference between the two extrapolation models.
EXTRAPOLATION = {"learned": {}, "rope": {"use_rope": True}}

SCALES = {
    "full": dict(iters=2000, seeds=[0, 1, 2], eval_batches=200, train_len=64, extrapolation_block=256,
                 eval_lengths=[32, 64, 96, 128, 192, 256], extrapolation_eval_batches=50, hands_on_steps=2500,
                 prompt_len=64, new_tokens=256, timing_repeats=3),
    "smoke": dict(iters=12, seeds=[0, 1], eval_batches=4, train_len=64, extrapolation_block=256,
                  eval_lengths=[32, 64, 96, 128, 192, 256], extrapolation_eval_batches=2, hands_on_steps=8,
                  prompt_len=16, new_tokens=48, timing_repeats=1),
}
# Train settings that do not change the numbers (how many threads, where to log) stay out of the config.
NOT_NUMERIC = ("threads", "quiet", "out_dir", "resume", "device", "compile", "checkpoint_interval")


def train_config(scale: dict, seed: int, threads: int, max_iters: int | None = None) -> TrainConfig:
    iters = max_iters or scale["iters"]
    return TrainConfig(batch_size=12, seq_len=scale["train_len"], max_iters=iters, eval_interval=iters,
                       final_eval_batches=scale["eval_batches"], seed=seed, threads=threads, quiet=True)


def numeric_train_settings(cfg: TrainConfig) -> dict:
    return {k: v for k, v in cfg.to_dict().items() if k not in NOT_NUMERIC and k != "seed"}


@lru_cache(maxsize=1)
def dataset():
    return load_dataset()


def load_tiny_modern():
    """examples/tiny_modern.py as a module: its CONFIGS and train function, not a copy of them."""
    path = REPO_ROOT / "examples" / "tiny_modern.py"
    spec = importlib.util.spec_from_file_location("tiny_modern", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- training tasks (run in worker processes)

def ablation_run(name: str, seed: int, scale: dict, threads: int, export_path: str | None = None) -> dict:
    model_config = ModelConfig(**{**BASE_MODEL, **ABLATION[name]})
    result = train(model_config, train_config(scale, seed, threads), dataset())
    record = {
        "config": name, "seed": seed, "val_loss": result.final_val_loss, "params": result.num_params,
        "kv_bytes_per_token": kv_cache_bytes_per_token(model_config),
        "norm_stats": 1 if model_config.use_rmsnorm else 2,  # statistics per normalization: rms vs mean+var
        "tokens_per_sec": result.tokens_per_sec, "mfu": result.mfu, "wall_time_s": result.wall_time_s,
    }
    if export_path:
        from .export import to_npz
        Path(export_path).parent.mkdir(parents=True, exist_ok=True)
        to_npz(result.model, export_path, chars="".join(dataset().tokenizer.chars))
        record["exported"] = export_path
    return record


def position_rows(initial: torch.Tensor, trained: torch.Tensor, train_len: int) -> dict:
    """How far training moved the learned position table, for the rows it saw and the rows it never saw.

    Per row: the cosine between its initial and trained vector, and its trained/initial norm ratio.
    A row that got no gradient keeps its direction (cosine 1) and only shrinks by weight decay."""
    cos = torch.nn.functional.cosine_similarity(initial, trained, dim=-1)
    ratio = trained.norm(dim=-1) / initial.norm(dim=-1)
    seen, unseen = slice(0, train_len), slice(train_len, None)
    return {"rows": initial.shape[0], "train_len": train_len,
            "seen_cosine": cos[seen].mean().item(), "unseen_cosine": cos[unseen].mean().item(),
            "unseen_min_cosine": cos[unseen].min().item(),
            "seen_norm_ratio": ratio[seen].mean().item(), "unseen_norm_ratio": ratio[unseen].mean().item()}


def extrapolation_run(kind: str, seed: int, scale: dict, threads: int) -> dict:
    # block_size is the longest eval length; training at train_len sends no gradient to the learned rows beyond it.
    model_config = ModelConfig(**{**BASE_MODEL, "block_size": scale["extrapolation_block"], **EXTRAPOLATION[kind]})
    result = train(model_config, train_config(scale, seed, threads), dataset())
    losses = [evaluate(result.model, fixed_batches(dataset().val, scale["extrapolation_eval_batches"], 12, length,
                                                   seed=VAL_SEED))
              for length in scale["eval_lengths"]]
    out = {"kind": kind, "seed": seed, "losses": losses, "params": result.num_params,
           "wall_time_s": result.wall_time_s}
    if result.model.pos_emb is not None:
        torch.manual_seed(seed)  # train() builds its model right after this call: the same initial table
        initial = GPT(model_config).pos_emb.weight.detach()
        out["position_rows"] = position_rows(initial, result.model.pos_emb.weight.detach().cpu(), scale["train_len"])
    return out


def hands_on_run(scale: dict, threads: int) -> dict:
    tiny = load_tiny_modern()
    torch.set_num_threads(threads)
    start = time.perf_counter()
    rows = []
    for name, switches in tiny.CONFIGS.items():
        val_loss, params = tiny.train_switches(switches, scale["hands_on_steps"], seed=0, threads=threads)
        rows.append({"name": name, "switches": switches, "val_loss": val_loss, "params": params})
    return {"rows": rows, "wall_time_s": time.perf_counter() - start}


def run_task(task: dict) -> dict:
    torch.set_num_threads(task["threads"])
    start = time.perf_counter()
    kind, kwargs = task["kind"], task["kwargs"]
    fn = {"ablation": ablation_run, "extrapolation": extrapolation_run, "hands_on": hands_on_run}[kind]
    return {**fn(**kwargs, threads=task["threads"]), "task_wall_time_s": time.perf_counter() - start}


# ---------------------------------------------------------------- measured in the main process

def generation_experiment(scale: dict, threads: int) -> dict:
    """Greedy generation with and without the KV cache: tokens/s, cache bytes, identical outputs."""
    from . import numpy_model
    torch.set_num_threads(threads)
    block_size = scale["prompt_len"] + scale["new_tokens"]
    prompt = dataset().val[:scale["prompt_len"]].view(1, -1)

    def timed(fn):
        best, out = float("inf"), None
        for _ in range(scale["timing_repeats"]):
            t0 = time.perf_counter()
            out = fn()
            best = min(best, time.perf_counter() - t0)
        return out, best

    def row(attention, n_kv_head, cached, t_cached, uncached, t_uncached, config):
        cache_bytes = kv_cache_bytes_per_token(config) * block_size
        return {"attention": attention, "n_kv_head": n_kv_head, "kv_bytes_per_token": kv_cache_bytes_per_token(config),
                "cache_bytes": cache_bytes, "tokens_per_sec_cache": scale["new_tokens"] / t_cached,
                "tokens_per_sec_no_cache": scale["new_tokens"] / t_uncached, "speedup": t_uncached / t_cached,
                "identical": bool(np.array_equal(np.asarray(cached), np.asarray(uncached)))}

    rows, models = [], {}
    for attention, n_kv_head in (("MHA", 4), ("GQA", 2), ("MQA", 1)):
        config = ModelConfig(**{**BASE_MODEL, **LLAMA_PARTS, "n_kv_head": n_kv_head, "block_size": block_size})
        torch.manual_seed(0)  # untrained weights: speed and cache equality do not depend on training
        model = GPT(config).eval()
        models[attention] = model
        cached, t_c = timed(lambda: model.generate(prompt, scale["new_tokens"], temperature=0, use_cache=True))
        uncached, t_u = timed(lambda: model.generate(prompt, scale["new_tokens"], temperature=0, use_cache=False))
        rows.append(row(attention, n_kv_head, cached, t_c, uncached, t_u, config))

    torch_gqa = models["GQA"]
    np_config = numpy_model.ModelConfig.from_dict(torch_gqa.config.to_dict())
    np_model = numpy_model.NumpyGPT(np_config)
    np_model.load_state_dict({k: v.numpy() for k, v in torch_gqa.state_dict().items()})
    np_prompt = prompt.numpy()
    cached, t_c = timed(lambda: np_model.generate(np_prompt, scale["new_tokens"], temperature=0, use_cache=True))
    uncached, t_u = timed(lambda: np_model.generate(np_prompt, scale["new_tokens"], temperature=0, use_cache=False))
    return {"torch": rows, "numpy": row("GQA", 2, cached, t_c, uncached, t_u, torch_gqa.config)}


def llama2_experiment(context: int, lengths: list[int], batches: list[int] = (1,)) -> dict:
    """The LLaMA2 preset's parameters per component, KV cache and FLOPs per token, counted from model.py."""
    config = ModelConfig.llama2()
    with torch.device("meta"):  # shapes only: no memory, no init time
        model = GPT(config)
        untied = GPT(ModelConfig.llama2(tie_embeddings=False))
    groups = {"embedding": 0, "attention": 0, "feed_forward": 0, "norms": 0}
    for name, p in model.named_parameters():  # a tied head appears once, as tok_emb
        if name.startswith(("tok_emb", "pos_emb", "lm_head")):
            groups["embedding"] += p.numel()
        elif ".attn." in name:
            groups["attention"] += p.numel()
        elif ".mlp." in name:
            groups["feed_forward"] += p.numel()
        elif "norm" in name:
            groups["norms"] += p.numel()
        else:
            raise ValueError(f"parameter {name} belongs to no component group")
    total = sum(groups.values())
    kv = []
    for attention, n_kv_head in (("MHA", config.n_head), ("GQA", config.n_kv_head), ("MQA", 1)):
        per_token = kv_cache_bytes_per_token(ModelConfig.llama2(n_kv_head=n_kv_head))
        kv.append({"attention": attention, "n_kv_head": n_kv_head, "bytes_per_token": per_token,
                   "bytes_at_context": per_token * context})
    # Forward FLOPs for the token at position `context`: 2 per weight of every matmul (the tied embedding
    # counts once, as the output head; norms are not matmuls), plus attention's q.k and w.v, 2*T*d each.
    matmul_params = total - groups["norms"]

    def attention_flops(T):
        return 4 * config.n_layer * T * config.n_embd

    gqa_bytes = kv_cache_bytes_per_token(config)
    return {
        "params": {**groups, "total": total, "total_untied": untied.num_params()},
        "kv_cache": kv,
        "flops": {"formula": "2 * N_matmul + 4 * n_layer * T * n_embd", "context": context,
                  "matmul_params": matmul_params, "matmul_flops": 2 * matmul_params,
                  "attention_flops": attention_flops(context),
                  "per_token": 2 * matmul_params + attention_flops(context)},
        "attention_cost": {"rows": [{"length": T, "scores": T * T, "cached_positions": T,
                                     "kv_bytes": gqa_bytes * T, "flops_per_token": 2 * matmul_params + attention_flops(T)}
                                    for T in lengths]},
        "decode_memory": decode_memory(total, gqa_bytes, context, batches),
    }


def decode_memory(params: int, kv_bytes_per_token: int, context: int, batches: list[int],
                  bytes_per_param: int = 4) -> dict:
    """What one decoding step reads from memory: every weight once, plus the whole KV cache.

    The weights cost the same at every step; the cache grows with batch x context. `crossover_tokens`
    is the number of cached tokens (summed over the batch) at which the cache outweighs the weights."""
    weights = params * bytes_per_param
    crossover = weights / kv_bytes_per_token
    rows = [{"batch": b, "context": context, "cache_bytes": b * context * kv_bytes_per_token, "weights_bytes": weights,
             "cache_over_weights": b * context * kv_bytes_per_token / weights} for b in batches]
    return {"bytes_per_param": bytes_per_param, "weights_bytes": weights, "kv_bytes_per_token": kv_bytes_per_token,
            "crossover_tokens": crossover, "crossover_context_batch_1": math.ceil(crossover),
            "crossover_batch_at_context": math.ceil(crossover / context), "context": context, "rows": rows}


# ---------------------------------------------------------------- orchestration

def experiment_configs(scale: dict) -> dict:
    """What determines each experiment's numbers; hashed into its fingerprint."""
    ablation_train = numeric_train_settings(train_config(scale, 0, 1))
    ablation = {"iters": scale["iters"], "seeds": scale["seeds"], "batch_size": 12, "block_size": BASE_MODEL["block_size"],
                "eval_batches": scale["eval_batches"], "val_seed": VAL_SEED, "model": BASE_MODEL, "configs": ABLATION,
                "train": ablation_train}
    return {
        "ablation": ablation,
        "extrapolation": {"train_len": scale["train_len"], "block_size": scale["extrapolation_block"],
                          "eval_lengths": scale["eval_lengths"], "eval_batches": scale["extrapolation_eval_batches"],
                          "seeds": scale["seeds"], "model": BASE_MODEL, "configs": EXTRAPOLATION,
                          "train": ablation_train},
        "hands_on": {"steps": scale["hands_on_steps"], "seed": 0},
        "generation": {"prompt_len": scale["prompt_len"], "new_tokens": scale["new_tokens"],
                       "timing_repeats": scale["timing_repeats"], "model": {**BASE_MODEL, **LLAMA_PARTS},
                       "n_kv_heads": {"MHA": 4, "GQA": 2, "MQA": 1}, "weights": "untrained, torch.manual_seed(0)",
                       "decoding": "greedy"},
        "llama2": {"preset": ModelConfig.llama2().to_dict(), "context": 512, "lengths": [512, 4096],
                   "batches": [1, 8, 16, 32], "weights_dtype": "float32"},
        "weights": {"from": "ablation", "config": "llama", "seed": 0, "iters": scale["iters"],
                    "model": {**BASE_MODEL, **LLAMA_PARTS}, "train": ablation_train},
    }


SOURCES = {
    "ablation": CORE_SOURCES, "extrapolation": CORE_SOURCES, "llama2": CORE_SOURCES,
    "hands_on": CORE_SOURCES + ("examples/tiny_modern.py",),
    "generation": CORE_SOURCES + ("src/llmparts/numpy_model.py",),
    "weights": CORE_SOURCES + ("src/llmparts/export.py",),
}


def build_tasks(selected: list[str], scale: dict, threads: int, weights_path: Path) -> list[dict]:
    """Training runs of the selected experiments, longest first so the pool finishes together."""
    tasks = []
    if "hands_on" in selected:
        tasks.append({"experiment": "hands_on", "kind": "hands_on", "kwargs": {"scale": scale}})
    if "extrapolation" in selected:
        tasks += [{"experiment": "extrapolation", "kind": "extrapolation",
                   "kwargs": {"kind": k, "seed": seed, "scale": scale}}
                  for seed in scale["seeds"] for k in EXTRAPOLATION]
    if "ablation" in selected:
        tasks += [{"experiment": "ablation", "kind": "ablation",
                   "kwargs": {"name": name, "seed": seed, "scale": scale}}
                  for seed in scale["seeds"] for name in ABLATION]
    if "weights" in selected:
        export = {"name": "llama", "seed": 0, "scale": scale, "export_path": str(weights_path)}
        for task in tasks:  # the ablation's own llama seed-0 run is the exported model
            if task["kind"] == "ablation" and task["kwargs"]["name"] == "llama" and task["kwargs"]["seed"] == 0:
                task["kwargs"] = export
                task["also"] = "weights"
                break
        else:
            tasks.append({"experiment": "weights", "kind": "ablation", "kwargs": export})
    for task in tasks:
        task["threads"] = threads
    return tasks


def describe(task: dict, out: dict) -> str:
    kw = task["kwargs"]
    if task["kind"] == "ablation":
        return f"ablation {kw['name']} seed {kw['seed']}: val {out['val_loss']:.4f}, {out['tokens_per_sec']:,.0f} tok/s"
    if task["kind"] == "extrapolation":
        return f"extrapolation {kw['kind']} seed {kw['seed']}: " + ", ".join(f"{v:.3f}" for v in out["losses"])
    return "hands_on: " + ", ".join(f"{r['val_loss']:.4f}" for r in out["rows"])


def run_tasks(tasks: list[dict], jobs: int, start: float) -> list[dict]:
    outputs = [None] * len(tasks)

    def progress(i, out):
        print(f"[{sum(o is not None for o in outputs):>2}/{len(tasks)}] {describe(tasks[i], out)} "
              f"({out['task_wall_time_s']:.0f} s; {(time.perf_counter() - start) / 60:.1f} min so far)", flush=True)

    if jobs == 1:
        for i, task in enumerate(tasks):
            outputs[i] = run_task(task)
            progress(i, outputs[i])
        return outputs
    # spawn: each worker starts clean, with its own thread count, instead of a forked copy of torch's pools
    with futures.ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        pending = {pool.submit(run_task, task): i for i, task in enumerate(tasks)}
        for done in futures.as_completed(pending):
            i = pending[done]
            outputs[i] = done.result()
            progress(i, outputs[i])
    return outputs


def write_json(path: Path, data: dict):
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="llmparts reproduce", description=__doc__.split("\n")[0])
    parser.add_argument("--only", default=",".join(EXPERIMENTS),
                        help=f"comma-separated experiments (default all): {','.join(EXPERIMENTS)}")
    parser.add_argument("--smoke", action="store_true", help="the whole pipeline at tiny scale (CI)")
    parser.add_argument("--out_dir", type=Path, default=REPO_ROOT,
                        help="root for results/, images/ and _variables.yml (default: the repository)")
    cpus = os.cpu_count() or 1
    parser.add_argument("--jobs", type=int, default=cpus, help=f"worker processes for training runs (default {cpus})")
    parser.add_argument("--threads", type=int, default=None, help="torch threads per worker (default cpus // jobs)")
    args = parser.parse_args(argv)
    selected = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in selected if s not in EXPERIMENTS]
    if unknown or not selected:
        parser.error(f"--only ({args.only!r}) must name experiments from {', '.join(EXPERIMENTS)}")
    if args.jobs < 1:
        parser.error(f"--jobs ({args.jobs}) must be at least 1")
    args.threads = args.threads if args.threads is not None else max(1, cpus // args.jobs)
    if args.threads < 1:
        parser.error(f"--threads ({args.threads}) must be at least 1")
    args.selected = [e for e in EXPERIMENTS if e in selected]
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    scale = SCALES["smoke" if args.smoke else "full"]
    configs = experiment_configs(scale)
    results_dir = Path(args.out_dir) / "results"
    weights_path = results_dir / "weights" / "char_llama.npz"
    start = time.perf_counter()
    print(f"reproduce: {', '.join(args.selected)} ({'smoke' if args.smoke else 'full'} scale, "
          f"{args.jobs} jobs x {args.threads} threads) -> {results_dir}", flush=True)

    def save(name: str, data: dict, seeds: list[int], wall_time_s: float):
        prov = provenance(configs[name], SOURCES[name], threads=args.threads, seeds=seeds,
                          wall_time_s=wall_time_s, smoke=args.smoke)
        write_json(results_dir / f"{name}.json", {"experiment": name, "config": configs[name], "provenance": prov,
                                                  **data})
        print(f"wrote {results_dir / f'{name}.json'}", flush=True)

    if set(args.selected) - {"llama2"}:
        try:  # fail here with one line, not in a worker process with a traceback
            dataset()
        except DataError as e:
            print(f"llmparts reproduce: error: {e}", file=sys.stderr)
            return 2
    tasks = build_tasks(args.selected, scale, args.threads, weights_path)
    outputs = run_tasks(tasks, min(args.jobs, max(1, len(tasks))), start)
    by_experiment: dict[str, list[tuple[dict, dict]]] = {}
    for task, out in zip(tasks, outputs):
        for name in (task["experiment"], task.get("also")):
            if name:
                by_experiment.setdefault(name, []).append((task, out))

    def compute_time(name):  # the experiment's runs' wall times added up (they may have run in parallel)
        return sum(out["task_wall_time_s"] for _, out in by_experiment[name])

    if "ablation" in args.selected:
        runs = [{k: v for k, v in out.items() if k not in ("exported", "task_wall_time_s")}
                for _, out in by_experiment["ablation"]]
        save("ablation", {"runs": runs}, scale["seeds"], compute_time("ablation"))
    if "extrapolation" in args.selected:
        curves = {(out["kind"], out["seed"]): out for _, out in by_experiment["extrapolation"]}
        seeds = scale["seeds"]
        save("extrapolation", {"lengths": scale["eval_lengths"], "seeds": seeds,
                               "losses": {k: [curves[k, s]["losses"] for s in seeds] for k in EXTRAPOLATION},
                               "params": {k: curves[k, seeds[0]]["params"] for k in EXTRAPOLATION},
                               "position_rows": [curves["learned", s]["position_rows"] for s in seeds]},
             seeds, compute_time("extrapolation"))
    if "hands_on" in args.selected:
        (_, out), = by_experiment["hands_on"]
        save("hands_on", {"rows": out["rows"], "wall_time_s": out["wall_time_s"]}, [0], out["task_wall_time_s"])
    if "weights" in args.selected:
        (_, out), = by_experiment["weights"]
        data = weights_path.read_bytes()
        save("weights", {"file": "results/weights/char_llama.npz", "bytes": len(data),
                         "sha256": hashlib.sha256(data).hexdigest(), "val_loss": out["val_loss"],
                         "params": out["params"]}, [0], out["task_wall_time_s"])
    if "generation" in args.selected:
        t0 = time.perf_counter()
        gen = generation_experiment(scale, args.threads)
        save("generation", gen, [0], time.perf_counter() - t0)
    if "llama2" in args.selected:
        t0 = time.perf_counter()
        ll = configs["llama2"]
        save("llama2", llama2_experiment(ll["context"], ll["lengths"], ll["batches"]), [], time.perf_counter() - t0)

    missing = [n for n in report.EXPERIMENTS if not (results_dir / f"{n}.json").is_file()]
    if missing:
        print(f"report skipped: {results_dir} lacks {', '.join(missing)} (run them with --only)", flush=True)
    else:
        status = report.main(["--results", str(results_dir), "--out", str(args.out_dir)])
        if status:
            return status
    print(f"reproduce: done in {(time.perf_counter() - start) / 60:.1f} min", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
