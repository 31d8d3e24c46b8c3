# `make test` and `make demo` work from a fresh clone: they build .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# pytest workers for `make test` (pytest-xdist): one per core; `make test PYTEST_WORKERS=0` runs serially
PYTEST_WORKERS ?= auto

.PHONY: test demo lint typecheck bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	# the distribution was named `harness` before it became `harness-sessions`: drop the old one
	$(BIN)/python -m pip uninstall --quiet --disable-pip-version-check --yes harness 2>/dev/null || true
	rm -rf src/harness.egg-info
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check src tests bench examples

typecheck: $(STAMP)
	$(BIN)/mypy --strict src tests examples

test: lint typecheck
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadfile

demo: $(STAMP)
	$(BIN)/harness demo

bench: $(STAMP)
	$(BIN)/python bench/core.py

# The peers (OpenAI Agents SDK, Google ADK, LangGraph) next to ours, in one run; e.g.
# `make bench-peers BENCH_ARGS=--quick`. The peers come from the optional `bench` extra.
.PHONY: bench-peers
bench-peers: $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[bench]'
	$(BIN)/python bench/peers.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
