# Two set-up commands (see README): `make run` and `make test`.
# The virtual environment is isolated from system site-packages.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: run test test-frameworks docs bench mutate mutate-sample wheel-check clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $@

run: $(VENV)/.installed
	$(BIN)/optimus-calc plan llama70b --nodes 2

# Two workers (pytest-xdist, a test dependency): the suite is CPU-bound Python. Each test module
# runs on one worker, and tests that share an expensive fixture across modules carry an
# xdist_group mark and run on one worker (--dist loadgroup; tests/conftest.py names the groups).
TEST_JOBS ?= 2

# Bytecode is cached (an environment's PYTHONDONTWRITEBYTECODE is overridden for the test run):
# the suite starts ~40 fresh `python -m optimus_calc` processes, each of which would otherwise
# compile the package from source again.
test: $(VENV)/.installed
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n $(TEST_JOBS) --dist loadgroup

# The documentation site (docs/, mkdocs.yml) into site/; `make test` builds it with --strict too.
docs: $(VENV)/.installed
	$(BIN)/python -m mkdocs build --strict

# The exports checked by each framework's own code (tests/test_framework_parsers.py): DeepSpeed,
# torchtitan and megatron-core from PyPI in an environment of their own (pins and reasons in
# tests/requirements-frameworks.txt). OPTIMUS_FRAMEWORKS_REQUIRED=1 turns a framework that does not
# import into a failure, not a skip. Megatron-LM's argument parser needs its source tree, which no
# package serves: tests/test_megatron_checkout.py, outside CI (docs/frameworks.md). CI runs this
# after `make test` (.ci/run).
FRAMEWORKS_VENV ?= .venv-frameworks

$(FRAMEWORKS_VENV)/.installed: pyproject.toml tests/requirements-frameworks.txt
	$(PYTHON) -m venv $(FRAMEWORKS_VENV)
	$(FRAMEWORKS_VENV)/bin/python -m pip install --quiet -r tests/requirements-frameworks.txt \
		-e '.[test]'
	@touch $@

test-frameworks: $(FRAMEWORKS_VENV)/.installed
	OPTIMUS_FRAMEWORKS_REQUIRED=1 PYTHONDONTWRITEBYTECODE= $(FRAMEWORKS_VENV)/bin/python -m pytest \
		-p no:xdist -W ignore::UserWarning -rs tests/test_framework_parsers.py \
		tests/test_framework_parsers_dtypes.py tests/test_framework_parsers_pipe.py \
		tests/test_framework_parsers_moe.py

# BASE / RELEASE: the commits issue 35's targets are paired against (benchmarks/targets.py);
# every row, the test suite's CPU against BASE's included (two runs of the suite: minutes).
BASE ?= 2691995
RELEASE ?= a7cc365

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/run.py
	$(BIN)/python benchmarks/targets.py --base $(BASE) --release $(RELEASE) --tests --write docs/speed.md

# Mutation testing of frameworks/, search/, analyses/, evaluate/ and the compiled equations
# (pyproject [tool.mutmut]); not part of `make test`. 23,014 mutants (2026-11-26): many hours on
# 2 cores; results stay in mutants/ (git-ignored) and a second run only tests mutants without a
# result (`mutmut run NAME...` re-tests the ones named). MUTATE_JOBS workers in parallel.
MUTATE_JOBS ?= 2

$(VENV)/.mutate-installed: $(VENV)/.installed pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[test,mutate]'
	@touch $@

mutate: $(VENV)/.mutate-installed
	$(BIN)/mutmut run --max-children $(MUTATE_JOBS)
	$(BIN)/mutmut results

# A seeded sample of the same mutants, MUTATE_PER_DIR from each of frameworks/, search/ and
# analyses/ and MUTATE_PER_DIR_SLOW from evaluate/ and equations/compiled/ (each of their mutants
# needs most of the suite), run at the lowest priority and scored per directory with a 95%
# interval (tools/mutate_sample.py; the 2026-11-26 score: docs/hardening.md). A second run
# resumes an interrupted one; a larger size extends a smaller.
MUTATE_PER_DIR ?= 100
MUTATE_PER_DIR_SLOW ?= 50
MUTATE_SEED ?= 20261126

mutate-sample: $(VENV)/.mutate-installed
	nice -n 19 $(BIN)/python tools/mutate_sample.py --per-dir $(MUTATE_PER_DIR) \
		--size evaluate=$(MUTATE_PER_DIR_SLOW) --size compiled=$(MUTATE_PER_DIR_SLOW) \
		--seed $(MUTATE_SEED) --max-children $(MUTATE_JOBS)

clean:
	rm -rf $(VENV) $(FRAMEWORKS_VENV) build dist mutants site
