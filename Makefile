# From GPT to LLaMA — one entry point for learners, contributors and CI.
# `make test` is the README's test command; `make reproduce` regenerates results/ and images/.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
TORCH_VERSION ?= 2.13.0
# Where pip looks for torch: empty is pip's own configuration (here a local CPU wheel); the GitHub
# workflows pass https://download.pytorch.org/whl/cpu so that they get the CPU build, not the CUDA one.
TORCH_INDEX_URL ?=
# System packages (Chromium, a CJK font, npm) are checked by one script, which installs what is missing
# where this machine allows it (apt-get as root or with password-less sudo) and otherwise stops with one
# line naming the command to run.
SYSTEM_DEPS := $(PY) scripts/system_deps.py
# `SKIP_BROWSER=1 make test` runs without Chromium, by choice; pytest's summary then says so.
BROWSER_DEPS := $(if $(filter 1,$(SKIP_BROWSER)),,chromium)
# The dataset is data/tinyshakespeare/input.txt, in the repository; $$TINYSHAKESPEARE, when you set it,
# overrides it. Nothing is exported from here: a path that does not exist must never reach the code.

run_name ?= default
args ?=

.PHONY: help venv system-deps pyodide-assets quarto site preview test test-fast train sample reproduce smoke bench clean

help:
	@echo "make test        create .venv, get Chromium, a CJK font and npm, run every test"
	@echo "                 (SKIP_BROWSER=1 make test: every test but the browser ones, said in the summary)"
	@echo "make reproduce   run every experiment, then write results/, images/ and tables"
	@echo "make smoke       the whole pipeline at tiny scale (minutes)"
	@echo "make bench       speed benchmarks (training, generation, NumPy, browser)"
	@echo "make site        render both editions of the book with Quarto 1.8.27 into _site/zh and _site/en"
	@echo "make preview lang=zh   render one edition and serve it on http://127.0.0.1:4848/"
	@echo "make train run_name=NAME args=\"--use_rmsnorm ...\"   train one model into runs/NAME"

# torch is installed first and pinned: a bare `torch` requirement would pull a multi-GB CUDA build.
$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==$(TORCH_VERSION) $(if $(TORCH_INDEX_URL),--index-url $(TORCH_INDEX_URL))
	$(PIP) install -q -e ".[test]"
	touch $@

venv: $(VENV)/.installed

# What the tests need from the system: Chromium (unless SKIP_BROWSER=1), the CJK font of the zh figures, npm.
system-deps: venv
	$(SYSTEM_DEPS) $(BROWSER_DEPS) cjk-font npm

# Offline Pyodide 0.27.7 for the browser tests, verified against the official lock file (cached in build/).
pyodide-assets: venv
	$(SYSTEM_DEPS) npm
	$(PY) scripts/build_pyodide_assets.py

test: venv system-deps pyodide-assets $(if $(filter 1,$(SKIP_BROWSER)),,quarto)
	$(PY) -m pytest -q

test-fast: venv
	$(SYSTEM_DEPS) cjk-font
	$(PY) -m pytest -q -m "not browser and not slow"

train: venv
	$(PY) -m llmparts.train --out_dir runs/$(run_name) $(args)

sample: venv
	$(PY) -m llmparts.cli sample --run runs/$(run_name) $(args)

reproduce: venv
	$(SYSTEM_DEPS) cjk-font
	$(PY) -m llmparts.cli reproduce $(args)

smoke: venv
	$(SYSTEM_DEPS) cjk-font
	$(PY) -m llmparts.cli reproduce --smoke --out_dir build/smoke $(args)

bench: venv pyodide-assets
	$(SYSTEM_DEPS) chromium
	$(PY) -m llmparts.cli bench $(args)
	$(PY) scripts/bench_browser.py

# The book. Quarto 1.8.27 (the version the workflows pin) is found or installed by book/find_quarto.py:
# on PATH, else the offline build of ../shared/tools/quarto into build/quarto, else PyPI's quarto-cli.
# book/website.py needs only the standard library, so `make site` works without the venv too.
SITE_PY = $(if $(wildcard $(PY)),$(PY),$(PYTHON))
lang ?= zh

quarto:
	@$(SITE_PY) book/find_quarto.py >/dev/null

site:
	$(SITE_PY) book/website.py render

preview:
	$(SITE_PY) book/website.py preview --lang $(lang)

clean:
	rm -rf build _site .pytest_cache .hypothesis
