# The two commands a newcomer needs: `make run` and `make test`. Both bootstrap .venv themselves.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Both locks are written by `make lock`: lambda.txt is what the layer installs (Lambda's Python and
# platform), dev.txt is what .venv installs, constrained to the same versions of the shared packages.
LAMBDA_LOCK := requirements/lambda.txt
DEV_LOCK := requirements/dev.txt
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml $(DEV_LOCK) | sha1sum | cut -c1-12)
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20

.PHONY: install lock run test lint typecheck unit integration e2e chaos soak synth bench docs clean

$(STAMP): pyproject.toml $(DEV_LOCK)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --require-hashes -r $(DEV_LOCK)
	$(BIN)/python -m pip install --quiet --no-deps -e .
	@rm -f $(VENV)/.installed-* && touch $(STAMP)

install: $(STAMP)

# boto3 and botocore (with s3transfer, python-dateutil, six) come with Lambda's Python runtime: the
# layer leaves them out (infra/packaging.py says why). The flags here are checked by tests/infra.
lock: install ## re-resolve both lock files from pyproject.toml (needs PyPI)
	$(BIN)/uv pip compile --quiet pyproject.toml --generate-hashes --python-version 3.14 \
		--python-platform aarch64-manylinux_2_34 --no-emit-package boto3 --no-emit-package botocore \
		--no-emit-package s3transfer --no-emit-package python-dateutil --no-emit-package six -o $(LAMBDA_LOCK)
	$(BIN)/uv pip compile --quiet pyproject.toml --extra dev --generate-hashes --universal --python-version 3.11 \
		-c $(LAMBDA_LOCK) -o $(DEV_LOCK)

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

bench: install ## cost, latency, drain rate and cold start, ours and the peer's; writes BENCHMARKS.md and docs/SCALE.md
	$(BIN)/python -m bench.run --out BENCHMARKS.md --measured bench/measured.json
	$(BIN)/python -m bench.scale --measured bench/measured.json --out docs/SCALE.md

docs: install ## run saga local once and render every command output the README and docs/ show (saga/docs/)
	$(BIN)/python -m saga.docs

unit: install
	$(BIN)/pytest tests/unit

integration: install
	$(BIN)/pytest tests/integration

e2e: install
	$(BIN)/pytest tests/e2e

chaos: install ## faults at real boundaries (also part of `make test`)
	$(BIN)/pytest -s tests/chaos

# N journeys (default 1,000) by M agents (default 16) on shared journeys, every fault at once; the
# ledger is printed and appended to docs/RELIABILITY.md. `make test` runs the same soak with 100.
N ?= 1000
M ?= 16
soak: install ## the soak: N journeys, M conflicting agents, lost replies, AWS faults, crashes (11-16 min here)
	SOAK_JOURNEYS=$(N) SOAK_AGENTS=$(M) SOAK_LEDGER_FILE=docs/RELIABILITY.md $(BIN)/pytest -s -p no:cacheprovider tests/chaos/test_soak.py

clean:
	rm -rf $(VENV) cdk.out .mypy_cache .ruff_cache .pytest_cache .hypothesis
