"""Shared pytest setup. Keep it minimal: fixtures live in ``tests/support``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# ``tests.support`` must import the same way however pytest is launched (``pytest`` or ``python -m pytest``).
_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from tests.support.fixtures import openai_env, openai_server  # noqa: E402

__all__ = ["openai_env", "openai_server"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "phoenix: end-to-end test against a real Arize Phoenix server (tests/sinks/test_phoenix.py)")
    config.addinivalue_line(
        "markers",
        "real_llm: against a real LLM server (llama-cpp-python + SmolLM2-135M; `make llm-wheel`, then `make test-llm`)",
    )
