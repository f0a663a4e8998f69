"""The package's one lazy-import pattern: a table of public names and the module defining each.

``import otel_toolscore`` (and its sub-packages) must stay cheap — no OpenTelemetry SDK, no pydantic
— so a package lists its public names in a table and gets a module ``__getattr__`` (PEP 562) that
imports the defining module on first access and keeps the value, so the next access is a plain
attribute read.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_getattr"]


def lazy_getattr(module_name: str, table: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``module_name`` serving ``table`` (public name -> defining
    module, relative to the module's package: ``".online.processor"``)."""

    def __getattr__(name: str) -> Any:
        target = table.get(name)
        if target is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        module = sys.modules[module_name]
        value = getattr(importlib.import_module(target, module.__package__), name)
        setattr(module, name, value)
        return value

    return __getattr__
