# The two commands a newcomer needs: `make run` and `make test`. Both bootstrap .venv themselves.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20

.PHONY: install run test lint typecheck unit integration e2e chaos synth bench clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@rm -f $(VENV)/.installed-* && touch $(STAMP)

install: $(STAMP)

run: install ## start the whole system locally (Ctrl-C stops it)
	$(BIN)/saga local

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy .

test: lint typecheck ## ruff, mypy and the whole test suite
	$(BIN)/pytest

synth: install ## synthesize the stack offline (no packaging), run cdk-nag and cfn-lint
	CDK_OUTDIR=cdk.out $(BIN)/python -c "import aws_cdk as cdk; from app import build_app; build_app(cdk.App(context={'skipBundling': 'true'}))[0].synth()"
	$(BIN)/cfn-lint cdk.out/LoanSaga.template.json

bench: install ## cost, latency, drain rate and cold start, ours and the peer's; writes BENCHMARKS.md
	$(BIN)/python -m bench.run --out BENCHMARKS.md

unit: install
	$(BIN)/pytest tests/unit

integration: install
	$(BIN)/pytest tests/integration

e2e: install
	$(BIN)/pytest tests/e2e

chaos: install ## faults at real boundaries (also part of `make test`)
	$(BIN)/pytest -s tests/chaos

clean:
	rm -rf $(VENV) cdk.out .mypy_cache .ruff_cache .pytest_cache .hypothesis
