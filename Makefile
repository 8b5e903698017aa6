# Two commands on a fresh machine with only python3: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP_DEMO := $(VENV)/.installed-demo
STAMP_DEV  := $(VENV)/.installed-dev

.PHONY: demo test soak test-all lint typecheck pytest bench bench-w1 clean browser postgres

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(STAMP_DEMO): pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[cli,testing,trio,bedrock]'
	touch $@

$(STAMP_DEV): pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[dev]'
	touch $@ $(STAMP_DEMO)

demo: $(STAMP_DEMO)
	$(PY) -m agentactors demo $(ARGS)

# The service example's page is tested in Debian's chromium (Playwright cannot download its own browser
# here): installed when missing and we are root; otherwise the test says the command (and fails under CI=true).
# apt-get's output is kept in a file: shown only when the install fails (then make stops here, saying why).
browser:
	@if [ ! -x /usr/bin/chromium ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing chromium for the browser test"; \
		log=$$(mktemp); \
		if apt-get install -y -q chromium >"$$log" 2>&1 || \
		   { apt-get update -q >>"$$log" 2>&1 && apt-get install -y -q chromium >>"$$log" 2>&1; }; then \
			rm -f "$$log"; \
		else \
			status=$$?; cat "$$log" >&2; rm -f "$$log"; \
			echo "make browser: installing chromium failed (apt-get's output above)" >&2; exit $$status; \
		fi; \
	fi

# PostgresStore and PostgresJournal are tested against a real server the tests start in a temporary directory
# (tests/support/postgres.py): Debian's postgresql package is installed when no initdb is found (on PATH or in
# /usr/lib/postgresql/*/bin) and we are root; otherwise the tests say the command (and fail under CI=true).
postgres:
	@if ! command -v initdb >/dev/null && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && \
	    [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing postgresql for the PostgreSQL tests"; \
		log=$$(mktemp); \
		if apt-get install -y -q postgresql >"$$log" 2>&1 || \
		   { apt-get update -q >>"$$log" 2>&1 && apt-get install -y -q postgresql >>"$$log" 2>&1; }; then \
			rm -f "$$log"; \
		else \
			status=$$?; cat "$$log" >&2; rm -f "$$log"; \
			echo "make postgres: installing postgresql failed (apt-get's output above)" >&2; exit $$status; \
		fi; \
	fi

# The suite runs on PYTEST_WORKERS processes (pytest-xdist), each test file whole on one of them: a module's
# fixtures (the Ray cluster, the MCP server) start once, and a file's tests keep their order.  Three on the two
# cores `make test` is sized for: much of the suite waits (real sockets, vendor and MCP subprocesses, PostgreSQL,
# Ray, real-time deadlines): 499 s of pytest with two workers against 380 s with three (whose CPU time, 483 s,
# still left the cores idle a third of the time), measured on one machine the same hour.  The tests are written
# to hold with the cores taken: checked with two CPU-bound spinners beside.  Not `auto`: in a container with a
# CPU quota it counts the host's cores.  `make test PYTEST_WORKERS=auto` on a machine of your own; 0: one
# process.  The soak runs keep two (SOAK_WORKERS): their load is their point.
PYTEST_WORKERS ?= 3
SOAK_WORKERS ?= 2
# Bytecode is cached (in __pycache__/, which git ignores) even where PYTHONDONTWRITEBYTECODE is set: without the
# cache each worker compiles the package and re-rewrites the asserts of every test module (~20 s of CPU each),
# and so does every interpreter the tests start (vendors, MCP servers, examples, Ray workers).
PYTEST := PYTHONDONTWRITEBYTECODE= $(VENV)/bin/pytest

test: $(STAMP_DEV) browser postgres
	$(VENV)/bin/ruff check agentactors tests examples benchmarks
	$(VENV)/bin/mypy --strict agentactors tests examples
	$(PYTEST) -q -n $(PYTEST_WORKERS) --dist loadfile -m "not soak" $(PYTEST_ARGS)

# The soak, load and stress runs (marked `soak` in pyproject.toml: their size is their point) that `make test`
# leaves out to stay near five minutes on two cores; CI runs them after `make test` (.ci/run).  Everything:
# `make test-all` (= `make test soak`), or `.venv/bin/pytest -n 2 --dist loadfile` with no `-m`.
soak: $(STAMP_DEV)
	$(PYTEST) -q -n $(SOAK_WORKERS) --dist loadfile -m soak $(PYTEST_ARGS)

test-all: test soak

# Peers (pydantic-ai, openai-agents, autogen-core, langgraph, the official openai SDK) live only in
# this separate environment: they are never dependencies of agentactors.
BENCH_VENV := .venv-bench
BENCH_PY   := $(BENCH_VENV)/bin/python
STAMP_BENCH := $(BENCH_VENV)/.installed-bench

$(STAMP_BENCH): pyproject.toml benchmarks/requirements-peers.txt
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_PY) -m pip install -q --upgrade pip
	$(BENCH_PY) -m pip install -q -e '.[bench]' -r benchmarks/requirements-peers.txt
	touch $@

# Every workload (W1 in both harnesses, W12, import time and cold start), then results/index.html beside the JSON.
bench: $(STAMP_BENCH)
	$(BENCH_PY) benchmarks/run.py $(ARGS)

# W1 in the independent harness alone (a fresh process per framework): results/w1_independent.json.
bench-w1: $(STAMP_BENCH)
	$(BENCH_PY) benchmarks/w1_independent.py $(ARGS)

clean:
	rm -rf $(VENV) $(BENCH_VENV) .mypy_cache .ruff_cache build dist
