# The two commands of the quickstart work on a fresh machine with only Python:
#   make run    create .venv, install, run the whole pipeline on bundled tiny data
#   make test   install what the tests need, start the Docker engine, run pytest (all but -m gpu)
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
M1 := $(VENV)/bin/m1
export PREFECT_SERVER_ANALYTICS_ENABLED := false
# Every flow run's log lines go to the Prefect API (Prefect's default), so the UI shows them on the run's
# page. They were switched off here from the project's first commit, with no reason recorded; the one
# symptom of having them on was "--- Error logging to API ---" on the terminal when Ctrl-C killed the
# temporary Prefect server before the last batch was sent, which flows/interrupts.py no longer lets happen.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
PYTEST_ARGS ?=

.PHONY: run test test-fast bench bench-compare services lint clean mutation

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,dist,logic,swe,bench]'
	touch $@

# What the default DAG's subflows need from the machine (flows/prerequisites.py), installed exactly as
# `services` does: the process sandbox (code tasks) and the Docker engine (SWE tasks; the sandbox base
# image is built once, a few minutes). tests/foundation/test_prerequisites.py keeps this list equal to
# what `m1 run` checks, which fails in its first seconds, naming these commands, when one is missing.
run: $(VENV)/.installed
	bash scripts/sandbox-tools.sh
	bash scripts/docker-engine.sh
	$(M1) run

# Docker, PostgreSQL and the browser may be impossible on a machine: their scripts say why and the tests
# that need them skip with that reason, unless M1_REQUIRE_DOCKER/_POSTGRES/_BROWSER=1 (set by .ci/run).
services: $(VENV)/.installed
	bash scripts/sandbox-tools.sh
	bash scripts/docker-engine.sh
	bash scripts/postgres.sh
	bash scripts/ui-tools.sh || { [ "$${M1_REQUIRE_BROWSER:-0}" != 1 ] && \
		echo "ui-tools failed: tests/ui's browser test will say why and skip"; }

test: $(VENV)/.installed services
	$(PY) -m pytest -m "not gpu" $(PYTEST_ARGS)

test-fast: $(VENV)/.installed
	$(PY) -m pytest -m "not gpu and not slow and not docker" $(PYTEST_ARGS)

# Every bench `m1 bench list` knows (BENCHES="dedup verify" for some), BENCH_RUNS times each: each run
# appends a record to flows/bench/history/NAME.jsonl (commit, machine, load, figures), and the report at
# the end prints each figure beside the previous commit's on this machine, marking those that moved
# beyond their run-to-run spread (which needs a version run at least twice: BENCH_RUNS=3 measures it).
# A failing bench is recorded, the others still run, and `make bench` fails at the end.
# `make bench-compare REV=<commit>` runs the benches at REV and here in turns (BENCH_RUNS rounds, at least 3).
BENCHES ?= $(shell $(M1) bench list)
BENCH_RUNS ?= 1
REV ?= HEAD~1
bench: $(VENV)/.installed services
	status=0; for i in $$(seq $(BENCH_RUNS)); do for b in $(BENCHES); do \
		echo "== m1 bench $$b (run $$i of $(BENCH_RUNS))"; $(M1) bench $$b || status=1; done; done; \
	$(M1) bench report $(BENCHES); exit $$status

bench-compare: $(VENV)/.installed services
	$(M1) bench compare $(REV) $(BENCHES) --rounds $$(( $(BENCH_RUNS) < 3 ? 3 : $(BENCH_RUNS) ))

# Mutation testing with mutmut 3, one package at a time against its fast tests, then a kill-rate table
# (scripts/MUTATION_RESULTS.md). Not part of `test` or CI: it takes tens of minutes per package. Pick
# packages with MUTATION_PACKAGES="store rl"; MUTATION_MINUTES caps each run (rerun to continue);
# MUTATION_SAMPLE=2000 runs a seeded uniform sample of the unchecked mutants instead of all of them.
MUTATION_PACKAGES ?=
MUTATION_MINUTES ?=
MUTATION_SAMPLE ?=
mutation: $(VENV)/.installed
	$(PY) -m pip install -q -e '.[mutation]'
	$(PY) scripts/mutation.py $(MUTATION_PACKAGES) $(if $(MUTATION_MINUTES),--minutes $(MUTATION_MINUTES)) \
		$(if $(MUTATION_SAMPLE),--sample $(MUTATION_SAMPLE))

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache

clean:
	rm -rf $(VENV) .m1 .pytest_cache
