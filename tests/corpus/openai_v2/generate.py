"""Record a plain OpenAI SDK tool loop instrumented by opentelemetry-instrumentation-openai-v2.

The `openai` client talks to the scripted server in ``tests/corpus/_fake_openai.py`` on 127.0.0.1.
The instrumentation reads its settings from the environment when it is installed, so each mode runs
in its own child process. Run from anywhere inside the venv described in README.md::

    python tests/corpus/openai_v2/generate.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
OPT_IN = "OTEL_SEMCONV_STABILITY_OPT_IN"
LATEST = "gen_ai_latest_experimental"

# mode -> (environment, content captured?, label). The legacy_* modes need opentelemetry-util-genai < 1.0
# (requirements-legacy.txt): from 1.0 on, util-genai's is_experimental_mode() always returns True, so
# openai-v2 2.4b0 always takes the new path and reads "true" as an invalid value (= no content).
MODES: dict[str, tuple[dict[str, str], bool, str]] = {
    "legacy": ({CAPTURE: "true"}, True, "default (semconv 1.30 path), capture content=true"),
    "legacy_nocontent": ({}, False, "default (semconv 1.30 path), no content capture"),
    "latest_span": ({OPT_IN: LATEST, CAPTURE: "span_only"}, True,
                    "gen_ai_latest_experimental, content span_only"),
    "latest_event": ({OPT_IN: LATEST, CAPTURE: "event_only"}, True,
                     "gen_ai_latest_experimental, content event_only"),
    "latest_span_and_event": ({OPT_IN: LATEST, CAPTURE: "span_and_event"}, True,
                              "gen_ai_latest_experimental, content span_and_event"),
    "latest_nocontent": ({OPT_IN: LATEST}, False, "gen_ai_latest_experimental, no content capture"),
}

# What the trace can carry when content is off (observed on these versions, see README): in the
# legacy path the gen_ai.choice events keep tool names and ids; the latest path drops messages
# entirely, so no tool name is left anywhere.
NAMES_WITHOUT_CONTENT = {"legacy_nocontent": True, "latest_nocontent": False}
MODE_NOTES = {
    "legacy": "Legacy path: messages and tool calls are log records (gen_ai.* events), not span attributes.",
    "legacy_nocontent": "Legacy path without content: the gen_ai.choice log records keep tool_calls "
                        "names/ids, arguments are dropped.",
    "latest_span": "Content on the chat spans only (gen_ai.input/output.messages).",
    "latest_event": "Content only on the gen_ai.client.inference.operation.details log record; the chat "
                    "spans carry no messages.",
    "latest_span_and_event": "Content both on the chat spans and on the operation.details log record.",
    "latest_nocontent": "No content: no messages anywhere, so no tool name is left in the trace.",
}
VERSIONED = ("openai", "opentelemetry-instrumentation-openai-v2", "opentelemetry-util-genai", "opentelemetry-sdk")


def record(mode: str) -> None:
    import openai
    from _fake_openai import FakeOpenAI, plain_scenarios, plain_truth, run_plain_loop
    from _record import Recorder
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    rec = Recorder(service_name="corpus-openai-v2")
    OpenAIInstrumentor().instrument(tracer_provider=rec.tracer_provider, logger_provider=rec.logger_provider)
    _, content, label = MODES[mode]
    for sc in plain_scenarios():
        with FakeOpenAI(sc.replies) as fake:
            client = openai.OpenAI(base_url=fake.base_url, api_key="test-key", max_retries=0)
            answer = run_plain_loop(client, sc)
            assert answer == sc.final and fake.pending == 0, (answer, fake.pending)
        stem = HERE / f"{mode}_{sc.name}"
        written = rec.write(stem)
        truth = plain_truth(sc, framework="openai-sdk (plain tool loop)",
                            instrumentation=f"opentelemetry-instrumentation-openai-v2, {label}",
                            versions={p: version(p) for p in VERSIONED}, content_capture=content,
                            tools_recorded=False, calls_recorded=content or NAMES_WITHOUT_CONTENT[mode],
                            notes=MODE_NOTES[mode])
        stem.with_name(stem.name + ".truth.json").write_text(json.dumps(truth, indent=1) + "\n")
        print(stem.name, [p.name for p in written])


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--mode":
        record(sys.argv[2])
        return
    legacy = int(version("opentelemetry-util-genai").split(".")[0]) < 1
    for mode, (env, _, _) in MODES.items():
        if mode.startswith("legacy") != legacy:
            continue
        child_env = {k: v for k, v in os.environ.items() if k not in (CAPTURE, OPT_IN)}
        subprocess.run([sys.executable, __file__, "--mode", mode], env={**child_env, **env}, check=True)


if __name__ == "__main__":
    main()
