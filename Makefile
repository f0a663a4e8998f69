# Two entry points for a fresh machine: `make demo` and `make test`. Everything else is optional.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-dev
CACHE  ?= .cache
# External test tools (rotel, promtool, VictoriaMetrics, vmalert, Alertmanager, Phoenix), installed
# into .cache and the venv without changing the system; see tests/tools/ensure_tools.sh.
TOOLS  := $(CACHE)/.tools-installed
LLAMA_VERSION ?= 0.3.36
LLAMA_WHEEL   := $(CACHE)/llama/wheels/llama_cpp_python-$(LLAMA_VERSION)-py3-none-linux_x86_64.whl

.PHONY: demo test lint bench clean llm-wheel test-llm dist image

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
	$(PY) -m pytest -q -p no:cacheprovider -m "not real_llm" tests

# llama-cpp-python compiles llama.cpp (~40 min on 2 cores): built once, portable (no -march=native).
$(LLAMA_WHEEL):
	mkdir -p $(dir $@)
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(PYTHON) -m pip wheel --no-deps llama-cpp-python==$(LLAMA_VERSION) -w $(dir $@)

llm-wheel: $(LLAMA_WHEEL)

# The judge against a real LLM server (llama.cpp + SmolLM2-135M); needs `make llm-wheel` first.
test-llm: $(STAMP)
	$(PY) -m pytest -q -rA -p no:cacheprovider -m real_llm tests/judge/test_llm_real.py

# The sdist and wheel to install elsewhere (`pip install dist/otel_toolscore-*.whl`), built in an
# isolated environment from the machine's configured package sources.
dist: $(STAMP)
	rm -rf dist
	$(PY) -m build --outdir dist .

# The image deploy/ references, tagged with the package version (deploy/k8s/toolscore.yaml) and
# `local` (deploy/docker-compose.yaml). Needs docker with a running daemon.
VERSION = $(shell sed -n 's/^__version__ = "\(.*\)"/\1/p' otel_toolscore/_version.py)
IMAGE  ?= otel-toolscore
image:
	@command -v docker >/dev/null || { echo "make image: docker is not installed" >&2; exit 1; }
	docker build -f deploy/Dockerfile -t $(IMAGE):$(VERSION) -t $(IMAGE):local .

bench: $(STAMP)
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build dist
