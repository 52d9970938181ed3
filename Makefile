# aophub: one entry point for install, run, checks, code generation and tests.
# `make run` starts the hub; `make test` runs every check and test, as CI does.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
BUF := $(BIN)/buf
STAMP := $(VENV)/.installed
RUNTIME_STAMP := $(VENV)/.runtime-installed
# `make run RUN_ARGS="--port 9000"`: options for `aophub serve` (see `aophub serve --help`).
RUN_ARGS ?=
GENERATED := gen/python gen/go/aop gen/go/aophub gen/go/aiscan gen/go/cyber gen/java/src clients/ts/src/gen
# buf breaking compares the schema with the previous commit on main.
BREAKING_AGAINST ?= .git\#ref=HEAD~1

.PHONY: help install run run-cluster test check lint-proto breaking gen check-gen golden \
        test-python test-go test-ts check-go check-ts check-java test-java test-examples clean bench \
        web check-web

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

# The development install (tests, checks, code generation): every target but `make run`.
$(STAMP): pyproject.toml clients/python/pyproject.toml
	@echo "== installing aophub and its development tools into $(VENV) (first time only)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --progress-bar on -e ./clients/python -e '.[dev]'
	touch $@ $(RUNTIME_STAMP)

# What running the hub needs, nothing more: `make run` on a fresh clone installs only this.
$(RUNTIME_STAMP): pyproject.toml clients/python/pyproject.toml
	@echo "== installing aophub (runtime packages only) into $(VENV) (first start only; 'make install' adds the dev tools)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --progress-bar on -e ./clients/python -e .
	touch $@

install: $(STAMP) ## create .venv and install the pinned Python, Go and npm tools (and bubblewrap, tmux, PostgreSQL, HAProxy)
	bash tools/bubblewrap.sh
	bash tools/tmux.sh
	bash tools/postgresql.sh
	bash tools/haproxy.sh
	bash tools/go.sh install
	bash tools/ts.sh install
	bash tools/web.sh install
	bash tools/java.sh protoc >/dev/null
	bash tools/java.sh grpc-plugin >/dev/null

run: $(RUNTIME_STAMP) ## start the hub on 127.0.0.1:8080 (installs only the runtime packages; RUN_ARGS="...")
	$(BIN)/aophub serve $(RUN_ARGS)

# `make run-cluster CLUSTER_ARGS="--port 9000 --replicas 2"`: options of tools/run_cluster.py.
CLUSTER_ARGS ?=
run-cluster: $(RUNTIME_STAMP) ## PostgreSQL, 3 hub replicas and HAProxy on 127.0.0.1:8080 (CLUSTER_ARGS="...")
	bash tools/postgresql.sh
	bash tools/haproxy.sh
	$(BIN)/python tools/run_cluster.py $(CLUSTER_ARGS)

check: $(STAMP) lint-proto breaking ## formatting, lint and mypy --strict
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy

lint-proto: $(STAMP) ## buf lint
	$(BUF) lint

breaking: $(STAMP) ## buf breaking against the previous commit
	@if git rev-parse --verify --quiet HEAD~1 >/dev/null && git cat-file -e HEAD~1:buf.yaml 2>/dev/null; then \
	  $(BUF) breaking --against '$(BREAKING_AGAINST)'; \
	else \
	  echo "buf breaking: no previous commit with a schema, nothing to compare"; \
	fi

gen: install ## regenerate Python, Go, Java and TypeScript code from proto/
	rm -rf $(GENERATED)
	$(BUF) generate

check-gen: gen ## fail if regeneration changed any generated file
	@changes=$$(git diff --stat -- $(GENERATED); git ls-files --others --exclude-standard -- $(GENERATED)); \
	if [ -n "$$changes" ]; then \
	  echo "$$changes"; echo "generated code is stale: run 'make gen' and commit the result"; exit 1; \
	fi

golden: $(STAMP) ## rewrite the golden wire vectors (only when they are meant to change)
	$(BIN)/python tests/golden/builders.py

test-python: $(STAMP)
	$(BIN)/pytest

check-go:
	bash tools/go.sh check

# The Go conformance test starts a hub with the venv's Python.
test-go: $(STAMP)
	bash tools/go.sh test

check-ts:
	bash tools/ts.sh check

# The TypeScript conformance test starts a hub with the venv's Python.
test-ts: $(STAMP)
	bash tools/ts.sh test

check-java:
	bash tools/java.sh check

# The Java client's tests (the conformance scenario among them) start a hub
# with the venv's Python.
test-java: $(STAMP)
	bash tools/java.sh test

test-examples: $(STAMP) ## run every example program of examples/ against a live hub
	bash tools/examples.sh

test: check check-gen check-web check-go check-ts check-java test-python test-go test-ts test-java test-examples ## everything CI runs

# The web console: web/ (TypeScript) built into src/aophub/console, committed so that
# `make run` and the wheel need no Node; check-web fails when the commit is stale.
web: ## build the web console (web/) into src/aophub/console and print its gzipped size
	bash tools/web.sh build

check-web: ## type-check web/ and fail if the committed console is not what it builds
	bash tools/web.sh check
	bash tools/web.sh fresh

clean: ## remove the virtualenv, tool binaries and build output
	rm -rf $(VENV) .tools clients/ts/node_modules web/node_modules gen/java/target clients/java/target examples/java/target .mypy_cache .ruff_cache .pytest_cache

bench: $(STAMP) ## compare the hub with bare baselines (BENCH_ARGS="B1 B2 --quick"); bench/results/latest.md
	$(BIN)/python -m bench $(BENCH_ARGS)

.PHONY: soak
soak: $(STAMP) ## 10-minute soak, then the load held (SOAK_ARGS="--quick" for a smoke run); soak/results/latest.json
	$(BIN)/python -m soak $(SOAK_ARGS)
