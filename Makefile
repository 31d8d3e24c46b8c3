# `make test` and `make demo` work from a fresh clone: they build .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# pytest workers for `make test` (pytest-xdist): one per core; `make test PYTEST_WORKERS=0` runs serially
PYTEST_WORKERS ?= auto

.PHONY: test demo lint typecheck bench clean accel

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	# the distribution was named `harness` before it became `harness-sessions`: drop the old one
	$(BIN)/python -m pip uninstall --quiet --disable-pip-version-check --yes harness 2>/dev/null || true
	rm -rf src/harness.egg-info
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check src tests bench examples tools setup.py

typecheck: $(STAMP)
	$(BIN)/mypy --strict src tests examples tools setup.py

# The optional C walk (`make accel`) is built first (required under CI=true); the whole suite
# runs on the pure-Python path (tests/test_encode_lossless.py runs each test on both), then the
# append tests run again with the C walk as the default.
test: lint typecheck
	@$(BIN)/python tools/build_accel.py || { [ "$$CI" != true ] && echo "make test: the optional C walk did not build (gcc, Python headers?): the pure path only"; }
	HARNESS_ACCEL=0 $(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadfile
	@if $(BIN)/python -c "import harness.events._typewalk" 2>/dev/null; then \
		HARNESS_REQUIRE_ACCEL=1 $(BIN)/pytest -q -p no:cacheprovider tests/test_encode_lossless.py \
			tests/test_append_fast_paths.py tests/test_session_api.py tests/test_properties.py \
			tests/test_format_a_header_envelope.py tests/test_format_b_messages_headers.py \
			tests/integrations/openai_agents; fi

# The optional accelerator: a C type walk behind encode_lossless (docs/performance.md).
accel: $(STAMP)
	$(BIN)/python tools/build_accel.py

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
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache build src/harness/events/_typewalk.*.so
