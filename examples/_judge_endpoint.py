"""The judge endpoint the examples use: a real one from the environment, or a local test server.

With ``OPENAI_BASE_URL`` set, the examples talk to that OpenAI-compatible endpoint; otherwise the
project's local test server plays the judge (scripted verdicts), so every example runs offline.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def judge_endpoint(*verdicts: dict[str, Any], approve: Callable[[str], bool] | None = None) -> Iterator[str | None]:
    """``None`` (use the environment's endpoint) or the base URL of a local server that answers
    ``verdicts`` in turn, or, with ``approve``, one verdict per call listed in each prompt."""
    if os.environ.get("OPENAI_BASE_URL"):
        yield None
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.support.openai_server import OpenAITestServer, chat_completion, echo_judge

    handler = echo_judge(appropriate=approve, reason="scripted verdict") if approve is not None else None
    with OpenAITestServer(handler) as server:
        for verdict in verdicts:
            server.enqueue(lambda request, v=verdict: chat_completion(json.dumps(v), request=request))
        yield server.base_url
