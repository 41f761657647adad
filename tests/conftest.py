"""Shared fixtures: the 24 model variants and a re-init to weights of ordinary scale; SKIP_BROWSER=1."""

import itertools
import os

import pytest
import torch

SWITCHES = ("use_rmsnorm", "use_swiglu", "use_rope")
N_KV_HEAD = {"mha": 4, "gqa": 2, "mqa": 1}  # with n_head = 4


def _variants():
    for on in itertools.product((False, True), repeat=len(SWITCHES)):
        for attention, n_kv_head in N_KV_HEAD.items():
            names = ("rms" if on[0] else "ln", "swiglu" if on[1] else "mlp", "rope" if on[2] else "learned")
            yield "-".join(names + (attention,)), dict(zip(SWITCHES, on), n_head=4, n_kv_head=n_kv_head)


def pytest_generate_tests(metafunc):
    """A test that takes `variant` runs for every switch combination x {MHA, GQA, MQA}: 8 x 3 = 24 configs."""
    if "variant" in metafunc.fixturenames:
        ids, variants = zip(*_variants())
        metafunc.parametrize("variant", variants, ids=ids)


def reinit_ordinary_scale(model: torch.nn.Module, std: float = 0.3, seed: int = 0) -> torch.nn.Module:
    """Every parameter ~ N(0, std), norm weights ~ N(1, std): the 0.02 init is so small that q.k barely
    depends on position, which would hide a wrong RoPE."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            mean = 1.0 if "norm" in name and name.endswith("weight") else 0.0
            p.copy_(torch.randn(p.shape, generator=g) * std + mean)
    return model.eval()


@pytest.fixture
def ordinary_scale():
    return reinit_ordinary_scale


# ---------------------------------------------------------------- SKIP_BROWSER=1
# The browser tests run by default and fail when Chromium is missing; not running them is an explicit
# choice, `SKIP_BROWSER=1 make test`, and the end of the run says how many were left out.
BROWSER_SKIPPED = pytest.StashKey[int]()


def skip_browser_requested() -> bool:
    value = os.environ.get("SKIP_BROWSER", "")
    if value not in ("", "0", "1"):
        raise pytest.UsageError(f"SKIP_BROWSER ({value!r}) must be 1 (skip the browser tests), 0 or unset")
    return value == "1"


def pytest_collection_modifyitems(config, items):
    if skip_browser_requested():
        browser = [item for item in items if item.get_closest_marker("browser")]
        for item in browser:
            item.add_marker(pytest.mark.skip(reason="SKIP_BROWSER=1: browser test not run"))
        config.stash[BROWSER_SKIPPED] = len(browser)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)  # outermost: after the short summary, above the counts
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    yield
    if BROWSER_SKIPPED in config.stash:
        terminalreporter.write_line(f"SKIP_BROWSER=1: {config.stash[BROWSER_SKIPPED]} browser tests were not run",
                                    yellow=True, bold=True)
