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


# ---- inspection (python tests/corpus/_record.py FILE.traces.jsonl [--attrs key,key]) -------------
def _value(v: dict[str, Any]) -> Any:
    """Unwrap an OTLP/JSON AnyValue."""
    if "arrayValue" in v:
        return [_value(x) for x in v["arrayValue"].get("values", [])]
    if "kvlistValue" in v:
        return {kv["key"]: _value(kv.get("value", {})) for kv in v["kvlistValue"].get("values", [])}
    for key in ("stringValue", "boolValue", "intValue", "doubleValue", "bytesValue"):
        if key in v:
            return v[key]
    return None


def load_spans(path: str | Path) -> list[dict[str, Any]]:
    """Every span of a ``.traces.jsonl`` file, attributes unwrapped into a plain dict, scope added."""
    spans: list[dict[str, Any]] = []
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            continue
        for rs in json.loads(line).get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                for sp in ss.get("spans", []):
                    sp = dict(sp)
                    sp["attrs"] = {a["key"]: _value(a.get("value", {})) for a in sp.get("attributes", [])}
                    sp["scope"] = ss.get("scope", {}).get("name", "")
                    spans.append(sp)
    return spans


def show_tree(path: str | Path, keys: list[str] | None = None, width: int = 160) -> str:
    """An indented span tree: name, status code, and the chosen attributes (all when ``keys`` is None)."""
    spans = sorted(load_spans(path), key=lambda s: int(s.get("startTimeUnixNano", 0)))
    ids = {s["spanId"] for s in spans}
    children: dict[str | None, list[dict[str, Any]]] = {}
    for s in spans:
        parent = s.get("parentSpanId") or None
        children.setdefault(parent if parent in ids else None, []).append(s)
    lines: list[str] = []

    def walk(s: dict[str, Any], depth: int) -> None:
        status = s.get("status", {}).get("code", 0)
        lines.append(f"{'  ' * depth}- {s['name']}  [scope={s['scope']} status={status}]")
        for k, v in s["attrs"].items():
            if keys is None or any(k == p or k.startswith(p + ".") for p in keys):
                text = v if isinstance(v, str) else json.dumps(v)
                lines.append(f"{'  ' * depth}    {k} = {text[:width]}")
        for c in children.get(s["spanId"], []):
            walk(c, depth + 1)

    for root in children.get(None, []):
        walk(root, 0)
    return "\n".join(lines)


def load_logs(path: str | Path) -> list[dict[str, Any]]:
    """Every log record of a ``.logs.jsonl`` file, attributes and body unwrapped, scope added."""
    records: list[dict[str, Any]] = []
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            continue
        for rl in json.loads(line).get("resourceLogs", []):
            for sl in rl.get("scopeLogs", []):
                for lr in sl.get("logRecords", []):
                    lr = dict(lr)
                    lr["attrs"] = {a["key"]: _value(a.get("value", {})) for a in lr.get("attributes", [])}
                    lr["body_value"] = _value(lr.get("body", {}))
                    lr["scope"] = sl.get("scope", {}).get("name", "")
                    records.append(lr)
    return records


def show_logs(path: str | Path, width: int = 400) -> str:
    lines = []
    for lr in load_logs(path):
        lines.append(f"- {lr.get('eventName', '')} [scope={lr['scope']} span={lr.get('spanId', '')}]")
        for k, v in lr["attrs"].items():
            text = v if isinstance(v, str) else json.dumps(v)
            lines.append(f"    {k} = {text[:width]}")
        if lr["body_value"] is not None:
            lines.append(f"    body = {json.dumps(lr['body_value'])[:width]}")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    args = sys.argv[1:]
    chosen = None
    if "--attrs" in args:
        i = args.index("--attrs")
        chosen = args[i + 1].split(",")
        del args[i:i + 2]
    for file in args:
        print(f"== {file}")
        print(show_logs(file) if file.endswith(".logs.jsonl") else show_tree(file, chosen))
