"""``serve --queue-dir``: accepted trace requests kept on disk until their spans are forwarded.

Without it the service acknowledges a request once its spans are in memory, and a SIGKILL or an
OOM kill loses every buffered trace. With it (enrich-and-forward only, like the Collector's
``file_storage``-backed ``sending_queue``), a request is appended to a log in the directory
*before* it is acknowledged, and released once every span it brought has been through the
forwarding sender (sent, or given up after the sender's retries and counted as ``forward_failed``,
or dropped and counted as ``forward_queue_full``). The next start replays every request not
released: at least once after acknowledgement. A request replayed may hold spans that had been
forwarded before the crash: the backend receives them twice (same ids).

On disk: segments ``spans-<first sequence>.log`` (a header line, then records: length, CRC-32,
sequence number, the request as protobuf) with a sidecar ``.acks`` of the released sequence
numbers. A segment is deleted once all its requests are released; the segment being written is
emptied in place when it is. A record cut short by a kill (never acknowledged: the append had not
returned) is cut off at the next start; a record failing its CRC is skipped, counted
(``toolscore.dropped{reason=queue_corrupt}``) and warned about. A lock file keeps a second process
out of the directory.

Write policy (``queue_fsync``): off by default, as the Collector's ``file_storage``: an append is
written to the file (the kernel's page cache) before the request is acknowledged, which a killed
process cannot lose; a machine crash or power loss can lose the last seconds. On, each append is
also ``fdatasync``-ed before the answer (at the disk's pace: one sync per request).

Bounded by ``queue_max_bytes`` (segment files, released records included until their segment goes):
a request that does not fit is refused with OTLP's retryable answer, counted as
``toolscore.service.refused{reason=queue_full}``; one that cannot be written (a full disk, an I/O
error) as ``reason=queue_error``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from .._version import __version__
from ..envconfig import ConfigError
from ..telemetry import names
from ._decode import TraceRequest, as_trace_request
from ._intake import IntakeResult

if TYPE_CHECKING:
    from ._wire import WireSpan

__all__ = ["Spool", "SpoolingIntake", "span_keys", "spool_for", "wire_span_key"]

_log = logging.getLogger(__name__)

_MAGIC = b"otel-toolscore spool 1\n"
_RECORD = struct.Struct("<IIQ")  # payload length, CRC-32 of sequence + payload, sequence number
_ACK = struct.Struct("<Q")
_SEGMENT_PREFIX, _SEGMENT_SUFFIX, _ACKS_SUFFIX = "spans-", ".log", ".acks"
#: a segment is rotated past this share of the byte budget (at least 1 MiB, at most 64 MiB)
_SEGMENTS_PER_BUDGET = 16
#: how long replay waits before offering a refused request again (the buffer is full)
_REPLAY_RETRY_S = 0.5


def _key(trace_id: int, span_id: int) -> Any:
    """One int for a well-formed id pair (less memory than a tuple); a tuple for oversized ids."""
    if trace_id < 1 << 128 and span_id < 1 << 64:
        return trace_id << 64 | span_id
    return (trace_id, span_id)


def span_keys(request: ExportTraceServiceRequest | TraceRequest) -> list[Any]:
    """The (trace, span) keys of the spans of ``request`` the service decodes (both ids non-zero)."""
    keys = []
    spans = (
        request.messages() if isinstance(request, TraceRequest)
        else (sp for rs in request.resource_spans for ss in rs.scope_spans for sp in ss.spans)
    )
    for sp in spans:
        trace_id = int.from_bytes(sp.trace_id, "big") if sp.trace_id else 0
        span_id = int.from_bytes(sp.span_id, "big") if sp.span_id else 0
        if trace_id and span_id:
            keys.append(_key(trace_id, span_id))
    return keys


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if i >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        b = data[i]
        value |= (b & 0x7F) << shift
        i += 1
        if b < 0x80:
            return value, i
        shift += 7


def wire_span_key(span: bytes) -> Any:
    """The (trace, span) key of an encoded OTLP ``Span`` (fields 1 and 2, read without decoding the
    span: they lead the message as every encoder writes it), or ``None``."""
    trace_id = span_id = None
    i = 0
    try:
        while i < len(span) and (trace_id is None or span_id is None):
            tag, i = _varint(span, i)
            number, kind = tag >> 3, tag & 7
            if kind == 2:
                size, i = _varint(span, i)
                if number == 1:
                    trace_id = int.from_bytes(span[i : i + size], "big")
                elif number == 2:
                    span_id = int.from_bytes(span[i : i + size], "big")
                i += size
            elif kind == 0:
                _, i = _varint(span, i)
            elif kind == 1:
                i += 8
            elif kind == 5:
                i += 4
            else:
                return None
    except ValueError:
        return None
    if not trace_id or not span_id:
        return None
    return _key(trace_id, span_id)


@dataclass
class _Segment:
    first: int
    path: Path
    size: int
    live: set[int] = field(default_factory=set)  # sequence numbers not released
    records: dict[int, tuple[int, int]] = field(default_factory=dict)  # seq -> (offset, length), old segments

    @property
    def acks_path(self) -> Path:
        return self.path.with_suffix(_ACKS_SUFFIX)


class Spool:
    """The on-disk log of one service (see the module docstring).

    Args:
        directory: created if missing; one process at a time (a lock file).
        max_bytes: the most the segment files may take.
        fsync: ``fdatasync`` every append before it is acknowledged.
        count_drop: ``(reason, amount)`` for ``toolscore.dropped`` (damaged records: ``queue_corrupt``).
    """

    def __init__(
        self,
        directory: str | Path,
        *,
        max_bytes: int,
        fsync: bool = False,
        count_drop: Callable[[str, int], None] = lambda reason, amount: None,
    ) -> None:
        self.directory = Path(directory)
        self._count_drop = count_drop
        self.max_bytes = max_bytes
        self.fsync = fsync
        self.segment_bytes = max(1 << 20, min(64 << 20, max_bytes // _SEGMENTS_PER_BUDGET))
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._lock_file = open(self.directory / "lock", "a+b")  # noqa: SIM115 (held open: the lock)
        except OSError as exc:
            raise ConfigError(f"queue_dir {str(self.directory)!r}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(self._lock_file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock_file.close()
            raise ConfigError(f"queue_dir {str(self.directory)!r} is in use by another process") from None
        self._lock = threading.Lock()
        self._segments: dict[int, _Segment] = {}
        self._requests: dict[int, list[int]] = {}  # seq -> [spans not yet forwarded, segment's first seq]
        self._keys: dict[Any, int] = {}  # span key -> seq of the request that brought it
        self.bytes = 0
        self.corrupt = 0  # records found damaged at open
        self.replayed_spans = 0
        self.refused = {"queue_full": 0, "queue_error": 0}
        self._warned = False
        self._next = 1 + self._open_existing()
        self._active = self._new_segment(self._next)
        self._closed = False
        self._replay: threading.Thread | None = None

    # -- opening --------------------------------------------------------------------------------------
    def _open_existing(self) -> int:
        """Read the segments a previous process left: their unreleased records stay, to be replayed.
        Returns the highest sequence number seen (0: none)."""
        highest = 0
        for path in sorted(self.directory.glob(f"{_SEGMENT_PREFIX}*{_SEGMENT_SUFFIX}")):
            try:
                first = int(path.name[len(_SEGMENT_PREFIX) : -len(_SEGMENT_SUFFIX)], 16)
            except ValueError:
                continue
            highest = max(highest, first)  # a new segment's name never takes an existing file's
            segment = _Segment(first, path, 0)
            seen = self._read_segment(segment)
            if seen < 0:
                continue  # not ours: left alone
            highest = max(highest, seen)
            if segment.records:
                self._segments[first] = segment
                self.bytes += segment.size
                for seq in segment.records:
                    self._requests[seq] = [-1, first]  # -1: not tracked until replayed
            else:
                _unlink(path, segment.acks_path)
        for acks in self.directory.glob(f"{_SEGMENT_PREFIX}*{_ACKS_SUFFIX}"):
            if not acks.with_suffix(_SEGMENT_SUFFIX).exists():
                _unlink(acks)
        return highest

    def _read_segment(self, segment: _Segment) -> int:
        """Its records not released, and the highest sequence number in it (-1: not a segment)."""
        released: set[int] = set()
        with contextlib.suppress(OSError):
            data = segment.acks_path.read_bytes()
            released = {_ACK.unpack_from(data, i)[0] for i in range(0, len(data) - len(data) % _ACK.size, _ACK.size)}
        highest = 0
        with open(segment.path, "r+b") as f:
            if f.read(len(_MAGIC)) != _MAGIC:
                _log.warning("otel-toolscore serve: %s is not a queue segment; left alone", segment.path)
                return -1
            offset = len(_MAGIC)
            while True:
                head = f.read(_RECORD.size)
                if len(head) < _RECORD.size:
                    break
                length, crc, seq = _RECORD.unpack(head)
                payload = f.read(length)
                if len(payload) < length:
                    break  # cut short by a kill: never acknowledged
                if _crc(seq, payload) != crc:
                    self.corrupt += 1  # counted once the service's counters exist (open_spool)
                    _log.warning("otel-toolscore serve: a damaged record in %s at byte %d; the rest of the segment "
                                 "is not replayed", segment.path, offset)
                    break
                highest = max(highest, seq)
                if seq not in released:
                    segment.records[seq] = (offset + _RECORD.size, length)
                    segment.live.add(seq)
                offset += _RECORD.size + length
            if offset < f.seek(0, os.SEEK_END):
                f.truncate(offset)  # a torn tail: the next reader starts clean
        segment.size = offset
        return highest

    def _new_segment(self, first: int) -> _Segment:
        path = self.directory / f"{_SEGMENT_PREFIX}{first:016x}{_SEGMENT_SUFFIX}"
        segment = _Segment(first, path, len(_MAGIC))
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
        _write_all(self._fd, _MAGIC)
        _unlink(segment.acks_path)
        self._segments[first] = segment
        self.bytes += segment.size
        return segment

    # -- taking requests ----------------------------------------------------------------------------------
    def append(self, payload: bytes) -> tuple[int | None, str | None]:
        """Write one request; (its sequence number, None), or (None, why it was refused)."""
        size = _RECORD.size + len(payload)
        with self._lock:
            if self._closed:
                return None, "queue_error"
            if self.bytes + size > self.max_bytes:
                self.refused["queue_full"] += 1
                return None, "queue_full"
            active = self._active
            if active.size + size > self.segment_bytes and active.size > len(_MAGIC):
                active = self._rotate()
            seq = self._next
            try:
                _write_all(self._fd, _RECORD.pack(len(payload), _crc(seq, payload), seq))
                _write_all(self._fd, payload)
                if self.fsync:
                    os.fdatasync(self._fd)
            except OSError as exc:
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, active.size)  # no half record left behind
                self.refused["queue_error"] += 1
                if not self._warned:
                    self._warned = True
                    _log.warning("otel-toolscore serve: cannot write to the queue in %s (%s); requests are refused "
                                 "(retryable) while it lasts", self.directory, exc.strerror or exc)
                return None, "queue_error"
            self._next += 1
            active.size += size
            active.live.add(seq)
            self.bytes += size
            self._requests[seq] = [0, active.first]
            return seq, None

    def _rotate(self) -> _Segment:
        os.close(self._fd)
        old = self._active
        self._active = self._new_segment(self._next)
        if not old.live:
            self._drop(old)
        return self._active

    def track(self, seq: int, keys: Iterable[Any]) -> None:
        """The spans request ``seq`` brought (a span another held request brought already is left to it)."""
        with self._lock:
            request = self._requests.get(seq)
            if request is None:
                return
            count = 0
            for key in keys:
                if key not in self._keys:
                    self._keys[key] = seq
                    count += 1
            request[0] = count
            if count == 0:
                self._release([seq])

    def cancel(self, seq: int, keys: Iterable[Any]) -> None:
        """Request ``seq`` was refused after all: forget it (the sender keeps it and retries)."""
        with self._lock:
            self._untrack(seq, keys)
            if seq in self._requests:
                self._release([seq])

    def untrack(self, seq: int, keys: Iterable[Any]) -> None:
        """A replayed request was not taken (yet): its spans are no longer waited for; it stays on disk."""
        with self._lock:
            self._untrack(seq, keys)
            request = self._requests.get(seq)
            if request is not None:
                request[0] = -1

    def _untrack(self, seq: int, keys: Iterable[Any]) -> None:
        for key in keys:
            if self._keys.get(key) == seq:
                del self._keys[key]

    def forwarded(self, batch: Sequence[WireSpan]) -> None:
        """The forwarding sender is done with ``batch`` (sent, given up, or dropped and counted)."""
        keys = [wire_span_key(span) for _resource, _scope, span in batch]
        with self._lock:
            done = []
            for key in keys:
                seq = self._keys.pop(key, None) if key is not None else None
                if seq is None:
                    continue
                request = self._requests.get(seq)
                if request is not None:
                    request[0] -= 1
                    if request[0] == 0:
                        done.append(seq)
            if done:
                self._release(done)

    def _release(self, seqs: list[int]) -> None:
        """Under the lock: mark ``seqs`` released (on disk in the segments' ``.acks``), drop emptied segments."""
        by_segment: dict[int, list[int]] = {}
        for seq in seqs:
            request = self._requests.pop(seq, None)
            if request is not None:
                by_segment.setdefault(request[1], []).append(seq)
        for first, done in by_segment.items():
            segment = self._segments.get(first)
            if segment is None:
                continue
            segment.live.difference_update(done)
            if segment.live:
                try:
                    with open(segment.acks_path, "ab") as acks:
                        acks.write(b"".join(_ACK.pack(seq) for seq in done))
                except OSError:
                    pass  # an ack lost: that request is replayed once more after a restart
            elif segment is self._active:
                self._empty_active()
            else:
                self._drop(segment)

    def _empty_active(self) -> None:
        segment = self._active
        try:
            os.ftruncate(self._fd, len(_MAGIC))
        except OSError:
            return
        self.bytes -= segment.size - len(_MAGIC)
        segment.size = len(_MAGIC)
        _unlink(segment.acks_path)

    def _drop(self, segment: _Segment) -> None:
        self._segments.pop(segment.first, None)
        self.bytes -= segment.size
        _unlink(segment.path, segment.acks_path)

    # -- replay ---------------------------------------------------------------------------------------------
    def unreleased(self) -> Iterator[tuple[int, bytes]]:
        """The requests a previous process left unreleased, oldest first (read one at a time)."""
        with self._lock:
            pending = sorted((seq, segment) for segment in self._segments.values() for seq in segment.records
                             if seq in segment.live)
        for seq, segment in pending:
            offset, length = segment.records[seq]
            try:
                with open(segment.path, "rb") as f:
                    f.seek(offset)
                    payload = f.read(length)
            except OSError as exc:
                _log.warning("otel-toolscore serve: cannot read %s to replay it: %s", segment.path, exc)
                continue
            if len(payload) == length:
                yield seq, payload

    def start_replay(self, intake: Any, *, retry_after_s: float = _REPLAY_RETRY_S) -> None:
        """Offer every unreleased request to ``intake.accept_spans`` in a thread of its own, waiting
        while the service refuses for overload; stops when the service drains (what is left stays)."""
        if self.corrupt:  # found at open, before the service's counters existed
            self._count_drop("queue_corrupt", self.corrupt)
        thread = threading.Thread(target=self._run_replay, args=(intake, retry_after_s),
                                  name="otel-toolscore-queue-replay", daemon=True)
        self._replay = thread
        thread.start()

    def _run_replay(self, intake: Any, retry_after_s: float) -> None:
        replayed = 0
        for seq, payload in self.unreleased():
            try:
                request = TraceRequest(payload)
            except Exception:  # the CRC held but protobuf does not read it: not replayable
                self._count_drop("queue_corrupt", 1)
                with self._lock:
                    self._release([seq])
                continue
            keys = span_keys(request)
            while True:
                if self._closed or intake.draining:
                    return  # what is left stays on disk for the next start
                self.track(seq, keys)
                result = intake.accept_spans(request)
                if result.accepted:
                    replayed += 1
                    with self._lock:
                        self.replayed_spans += len(keys)
                    break
                self.untrack(seq, keys)
                time.sleep(retry_after_s)
        if replayed:
            _log.info("otel-toolscore serve: replayed %d request(s) (%d spans) from %s", replayed,
                      self.replayed_spans, self.directory)

    @property
    def held(self) -> int:
        """Requests on disk not released."""
        with self._lock:
            return len(self._requests)

    def close(self) -> None:
        """Stop writing; what is not released stays for the next start."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if not self._active.live:
                self._drop(self._active)
            with contextlib.suppress(OSError):
                os.close(self._fd)
        with contextlib.suppress(OSError):
            fcntl.flock(self._lock_file.fileno(), fcntl.LOCK_UN)
        self._lock_file.close()

    # -- metrics --------------------------------------------------------------------------------------------
    def instruments(self, meter: Any) -> None:
        """``toolscore.service.queue.bytes`` / ``.requests`` (observed) and ``.replayed`` (counted)."""
        spool = self

        def held_bytes(_options: CallbackOptions) -> Iterable[Observation]:
            return [Observation(spool.bytes)]

        def held_requests(_options: CallbackOptions) -> Iterable[Observation]:
            return [Observation(spool.held)]

        def replayed(_options: CallbackOptions) -> Iterable[Observation]:
            return [Observation(spool.replayed_spans)]

        meter.create_observable_gauge(names.METRIC_SERVICE_QUEUE_BYTES, [held_bytes], unit="By",
                                      description="--queue-dir: bytes the on-disk queue takes.")
        meter.create_observable_gauge(names.METRIC_SERVICE_QUEUE_REQUESTS, [held_requests], unit="{request}",
                                      description="--queue-dir: requests on disk not yet released (forwarded).")
        meter.create_observable_counter(names.METRIC_SERVICE_QUEUE_REPLAYED, [replayed], unit="{span}",
                                        description="--queue-dir: spans replayed from the queue at start.")


class SpoolingIntake:
    """The service as the receivers see it, with every trace request written to the spool before it is
    accepted (and forgotten again when the service refuses it). Everything else is the service's."""

    def __init__(self, service: Any, spool: Spool) -> None:
        self._service = service
        self._spool = spool

    def __getattr__(self, name: str) -> Any:
        return getattr(self._service, name)

    def accept_spans(self, request: ExportTraceServiceRequest | TraceRequest) -> IntakeResult:
        service = self._service
        if service.draining:
            return cast(IntakeResult, service.accept_spans(request))  # refused (draining) and counted there
        request = as_trace_request(request)
        seq, why = self._spool.append(request.body)
        if seq is None:
            service.refuse("spans", why or "queue_error", request.total)
            return IntakeResult(False, why)
        keys = span_keys(request)
        self._spool.track(seq, keys)  # before the spans can be scored and forwarded
        result = cast(IntakeResult, service.accept_spans(request))
        if not result.accepted:
            self._spool.cancel(seq, keys)
        return result


def spool_for(
    settings: Any, forwarding: bool, meter_provider: Any, count_drop: Callable[[str, int], None]
) -> Spool | None:
    """The spool of ``settings.queue_dir`` (a :class:`ConfigError` naming it when it cannot be used),
    its instruments registered; ``None`` without
    ``queue_dir``, or when nothing is forwarded (no export endpoint: a request would never be released)."""
    if not settings.queue_dir:
        return None
    if not (settings.forward and forwarding):
        _log.warning("otel-toolscore serve: --queue-dir is ignored: spans are not forwarded (no export endpoint)")
        return None
    spool = Spool(settings.queue_dir, max_bytes=settings.queue_max_bytes, fsync=settings.queue_fsync,
                  count_drop=count_drop)
    spool.instruments(meter_provider.get_meter(names.SCOPE_NAME, __version__))
    return spool


def _crc(seq: int, payload: bytes) -> int:
    return zlib.crc32(payload, zlib.crc32(_ACK.pack(seq)))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(errno.EIO, "short write")
        view = view[written:]


def _unlink(*paths: Path) -> None:
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
