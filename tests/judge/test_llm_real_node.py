"""The online judge against a real LLM server in the default run: tests/llm_server/server.mjs
(node-llama-cpp's prebuilt llama.cpp, installed from npm without compiling) with SmolLM2-135M
(tests/tools/node_llm.py), started on 127.0.0.1 by the test.

The small model's verdict is not the point. The point is that a real grammar-constrained server
accepts our request (``json_schema`` first: this server honours it), returns JSON that the per-run
schema makes valid, and the whole pipeline (processor -> judge -> event, carrier span, metrics)
records it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.real_llm import judge_one_run_through_the_pipeline
from tests.tools.node_llm import node_llm_server

pytestmark = [pytest.mark.timeout(240)]


def test_node_llm_server_judges_a_run_through_the_pipeline(tmp_path: Path) -> None:
    # SmolLM2-135M generates ~2-5 tokens/s under grammar sampling on a loaded 2-core machine.
    with node_llm_server(tmp_path) as server:
        # The server honours OpenAI's json_schema form, the first rung of the ladder.
        judge_one_run_through_the_pipeline(server, request_timeout_s=120.0, expected_output_mode="json_schema")
