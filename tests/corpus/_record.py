"""Recording helper shared by the corpus generator scripts (not used by CI, which reads files only).

Usage in a generator script::

    from _record import Recorder
    rec = Recorder()                 # installs global tracer + logger providers with in-memory exporters
    ... run the instrumented agent ...
    rec.write("tests/corpus/<framework>/<scenario>")   # writes .traces.jsonl (+ .logs.jsonl)

Files are JSON Lines of OTLP export requests in OTLP/JSON (hex ids, integer enums), the shape the
Collector's file exporter writes. Pass ``set_global=False`` to only build the providers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

try:  # the logs SDK moved between releases; recording works without it
    from opentelemetry import _logs
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogExporter, SimpleLogRecordProcessor
except ImportError:  # pragma: no cover
    _logs = None  # type: ignore[assignment]


def _b64_to_hex(value: str) -> str:
    import base64

    return base64.b64decode(value).hex()


def _fix_ids(node: Any) -> Any:
    """protobuf's JSON mapping writes bytes as base64; OTLP/JSON wants hex trace/span ids."""
    if isinstance(node, dict):
        for key, val in list(node.items()):
            if key in ("traceId", "spanId", "parentSpanId") and isinstance(val, str):
                node[key] = _b64_to_hex(val)
            else:
                _fix_ids(val)
    elif isinstance(node, list):
        for item in node:
            _fix_ids(item)
    return node


def to_otlp_json(message: Any) -> dict[str, Any]:
    return _fix_ids(MessageToDict(message, use_integers_for_enums=True))


class Recorder:
    def __init__(self, service_name: str = "corpus-agent", set_global: bool = True) -> None:
        resource = Resource.create({"service.name": service_name})
        self.spans = InMemorySpanExporter()
        self.tracer_provider = TracerProvider(resource=resource)
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.logs = None
        self.logger_provider = None
        if _logs is not None:
            self.logs = InMemoryLogExporter()
            self.logger_provider = LoggerProvider(resource=resource)
            self.logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.logs))
        if set_global:
            trace.set_tracer_provider(self.tracer_provider)
            if _logs is not None and self.logger_provider is not None:
                _logs.set_logger_provider(self.logger_provider)

    def write(self, stem: str | Path) -> list[Path]:
        """Write what was recorded so far to ``<stem>.traces.jsonl`` and ``<stem>.logs.jsonl``."""
        self.tracer_provider.force_flush()
        stem = Path(stem)
        stem.parent.mkdir(parents=True, exist_ok=True)
        written: list[Path] = []
        spans = self.spans.get_finished_spans()
        if spans:
            path = stem.with_name(stem.name + ".traces.jsonl")
            path.write_text(json.dumps(to_otlp_json(encode_spans(spans)), sort_keys=True) + "\n")
            written.append(path)
        if self.logs is not None and self.logger_provider is not None:
            self.logger_provider.force_flush()
            records = self.logs.get_finished_logs()
            if records:
                path = stem.with_name(stem.name + ".logs.jsonl")
                path.write_text(json.dumps(to_otlp_json(encode_logs(records)), sort_keys=True) + "\n")
                written.append(path)
        self.spans.clear()
        if self.logs is not None:
            self.logs.clear()
        return written
