# `make repro` brings every result up to date with the code and params (DVC reruns what is stale,
# never what a fresh clone merely lacks);
# `make repro-all` regenerates every result from scratch on this machine; `make test` runs the tests.
# The entries that run the study are aliases of `python -m replication VERB` (src/replication/cli/;
# `python -m replication --help` lists the verbs, `python -m replication VERB --help` their options).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export DVC_NO_ANALYTICS := 1
export PATH := $(CURDIR)/$(BIN):$(PATH)
# STAGE and SET reach the shell only as environment variables ("$$STAGE"), never as recipe text: a
# value such as `x;touch FILE` stays one argument, which the verbs check (STAGE after `--`, so that even
# one starting with a dash is a stage's name). So does the repository's own path ("$$PWD", never
# $(CURDIR) in a recipe): a clone in a folder named `p $(touch FILE) q` runs nothing.
export STAGE SET

# Before anything reads params.yaml or analysis/stage_two.yaml (every DVC command does: dvc.yaml's
# foreach and vars): no file the pipeline or a tool reads or writes leads out of the repository through
# a symlink, both files pass the config check (DVC's own YAML reader expands an alias bomb without end),
# and the committed results parse, their times in range (src/replication/cli/check.py).
CHECK := $(BIN)/python -m replication check

.PHONY: setup repro exp status repro-all repro-stage relock compare readme smoke bench test test-fast browser clean-venv

setup: $(VENV)/.installed

$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $@

# On a clone without DVC's cache (datasets, checkpoints) it reruns only what an edit changed, and
# retrains what the clone lacks only with RETRAIN=1 (src/replication/cli/repro.py says which stages and
# how long).
repro: setup
	$(CHECK)
	$(BIN)/python -m replication repro $(if $(RETRAIN),--retrain)
	$(BIN)/python -m replication readme
	@echo "Report: $$PWD/reports/report.html"

# An experiment behind the same guard: `make exp SET=evaluate.probe_steps=1000` (several: SET="a=1 b=2")
# plans `dvc exp run -S` with params.yaml put back afterwards, and runs it only when it retrains
# nothing this clone lacks, or with RETRAIN=1 (src/replication/cli/repro.py).
exp: setup
	$(CHECK)
	$(BIN)/python -m replication exp --set="$$SET" $(if $(RETRAIN),--retrain)

# What is truly stale, in a few lines (`dvc status` lists every file a clone lacks); runs nothing.
status: setup
	$(CHECK)
	$(BIN)/python -m replication status

# Every stage, whether stale or not (dvc repro -f): the documents' examples too. Records the time
# in reports/repro_timing.json with this CPU's model; `make compare` then lists what moved.
repro-all: setup
	$(CHECK)
	$(BIN)/python -m replication repro-all
	$(BIN)/python -m replication readme
	@echo "Report: $$PWD/reports/report.html; compare with the committed results: make compare"

# One stage from scratch (dvc repro -f -s), timed into reports/stage_times.json with this CPU's
# model: a long run done stage by stage, e.g. `make repro-stage STAGE=pretrain@head` (`dvc stage list`
# names them; src/replication/cli/timing.py refuses any other STAGE, an empty one included).
repro-stage: setup
	$(CHECK)
	$(BIN)/python -m replication repro-stage -- "$$STAGE"

# A code edit that changes no result (a check, a docstring, a module moved): record the new code
# hashes in dvc.lock without rerunning (src/replication/cli/relock.py; stages with any other change stay
# stale).
relock: setup
	$(CHECK)
	$(BIN)/python -m replication relock --write

# Verdict changes and effect shifts of reports/claims.json against the committed one.
compare: setup
	$(BIN)/python -m replication compare

# Refresh README's measured figures and pipeline diagram from the pipeline's files.
readme: setup
	$(CHECK)
	$(BIN)/python -m replication readme

# The whole chain with tiny budgets, in a temporary copy (never touches this tree's results).
smoke: setup
	$(BIN)/python -m pytest -q tests/test_pipeline.py tests/test_pipeline_reruns.py tests/test_pipeline_checks.py

# Benchmarks (benchmarks/*.py print ratios measured side by side, and write reports/benchmarks/),
# then README's table. Needs an up-to-date pipeline (make repro); the throughput benchmark reads
# the article's script from ../shared/seeds and says so when it is absent. About 15 minutes.
bench: setup
	$(BIN)/pip install --quiet --disable-pip-version-check -r benchmarks/requirements.txt
	$(BIN)/python benchmarks/losses.py
	$(BIN)/python benchmarks/augment.py
	$(BIN)/python benchmarks/flops.py
	$(BIN)/python benchmarks/bf16.py
	$(BIN)/python benchmarks/throughput.py
	$(BIN)/python benchmarks/pipeline.py
	$(BIN)/python benchmarks/evaluation.py
	$(BIN)/python benchmarks/evaluation_cost.py
	$(BIN)/python -m replication readme

# Debian's chromium, for the test that opens the report in a real browser (needs root and apt).
browser:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || \
	  echo "chromium not installed: the browser test will be skipped"; }

# Two workers, one per core; a file's tests stay on one worker so its fixtures build once.
test: setup browser
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

test-fast: setup
	$(BIN)/python -m pytest -q -m "not slow"

clean-venv:
	rm -rf $(VENV)
