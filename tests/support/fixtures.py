"""Pytest fixtures for the local OpenAI-compatible server (imported by ``tests/conftest.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .openai_server import OpenAITestServer


@pytest.fixture
def openai_server() -> Iterator[OpenAITestServer]:
    """A fresh server per test on a free 127.0.0.1 port, stopped afterwards."""
    with OpenAITestServer() as server:
        yield server


@pytest.fixture
def openai_env(openai_server: OpenAITestServer, monkeypatch: pytest.MonkeyPatch) -> OpenAITestServer:
    """The server, with ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` pointing the ``openai`` client at it."""
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-local")
    return openai_server
