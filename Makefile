# Braid: `make run` runs the whole stack in the foreground, `make test` installs what is missing
# and runs lint, type check and every test tier. docker/install.sh does the installing.
SHELL := /bin/bash
PYTHON ?= python3

.PHONY: all install install-runtime run test lint unit integration clean

all: test

install:
	bash docker/install.sh test

install-runtime:
	bash docker/install.sh runtime

# API on :8234, data in ./data (or $BRAID_DATA_DIR); Ctrl-C stops everything.
run: install-runtime
	docker/entrypoint.sh

test: install lint
	$(PYTHON) -m pytest tests/unit tests/contract tests/integration -q

lint:
	$(PYTHON) -m ruff check .
	$(PYTHON) -m mypy core worker encoder app harness loader bench

unit:
	$(PYTHON) -m pytest tests/unit -q

integration:
	$(PYTHON) -m pytest tests/integration -q

clean:
	rm -rf .make .pytest_cache .mypy_cache .ruff_cache
