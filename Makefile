# Two entry points for a fresh machine: `make demo` and `make test`. Everything else is optional.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-dev
CACHE  ?= .cache
# External test tools (rotel, promtool, VictoriaMetrics, vmalert, Alertmanager, Phoenix), installed
# into .cache and the venv without changing the system; see tests/tools/ensure_tools.sh.
TOOLS  := $(CACHE)/.tools-installed

.PHONY: demo test lint typecheck bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(VENV)/.installed: $(PY) pyproject.toml
	$(PY) -m pip install -q -e .
	touch $@

$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install -q -e '.[dev]'
	touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	$(VENV)/bin/otel-toolscore demo

$(TOOLS): $(STAMP) tests/tools/ensure_tools.sh
	bash tests/tools/ensure_tools.sh --e2e $(PY)
	mkdir -p $(CACHE) && touch $@

lint: $(STAMP)
	$(VENV)/bin/ruff check otel_toolscore tests examples bench deploy
	$(VENV)/bin/mypy --strict otel_toolscore

test: $(STAMP) lint $(TOOLS)
	$(PY) -m pytest -q -p no:cacheprovider tests

bench: $(STAMP)
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
