"""`llmparts serve`: the char model behind an OpenAI-compatible HTTP API, with continuous batching.

Two threads of work:
- the event loop (FastAPI on uvicorn) parses requests, checks them, and streams tokens back; it never
  runs the model, so it never blocks;
- the engine thread owns the model and a SlotKVCache with n_slots rows. Each step it admits waiting
  requests into free slots (prefill), then runs ONE forward pass for every active slot (decode), samples
  a token per slot with that request's own settings, and hands the tokens to the event loop.

Continuous batching admits a request as soon as any slot is free; static batching (continuous=False)
waits until the whole batch has finished, as a server without a per-slot cache must. A client that
disconnects mid-stream is cancelled and its slot is free at the next step (a non-streamed request runs
to its end: uvicorn's h11 protocol does not report a client that leaves while the handler waits, as
measured here, and such a request is bounded by block_size tokens anyway). On shutdown (SIGINT/SIGTERM) uvicorn
stops accepting connections and lets the open ones finish, then the engine stops.

Endpoints: POST /v1/completions (OpenAI's completions API: prompt, max_tokens, temperature, top_p, top_k,
stream, seed), GET /health. Bad input gets a 400 whose message names the value and the rule.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import signal
import sys
import threading
import time
from collections import deque
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import torch

try:  # the `serve` extra: pip install -e ".[serve]"
    from fastapi import FastAPI
    from fastapi import Request as HTTPRequest
    from fastapi.responses import JSONResponse, StreamingResponse
except ImportError:  # the engine and the request checks still work; create_app says what to install
    FastAPI = None

from .batching import SlotKVCache, forward_batch
from .checks import ArgumentParser, check_cli_ints
from .model import GPT
from .sampling import check_sampling_args, sample_next

DEFAULT_WEIGHTS = Path("results/weights/char_llama.npz")
REQUEST_FIELDS = {"model", "prompt", "max_tokens", "temperature", "top_p", "top_k", "stream", "seed"}


# ---------------------------------------------------------------- the engine (a thread that owns the model)

@dataclass
class Request:
    prompt_ids: list
    max_tokens: int
    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None
    seed: int | None = None
    out: asyncio.Queue | None = None  # token ids, then None when finished; read by the event loop
    loop: asyncio.AbstractEventLoop | None = None
    generated: list = field(default_factory=list)
    cancelled: bool = False
    finish_reason: str | None = None
    admitted_at_step: int | None = None   # decode steps the engine had run when the request got a slot
    finished_at_step: int | None = None   # ... and when it finished

    def __post_init__(self):
        self.generator = None if self.seed is None else torch.Generator().manual_seed(self.seed)

    def emit(self, item):
        if self.loop is not None:
            try:
                self.loop.call_soon_threadsafe(self.out.put_nowait, item)
            except RuntimeError:  # the event loop is already closed: nobody is listening
                pass


class Engine:
    """Runs requests in n_slots cache slots; continuous=True admits new requests between any two steps."""

    def __init__(self, model: GPT, n_slots: int = 8, continuous: bool = True, step_delay_s: float = 0.0):
        if isinstance(n_slots, bool) or not isinstance(n_slots, int) or n_slots < 1:
            raise ValueError(f"n_slots ({n_slots!r}) must be a positive integer")
        self.model = model.eval()
        self.n_slots, self.continuous, self.step_delay_s = n_slots, continuous, step_delay_s
        param = model.tok_emb.weight
        self.device = param.device
        self.cache = SlotKVCache(model.config, n_slots, device=param.device, dtype=param.dtype)
        self.slots: list[Request | None] = [None] * n_slots
        self.waiting: deque[Request] = deque()
        self.wakeup = threading.Condition()
        self.running = False
        self.thread: threading.Thread | None = None
        self.counts = {"completed": 0, "cancelled": 0, "steps": 0}

    # -- called from the event loop
    def submit(self, request: Request):
        total = len(request.prompt_ids) + request.max_tokens
        if not request.prompt_ids or total > self.cache.capacity:
            raise ValueError(f"prompt ({len(request.prompt_ids)}) + max_tokens ({request.max_tokens}) = {total} must be "
                             f"between 2 and block_size ({self.cache.capacity}), the cache slot's capacity")
        with self.wakeup:
            self.waiting.append(request)
            self.wakeup.notify()

    def cancel(self, request: Request):
        request.cancelled = True  # the engine frees the slot (or drops it from the queue) at its next step
        with self.wakeup:
            self.wakeup.notify()

    def status(self) -> dict:
        active = sum(r is not None for r in self.slots)
        return {"slots": self.n_slots, "active": active, "waiting": len(self.waiting),
                "continuous_batching": self.continuous, **self.counts}

    def start(self):
        self.running = True
        self.thread = threading.Thread(target=self.run, name="llmparts-engine", daemon=True)
        self.thread.start()

    def stop(self):
        with self.wakeup:
            self.running = False
            self.wakeup.notify()
        if self.thread is not None:
            self.thread.join()
        for request in [r for r in self.slots if r is not None] + list(self.waiting):
            self.finish(request, "shutdown")

    # -- the engine thread
    def run(self):
        torch.set_grad_enabled(False)
        while True:
            with self.wakeup:
                while self.running and not self.waiting and not any(self.slots):
                    self.wakeup.wait()
                if not self.running:
                    return
                admitted = self.admit()
            try:
                for slot in admitted:
                    self.prefill(slot)
                self.drop_cancelled()
                if any(self.slots):
                    self.decode_step()
            except Exception as e:  # never leave clients waiting on a dead thread: end their requests, go on
                print(f"llmparts serve: engine error: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
                for slot, request in enumerate(self.slots):
                    if request is not None:
                        self.slots[slot] = None
                        self.finish(request, "error")
            if self.step_delay_s:
                time.sleep(self.step_delay_s)

    def admit(self) -> list[int]:
        """Move waiting requests into free slots: any free slot (continuous), or only an empty batch (static)."""
        while self.waiting and self.waiting[0].cancelled:
            self.finish(self.waiting.popleft(), "cancelled")
        if not self.continuous and any(self.slots):
            return []
        admitted = []
        for slot in range(self.n_slots):
            if self.slots[slot] is None and self.waiting:
                request = self.waiting.popleft()
                if request.cancelled:
                    self.finish(request, "cancelled")
                    continue
                self.slots[slot] = request
                request.admitted_at_step = self.counts["steps"]
                admitted.append(slot)
        return admitted

    def prefill(self, slot: int):
        request = self.slots[slot]
        ids = torch.tensor([request.prompt_ids], device=self.device)
        positions = torch.arange(len(request.prompt_ids), device=self.device)[None]
        logits = forward_batch(self.model, ids, positions, self.cache, slots=torch.tensor([slot], device=self.device))
        self.accept(slot, logits[:, -1])

    def decode_step(self):
        self.counts["steps"] += 1
        active = [s for s, r in enumerate(self.slots) if r is not None]
        last = torch.tensor([[self.slots[s].generated[-1]] for s in active], device=self.device)
        positions = torch.tensor([[len(self.slots[s].prompt_ids) + len(self.slots[s].generated) - 1] for s in active],
                                 device=self.device)
        logits = forward_batch(self.model, last, positions, self.cache, slots=torch.tensor(active, device=self.device))
        for row, slot in enumerate(active):
            self.accept(slot, logits[row:row + 1, -1])

    def accept(self, slot: int, logits):
        """Sample the slot's next token with its request's settings, send it, free the slot when done."""
        request = self.slots[slot]
        logits = logits.float().cpu()  # one row of vocab_size numbers; the requests' generators live on the CPU
        token = int(sample_next(logits, request.temperature, request.top_k, request.top_p, request.generator))
        request.generated.append(token)
        request.emit(token)
        if len(request.generated) >= request.max_tokens:
            self.slots[slot] = None
            self.finish(request, "length")

    def drop_cancelled(self):
        for slot, request in enumerate(self.slots):
            if request is not None and request.cancelled:
                self.slots[slot] = None
                self.finish(request, "cancelled")

    def finish(self, request: Request, reason: str):
        request.finish_reason = reason
        request.finished_at_step = self.counts["steps"]
        self.counts["cancelled" if reason == "cancelled" else "completed"] += 1
        request.emit(None)


# ---------------------------------------------------------------- request checking

class BadRequest(ValueError):
    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param


def parse_request(body: bytes, chars: str, block_size: int, max_tokens_limit: int) -> dict:
    """The checked fields of a /v1/completions body; BadRequest naming the value and the rule otherwise."""
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BadRequest(f"the body is not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise BadRequest(f"the body must be a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - REQUEST_FIELDS)
    if unknown:
        raise BadRequest(f"unknown fields {unknown}; this server accepts {sorted(REQUEST_FIELDS)}", unknown[0])
    prompt = data.get("prompt")
    if not isinstance(prompt, str) or not prompt:
        raise BadRequest(f"prompt ({prompt!r}) must be a non-empty string", "prompt")
    outside = sorted(set(prompt) - set(chars))
    if outside:
        raise BadRequest(f"prompt holds characters outside the model's vocabulary: {outside} "
                         f"(it knows {len(chars)} characters)", "prompt")
    max_tokens = data.get("max_tokens", 16)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise BadRequest(f"max_tokens ({max_tokens!r}) must be a positive integer", "max_tokens")
    if max_tokens > max_tokens_limit:
        raise BadRequest(f"max_tokens ({max_tokens}) must be at most {max_tokens_limit}", "max_tokens")
    if len(prompt) + max_tokens > block_size:
        raise BadRequest(f"prompt ({len(prompt)} characters) + max_tokens ({max_tokens}) = {len(prompt) + max_tokens} "
                         f"exceeds the model's context of {block_size} characters", "max_tokens")
    temperature, top_p, top_k = data.get("temperature", 1.0), data.get("top_p", 1.0), data.get("top_k")
    try:
        check_sampling_args(temperature, top_k, top_p)
    except ValueError as e:
        raise BadRequest(str(e), str(e).split(" ", 1)[0]) from None
    for name in ("stream",):
        if not isinstance(data.get(name, False), bool):
            raise BadRequest(f"{name} ({data[name]!r}) must be true or false", name)
    seed = data.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise BadRequest(f"seed ({seed!r}) must be a non-negative integer", "seed")
    if "model" in data and not isinstance(data["model"], str):
        raise BadRequest(f"model ({data['model']!r}) must be a string", "model")
    return {"prompt": prompt, "max_tokens": max_tokens, "temperature": temperature, "top_p": top_p,
            "top_k": top_k, "stream": data.get("stream", False), "seed": seed}


# ---------------------------------------------------------------- the HTTP app

def create_app(engine: Engine, chars: str, model_name: str = "char-llama", max_tokens_limit: int | None = None):
    """The FastAPI app around a (not yet started) engine; the app's lifespan starts and stops it."""
    if FastAPI is None:
        raise RuntimeError("serving needs FastAPI and uvicorn: pip install -e \".[serve]\"")
    block_size = engine.model.config.block_size
    limit = block_size - 1 if max_tokens_limit is None else max_tokens_limit
    ids = itertools.count()
    state = {"accepting": True}

    @asynccontextmanager
    async def lifespan(app):
        engine.start()
        yield
        state["accepting"] = False
        engine.stop()

    app = FastAPI(title="llmparts", lifespan=lifespan)

    def error(status: int, message: str, param: str | None = None, kind: str = "invalid_request_error"):
        return JSONResponse({"error": {"message": message, "type": kind, "param": param, "code": None}},
                            status_code=status)

    @app.get("/health")
    async def health():
        return {"status": "ok" if state["accepting"] else "shutting down", "model": model_name,
                **engine.status()}

    @app.post("/v1/completions")
    async def completions(http_request: HTTPRequest):
        try:
            fields = parse_request(await http_request.body(), chars, block_size, limit)
        except BadRequest as e:
            return error(400, str(e), e.param)
        if not state["accepting"]:
            return error(503, "the server is shutting down", kind="server_error")
        request = Request([chars.index(c) for c in fields["prompt"]], fields["max_tokens"], fields["temperature"],
                          fields["top_k"], fields["top_p"], fields["seed"], out=asyncio.Queue(),
                          loop=asyncio.get_running_loop())
        completion_id, created = f"cmpl-{next(ids)}", int(time.time())

        def chunk(text: str, finish_reason: str | None) -> dict:
            return {"id": completion_id, "object": "text_completion", "created": created, "model": model_name,
                    "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": finish_reason}]}

        engine.submit(request)
        if fields["stream"]:
            async def events():
                try:
                    while (token := await request.out.get()) is not None:
                        yield f"data: {json.dumps(chunk(chars[token], None))}\n\n"
                    yield f"data: {json.dumps(chunk('', request.finish_reason))}\n\n"
                    yield "data: [DONE]\n\n"
                finally:  # the client left (or we are done): either way the slot must not keep running
                    if request.finish_reason is None:
                        engine.cancel(request)
            return StreamingResponse(events(), media_type="text/event-stream")
        try:
            while await request.out.get() is not None:
                pass
        finally:
            if request.finish_reason is None:
                engine.cancel(request)
        body = chunk("".join(chars[t] for t in request.generated), request.finish_reason)
        n_prompt, n_new = len(request.prompt_ids), len(request.generated)
        body["usage"] = {"prompt_tokens": n_prompt, "completion_tokens": n_new, "total_tokens": n_prompt + n_new}
        return body

    return app


# ---------------------------------------------------------------- a bounded load test

PROMPTS = ["ROMEO:\n", "JULIET:\nO ", "First Citizen:\n", "KING HENRY:\n", "To be", "MENENIUS:\nWhat "]


def request_lengths(n: int, seed: int = 0, short=(4, 12), long=(40, 50), long_share: float = 0.2) -> list[int]:
    """max_tokens of n requests: most short, a few long (the mix where static batching waits on stragglers)."""
    import random

    rng = random.Random(seed)
    return [rng.randint(*long) if rng.random() < long_share else rng.randint(*short) for _ in range(n)]


def timed_request(port: int, prompt: str, max_tokens: int) -> dict:
    """One streamed greedy completion: seconds to the first token and to the end, tokens received."""
    import http.client

    start = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("POST", "/v1/completions", headers={"Content-Type": "application/json"},
                 body=json.dumps({"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "stream": True}))
    response = conn.getresponse()
    if response.status != 200:
        raise RuntimeError(f"the server answered {response.status}: {response.read()[:200]!r}")
    first, tokens = None, 0
    for line in response:
        if not line.startswith(b"data: ") or line.strip() == b"data: [DONE]":
            continue
        if json.loads(line[6:])["choices"][0]["finish_reason"] is None:
            first = first or time.perf_counter()
            tokens += 1
    conn.close()
    return {"ttft_s": first - start, "latency_s": time.perf_counter() - start, "tokens": tokens}


def load_test(port: int, n_requests: int = 96, n_clients: int = 16, seed: int = 0) -> dict:
    """n_clients threads send n_requests streamed requests in all, each client one at a time; throughput and
    latency percentiles over every request."""
    import statistics
    from concurrent.futures import ThreadPoolExecutor

    lengths = request_lengths(n_requests, seed)
    jobs = [(PROMPTS[i % len(PROMPTS)], n) for i, n in enumerate(lengths)]
    start = time.perf_counter()
    with ThreadPoolExecutor(n_clients) as pool:
        results = list(pool.map(lambda job: timed_request(port, *job), jobs))
    wall = time.perf_counter() - start
    latencies = sorted(r["latency_s"] for r in results)
    ttfts = sorted(r["ttft_s"] for r in results)

    def percentile(values, p):
        return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]

    tokens = sum(r["tokens"] for r in results)
    if tokens != sum(lengths):
        raise RuntimeError(f"received {tokens} tokens, asked for {sum(lengths)}")
    return {"requests": n_requests, "clients": n_clients, "tokens": tokens, "wall_s": wall,
            "tokens_per_s": tokens / wall, "requests_per_s": n_requests / wall,
            "latency_p50_s": percentile(latencies, 50), "latency_p99_s": percentile(latencies, 99),
            "ttft_p50_s": percentile(ttfts, 50), "ttft_p99_s": percentile(ttfts, 99),
            "latency_mean_s": statistics.fmean(latencies)}


def start_server_process(port: int, *args) -> "subprocess.Popen":
    """`python -m llmparts.serve --port PORT ARGS` in a child process, returned once /health answers."""
    import http.client
    import subprocess

    proc = subprocess.Popen([sys.executable, "-m", "llmparts.serve", "--port", str(port), *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}: {proc.stderr.read()}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/health")
            if conn.getresponse().status == 200:
                return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("the server did not answer /health within 120 s")


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bench_serving(n_requests: int = 96, n_clients: int = 16, slots: int = 8, weights: Path | None = None,
                  seed: int = 0) -> dict:
    """The same load against a server with continuous batching and one with static batching, one after the other."""
    results = {}
    for mode, flags in (("continuous", []), ("static", ["--static"])):
        port = free_port()
        extra = ["--weights", str(weights)] if weights else []
        proc = start_server_process(port, "--slots", str(slots), *flags, *extra)
        try:
            timed_request(port, PROMPTS[0], 4)  # warm up: first-touch allocations in the engine
            results[mode] = load_test(port, n_requests, n_clients, seed)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
    return {"slots": slots, "lengths": request_lengths(n_requests, seed), **results}


def bench_main(argv=None, prog: str = "llmparts bench --serve") -> int:
    p = ArgumentParser(prog=prog, description="Load-test the server: continuous vs static batching.")
    p.add_argument("--requests", type=int, default=96)
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--slots", type=int, default=8)
    p.add_argument("--weights", type=Path, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    args = p.parse_args(argv)
    check_cli_ints(p, args, ("requests", "clients", "slots"))
    result = bench_serving(args.requests, args.clients, args.slots, args.weights, args.seed)
    print(f"{args.requests} streamed greedy requests, {args.clients} concurrent clients, {args.slots} slots; "
          f"max_tokens mostly 4-12, one in five 40-50")
    print(f"{'batching':11} {'tokens/s':>9} {'requests/s':>11} {'p50 s':>7} {'p99 s':>7} {'TTFT p50 s':>11} {'TTFT p99 s':>11}")
    for mode in ("continuous", "static"):
        r = result[mode]
        print(f"{mode:11} {r['tokens_per_s']:9.0f} {r['requests_per_s']:11.1f} {r['latency_p50_s']:7.3f} "
              f"{r['latency_p99_s']:7.3f} {r['ttft_p50_s']:11.3f} {r['ttft_p99_s']:11.3f}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {args.out}")
    return 0


# ---------------------------------------------------------------- loading a model and the command line

def load_model(weights: Path | None = None, run: Path | None = None) -> tuple[GPT, str]:
    """A model and its vocabulary from an .npz written by export.to_npz, or from a run's ckpt.pt."""
    if run is not None:
        from .config import ModelConfig
        from .checkpoint import load_checkpoint

        state = load_checkpoint(Path(run) / "ckpt.pt")
        model = GPT(ModelConfig.from_dict(state["model_config"]))
        model.load_state_dict(state["model"])
        return model.eval(), "".join(state["tokenizer_chars"])
    from .export import from_npz

    weights = Path(weights or DEFAULT_WEIGHTS)
    if not weights.is_file():
        raise FileNotFoundError(f"weights ({weights}) is not a file: pass --weights PATH.npz or --run runs/NAME")
    model, chars = from_npz(weights)
    if chars is None:
        raise ValueError(f"{weights} holds no vocabulary ('chars'); export it with to_npz(model, path, chars=...)")
    return model, chars


def build_parser(prog: str = "llmparts serve") -> ArgumentParser:
    p = ArgumentParser(prog=prog, description="Serve a char model over an OpenAI-compatible HTTP API.")
    p.add_argument("--weights", type=Path, default=None, help=f"an .npz from export.to_npz (default {DEFAULT_WEIGHTS})")
    p.add_argument("--run", type=Path, default=None, help="a run directory holding ckpt.pt, instead of --weights")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--slots", type=int, default=8, help="sequences decoded together (KV cache rows)")
    p.add_argument("--static", action="store_true", help="static batching: admit requests only into an empty batch")
    p.add_argument("--max_tokens_limit", type=int, default=None, help="largest max_tokens accepted (default block_size - 1)")
    p.add_argument("--threads", type=int, default=1, help="torch threads for the engine")
    p.add_argument("--step_delay", type=float, default=0.0, help="seconds to sleep after each step (to watch batching)")
    return p


def main(argv=None, prog: str = "llmparts serve") -> int:
    p = build_parser(prog)
    args = p.parse_args(argv)
    check_cli_ints(p, args, ("port", "slots", "threads"))
    if args.step_delay < 0:
        p.error(f"--step_delay ({args.step_delay}) must be >= 0")
    try:
        model, chars = load_model(args.weights, args.run)
    except (OSError, ValueError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    try:
        import uvicorn
    except ImportError:
        print(f"{prog}: error: serving needs FastAPI and uvicorn: pip install -e \".[serve]\"", file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)
    engine = Engine(model, n_slots=args.slots, continuous=not args.static, step_delay_s=args.step_delay)
    app = create_app(engine, chars, max_tokens_limit=args.max_tokens_limit)
    print(f"{prog}: {model.num_params():,} parameters, {args.slots} slots, "
          f"{'static' if args.static else 'continuous'} batching, http://{args.host}:{args.port}", flush=True)
    # uvicorn turns SIGINT/SIGTERM into a graceful shutdown, then raises the signal again once it is done;
    # by then every open request has finished, so let that second signal pass and exit 0.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: None)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", timeout_graceful_shutdown=30)
    print(f"{prog}: shut down after {engine.counts['completed']} completed and "
          f"{engine.counts['cancelled']} cancelled requests", flush=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["bench"]:
        sys.exit(bench_main(sys.argv[2:], prog="python -m llmparts.serve bench"))
    sys.exit(main(prog="python -m llmparts.serve"))
