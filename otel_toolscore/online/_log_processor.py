"""The companion log-record processor: GenAI events in log records join the span processor's runs."""

from __future__ import annotations

import logging
from typing import Any, Protocol

from opentelemetry.sdk._logs import LogRecordProcessor

__all__ = ["ToolScoreLogRecordProcessor"]

_log = logging.getLogger(__name__)


class _RunSink(Protocol):
    """What this processor needs of the span processor (``ToolScoreSpanProcessor``)."""

    def add_log_record(self, record: Any) -> None: ...


class ToolScoreLogRecordProcessor(LogRecordProcessor):
    """Feeds tool calls and content found in log events into the span processor's runs.

    Add it to the ``LoggerProvider`` before the exporting processor. It exports nothing itself; the
    record is read on the span processor's worker, never on the emitting thread.
    """

    #: ``emit`` only queues (never blocks): the core may write its own records on a hot thread
    only_queues = True

    def __init__(self, span_processor: _RunSink) -> None:
        self._span_processor = span_processor

    def on_emit(self, log_record: Any) -> None:
        # The span processor takes a view of the record now (the SDK may reuse or change it after
        # on_emit returns) and reads it later, on its worker.
        try:
            self._span_processor.add_log_record(log_record)
        except Exception:  # never into the application (ours never raises; a stand-in might)
            _log.debug("otel-toolscore could not queue a log record", exc_info=True)

    emit = on_emit  # older SDKs call ``emit``

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True
