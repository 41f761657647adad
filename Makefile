# From GPT to LLaMA — one entry point for learners, contributors and CI.
# `make test` is the README's test command; `make reproduce` regenerates results/ and images/.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
TORCH_VERSION ?= 2.13.0
export TINYSHAKESPEARE ?= $(abspath data/tinyshakespeare/input.txt)

run_name ?= default
args ?=

.PHONY: help venv pyodide-assets test test-fast train sample reproduce smoke bench clean

help:
	@echo "make test        create .venv, install, run every test"
	@echo "make reproduce   run every experiment, then write results/, images/ and tables"
	@echo "make smoke       the whole pipeline at tiny scale (minutes)"
	@echo "make bench       speed benchmarks (training, generation, NumPy, browser)"
	@echo "make train run_name=NAME args=\"--use_rmsnorm ...\"   train one model into runs/NAME"

# torch is installed first and pinned: a bare `torch` requirement would pull a multi-GB CUDA build.
$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==$(TORCH_VERSION)
	$(PIP) install -q -e ".[test]"
	touch $@

venv: $(VENV)/.installed

# Offline Pyodide 0.27.7 for the browser tests, verified against the official lock file (cached in build/).
pyodide-assets: venv
	$(PY) scripts/build_pyodide_assets.py

test: venv pyodide-assets
	$(PY) -m pytest -q

test-fast: venv
	$(PY) -m pytest -q -m "not browser and not slow"

train: venv
	$(PY) -m llmparts.train --out_dir runs/$(run_name) $(args)

sample: venv
	$(PY) -m llmparts.cli sample --run runs/$(run_name) $(args)

reproduce: venv
	$(PY) -m llmparts.cli reproduce $(args)

smoke: venv
	$(PY) -m llmparts.cli reproduce --smoke --out_dir build/smoke $(args)

bench: venv pyodide-assets
	$(PY) -m llmparts.cli bench $(args)
	$(PY) scripts/bench_browser.py

clean:
	rm -rf build .pytest_cache .hypothesis
