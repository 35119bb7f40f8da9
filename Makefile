# Braid: `make run` runs the whole stack in the foreground, `make test` installs what is missing
# and runs lint, type check and every test tier, the container's included. docker/install.sh
# and docker/image.sh do the installing.
SHELL := /bin/bash
PYTHON ?= python3

.PHONY: all install install-runtime run test lint unit integration image test-container load clean

all: test

install:
	bash docker/install.sh test

install-runtime:
	bash docker/install.sh runtime

# API on :8234, data in ./data (or $BRAID_DATA_DIR); Ctrl-C stops everything.
run: install-runtime
	docker/entrypoint.sh

# Every tier, the container's included (its image first: make image).
test: install lint image
	$(PYTHON) -m pytest tests/unit tests/contract tests/integration tests/container -q

lint:
	$(PYTHON) -m ruff check .
	$(PYTHON) -m mypy core store search worker encoder app harness loader bench

unit:
	$(PYTHON) -m pytest tests/unit -q

integration:
	$(PYTHON) -m pytest tests/integration -q

# The container image (docker/image.sh: a Docker engine and, with no registry, a Debian base from
# packages), then its own test tier, which runs the README's container commands against it.
image:
	bash docker/image.sh

test-container: install image
	$(PYTHON) -m pytest tests/container -q

# The load study (bench/load) after installing what it needs (Locust, Faker, matplotlib, py-spy):
# make load ARGS="keyword --smoke"; ARGS="--help" for its options.
load: install
	$(PYTHON) -m bench.load $(ARGS)

clean:
	rm -rf .make .pytest_cache .mypy_cache .ruff_cache
