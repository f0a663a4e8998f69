"""``_IOLoop``: the event loop, in a daemon thread of its own, where a scorer performs its judgments.

A blocking socket read cannot be interrupted, a coroutine can: :meth:`ToolCallAccuracyLLMScorer.run`
(a blocking call) hands its judgment to this loop so that the judgment's deadline cancels it
whatever the server does (a trickle of bytes included).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import os
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from ._answers import JudgeError

_T = TypeVar("_T")
# How long a stopped or cancelled loop is waited for.
LOOP_GRACE_S = 5.0


class IOLoop:
    """An event loop in a daemon thread, started on first use (and anew in a forked child). Callers'
    context variables (OpenTelemetry's suppress-instrumentation keys) are carried over to the
    coroutine."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self._lock = threading.Lock()

    def _get(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():  # after a fork the thread is gone: start anew
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="otel-toolscore-judge-io", daemon=True)
                thread.start()
                self._loop, self._thread, self._pid = loop, thread, os.getpid()
            return self._loop

    def call(self, make: Callable[[], Coroutine[Any, Any, _T]], deadline_s: float) -> _T:
        context = contextvars.copy_context()

        async def in_context() -> _T:
            for var, value in context.items():
                var.set(value)
            return await make()

        future = asyncio.run_coroutine_threadsafe(in_context(), self._get())
        try:
            # The coroutine keeps its own deadline; this wait only guards against a stopped loop.
            return future.result(timeout=deadline_s + LOOP_GRACE_S)
        except concurrent.futures.CancelledError:
            raise JudgeError("error", "the scorer was closed while the judgment was running") from None
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise JudgeError("timeout", f"no verdict within the judgment deadline of {deadline_s:g} s") from None

    def stop(self, last: Coroutine[Any, Any, Any] | None = None) -> None:
        """Cancel what is running, await ``last`` (closing the client), stop and close the loop."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            if last is not None:
                last.close()
            return

        async def finish() -> None:
            current = asyncio.current_task()
            running = [task for task in asyncio.all_tasks() if task is not current]
            for task in running:
                task.cancel()
            if running:
                await asyncio.wait(running, timeout=LOOP_GRACE_S)
            if last is not None:
                with contextlib.suppress(Exception):
                    await last

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(finish(), loop).result(timeout=LOOP_GRACE_S)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=LOOP_GRACE_S)
        if not thread.is_alive():
            loop.close()

