"""Deprecated import path: this module moved to :mod:`otel_toolscore._workers`.

Kept so that code written against earlier releases keeps working; import from ``otel_toolscore._workers``.
"""

from __future__ import annotations

from .._workers import QueueWorker

__all__ = ["QueueWorker"]
