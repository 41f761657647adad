"""serve.py: the engine's continuous batching, request checking, and the real server on a free 127.0.0.1 port."""

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from llmparts import numpy_serving as ns
from llmparts import serve
from llmparts.export import from_npz

torch.set_num_threads(1)
BOOK_WEIGHTS = Path("results/weights/char_llama.npz")


@pytest.fixture(scope="module")
def book_model():
    return from_npz(BOOK_WEIGHTS)


# ---------------------------------------------------------------- the engine, without HTTP

def run_engine(engine, requests, timeout=60):
    for r in requests:  # all queued before the engine starts: the schedule does not depend on thread timing
        engine.submit(r)
    engine.start()
    try:
        deadline = time.time() + timeout
        while any(r.finish_reason is None for r in requests):
            assert time.time() < deadline, "the engine did not finish in time"
            time.sleep(0.005)
    finally:
        engine.stop()


def test_engine_greedy_outputs_equal_generating_each_prompt_alone(book_model):
    model, chars = book_model
    prompts = ["ROMEO:", "First Citizen:\nWe", "O", "KING RICHARD III:\nNow is"]
    requests = [serve.Request([chars.index(c) for c in p], 20 + 5 * i, temperature=0) for i, p in enumerate(prompts)]
    run_engine(serve.Engine(model, n_slots=2), requests)
    for r in requests:
        alone = model.generate(torch.tensor([r.prompt_ids]), r.max_tokens, temperature=0)[0].tolist()
        assert r.prompt_ids + r.generated == alone and r.finish_reason == "length"


@pytest.mark.parametrize("continuous", [True, False])
def test_continuous_batching_admits_into_a_freed_slot_and_static_batching_waits_for_the_whole_batch(continuous,
                                                                                                   book_model):
    model, _ = book_model
    long, short, third = (serve.Request([1, 2, 3], n, temperature=0) for n in (40, 5, 5))
    engine = serve.Engine(model, n_slots=2, continuous=continuous)
    run_engine(engine, [long, short, third])
    assert long.admitted_at_step == short.admitted_at_step == 0
    if continuous:
        assert third.admitted_at_step == short.finished_at_step < long.finished_at_step
    else:
        assert third.admitted_at_step == long.finished_at_step > short.finished_at_step


@pytest.mark.parametrize("continuous", [True, False])
def test_the_numpy_simulation_predicts_the_engines_schedule_step_for_step(continuous, book_model):
    model, _ = book_model
    lengths = [17, 3, 1, 9, 30, 2, 5, 12, 1, 8]
    requests = [serve.Request([5, 6], n, temperature=0) for n in lengths]
    run_engine(serve.Engine(model, n_slots=3, continuous=continuous), requests)
    admitted, finished = ns.simulate_batching(lengths, n_slots=3, continuous=continuous)
    assert admitted == [r.admitted_at_step for r in requests]
    assert finished == [r.finished_at_step for r in requests]


def test_simulated_continuous_batching_beats_static_on_a_mix_of_short_and_long_requests():
    lengths = serve.request_lengths(200, seed=0)
    arrivals = [i // 4 for i in range(200)]  # four requests arrive before every step
    on = ns.batching_summary(lengths, *ns.simulate_batching(lengths, 8, True, arrivals), arrivals)
    off = ns.batching_summary(lengths, *ns.simulate_batching(lengths, 8, False, arrivals), arrivals)
    assert on["tokens_per_step"] > off["tokens_per_step"] and on["latency_p50"] < off["latency_p50"]
    assert (sum(lengths) - 200) / on["steps"] <= 8  # decode steps: one token per slot (prompt passes give the rest)


def test_a_cancelled_request_frees_its_slot_at_the_next_step(book_model):
    model, _ = book_model
    engine = serve.Engine(model, n_slots=1, step_delay_s=0.01)
    first, second = serve.Request([1, 2], 60, temperature=0), serve.Request([3], 4, temperature=0)
    engine.start()
    try:
        engine.submit(first)
        engine.submit(second)
        while len(first.generated) < 3:
            time.sleep(0.002)
        engine.cancel(first)
        while second.finish_reason is None:
            time.sleep(0.002)
    finally:
        engine.stop()
    assert first.finish_reason == "cancelled" and len(first.generated) < 60
    assert second.finish_reason == "length" and engine.counts["cancelled"] == 1


# ---------------------------------------------------------------- request checking

CHARS = "\n !abc"


@pytest.mark.parametrize("body, message", [
    (b"{not json", "the body is not valid JSON (Expecting property name enclosed in double quotes: "
                   "line 1 column 2 (char 1))"),
    (b"[1, 2]", "the body must be a JSON object, got list"),
    (b'{"prompt": "a", "best_of": 2}', "unknown fields ['best_of']; this server accepts ['max_tokens', 'model', "
                                       "'prompt', 'seed', 'stream', 'temperature', 'top_k', 'top_p']"),
    (b'{"prompt": ""}', "prompt ('') must be a non-empty string"),
    (b'{"prompt": "abz\\u00e9"}', "prompt holds characters outside the model's vocabulary: ['z', '\u00e9'] "
                                  "(it knows 6 characters)"),
    (b'{"prompt": "a", "temperature": -0.5}', "temperature (-0.5) must be a number >= 0 (0 means greedy)"),
    (b'{"prompt": "a", "top_p": 1.5}', "top_p (1.5) must be in (0, 1]"),
    (b'{"prompt": "a", "top_p": 0}', "top_p (0) must be in (0, 1]"),
    (b'{"prompt": "a", "max_tokens": 64}', "max_tokens (64) must be at most 63"),
    (b'{"prompt": "abc", "max_tokens": 62}', "prompt (3 characters) + max_tokens (62) = 65 exceeds the model's "
                                             "context of 64 characters"),
    (b'{"prompt": "a", "max_tokens": 0}', "max_tokens (0) must be a positive integer"),
    (b'{"prompt": "a", "stream": "yes"}', "stream ('yes') must be true or false"),
])
def test_bad_requests_get_one_message_naming_the_value_and_the_rule(body, message):
    with pytest.raises(serve.BadRequest) as e:
        serve.parse_request(body, CHARS, block_size=64, max_tokens_limit=63)
    assert str(e.value) == message


# ---------------------------------------------------------------- the real server

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(*args):
    port = free_port()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "llmparts.serve", "--port", str(port), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        assert proc.poll() is None, proc.stdout.read()
        try:
            if get(port, "/health")[0] == 200:
                return proc, port
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("the server did not come up in 60 s")


def stop_server(proc):
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()


def get(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", path)
    response = conn.getresponse()
    return response.status, json.loads(response.read())


def post(port, body):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/v1/completions", body=body if isinstance(body, bytes) else json.dumps(body),
                 headers={"Content-Type": "application/json"})
    return conn, conn.getresponse()


def stream_events(response):
    """The JSON payloads of an SSE stream, up to and including the [DONE] marker."""
    events = []
    for line in response:
        line = line.decode().strip()
        if line.startswith("data: "):
            events.append(line[len("data: "):])
            if events[-1] == "[DONE]":
                break
    return events


@pytest.fixture(scope="module")
def server():
    proc, port = start_server("--slots", "4", "--step_delay", "0.01")
    yield port
    assert stop_server(proc) == 0


@pytest.mark.slow
def test_health_reports_the_model_and_its_slots(server):
    status, body = get(server, "/health")
    assert status == 200 and body["status"] == "ok" and body["slots"] == 4 and body["continuous_batching"] is True


@pytest.mark.slow
def test_a_greedy_completion_is_the_models_greedy_text_and_streaming_sends_the_same_text(server, book_model):
    model, chars = book_model
    prompt = "ROMEO:\n"
    expected = model.generate(torch.tensor([[chars.index(c) for c in prompt]]), 30, temperature=0)[0].tolist()
    _, response = post(server, {"prompt": prompt, "max_tokens": 30, "temperature": 0})
    body = json.loads(response.read())
    assert response.status == 200 and body["object"] == "text_completion"
    assert body["choices"][0]["text"] == "".join(chars[t] for t in expected[len(prompt):])
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"] == {"prompt_tokens": 7, "completion_tokens": 30, "total_tokens": 37}
    _, response = post(server, {"prompt": prompt, "max_tokens": 30, "temperature": 0, "stream": True})
    assert response.status == 200 and response.getheader("content-type").startswith("text/event-stream")
    events = stream_events(response)
    assert events[-1] == "[DONE]" and len(events) == 30 + 2
    chunks = [json.loads(e)["choices"][0] for e in events[:-1]]
    assert "".join(c["text"] for c in chunks) == body["choices"][0]["text"]
    assert chunks[-1]["finish_reason"] == "length"


@pytest.mark.slow
def test_sampling_with_a_seed_is_repeatable_over_http(server):
    request = {"prompt": "JULIET:", "max_tokens": 25, "temperature": 0.9, "top_p": 0.9, "top_k": 20, "seed": 7}
    texts = [json.loads(post(server, request)[1].read())["choices"][0]["text"] for _ in range(2)]
    assert texts[0] == texts[1] and len(texts[0]) == 25


@pytest.mark.slow
@pytest.mark.parametrize("body, param, message_start", [
    (b"{oops", None, "the body is not valid JSON"),
    ({"prompt": "a", "n": 2}, "n", "unknown fields ['n']"),
    ({"prompt": "a", "temperature": -1}, "temperature", "temperature (-1) must be a number >= 0"),
    ({"prompt": "a", "top_p": 1.5}, "top_p", "top_p (1.5) must be in (0, 1]"),
    ({"prompt": "a", "max_tokens": 1000}, "max_tokens", "max_tokens (1000) must be at most 63"),
    ({"prompt": "caf\u00e9 \u4f60"}, "prompt", "prompt holds characters outside the model's vocabulary: ['\u00e9', "
                                               "'\u4f60']"),
])
def test_bad_input_gets_a_400_with_the_message_in_openai_error_form(server, body, param, message_start):
    _, response = post(server, body)
    error = json.loads(response.read())["error"]
    assert response.status == 400 and error["type"] == "invalid_request_error" and error["param"] == param
    assert error["message"].startswith(message_start)


@pytest.mark.slow
def test_a_client_that_disconnects_mid_stream_frees_its_slot(server):
    _, before = get(server, "/health")
    conn, response = post(server, {"prompt": "a", "max_tokens": 60, "temperature": 0, "stream": True})
    response.readline()  # the first event has arrived: the request holds a slot
    conn.sock.shutdown(socket.SHUT_RDWR)
    conn.close()
    deadline = time.time() + 10  # 60 tokens would take > 0.6 s at 0.01 s a step
    while True:
        _, health = get(server, "/health")
        if health["cancelled"] == before["cancelled"] + 1:
            break
        assert time.time() < deadline, health
        time.sleep(0.02)
    assert health["active"] == 0 and health["completed"] == before["completed"]


@pytest.mark.slow
def test_shutdown_lets_an_open_stream_finish_then_exits_0():
    proc, port = start_server("--slots", "2", "--step_delay", "0.02")
    try:
        _, response = post(port, {"prompt": "a", "max_tokens": 50, "temperature": 0, "stream": True})
        assert response.readline().startswith(b"data: ")  # the first token is out: the request is mid-stream
        proc.send_signal(signal.SIGTERM)
        events = stream_events(response)
        assert events[-1] == "[DONE]" and len(events) == 49 + 2  # the other 49 tokens, the finish, [DONE]
        assert json.loads(events[-2])["choices"][0]["finish_reason"] == "length"
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.slow
def test_the_load_test_receives_every_token_it_asked_for_and_orders_its_percentiles(server):
    result = serve.load_test(server, n_requests=10, n_clients=4, seed=1)
    assert result["tokens"] == sum(serve.request_lengths(10, seed=1)) and result["requests"] == 10
    assert 0 < result["ttft_p50_s"] <= result["latency_p50_s"] <= result["latency_p99_s"]


def test_request_lengths_are_repeatable_and_mostly_short():
    lengths = serve.request_lengths(200, seed=0)
    assert lengths == serve.request_lengths(200, seed=0)
    assert all(4 <= n <= 12 or 40 <= n <= 50 for n in lengths)
    assert 0.1 < sum(n >= 40 for n in lengths) / 200 < 0.3


@pytest.mark.parametrize("args, message", [
    (["--weights", "no/such.npz"], "error: weights (no/such.npz) is not a file: pass --weights PATH.npz or --run runs/NAME"),
    (["--slots", "0"], "error: --slots (0) must be a positive integer"),
])
def test_serve_usage_errors_exit_2_with_one_line(args, message):
    out = subprocess.run([sys.executable, "-m", "llmparts.cli", "serve", *args], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 2 and out.stderr.strip() == f"llmparts serve: {message}"


def test_llmparts_bench_serve_is_the_load_test_and_checks_its_counts(capsys):
    from llmparts import cli

    with pytest.raises(SystemExit) as e:
        cli.main(["bench", "--serve", "--requests", "0"])
    assert e.value.code == 2
    assert capsys.readouterr().err.strip() == "llmparts bench --serve: error: --requests (0) must be a positive integer"


def test_the_engine_refuses_a_request_longer_than_a_cache_slot(book_model):
    model, _ = book_model
    with pytest.raises(ValueError) as e:
        serve.Engine(model).submit(serve.Request([1] * 60, 5))
    assert str(e.value) == ("prompt (60) + max_tokens (5) = 65 must be between 2 and block_size (64), "
                            "the cache slot's capacity")
