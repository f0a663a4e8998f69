"""Record a plain OpenAI SDK tool loop instrumented by OpenLLMetry (opentelemetry-instrumentation-openai).

The `openai` client talks to the scripted server in ``tests/corpus/_fake_openai.py`` on 127.0.0.1.
Content capture (``TRACELOOP_TRACE_CONTENT``) is read from the environment, so each mode runs in its
own child process. The ``sdk_*`` modes use traceloop-sdk's ``@workflow`` / ``@agent`` / ``@tool``
decorators around the same loop (telemetry off, no API key, our own in-memory exporter). Run inside
the venv described in README.md::

    python tests/corpus/openllmetry_openai/generate.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

CONTENT = "TRACELOOP_TRACE_CONTENT"
OFF = {CONTENT: "false"}

# mode -> (environment, content captured?, label)
MODES: dict[str, tuple[dict[str, str], bool, str]] = {
    "attrs": ({}, True, "default (use_attributes=True: gen_ai.input/output.messages span attributes)"),
    "attrs_nocontent": (OFF, False, "default attributes, TRACELOOP_TRACE_CONTENT=false"),
    "events": ({}, True, "use_attributes=False (events path: log records)"),
    "events_nocontent": (OFF, False, "use_attributes=False (events path), TRACELOOP_TRACE_CONTENT=false"),
    "sdk": ({}, True, "traceloop-sdk Traceloop.init + @workflow/@agent/@tool decorators"),
    "sdk_nocontent": (OFF, False, "traceloop-sdk decorators, TRACELOOP_TRACE_CONTENT=false"),
    # need opentelemetry-instrumentation-openai <= 0.54.0 (requirements-legacy.txt): the last release that
    # writes the legacy indexed attributes gen_ai.prompt.N.* / gen_ai.completion.N.* / llm.request.functions.N.*
    "legacy_attrs": ({}, True, "0.54.0 legacy indexed attributes (gen_ai.prompt.N / gen_ai.completion.N)"),
    "legacy_attrs_nocontent": (OFF, False, "0.54.0 legacy indexed attributes, TRACELOOP_TRACE_CONTENT=false"),
}
LEGACY_BEFORE = (0, 55)  # instrumentation versions below this write the legacy attributes
VERSIONED = ("openai", "opentelemetry-instrumentation-openai", "opentelemetry-semantic-conventions-ai",
             "opentelemetry-sdk")


def instrument_plain(mode: str, rec: Any) -> Callable[[Any, Any], str | None]:
    from _fake_openai import run_plain_loop
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    if mode.startswith("legacy"):  # 0.54 has no use_attributes switch (legacy attributes are its default)
        OpenAIInstrumentor().instrument(tracer_provider=rec.tracer_provider)
    else:
        OpenAIInstrumentor(use_attributes=not mode.startswith("events")).instrument(
            tracer_provider=rec.tracer_provider, logger_provider=rec.logger_provider)
    return run_plain_loop


def instrument_sdk(rec: Any) -> Callable[[Any, Any], str | None]:
    """Traceloop.init with telemetry off, no API key, and our exporter; the loop under @workflow/@agent,
    each tool function under @tool."""
    from _fake_openai import PLAIN_IMPLS, run_plain_loop
    from traceloop.sdk import Traceloop
    from traceloop.sdk.decorators import agent, tool, workflow
    from traceloop.sdk.instruments import Instruments

    Traceloop.init(app_name="corpus-openllmetry-openai", exporter=rec.spans, disable_batch=True,
                   telemetry_enabled=False, instruments={Instruments.OPENAI})

    @tool(name="get_weather")
    def get_weather(city: str) -> str:
        return PLAIN_IMPLS["get_weather"](city)

    @tool(name="get_time")
    def get_time(city: str) -> str:
        return PLAIN_IMPLS["get_time"](city)

    def run(client: Any, sc: Any) -> str | None:
        # decorated functions take the user's query, so the entity input shows it (not object reprs)
        @agent(name="weather_agent")
        def weather_agent(query: str) -> str | None:
            return run_plain_loop(client, sc, impls={"get_weather": get_weather, "get_time": get_time})

        @workflow(name="weather_workflow")
        def weather_workflow(query: str) -> str | None:
            return weather_agent(query)

        return weather_workflow(sc.query)

    return run


def record(mode: str) -> None:
    import openai
    from _fake_openai import FakeOpenAI, plain_scenarios, plain_truth
    from _record import Recorder

    _, content, label = MODES[mode]
    sdk = mode.startswith("sdk")
    # traceloop-sdk builds and installs its own TracerProvider: hand it our in-memory exporter instead
    rec = Recorder(service_name="corpus-openllmetry-openai", set_global=not sdk)
    run = instrument_sdk(rec) if sdk else instrument_plain(mode, rec)
    versions = {p: version(p) for p in VERSIONED + (("traceloop-sdk",) if sdk else ())}
    for sc in plain_scenarios():
        with FakeOpenAI(sc.replies) as fake:
            client = openai.OpenAI(base_url=fake.base_url, api_key="test-key", max_retries=0)
            answer = run(client, sc)
            assert answer == sc.final and fake.pending == 0, (answer, fake.pending)
        stem = HERE / f"{mode}_{sc.name}"
        written = rec.write(stem)
        truth = plain_truth(sc, framework="openai-sdk (plain tool loop)" + (" + traceloop-sdk decorators" if sdk else ""),
                            instrumentation=f"opentelemetry-instrumentation-openai (OpenLLMetry), {label}",
                            versions=versions, content_capture=content,
                            tools_recorded=TOOLS_RECORDED[mode], calls_recorded=CALLS_RECORDED[mode],
                            notes=MODE_NOTES[mode])
        if sdk:
            truth["runs"][0]["agent_name"] = "weather_agent"
        stem.with_name(stem.name + ".truth.json").write_text(json.dumps(truth, indent=1) + "\n")
        print(stem.name, [p.name for p in written])


# What these versions were seen to emit (README "What this convention actually emits"): tool
# definitions only on chat spans in the attributes path with content on; tool names survive content-off
# in the events path (gen_ai.choice / gen_ai.assistant.message bodies) and on @tool spans.
TOOLS_RECORDED = {"attrs": True, "attrs_nocontent": False, "events": False, "events_nocontent": False,
                  "sdk": True, "sdk_nocontent": False, "legacy_attrs": True, "legacy_attrs_nocontent": False}
CALLS_RECORDED = {"attrs": True, "attrs_nocontent": False, "events": True, "events_nocontent": True,
                  "sdk": True, "sdk_nocontent": True, "legacy_attrs": True, "legacy_attrs_nocontent": False}
MODE_NOTES = {
    "attrs": "Requested calls in the chat spans' gen_ai.output.messages (parts format).",
    "attrs_nocontent": "Content off removes messages AND gen_ai.tool.definitions: no tool name is left.",
    "events": "Messages are log records (gen_ai.*.message, gen_ai.choice); gen_ai.choice puts tool_calls at "
              "the top of the body, not inside message. No tool definitions anywhere.",
    "events_nocontent": "Log records keep tool_calls[].id and function.name without arguments.",
    "sdk": "Workflow span > agent span > chat spans and one <tool>.tool span per executed call "
           "(traceloop.span.kind=tool, arguments in traceloop.entity.input kwargs). Tool spans carry no call id.",
    "sdk_nocontent": "The @tool spans keep their names (no input/output); chat spans carry no messages.",
    "legacy_attrs": "Requested calls in gen_ai.completion.0.tool_calls.N.{id,name,arguments}; definitions in "
                    "llm.request.functions.N.*.",
    "legacy_attrs_nocontent": "Content off removes gen_ai.prompt.* / gen_ai.completion.* and llm.request.functions.*.",
}


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--mode":
        record(sys.argv[2])
        return
    installed = tuple(int(x) for x in version("opentelemetry-instrumentation-openai").split(".")[:2])
    for mode, (env, _, _) in MODES.items():
        if mode.startswith("legacy") != (installed < LEGACY_BEFORE):
            continue
        child_env = {k: v for k, v in os.environ.items() if not k.startswith("TRACELOOP_")}
        child_env["TRACELOOP_TELEMETRY"] = "false"  # no phone-home (there is no API key either)
        subprocess.run([sys.executable, __file__, "--mode", mode], env={**child_env, **env}, check=True)


if __name__ == "__main__":
    main()
