# Two set-up commands (see README): `make run` and `make test`.
# The virtual environment is isolated from system site-packages.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: run test bench mutate wheel-check clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $@

run: $(VENV)/.installed
	$(BIN)/optimus-calc plan llama70b --nodes 2

# Two workers (pytest-xdist, a test dependency): the suite is CPU-bound Python. Tests that share
# an expensive module fixture carry an xdist_group mark and run on one worker (--dist loadgroup).
TEST_JOBS ?= 2

# Bytecode is cached (an environment's PYTHONDONTWRITEBYTECODE is overridden for the test run):
# the suite starts ~40 fresh `python -m optimus_calc` processes, each of which would otherwise
# compile the package from source again.
test: $(VENV)/.installed
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n $(TEST_JOBS) --dist loadgroup

# BASE / RELEASE: the commits issue 35's targets are paired against (benchmarks/targets.py).
BASE ?= 2691995
RELEASE ?= a7cc365

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/run.py
	$(BIN)/python benchmarks/targets.py --base $(BASE) --release $(RELEASE)

# Mutation testing of the evaluator and the compiled equations (pyproject [tool.mutmut]); not
# part of `make test`. About three hours for every mutant on 2 cores; results stay in mutants/
# (git-ignored) and a second run only tests mutants without a result (`mutmut run NAME...`
# re-tests the ones named). MUTATE_JOBS workers in parallel.
MUTATE_JOBS ?= 2

$(VENV)/.mutate-installed: $(VENV)/.installed pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[test,mutate]'
	@touch $@

mutate: $(VENV)/.mutate-installed
	$(BIN)/mutmut run --max-children $(MUTATE_JOBS)
	$(BIN)/mutmut results

clean:
	rm -rf $(VENV) build dist mutants
