"""``ToolScoreSpanProcessor``: score every live agent run, with O(1) work on the span's thread.

The processor sits in front of the exporting processor (as a Collector pipeline would) and hands
every span on to it. On the application's thread it only queues what happened:

* ``on_start``: the span, and — where a run may start — the context the application set: the
  ``expect()`` value (for every span while a block is active) and ``toolscore.*`` baggage (for every
  local root: no parent, or a remote one). Nothing is parsed; roots that start bare are covered,
  whatever they look like later.
* ``on_end``: the span. Spans that may root a run (local roots, spans that look like an agent from
  a table of keys) are handed on by the worker — as a copy carrying the score when one is computed
  (an ended span is immutable; see docs/architecture.md); every other span is handed on at once.

One worker thread (:mod:`.live`) owns all per-trace state: it reads facts, assembles runs, resolves
expectations, scores, and hands roots on. Events and metrics, and the ``on_scored`` callback, run on
their own threads behind bounded queues. Every queue and per-trace collection is bounded, and what
is refused is counted in ``toolscore.dropped``.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
import time
import weakref
from collections import Counter, deque
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opentelemetry import baggage
from opentelemetry import context as otel_context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from .._deadline import Deadline
from .._workers import IDLE_POLL_S, QueueWorker
from ..core import (
    BARE_START,
    CONTEXT,
    CONTEXT_IS_TUPLE,
    END,
    HOLD,
    LOG,
    SDK_SPANS,
    START,
    Release,
    ScoredRun,
    StartContext,
    build_core,
    scored_copy,
)
from ..expectations import EXPECTATION_CONTEXT as _CURRENT_EXPECTATION
from ..expectations import Expectation
from ..extract import ExtractOptions, SpanFacts
from ..extract._records import LogRecordView, log_view_from_sdk
from ..settings import Settings

if TYPE_CHECKING:
    from opentelemetry import _logs, metrics

    from ..judge import Judge
    from ..sinks._base import ScoreSink
    from ..sinks._dispatch import SinkDispatcher

__all__ = ["ScoredRun", "ToolScoreSpanProcessor", "may_root_a_run"]

_log = logging.getLogger(__name__)

# Queue item kinds (the first element of each queued tuple): the core's. Most items are bare spans
# instead: an end, or a start that captured nothing (of the class _BARE_START; see core.BARE_START).
_START, _END, _HOLD, _LOG, _CONTEXT = START, END, HOLD, LOG, CONTEXT
_BARE_START = BARE_START
_BAGGAGE_PREFIX = "toolscore."
#: Roots whose end found the span queue full, kept for the worker to count as lost runs.
_LOST_ROOTS = 4096
#: How often the worker sweeps held roots and timed-out traces while the core holds any (a root's
#: grace is honoured to within this).
_SWEEP_S = 0.05
#: Queued items that wake an idle worker before a root ends (a long run's spans piling up).
_IDLE_WAKE_AT = 1024
#: Most queue items the core takes at once (the worker's batches and a flush's). What a batch reads
#: stays alive until the batch is settled (its roots are scored then); a backlog taken 4,096 items at
#: a time kept ~290 runs' facts alive, which the garbage collector promoted and walked again and again
#: (docs/performance.md: scoring a 1,200-run backlog, 98 -> 68 us of collection per run).
_BATCH = 256


may_root_a_run = SDK_SPANS.may_root


class _ThreadCounts:
    """Counts made on the application's threads: each thread only ever increments its own counter
    (no lock, no lost update); the worker reads the totals and remembers what it already reported."""

    def __init__(self) -> None:
        self._by_thread: dict[int, Counter[str]] = {}
        self._reported: Counter[tuple[int, str]] = Counter()
        #: something was counted since the last :meth:`take` (a hint: set without a lock)
        self.dirty = False

    def add(self, reason: str) -> None:
        self.dirty = True
        tid = threading.get_ident()
        mine = self._by_thread.get(tid)
        if mine is None:
            mine = self._by_thread[tid] = Counter()
        mine[reason] += 1

    def take(self) -> Counter[str]:
        """What was counted since the last call, by reason (called by one thread only)."""
        self.dirty = False
        out: Counter[str] = Counter()
        for tid, counts in list(self._by_thread.items()):
            for reason, total in list(counts.items()):
                new = total - self._reported[(tid, reason)]
                if new > 0:
                    out[reason] += new
                    self._reported[(tid, reason)] = total
        return out


class ToolScoreSpanProcessor(SpanProcessor):
    """Scores agent runs online and forwards every span to ``downstream``.

    Args:
        downstream: the processor that exports spans (usually ``BatchSpanProcessor(OTLPSpanExporter())``).
            ``None``: scores leave only as events and metrics.
        expectations: rules (``Expectation`` objects) or the path of a YAML/TOML rules file.
        judge: an optional :class:`~otel_toolscore.online.judge.Judge` for sampled LLM judging.
        meter_provider, logger_provider: default to the global providers.
        settings: a :class:`~otel_toolscore.settings.Settings`; keyword overrides of its fields are accepted
            too (``max_pending_traces=...``). Unset fields come from ``OTEL_TOOLSCORE_*`` variables.
        on_scored: optional callback called (on its own thread) with every :class:`ScoredRun`.
        sinks: score sinks (:class:`~otel_toolscore.sinks.ScoreSink` objects or built-in names such as
            ``"phoenix"``) fed with every code score and judgment, each on its own thread behind a
            bounded queue; the processor shuts them down. Default: ``settings.sinks``
            (``OTEL_TOOLSCORE_SINKS``). A name given here that cannot be built fails fast; one from
            the environment is a warning.
    """

    def __init__(
        self,
        downstream: SpanProcessor | None = None,
        *,
        expectations: Sequence[Expectation] | str | Path | None = None,
        judge: Judge | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        logger_provider: _logs.LoggerProvider | None = None,
        settings: Settings | None = None,
        on_scored: Any = None,
        sinks: Sequence[ScoreSink | str] | None = None,
        **overrides: Any,
    ) -> None:
        self.settings = settings if settings is not None else Settings.from_env(**overrides)
        if settings is not None and overrides:
            self.settings = settings.model_copy(update=overrides)
        s = self.settings
        self._downstream = downstream
        self._judge = judge
        self._core, self.outputs = build_core(
            s,
            source=SDK_SPANS,
            expectations=expectations,
            judge=judge,
            meter_provider=meter_provider,
            logger_provider=logger_provider,
            on_scored=on_scored,
            sinks=sinks,
        )
        self.rules, self.default_expectation = self._core.rules, self._core.default
        self._extract_options = self._core.options
        self.emitter = self.outputs.emitter
        self.sinks: SinkDispatcher | None = self.outputs.sinks
        self._emit = self.outputs.emit_queue
        self._stopped = False
        self._hold_roots = downstream is not None
        # The SDK's own processors do nothing in on_start: calling them costs every span a call.
        self._downstream_starts = downstream is not None and not _quiet_on_start(downstream)
        self._app_counts = _ThreadCounts()  # counted outside the core lock
        self._lost_roots: deque[ReadableSpan] = deque()  # ends of roots the full queue refused
        self._stalled_at: int | None = None
        # The core is driven by the worker, and by a flush's caller while it drains the queue.
        self._core_lock = threading.Lock()
        #: what the worker thread hands on, in order: a span as it is, or (span, score attributes)
        #: the core released
        self._forwards: deque[ReadableSpan | tuple[ReadableSpan, dict[str, Any] | None]] = deque()
        self._last_sweep = 0.0
        self._worker = QueueWorker(
            "otel-toolscore-worker",
            self._process,
            s.span_queue_size,
            idle=self._idle,
            wake_at=2048,
            lock=self._core_lock,
            max_batch=_BATCH,
        )
        self._queue = self._worker.queue
        self._worker_gate = self._worker._wake  # read by on_end: is the worker asleep for want of work
        self._capacity = s.span_queue_size
        if judge is not None:
            self.outputs.bind_judge(before_flush=self._score_queued)
        # Drain at exit before the providers shut down: atexit runs handlers last-in first-out, and
        # the providers registered theirs when they were created, before this processor.
        self._atexit = _register_drain(self)

    # -- the application's thread: O(1), no lock, no I/O ----------------------------------------------
    def on_start(self, span: Span, parent_context: otel_context.Context | None = None) -> None:
        q = self._queue
        if len(q) < self._capacity:
            try:
                try:
                    parent = span._parent
                except AttributeError:
                    parent = span.parent
                context: StartContext | None
                if parent is None or (parent[2] if CONTEXT_IS_TUPLE else parent.is_remote):
                    context = self._root_context(parent_context)
                else:
                    exp = _CURRENT_EXPECTATION.get()
                    context = None if exp is None else StartContext(exp)
                # a start that captured nothing is queued as the span itself: no tuple to allocate
                q.append(span if context is None and type(span) is _BARE_START else (_START, span, context))
            except Exception:  # never raise into the application
                self._app_counts.add("malformed_span")
        else:
            self._app_counts.add("span_queue_full")
        if self._downstream_starts:
            try:
                self._downstream.on_start(span, parent_context)  # type: ignore[union-attr]
            except Exception:
                self._app_counts.add("downstream_error")

    @staticmethod
    def _root_context(parent_context: otel_context.Context | None) -> StartContext | None:
        """What the application said where a local root started, or ``None`` when it said nothing
        (no ``expect()`` block, no ``toolscore.*`` baggage): the core then keeps no context for the
        span, which reads the same as an empty one, and the worker has no start left to match."""
        bag = baggage.get_all(parent_context) if parent_context is not None else baggage.get_all()
        mine = {k: v for k, v in bag.items() if k.startswith(_BAGGAGE_PREFIX)} if bag else None
        exp = _CURRENT_EXPECTATION.get()
        return None if exp is None and not mine else StartContext(exp, mine or None)

    def on_end(self, span: ReadableSpan) -> None:
        q = self._queue
        if len(q) < self._capacity and not self._stopped:
            # The worker hands the span on (a root with its score): the application's thread pays
            # one append, not the downstream's on_end nor the test of whether the span roots a run.
            # an end is queued as the bare span (no tuple to allocate per span), unless it is of the class
            # a bare start is (a started span handed to on_end by someone other than the SDK)
            q.append(span if type(span) is not _BARE_START else (_END, span))
            gate = self._worker_gate
            if gate.idle and (len(q) >= _IDLE_WAKE_AT or _ends_a_trace_here(span)):
                # after a quiet period, a local root's end (a run, or all this process saw of its
                # trace) wakes the worker now (QueueWorker.nudge, inline); other spans wait for that
                # root, a pile of them or the worker's periodic work: one wake-up per run when runs
                # trickle in, not one per span
                gate.nudge()
            return
        if not self._stopped:  # the queue is full (shut down: handed on as it is, nothing scores it)
            self._app_counts.add("span_queue_full")
            try:
                if may_root_a_run(span):  # its run is lost: counted by the worker, not silently gone
                    if len(self._lost_roots) < _LOST_ROOTS:
                        self._lost_roots.append(span)
                    else:
                        self._app_counts.add("lost_root_untracked")
            except Exception:
                pass
        if self._downstream is not None:
            try:
                self._downstream.on_end(span)
            except Exception:
                self._app_counts.add("downstream_error")

    # -- the worker thread ------------------------------------------------------------------------
    def _absorb(self, release: Release, more_drops: Counter[str] | None = None) -> None:
        """A release of the core (holding the core lock): its spans for the worker to hand on, its
        runs and counts to the outputs."""
        if release.spans and self._downstream is not None:
            self._forwards.extend(release.spans)
        self.outputs.deliver(release, more_drops)

    def _hand_on(self) -> None:
        """Hand the roots the core released to the downstream, each as a copy carrying its score
        (worker thread only: a downstream that blocks in ``on_end`` blocks this thread, never a
        flush's caller)."""
        downstream = self._downstream
        forwards = self._forwards
        while forwards:
            try:
                item = forwards.popleft()
            except IndexError:
                break
            if downstream is None:
                continue
            try:
                if isinstance(item, tuple):  # a root the core released: (span, its score attributes)
                    span, attrs = item
                    downstream.on_end(span if attrs is None else scored_copy(span, attrs))
                else:  # a span handed on as it is
                    downstream.on_end(item)
            except Exception:
                self._app_counts.add("downstream_error")

    def _process(self, batch: list[Any]) -> None:
        """Run queued starts, ends and log records through the core (holding the core lock)."""
        token = otel_context.attach(otel_context.set_value(otel_context._SUPPRESS_INSTRUMENTATION_KEY, True))
        try:
            self._absorb(self._core.feed(self._prepare(batch)))
        finally:
            otel_context.detach(token)

    def _prepare(self, batch: list[Any]) -> list[Any]:
        """``batch`` as the core takes it, in one pass:

        * a start whose end is in the batch becomes the context captured there (``CONTEXT``), or
          nothing when it captured none: the core takes the span in one step, at its end. Starts and
          ends are matched by their span context object, which the SDK's end snapshot shares with
          the span that started (an identity test, sound while the batch holds both; a span class
          that shares none takes both steps);
        * of the ends (when there is a downstream), those that may root a run are left to the core
          (it hands them on once scored); the others are queued to be handed on as they are, in the
          order they ended — before the roots the core releases for this batch, as the children of a
          run end before it."""
        # One pass, last item first: a span's start is queued before its end (on_start runs before
        # on_end, and a batch is a prefix of the queue), so every end that matches a start has been
        # seen by the time the start is reached. The output and the forwards are built backwards
        # and turned round at the end.
        ended: set[int] = set()
        hold_roots = self._hold_roots
        out: list[Any] = []
        append = out.append
        forwards: list[Any] = []
        for item in reversed(batch):
            t = type(item)
            if t is _BARE_START:  # a start that captured nothing: nothing to send when its end is here
                if id(item._context) not in ended:
                    append(item)
                continue
            if t is not tuple:  # an end, queued as the span itself
                c = getattr(item, "_context", None)
                if c is not None:
                    ended.add(id(c))
                span = item
            elif item[0] == _END:  # an end of the class a bare start is
                span = item[1]
            else:
                if item[0] != _START or id(getattr(item[1], "_context", None)) not in ended:
                    append(item)
                elif item[2] is not None:
                    append((_CONTEXT, item[1], item[2]))
                continue
            if hold_roots:
                try:
                    hold = may_root_a_run(span)
                except Exception:  # odd attribute values: read (and counted) by the core
                    hold = False
                if hold:
                    append((_HOLD, span))
                    continue
                forwards.append(span)
            append(item)
        if forwards:
            forwards.reverse()
            self._forwards.extend(forwards)
        out.reverse()
        return out

    def _idle(self) -> float:
        """After each batch and on every poll: held roots past their grace, timeouts, counters.
        Returns how long the worker may sleep when nothing is queued: the sweep's period while the core
        holds a trace (a root's grace, a trace's timeout), :data:`IDLE_POLL_S` when it holds none (the
        next root's end, or a pile of spans, nudges it)."""
        now = time.monotonic()
        if now - self._last_sweep >= _SWEEP_S:
            self._last_sweep = now
            with self._core_lock:
                self._sweep(force=False)
        self._hand_on()
        if self._lost_roots or self._app_counts.dirty:
            with self._core_lock:
                self._flush_counts()
        if self._forwards or self._core.table or self._lost_roots or self._app_counts.dirty:
            return _SWEEP_S
        return IDLE_POLL_S

    def _sweep(self, force: bool) -> None:
        token = otel_context.attach(otel_context.set_value(otel_context._SUPPRESS_INSTRUMENTATION_KEY, True))
        try:
            self._absorb(self._core.sweep(force=force))
        finally:
            otel_context.detach(token)

    def _flush_counts(self) -> None:
        """Count the runs whose roots the full queue refused, and add what the application's threads
        counted to the metrics (holding the core lock)."""
        lost = self._lost_roots
        while lost:
            try:
                self._core.lost_root(lost.popleft())
            except IndexError:
                break
            except Exception:
                _log.debug("otel-toolscore could not count a lost run", exc_info=True)
        self._absorb(self._core.take(), self._app_counts.take())

    # -- lifecycle ----------------------------------------------------------------------------------
    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Score what is queued and held, write its events and metrics, drain the judge, then flush
        the downstream — all within ``timeout_millis``, whatever the downstream does."""
        deadline = Deadline.after(timeout_millis / 1000)
        try:
            ok = self._drain(deadline)
            if self._judge is not None:
                ok = self._judge.force_flush(deadline.remaining()) and ok
                ok = self._drain(deadline) and ok
            if self._downstream is not None:
                ok = _call_within(deadline, self._downstream.force_flush, int(deadline.remaining() * 1000)) and ok
        except Exception:
            _log.debug("otel-toolscore force_flush failed", exc_info=True)
            return False
        return ok

    def _score_queued(self, deadline: Deadline | None = None) -> bool:
        """Score what is queued and release held roots, on the caller's thread (CPU only).

        Without ``deadline`` everything queued so far is scored (the judge's flush: every ended run
        reaches it). With one, scoring stops at the deadline and what is left stays queued for the
        worker; ``False`` then."""
        with self._core_lock:
            queue = self._queue
            forwards = self._forwards
            done = True
            while queue:
                if (deadline is not None and deadline.expired) or len(forwards) >= self._capacity:
                    # out of time; or the worker is stuck handing spans on (a downstream that blocks):
                    # what it has not handed on yet is capped at one queue's worth, the rest stays
                    # queued (a full queue hands spans on from on_end, counted)
                    done = False
                    break
                self._process(self._worker.take_batch())  # the worker's batch size
            self._sweep(force=done)
            self._flush_counts()
            return done

    def _drain(self, deadline: Deadline | float) -> bool:
        """:meth:`_score_queued`, then, until ``deadline`` (a :class:`Deadline`, or a
        :func:`time.monotonic` instant), spans handed on and events written.

        A worker found stuck by an earlier drain (in a downstream's ``on_end``) that has not moved
        since is given 0.1 s, not the whole deadline again: the exit drain and the providers'
        shutdown follow each other, and exit must not wait twice for a thread that will not return."""
        if not isinstance(deadline, Deadline):
            deadline = Deadline(deadline)
        scored = self._score_queued(deadline)
        if self._stalled_at is not None and self._stalled_at == self._worker.progress:
            deadline = deadline.within(0.1)
        while not scored and self._forwards and not deadline.expired:
            # scoring stopped behind a queue's worth of spans the worker has yet to hand on
            self._worker.wake()
            time.sleep(0.002)
            if len(self._forwards) < self._capacity:
                scored = self._score_queued(deadline)
        ok = self._worker.wait_idle(deadline.instant)
        self._stalled_at = None if ok else self._worker.progress
        ok = scored and ok
        while self._forwards and not deadline.expired:  # the worker hands the spans on
            self._worker.wake()
            time.sleep(0.002)
        if self._forwards:  # the worker is stuck in a downstream's on_end (or slow): seen as stalled
            self._stalled_at = self._worker.progress
            ok = False
        return self.outputs.wait_idle(deadline.instant) and ok

    def shutdown(self, timeout_millis: int = 30_000) -> None:
        """Score held roots, drain events and the judge, then shut the downstream down — all within
        one deadline (a hung exporter, judge or callback cannot keep the process from exiting)."""
        if self._stopped:
            return
        deadline = Deadline.after(timeout_millis / 1000)
        try:
            self._drain(Deadline.after(timeout_millis / 2000))
            if self._judge is not None:
                self._judge.shutdown(deadline.remaining() * 0.5)
                self._drain(deadline.within(2))
        except Exception:
            _log.debug("otel-toolscore shutdown failed", exc_info=True)
        self._stopped = True
        short = deadline.within(0.1 if self._stalled_at is not None else 5.0)
        if self._worker.stop(short.instant):
            self._hand_on_left()
        self.outputs.stop(short.instant)
        with contextlib.suppress(Exception):
            atexit.unregister(self._atexit)
        if self._downstream is not None:
            _call_within(deadline, self._downstream.shutdown)

    def _hand_on_left(self) -> None:
        """Once the worker has ended: what is still queued — a span whose end was queued as the
        worker stopped (its ``on_end`` saw the processor running) — and still to be handed on goes
        on as it is (nothing scores it any more), so the downstream loses no span to the race."""
        queue = self._queue
        forwards = self._forwards
        while queue:
            try:
                item = queue.popleft()
            except IndexError:
                break
            t = type(item)
            if t is not tuple and t is not _BARE_START:
                forwards.append(item)  # after what the worker left, in the order they ended
            elif t is tuple and item[0] == _END:
                forwards.append(item[1])
        self._hand_on()

    def wait_for_queue_room(self, timeout_s: float = 5.0) -> bool:
        """Block until the span queue is at most half full, or ``timeout_s`` passes (``False``).

        For a caller that replays spans and may wait — the scoring service's scorer thread, never an
        application thread: a 20,000-span trace replayed at full speed would otherwise overrun the
        queue and lose its root's end."""
        queue, capacity = self._queue, self._capacity
        if len(queue) < capacity // 2:
            return True
        deadline = Deadline.after(timeout_s)
        while len(queue) >= capacity // 2:
            if deadline.expired:
                return False
            self._worker.wake()
            time.sleep(0.001)
        return True

    # -- log records (GenAI <=1.36 events, event-only instrumentations) -------------------------------
    def add_log_record(self, record: Any) -> None:
        """Queue a log record for the worker (it joins its trace's facts there). An SDK record is
        turned into a view here, on the emitting thread: the SDK may reuse or change it afterwards.
        Never raises."""
        try:
            if not isinstance(record, (LogRecordView, SpanFacts)):
                record = log_view_from_sdk(record)
            if len(self._queue) < self._capacity:
                self._queue.append((_LOG, record))
            else:
                self._app_counts.add("span_queue_full")
        except Exception:  # a record the view cannot read: counted, never raised into the application
            self._app_counts.add("malformed_span")

    def add_log_facts(self, facts: SpanFacts) -> None:
        """Queue facts already read from a log record (the scoring service reads them itself)."""
        self.add_log_record(facts)

    @property
    def extract_options(self) -> ExtractOptions:
        """How this processor reads spans and log records (content kept or not, limits)."""
        return self._extract_options

    @property
    def pending_traces(self) -> int:
        """Traces the worker is watching (a span open, or a run held); 0 once everything ended."""
        return len(self._core.table)

    @property
    def downstream(self) -> SpanProcessor | None:
        return self._downstream


def _quiet_on_start(processor: SpanProcessor) -> bool:
    """Whether ``processor.on_start`` is one of the SDK's empty ones (nothing to call)."""
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    method = getattr(type(processor), "on_start", None)
    return method in (SpanProcessor.on_start, BatchSpanProcessor.on_start, SimpleSpanProcessor.on_start)


def _call_within(deadline: Deadline, fn: Any, *args: Any) -> bool:
    """``fn(*args)`` on a helper thread, waited for until ``deadline``: a downstream whose exporter
    hangs blocks its own flush or shutdown past any timeout it is given; the caller's deadline is ours."""
    result: list[bool] = []

    def call() -> None:
        try:
            out = fn(*args)
            result.append(out is None or bool(out))
        except Exception:
            _log.debug("otel-toolscore downstream call failed", exc_info=True)
            result.append(False)

    helper = threading.Thread(target=call, name="otel-toolscore-downstream", daemon=True)
    helper.start()
    helper.join(deadline.remaining())
    return bool(result and result[0])


def _register_drain(processor: ToolScoreSpanProcessor) -> Any:
    ref = weakref.ref(processor)

    def drain() -> None:
        p = ref()
        if p is not None and not p._stopped:
            p.force_flush(timeout_millis=5_000)

    atexit.register(drain)
    return drain


def _ends_a_trace_here(span: ReadableSpan) -> bool:
    """Whether ``span`` is a local root (no parent, or a remote one): what this process records of
    its trace ends with it. Never raises (the application's thread)."""
    try:
        try:
            parent = span._parent
        except AttributeError:
            parent = span.parent
        return parent is None or bool(parent[2] if CONTEXT_IS_TUPLE else parent.is_remote)
    except Exception:
        return True
