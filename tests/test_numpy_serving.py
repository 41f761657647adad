"""numpy_serving.py runs in the browser: it must never import torch (its numbers are tested beside the
PyTorch modules, in tests/test_sampling.py, test_batching.py and test_quantize.py)."""

import subprocess
import sys


def test_importing_numpy_serving_does_not_import_torch():
    code = "import sys, llmparts.numpy_serving; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------- the batching simulator (chapter 06)

import random  # noqa: E402

import pytest  # noqa: E402

from llmparts import numpy_serving as ns  # noqa: E402


def test_a_closed_loop_of_two_clients_on_two_slots_by_hand():
    # Requests want 3, 1 and 2 tokens; clients 1 and 2 send requests 0 and 1 at once. Request 1's prompt pass
    # gives its only token at step 0, so its client sends request 2, which the engine admits before step 1
    # (continuous) or only once request 0 has left the batch at step 2 (static); its prompt pass gives its
    # first token, one decode step its second.
    assert ns.simulate_batching([3, 1, 2], 2, continuous=True, n_clients=2) == ([0, 0, 1], [2, 0, 2])
    assert ns.simulate_batching([3, 1, 2], 2, continuous=False, n_clients=2) == ([0, 0, 2], [2, 0, 3])
    assert ns.client_arrivals([2, 0, 2], 2) == [0, 0, 0]


def test_a_closed_loop_with_a_client_per_request_is_the_load_that_arrives_at_once():
    lengths = [5, 1, 9, 3, 3, 12, 2]
    for continuous in (True, False):
        assert ns.simulate_batching(lengths, 3, continuous, n_clients=7) == ns.simulate_batching(lengths, 3, continuous)


def test_one_client_sends_each_request_when_the_last_one_ends():
    admitted, finished = ns.simulate_batching([4, 2, 3], 4, n_clients=1)
    assert ns.client_arrivals(finished, 1) == [0, finished[0], finished[1]]
    assert admitted == [0, finished[0], finished[1]]  # an idle engine admits it before its next step
    assert finished == [3, 3 + 2 - 1, 4 + 3 - 1]  # the prompt pass gives the first token, each step one more


@pytest.mark.parametrize("load", ["at once", "open", "closed loop"])
def test_continuous_batching_never_finishes_a_request_later_than_static_batching(load):
    for trial in range(200):
        rng = random.Random(trial)
        n = rng.randint(1, 30)
        lengths = [rng.randint(1, 20) for _ in range(n)]
        kwargs = {"at once": {}, "open": {"arrivals": sorted(rng.randint(0, 40) for _ in range(n))},
                  "closed loop": {"n_clients": rng.randint(1, 10)}}[load]
        slots = rng.randint(1, 6)
        _, on = ns.simulate_batching(lengths, slots, True, **kwargs)
        _, off = ns.simulate_batching(lengths, slots, False, **kwargs)
        assert all(a <= b for a, b in zip(on, off)), (lengths, slots, kwargs)


def test_with_one_slot_static_and_continuous_batching_are_the_same_schedule():
    lengths = [7, 2, 30, 1, 4]
    assert ns.simulate_batching(lengths, 1, True, n_clients=3) == ns.simulate_batching(lengths, 1, False, n_clients=3)


@pytest.mark.parametrize("kwargs, message", [
    ({"arrivals": [0, 0], "n_clients": 2}, "give arrivals (an open load) or n_clients (a closed loop), not both"),
    ({"n_clients": 0}, "n_clients (0) must be a positive integer"),
    ({"n_clients": True}, "n_clients (True) must be a positive integer"),
])
def test_the_simulators_bad_load_gets_one_message(kwargs, message):
    with pytest.raises(ValueError) as e:
        ns.simulate_batching([3, 4], 2, **kwargs)
    assert str(e.value) == message
