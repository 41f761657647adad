"""`llmparts reproduce`: run the experiments behind every number in the book, then write the report.

    llmparts reproduce                                  # every experiment, then the report
    llmparts reproduce --only ablation,llama2           # a subset
    llmparts reproduce --resume                         # keep the results that are fresh for this code
    llmparts reproduce --smoke --out_dir build/smoke    # the whole pipeline at tiny scale, for CI

This file schedules; it knows nothing of what an experiment measures. It asks each selected experiment
(experiments/, one module each) for its config and its training runs, runs every run once (longest first,
in --jobs worker processes with --threads torch threads each), hands each experiment its runs' outputs to
build its record, saves results/NAME.json with the record's provenance, and writes the report.
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import inspect
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path

import torch

from . import report
from .checks import ArgumentParser, check_cli_ints
from .data import DataError
from .experiments import REGISTRY
from .experiments.base import Context, Experiment, Task, dataset, to_json, write_json
from .provenance import CORE_SOURCES, fingerprint, project_root, provenance, source_name


def sources(experiment: Experiment) -> tuple[str, ...]:
    """The files whose code decides an experiment's numbers: the core, its own module, and what it names."""
    return CORE_SOURCES + (source_name(inspect.getfile(type(experiment))),) + tuple(experiment.sources)


def is_fresh(path: Path, config: dict, experiment: Experiment, smoke: bool) -> bool:
    """results/NAME.json exists, at this scale, from this config and from this code."""
    if not path.is_file():
        return False
    saved = json.loads(path.read_text(encoding="utf-8"))
    prov = saved.get("provenance", {})
    return (saved.get("config") == json.loads(json.dumps(config)) and prov.get("smoke") == smoke
            and prov.get("sources") == sorted(sources(experiment))
            and prov.get("fingerprint") == fingerprint(config, sources(experiment)))


def run_task(task: Task, threads: int):
    """In a worker process: the task's output and its wall time."""
    torch.set_num_threads(threads)
    start = time.perf_counter()
    output = task.fn(**task.kwargs, threads=threads)
    return output, time.perf_counter() - start


def run_tasks(tasks: list[Task], describe, jobs: int, threads: int, start: float) -> dict:
    """task key -> (output, seconds) for every task, run longest first by jobs worker processes."""
    results = {}

    def progress(task, result):
        results[task.key] = result
        output, seconds = result
        print(f"[{len(results):>2}/{len(tasks)}] {task.label}: {describe(task, output)} ({seconds:.0f} s; "
              f"{(time.perf_counter() - start) / 60:.1f} min so far)", flush=True)

    ordered = sorted(tasks, key=lambda t: -t.cost)  # stable: equal costs keep the experiments' order
    if jobs == 1:
        for task in ordered:
            progress(task, run_task(task, threads))
        return results
    # spawn: each worker starts clean, with its own thread count, instead of a forked copy of torch's pools
    with futures.ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        pending = {pool.submit(run_task, task, threads): task for task in ordered}
        for done in futures.as_completed(pending):
            progress(pending[done], done.result())
    return results


def parse_args(argv):
    parser = ArgumentParser(prog="llmparts reproduce", description=__doc__.split("\n")[0])
    parser.add_argument("--only", default=",".join(REGISTRY),
                        help=f"comma-separated experiments (default all): {','.join(REGISTRY)}")
    parser.add_argument("--smoke", action="store_true", help="the whole pipeline at tiny scale (CI)")
    parser.add_argument("--resume", action="store_true",
                        help="keep the results/NAME.json that are fresh for this code and config; run the rest")
    parser.add_argument("--out_dir", type=Path, default=project_root(),
                        help="root for results/, images/ and _variables.yml (default: the repository)")
    cpus = os.cpu_count() or 1
    parser.add_argument("--jobs", type=int, default=cpus, help=f"worker processes for training runs (default {cpus})")
    parser.add_argument("--threads", type=int, default=None, help="torch threads per worker (default cpus // jobs)")
    args = parser.parse_args(argv)
    selected = [s.strip() for s in args.only.split(",") if s.strip()]
    if not selected or any(s not in REGISTRY for s in selected):
        parser.error(f"--only ({args.only!r}) must name experiments from {', '.join(REGISTRY)}")
    check_cli_ints(parser, args, ["jobs", "threads"])
    args.threads = args.threads or max(1, cpus // args.jobs)
    args.selected = [name for name in REGISTRY if name in selected]
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    scale = "smoke" if args.smoke else "full"
    context = Context(scale=scale, threads=args.threads, root=Path(args.out_dir))
    results_dir = context.root / "results"
    start = time.perf_counter()
    print(f"reproduce: {', '.join(args.selected)} ({scale} scale, {args.jobs} jobs x {args.threads} threads) "
          f"-> {results_dir}", flush=True)

    plans = {}  # name -> (experiment, config, tasks)
    for name in args.selected:
        experiment = REGISTRY[name]
        config = experiment.config(scale)
        if args.resume and is_fresh(results_dir / f"{name}.json", config, experiment, args.smoke):
            print(f"{name}: results are fresh, kept", flush=True)
            continue
        plans[name] = (experiment, config, experiment.tasks(config, scale))
    if any(experiment.needs_data for experiment, _, _ in plans.values()):
        try:  # fail here with one line, not in a worker process with a traceback
            dataset()
        except DataError as e:
            print(f"llmparts reproduce: error: {e}", file=sys.stderr)
            return 2

    tasks, describers = {}, {}
    for experiment, _, experiment_tasks in plans.values():
        for task in experiment_tasks:  # a run that two experiments ask for is run once
            tasks.setdefault(task.key, task)
            describers.setdefault(task.key, experiment.describe)
    outputs = run_tasks(list(tasks.values()), lambda task, out: describers[task.key](task, out),
                        min(args.jobs, max(1, len(tasks))), args.threads, start)

    for name, (experiment, config, experiment_tasks) in plans.items():
        t0 = time.perf_counter()
        record = experiment.run(config, {task.label: outputs[task.key][0] for task in experiment_tasks}, context)
        seconds = time.perf_counter() - t0 + sum(outputs[task.key][1] for task in experiment_tasks)
        prov = provenance(config, sources(experiment), threads=args.threads, seeds=experiment.seeds(config),
                          wall_time_s=seconds, smoke=args.smoke)
        write_json(results_dir / f"{name}.json",
                   {"experiment": name, "config": config, "provenance": prov, **to_json(record)})
        print(f"wrote {results_dir / f'{name}.json'}", flush=True)

    missing = report.missing_results(results_dir)
    if missing:
        print(f"report skipped: {results_dir} lacks {', '.join(missing)} (run them with --only)", flush=True)
    else:
        status = report.main(["--results", str(results_dir), "--out", str(context.root)])
        if status:
            return status
    print(f"reproduce: done in {(time.perf_counter() - start) / 60:.1f} min", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
