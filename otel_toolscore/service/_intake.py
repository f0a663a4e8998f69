"""What the receivers see of the service: the intake interface and its answer.

The receivers (:mod:`._receivers`) depend on this module only, and the service (:mod:`._app`)
implements it: the dependency runs one way, app → receivers → intake.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from ._decode import TraceRequest

__all__ = ["BufferView", "Intake", "IntakeResult"]


class IntakeResult:
    """The answer to one export request: accepted (with how many items were rejected) or refused."""

    __slots__ = ("accepted", "reason", "rejected")

    def __init__(self, accepted: bool, reason: str | None = None, rejected: int = 0) -> None:
        self.accepted = accepted
        self.reason = reason  # why refused: overload, draining
        self.rejected = rejected  # items of an accepted request that could not be used (no ids)


class BufferView(Protocol):
    """The buffer's fill, as ``/readyz`` reports it."""

    @property
    def spans(self) -> int: ...

    @property
    def bytes(self) -> int: ...

    @property
    def traces(self) -> int: ...


class Intake(Protocol):
    """What a receiver hands requests to and asks about (implemented by ``ScoringService``)."""

    @property
    def draining(self) -> bool: ...

    @property
    def ready(self) -> bool: ...

    @property
    def forward_backlog(self) -> int: ...

    @property
    def buffer(self) -> BufferView: ...

    @property
    def meter_provider(self) -> Any: ...

    def accept_spans(self, request: ExportTraceServiceRequest | TraceRequest) -> IntakeResult: ...

    def accept_logs(self, request: ExportLogsServiceRequest) -> IntakeResult: ...

    def refuse(self, signal: str, reason: str, count: int) -> None: ...
