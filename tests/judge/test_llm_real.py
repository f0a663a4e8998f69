"""The online judge against a real LLM server: llama-cpp-python's OpenAI-compatible server with
SmolLM2-135M (tests/tools/llama.py), started on 127.0.0.1 by the test.

The small model's verdict is not the point. The point is that a real grammar-constrained server
accepts our request (after stepping down the structured-output ladder: it answers 500 to
``json_schema`` and takes llama.cpp's ``json_object`` with a schema), returns JSON that the per-run
schema makes valid, and the whole pipeline (processor → judge → event, carrier span, metrics)
records it. Not in the default run (marker ``real_llm``: the wheel takes ~40 minutes to build);
``make test-llm`` runs it, and it fails — never skips — when the wheel is missing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.real_llm import judge_one_run_through_the_pipeline
from tests.tools.llama import llama_server

pytestmark = [pytest.mark.real_llm, pytest.mark.timeout(420)]


def test_real_llm_server_judges_a_run_through_the_pipeline(tmp_path: Path) -> None:
    # One request takes 20-70 s on a loaded 2-core machine (1-4 tokens/s under grammar sampling).
    with llama_server(tmp_path, n_ctx=2048) as server:
        # The server refuses json_schema with a 500 and takes llama.cpp's json_object form.
        judge_one_run_through_the_pipeline(server, request_timeout_s=180.0, expected_output_mode="json_object")
