"""Record a plain OpenAI SDK tool loop instrumented by openinference-instrumentation-openai.

The `openai` client talks to the scripted server in ``tests/corpus/_fake_openai.py`` on 127.0.0.1.
OpenInference reads its hiding options (``OPENINFERENCE_HIDE_*``) when instrumenting, so each mode
runs in its own child process. Run inside the venv described in README.md::

    python tests/corpus/openinference_openai/generate.py
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

HIDE = ("OPENINFERENCE_HIDE_INPUTS", "OPENINFERENCE_HIDE_OUTPUTS",
        "OPENINFERENCE_HIDE_INPUT_MESSAGES", "OPENINFERENCE_HIDE_OUTPUT_MESSAGES")

# mode -> (environment, content captured?, tool calls still recorded?, label)
MODES: dict[str, tuple[dict[str, str], bool, bool, str]] = {
    "content": ({}, True, True, "default TraceConfig (content captured)"),
    "nocontent": ({k: "true" for k in HIDE}, False, False,
                  "OPENINFERENCE_HIDE_INPUTS/OUTPUTS/INPUT_MESSAGES/OUTPUT_MESSAGES=true"),
}
MODE_NOTES = {
    "content": "Requested calls are in llm.output_messages.0.message.tool_calls.N.tool_call.*; tool results "
               "come back as llm.input_messages.N with role=tool on the next LLM span.",
    "nocontent": "Inputs/outputs and messages hidden: input.value/output.value read __REDACTED__ and no "
                 "llm.*_messages nor llm.tools.* are written, so no tool name is left anywhere.",
}
VERSIONED = ("openai", "openinference-instrumentation-openai", "openinference-instrumentation",
             "openinference-semantic-conventions", "opentelemetry-sdk")


def record(mode: str) -> None:
    import openai
    from _fake_openai import FakeOpenAI, plain_scenarios, plain_truth, run_plain_loop
    from _record import Recorder
    from openinference.instrumentation.openai import OpenAIInstrumentor

    rec = Recorder(service_name="corpus-openinference-openai")
    OpenAIInstrumentor().instrument(tracer_provider=rec.tracer_provider)
    _, content, calls_recorded, label = MODES[mode]
    for sc in plain_scenarios():
        with FakeOpenAI(sc.replies) as fake:
            client = openai.OpenAI(base_url=fake.base_url, api_key="test-key", max_retries=0)
            answer = run_plain_loop(client, sc)
            assert answer == sc.final and fake.pending == 0, (answer, fake.pending)
        stem = HERE / f"{mode}_{sc.name}"
        written = rec.write(stem)
        truth = plain_truth(sc, framework="openai-sdk (plain tool loop)",
                            instrumentation=f"openinference-instrumentation-openai, {label}",
                            versions={p: version(p) for p in VERSIONED}, content_capture=content,
                            tools_recorded=content, calls_recorded=calls_recorded, notes=MODE_NOTES[mode])
        stem.with_name(stem.name + ".truth.json").write_text(json.dumps(truth, indent=1) + "\n")
        print(stem.name, [p.name for p in written])


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--mode":
        record(sys.argv[2])
        return
    for mode, (env, *_) in MODES.items():
        child_env = {k: v for k, v in os.environ.items() if not k.startswith("OPENINFERENCE_")}
        subprocess.run([sys.executable, __file__, "--mode", mode], env={**child_env, **env}, check=True)


if __name__ == "__main__":
    main()
