# The two commands a newcomer needs: `make run` and `make test`. Both bootstrap .venv themselves.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The locks are written by `make lock`: lambda.txt is what the layer installs (Lambda's Python and
# platform); run.txt what `make run` installs (the runtime and the `saga` commands: the `local` extra);
# dev.txt what `make install` and `make test` install (the `dev` extra: also the CDK, linters and test
# tools), constrained to the versions of the other two, so each is a subset of it at the same versions.
LAMBDA_LOCK := requirements/lambda.txt
RUN_LOCK := requirements/run.txt
DEV_LOCK := requirements/dev.txt
hash = $(shell cat pyproject.toml $(1) | sha1sum | cut -c1-12)
DEV_STAMP := $(VENV)/.installed-dev-$(call hash,$(DEV_LOCK))
RUN_STAMP := $(VENV)/.installed-run-$(call hash,$(RUN_LOCK))
# uv installs the locks (pip takes minutes over the dev lock); pip only bootstraps uv itself, at the
# version and hashes the dev lock pins. Bytecode is compiled at install for every package but the CDK:
# with PYTHONDONTWRITEBYTECODE set (as on these machines) every process, each of saga local's function
# containers too, would otherwise compile every module it imports again. The CDK's 183 MB of modules
# (more than half of the dev lock's) are compiled when first imported, and only the few the app imports
# (a few seconds, once): make's commands run with PYTHONDONTWRITEBYTECODE unset, so Python keeps what
# it compiled. So are cfn-lint's sympy and networkx (2,100 modules, of which the tests' cfn-lint run
# imports 700, compiled then, once) and the packages' own tests: 20 of the 53 s of CPU compiling took. The
# folders skipped are named from site-packages' own path (a checkout under a `tests` folder skips nothing more).
UV := $(BIN)/uv
UV_PIN = sed -n '/^uv==/,/[^\\]$$/p' $(DEV_LOCK)
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
unexport PYTHONDONTWRITEBYTECODE

.PHONY: mcp-config install lock run test test-loaded lint typecheck unit integration e2e chaos soak synth bench docs clean

# $(call venv_with,LOCK,WHAT): .venv holding LOCK's packages (hash-checked) and this project (editable).
# The count announced is what this machine installs: the locks are universal, and also pin what only
# Windows or WebAssembly installs (requirements/count.py evaluates each line's environment marker).
define venv_with
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@test -x $(UV) || { $(UV_PIN) | $(BIN)/python -m pip install --quiet --disable-pip-version-check \
		--require-hashes --no-deps -r /dev/stdin; }
	@echo "installing $(2): $$($(BIN)/python requirements/count.py $(1)) packages from $(1) into $(VENV)" \
		"(a few seconds once they are cached, a minute or two the first time)"
	@started=$$(date +%s); \
	$(UV) pip install --python $(BIN)/python --require-hashes -r $(1) && \
	$(UV) pip install --python $(BIN)/python --quiet --no-deps -e . && \
	purelib=$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))') && \
	skipped=$$($(BIN)/python -c 'import re, sys; print("^" + re.escape(sys.argv[1]) + "/(aws_cdk|sympy|networkx)/|^" + re.escape(sys.argv[1]) + "/.*/tests?/")' "$$purelib") && \
	{ $(BIN)/python -m compileall -qq -j 0 -x "$$skipped" "$$purelib"; true; } && \
	echo "installed in $$(( $$(date +%s) - started )) s"
endef

$(DEV_STAMP): pyproject.toml $(DEV_LOCK)
	$(call venv_with,$(DEV_LOCK),everything make test needs)
	@rm -f $(VENV)/.installed-* && touch $(DEV_STAMP) $(RUN_STAMP)

$(RUN_STAMP): pyproject.toml $(RUN_LOCK)
	$(call venv_with,$(RUN_LOCK),what running needs (make test adds the rest))
	@rm -f $(VENV)/.installed-run-* && touch $(RUN_STAMP)

install: $(DEV_STAMP)

# boto3 and botocore (with s3transfer, python-dateutil, six) come with Lambda's Python runtime: the
# layer leaves them out (infra/packaging.py says why). The flags here are checked by tests/infra.
lock: install ## re-resolve both lock files from pyproject.toml (needs PyPI)
	$(BIN)/uv pip compile --quiet pyproject.toml --generate-hashes --python-version 3.14 \
		--python-platform aarch64-manylinux_2_34 --no-emit-package boto3 --no-emit-package botocore \
		--no-emit-package s3transfer --no-emit-package python-dateutil --no-emit-package six -o $(LAMBDA_LOCK)
	$(BIN)/uv pip compile --quiet pyproject.toml --extra local --generate-hashes --universal --python-version 3.11 \
		-c $(LAMBDA_LOCK) -o $(RUN_LOCK)
	$(BIN)/uv pip compile --quiet pyproject.toml --extra dev --generate-hashes --universal --python-version 3.11 \
		-c $(LAMBDA_LOCK) -c $(RUN_LOCK) -o $(DEV_LOCK)

# A .venv that `make install` or `make test` made already holds everything running needs.
run: $(if $(wildcard $(DEV_STAMP)),$(DEV_STAMP),$(RUN_STAMP)) ## start the whole system locally (Ctrl-C stops it); ARGS="--port 3100" passes flags to `saga local`
	$(BIN)/saga local $(ARGS)

# An MCP client starts `saga mcp` itself, from a folder of its own and without this venv: its configuration
# names this checkout's .venv/bin/saga by its absolute path (docs/AGENTS.md). MCP_ARGS replaces the arguments.
MCP_ARGS ?= --api-url http://127.0.0.1:3000
mcp-config: ## print an MCP client configuration that starts this checkout's `saga mcp` (no venv to activate)
	@$(PYTHON) -c 'import json, sys; print(json.dumps({"mcpServers": {"loan-saga": {"command": sys.argv[1], "args": ["mcp", *sys.argv[2:]]}}}, indent=2))' \
		"$(CURDIR)/$(BIN)/saga" $(MCP_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy .

# The whole suite, on every core (pytest-xdist), with mypy alongside it (one process: it fills what the
# workers leave idle); either failing fails `make test`, and mypy's report comes after pytest's. The last
# line says how long `make test` took, install included.
TEST_WORKERS ?= auto
test: ## ruff, mypy and the whole test suite (install included; the last line says how long each part took)
	@started=$$(date +%s); $(MAKE) --no-print-directory install && installed=$$(date +%s) && \
	$(MAKE) --no-print-directory lint && linted=$$(date +%s) || exit 1; \
	typing=$$(mktemp); { $(BIN)/mypy . > $$typing 2>&1; status=$$?; date +%s >> $$typing.done; exit $$status; } & \
	typer=$$!; $(BIN)/pytest -n $(TEST_WORKERS) --dist loadgroup; tested=$$?; tested_at=$$(date +%s); \
	wait $$typer; typed=$$?; echo "mypy (alongside pytest):"; cat $$typing; \
	echo "make test: $$(( $$(date +%s) - started )) s (install $$(( installed - started )) s," \
		"ruff $$(( linted - installed )) s, pytest $$(( tested_at - linted )) s, mypy $$(( $$(cat $$typing.done) - linted )) s" \
		"alongside pytest)"; rm -f $$typing $$typing.done; test $$tested -eq 0 -a $$typed -eq 0

# The verdict `make test` gives must not depend on how busy the machine is: this runs a fresh clone's `make
# test` (of HEAD: commit first; its own .venv, installed from the package cache) beside two CPU-bound
# processes (one per core here), which end with it. Timeouts in the suite are hang guards, and waits end on
# progress, so a loaded run is slower, never red (docs/TESTING.md). KEEP=1 keeps the clone.
test-loaded: ## a fresh clone's make test beside two CPU-bound processes (a loaded machine must not change the verdict)
	@clone=$$(mktemp -d -t loan-saga-loaded.XXXXXX) && git clone --quiet "$(CURDIR)" "$$clone" || exit 1; \
	$(PYTHON) -c 'while True: pass' & first=$$!; $(PYTHON) -c 'while True: pass' & second=$$!; \
	trap 'kill $$first $$second 2>/dev/null; test -n "$(KEEP)" || rm -rf "$$clone"' EXIT INT TERM; \
	echo "make test in a fresh clone of $$(git rev-parse --short HEAD) ($$clone), beside two CPU-bound processes" \
		"($$first, $$second); load average $$(cut -d' ' -f1-3 /proc/loadavg)"; \
	$(MAKE) --no-print-directory -C "$$clone" test; tested=$$?; \
	echo "load average at the end: $$(cut -d' ' -f1-3 /proc/loadavg)"; exit $$tested

synth: install ## synthesize the stack offline (no packaging), run cdk-nag and cfn-lint
	CDK_OUTDIR=cdk.out $(BIN)/python -c "import aws_cdk as cdk; from app import build_app; build_app(cdk.App(context={'skipBundling': 'true'}))[0].synth()"
	$(BIN)/cfn-lint cdk.out/LoanSaga.template.json

bench: install ## cost, latency, drain rate and cold start, ours and the peer's; writes BENCHMARKS.md and docs/SCALE.md
	$(BIN)/python -m bench.run --out BENCHMARKS.md --measured bench/measured.json
	$(BIN)/python -m bench.scale --measured bench/measured.json --out docs/SCALE.md

docs: install ## run saga local once and render every command output the README and docs/ show (tools/docs/)
	$(BIN)/python -m tools.docs

unit: install
	$(BIN)/pytest tests/unit

integration: install
	$(BIN)/pytest tests/integration

e2e: install
	$(BIN)/pytest tests/e2e

chaos: install ## faults at real boundaries (also part of `make test`)
	$(BIN)/pytest -s tests/chaos

# N journeys (default 1,000) by M agents (default 16) on shared journeys, every fault at once; the
# ledger is printed and appended to docs/RELIABILITY.md. `make test` runs the same soak with 16 (what that
# still proves: tests/chaos/test_soak.py's docstring).
N ?= 1000
M ?= 16
soak: install ## the soak: N journeys, M conflicting agents, lost replies, AWS faults, crashes (11-16 min here)
	SOAK_JOURNEYS=$(N) SOAK_AGENTS=$(M) SOAK_LEDGER_FILE=docs/RELIABILITY.md $(BIN)/pytest -s -p no:cacheprovider tests/chaos/test_soak.py

clean:
	rm -rf $(VENV) cdk.out .mypy_cache .ruff_cache .pytest_cache .hypothesis
