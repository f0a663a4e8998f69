"""Every distribution ``otel_toolscore`` imports is declared in ``pyproject.toml``, none is left to
arrive with another one.

The package's source is read with ``ast`` (imports inside functions and ``try`` blocks included, so
lazy imports count), each third-party module is mapped to the installed distribution whose files
hold it (``opentelemetry`` and ``google`` are namespaces shared by several distributions, so the
module's own path decides, not its top-level name), and the distribution must be a base dependency
or, when the import is guarded (``if TYPE_CHECKING:`` or a ``try`` that catches ``ImportError``),
an optional extra. The ``dev`` extra never counts: users do not install it.
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "otel_toolscore"
#: Base dependencies the code does not import, and why they are declared anyway.
NOT_IMPORTED = {
    # the design card's meta-package: users expect `pip install otel-toolscore` to bring both OTLP
    # exporters; the code imports them by their own distributions, declared alongside
    "opentelemetry-exporter-otlp": "the OTLP exporters' meta-package",
}
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError"}


@dataclass(frozen=True)
class Import:
    module: str
    where: str  # file:line
    guarded: bool  # a missing distribution cannot break the import of the module holding it


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(k, ast.Name) and k.id in _IMPORT_ERRORS for k in kinds)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, where: str, guarded: bool) -> Iterator[Import]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield Import(alias.name, f"{where}:{node.lineno}", guarded)
        return
    if isinstance(node, ast.ImportFrom):
        if node.level == 0 and node.module:
            # `from opentelemetry import trace` imports the submodule opentelemetry.trace: the
            # longest path a distribution's files hold decides (see distribution_of)
            for alias in node.names:
                yield Import(f"{node.module}.{alias.name}", f"{where}:{node.lineno}", guarded)
        return
    if isinstance(node, ast.If) and _is_type_checking(node.test):
        for child in node.body:
            yield from _walk(child, where, True)
        for child in node.orelse:
            yield from _walk(child, where, guarded)
        return
    if isinstance(node, ast.Try) and any(_catches_import_error(h) for h in node.handlers):
        for child in node.body:
            yield from _walk(child, where, True)
        for part in (node.handlers, node.orelse, node.finalbody):
            for child in part:
                yield from _walk(child, where, guarded)
        return
    for child in ast.iter_child_nodes(node):
        yield from _walk(child, where, guarded)


def third_party_imports() -> list[Import]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = str(path.relative_to(ROOT))
        for imp in _walk(ast.parse(path.read_text(encoding="utf-8"), where), where, False):
            top = imp.module.split(".")[0]
            if top != "otel_toolscore" and top not in sys.stdlib_module_names:
                out.append(imp)
    return out


@cache
def _top_level() -> dict[str, list[str]]:
    return md.packages_distributions()


@cache
def _files(dist: str) -> tuple[str, ...]:
    return tuple(str(f) for f in md.distribution(dist).files or ())


def distribution_of(module: str) -> str:
    """The installed distribution holding ``module``: the one whose files hold the longest prefix of
    its dotted path (``opentelemetry.sdk.trace`` -> ``opentelemetry/sdk/...`` -> opentelemetry-sdk)."""
    parts = module.split(".")
    candidates = _top_level().get(parts[0], [])
    assert candidates, f"{module}: no installed distribution provides {parts[0]!r} (install the dev extra)"
    for n in range(len(parts), 0, -1):
        base = "/".join(parts[:n])
        holders = {
            canonicalize_name(d)
            for d in candidates
            if any(f.startswith((base + "/", base + ".")) for f in _files(d))
        }
        if len(holders) == 1:
            return holders.pop()
        assert len(holders) < 2 or n == 1, f"{module}: {base} is in several distributions: {sorted(holders)}"
    raise AssertionError(f"{module}: cannot tell which of {candidates} holds it")


def _pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]  # type: ignore[no-any-return]


def _names(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(r).name) for r in requirements}


def test_every_imported_distribution_is_declared() -> None:
    project = _pyproject()
    base = _names(project["dependencies"])
    extras = {name: _names(reqs) for name, reqs in project["optional-dependencies"].items() if name != "dev"}
    problems = []
    for imp in third_party_imports():
        dist = distribution_of(imp.module)
        if dist in base:
            continue
        in_extras = sorted(name for name, names in extras.items() if dist in names)
        if not in_extras:
            problems.append(f"{imp.where}: imports {imp.module} ({dist}), which pyproject.toml does not declare")
        elif not imp.guarded:
            problems.append(
                f"{imp.where}: imports {imp.module} ({dist}, only in the extra {in_extras}) without a guard "
                "(an ImportError handler or TYPE_CHECKING)"
            )
    assert not problems, "\n".join(problems)


def test_the_walk_sees_lazy_namespace_and_guarded_imports() -> None:
    """The check above is not vacuous: imports inside functions, namespace packages split across
    distributions and the guarded optional import are all seen."""
    found: dict[str, set[bool]] = {}
    for imp in third_party_imports():
        found.setdefault(distribution_of(imp.module), set()).add(imp.guarded)
    assert {
        "grpcio",
        "protobuf",
        "googleapis-common-protos",
        "opentelemetry-proto",
        "opentelemetry-sdk",
        "opentelemetry-api",
        "opentelemetry-exporter-otlp-proto-grpc",
        "opentelemetry-exporter-otlp-proto-http",
        "orjson",
        "google-re2",
        "h11",
        "httpx",
        "openai",  # imported inside the LLM scorer's functions only
        "pyyaml",  # imported inside functions of the rule and judge settings loaders
    } <= found.keys()
    assert found["langfuse"] == {True}  # optional: only behind an ImportError handler or TYPE_CHECKING


def test_every_base_dependency_is_imported_or_says_why() -> None:
    imported = {distribution_of(imp.module) for imp in third_party_imports()}
    unused = _names(_pyproject()["dependencies"]) - imported - set(NOT_IMPORTED)
    # tomli is imported under Python < 3.11 only, where this walk still sees it
    assert not unused, f"base dependencies nothing imports: {sorted(unused)}"
