"""The house reads as the design says (issue 11): no import circles between the package's modules,
whether the import runs at load time, inside a function, or for type checking only."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "otel_toolscore"


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


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
                targets = [mod] + [f"{mod}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for t in targets:
                if t in modules and t != name:
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
    assert "otel_toolscore.core" in graph["otel_toolscore.service.app"]
    for core in (m for m in graph if m.startswith("otel_toolscore.core")):
        assert processor not in graph[core], core


def _fresh(code: str) -> str:
    """What ``code`` prints in a fresh interpreter (nothing imported yet)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    return out.stdout.strip()


def test_the_processor_loads_no_service_llm_scorer_or_otlp_decoders() -> None:
    """Import light (issue 11): the live processor and the code scorer load; the service, the LLM
    scorer, the offline reader and the OTLP decoders (protobuf) load on first use. No pydantic
    either (issue 22): the processor's settings and expectations are plain classes, and the code
    scorer's Mastra-shaped result models load with the first result."""
    code = (
        "import sys\n"
        "from otel_toolscore import ToolScoreSpanProcessor, create_tool_call_accuracy_scorer_code\n"
        "heavy = ('openai', 'google.protobuf', 'opentelemetry.proto', 'grpc', 'httpx', 'otel_toolscore.service', 'opentelemetry.sdk._logs',\n"
        "         'otel_toolscore.scorers.llm', 'otel_toolscore.extract.sources', 'otel_toolscore.online.judge',\n"
        "         'pydantic', 'otel_toolscore.model', 'otel_toolscore.scorers.code_result', 're2', 'yaml')\n"
        "print(sorted({m.split('.')[0] if not m.startswith('otel_toolscore') else m for m in sys.modules\n"
        "              if m.startswith(heavy)}))\n"
    )
    out = _fresh(code)
    assert out == "[]", out


def test_importing_the_package_loads_neither_the_sdk_nor_pydantic() -> None:
    """``import otel_toolscore`` loads the version and the table of public names, nothing else
    (issue 22): every name, the data model and the code scorer included, loads on first use."""
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
