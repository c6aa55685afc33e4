# tickethub: `make run` starts the hub, `make test` runs the whole suite.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: run test bench lint typecheck fmt clean help

help:
	@echo "make run    - install and start the hub on http://127.0.0.1:8080 (SQLite in ./data)"
	@echo "make test   - install and run the whole suite (starts PostgreSQL etc. from ../shared/recipes when present)"
	@echo "make bench  - run the benchmarks in bench/"
	@echo "make lint   - ruff and mypy"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.stamp-run: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	@touch $@

$(VENV)/.stamp-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev]'
	@touch $@ $(VENV)/.stamp-run

run: $(VENV)/.stamp-run
	$(BIN)/tickethub serve

test: $(VENV)/.stamp-dev
	PYTHON=$(BIN)/python bash scripts/with-test-services.sh $(BIN)/python -m pytest $(PYTEST_ARGS)

bench: $(VENV)/.stamp-dev
	$(BIN)/python -m bench

# mypy: every module and package; domain and services strictly (pyproject.toml). The
# stores are checked against their ports. The benches too: a mistyped bench fails late
# (after minutes of setup) or reports a wrong number.
lint: $(VENV)/.stamp-dev
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy src/tickethub/*.py \
		$(patsubst %/__init__.py,%,$(wildcard src/tickethub/*/__init__.py)) bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
