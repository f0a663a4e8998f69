"""The house reads as the design says (``docs/architecture.md``): layers that only point down, no
import circles between the package's modules or folders — whether the import runs at load time,
inside a function, or for type checking only — and the adapters never import each other."""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "otel_toolscore"


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@functools.cache  # the package is parsed once per session: every test reads the same graph
def _edges() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                # ``from pkg import sub`` imports the module ``pkg.sub``; ``from pkg import name``, ``pkg``
                targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in modules else mod for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for t in targets:
                # a module's own folders load before it anyway: an arrow to them says nothing (the
                # package's face excepted — nothing inside imports it)
                own_folder = name.startswith(t + ".") and t != "otel_toolscore"
                if t in modules and t != name and not own_folder:
                    graph[name].add(t)
    return graph


def _cycles(graph: dict[str, set[str]], scope: str) -> list[list[str]]:
    nodes = {n for n in graph if n.startswith(scope)}
    found: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        for nxt in sorted(graph[node]):
            if nxt not in nodes:
                continue
            if nxt in path:
                cycle = [*path[path.index(nxt):], nxt]
                if min(cycle[:-1]) == cycle[0]:
                    found.append(cycle)
            elif len(path) < 12:
                visit(nxt, [*path, nxt])

    for n in sorted(nodes):
        visit(n, [n])
    return found


# The layers, bottom to top (docs/architecture.md): a module imports only from its own layer or below.
# An entry names a top-level module or folder of the package; the longest matching entry wins.
LAYERS: list[tuple[str, ...]] = [
    # shared base: versions, lazy faces, deadlines, the data model and its records, workers, bounded HTTP
    ("_version", "_lazy", "_deadline", "_workers", "model", "run_records", "redact", "files", "messages",
     "envconfig", "http_limits", "bounded_http", "scripted"),
    ("extract", "scorers"),  # spans to runs; runs to scores
    ("expectations", "telemetry", "_scored"),  # what a run should do; OpenTelemetry output only
    ("settings", "config"),  # the scoring settings (config: its deprecated path)
    ("sinks", "judge"),  # fed by the core's outputs; the judge below the core
    ("core",),  # spans in, scored runs and spans to hand on out
    ("online", "service", "offline"),  # the adapters: siblings that never import each other
    ("cli", "__main__", "auto", "testing", ""),  # the commands, the zero-code hook, the test helpers, the face
]
ADAPTERS = ("online", "service", "offline")


def _entry(module: str) -> str:
    rel = module.removeprefix("otel_toolscore").lstrip(".")
    matches = [e for layer in LAYERS for e in layer if e and (rel == e or rel.startswith(e + "."))]
    return max(matches, key=len) if matches else ""


def _layer(module: str) -> int:
    entry = _entry(module)
    return next(i for i, layer in enumerate(LAYERS) if entry in layer)


def test_every_module_has_a_layer() -> None:
    """A new top-level module or folder gets a place in ``LAYERS`` (only the face ``__init__`` sits on top unnamed)."""
    unplaced = [m for m in _edges() if _entry(m) == "" and m != "otel_toolscore"]
    assert unplaced == []


def test_no_import_points_up_a_layer() -> None:
    graph = _edges()
    upward = [f"{a} -> {b}" for a, targets in graph.items() for b in sorted(targets) if _layer(b) > _layer(a)]
    assert upward == []


def test_no_circle_between_modules_or_folders() -> None:
    graph = _edges()
    assert _cycles(graph, "otel_toolscore.") == []
    folders: dict[str, set[str]] = {}
    for a, targets in graph.items():
        fa = _entry(a)
        folders.setdefault(fa, set()).update(_entry(b) for b in targets if _entry(b) != fa)
    assert _cycles(folders, "") == []


def test_the_adapters_never_import_each_other() -> None:
    graph = _edges()
    crossing = [
        f"{a} -> {b}" for a, targets in graph.items() for b in targets
        if _entry(a) in ADAPTERS and _entry(b) in ADAPTERS and _entry(a) != _entry(b)
    ]
    assert crossing == []


def test_no_circle_between_online_modules() -> None:
    assert _cycles(_edges(), "otel_toolscore.online.") == []


def test_no_circle_between_service_modules() -> None:
    assert _cycles(_edges(), "otel_toolscore.service.") == []


def test_the_offline_reader_imports_the_core_not_the_online_processor() -> None:
    graph = _edges()
    for module in graph:
        if module.startswith("otel_toolscore.extract"):
            assert not any(t.startswith("otel_toolscore.online") for t in graph[module]), module


def test_the_service_imports_the_core_not_the_span_processor() -> None:
    """The service drives the core (``otel_toolscore.core``: engine, outputs, state) itself; neither
    the service nor the core imports the span processor."""
    graph = _edges()
    processor = "otel_toolscore.online.processor"
    for module in graph:
        if module.startswith("otel_toolscore.service"):
            assert processor not in graph[module], module
    assert "otel_toolscore.core" in graph["otel_toolscore.service._app"]
    for core in (m for m in graph if m.startswith("otel_toolscore.core")):
        assert processor not in graph[core], core


def _fresh(code: str) -> str:
    """What ``code`` prints in a fresh interpreter (nothing imported yet)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    return out.stdout.strip()


def test_the_processor_loads_no_service_llm_scorer_or_otlp_decoders() -> None:
    """Import light: the live processor and the code scorer load; the service, the LLM
    scorer, the offline reader and the OTLP decoders (protobuf) load on first use. No pydantic
    either: the processor's settings and expectations are plain classes, and the code
    scorer's Mastra-shaped result models load with the first result."""
    code = (
        "import sys\n"
        "from otel_toolscore import ToolScoreSpanProcessor, create_tool_call_accuracy_scorer_code\n"
        "heavy = ('openai', 'google.protobuf', 'opentelemetry.proto', 'grpc', 'httpx', 'otel_toolscore.service', 'opentelemetry.sdk._logs',\n"
        "         'otel_toolscore.scorers.llm', 'otel_toolscore.extract._sources', 'otel_toolscore.online.judge',\n"
        "         'pydantic', 'otel_toolscore.model', 'otel_toolscore.scorers._code_result', 're2', 'yaml', 'email')\n"
        "print(sorted({m.split('.')[0] if not m.startswith('otel_toolscore') else m for m in sys.modules\n"
        "              if m.startswith(heavy)}))\n"
    )
    out = _fresh(code)
    assert out == "[]", out


def test_a_working_processor_without_sinks_loads_neither_pydantic_nor_the_sinks() -> None:
    """Built and scoring a run, with no sink configured: the sinks' dispatcher (and pydantic, which
    its stats use) stay unloaded (they held ~11,000 objects more for every full pass of the host's
    garbage collector, docs/performance.md)."""
    code = (
        "import os, sys\n"
        "os.environ.pop('OTEL_TOOLSCORE_SINKS', None)\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from opentelemetry.sdk._logs import LoggerProvider\n"
        "from opentelemetry.sdk.metrics import MeterProvider\n"
        "from otel_toolscore import Expectation, ToolScoreSpanProcessor\n"
        "tp = TracerProvider()\n"
        "p = ToolScoreSpanProcessor(None, expectations=[Expectation(expected_tool='t')],\n"
        "                           meter_provider=MeterProvider(), logger_provider=LoggerProvider())\n"
        "tp.add_span_processor(p)\n"
        "tracer = tp.get_tracer('x')\n"
        "with tracer.start_as_current_span('invoke_agent a', attributes={'gen_ai.operation.name': 'invoke_agent'}):\n"
        "    with tracer.start_as_current_span('execute_tool t', attributes={'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 't'}):\n"
        "        pass\n"
        "assert p.force_flush(10_000)\n"
        "tp.shutdown()\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pydantic', 'otel_toolscore.sinks'))))\n"
    )
    out = _fresh(code)
    assert out == "[]", out


def test_importing_the_package_loads_neither_the_sdk_nor_pydantic() -> None:
    """``import otel_toolscore`` loads the version and the table of public names, nothing else:
    every name, the data model and the code scorer included, loads on first use."""
    code = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import otel_toolscore\n"
        "print(sorted(m for m in set(sys.modules) - before\n"
        "             if m.startswith(('opentelemetry', 'pydantic', 'otel_toolscore.'))))\n"
    )
    out = _fresh(code)
    assert out == "['otel_toolscore._lazy', 'otel_toolscore._version']", out


def test_every_public_name_loads_from_its_lazy_entry() -> None:
    """Each name of ``otel_toolscore.__all__`` (and of the lazy sub-packages) resolves, in a fresh
    interpreter, and is then a plain attribute of the package."""
    code = (
        "import importlib\n"
        "for pkg in ('otel_toolscore', 'otel_toolscore.scorers', 'otel_toolscore.sinks', 'otel_toolscore.extract'):\n"
        "    mod = importlib.import_module(pkg)\n"
        "    for name in mod.__all__:\n"
        "        value = getattr(mod, name)\n"
        "        assert name in vars(mod) and vars(mod)[name] is value, (pkg, name)\n"
        "print('ok')\n"
    )
    assert _fresh(code) == "ok"
