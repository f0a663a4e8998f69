"""The cyclic garbage collector's full passes held off while the offline reader works.

A trace's facts live until the trace is complete (thousands of records later), long enough to be
promoted to the oldest generation, and die soon after: that churn makes the collector start a full
pass over every object the process holds every few thousand spans (the runs read so far included),
and those passes found next to nothing (tens of objects each on the benchmark's corpus) while taking
a fifth to a half of the reader's time (``bench/offline.py``; ``docs/performance.md``). The young
generations are left as they are: collecting them often is what keeps them cheap.

:func:`full_collections_held` raises the oldest generation's threshold while the reader runs (not
while the caller handles a run it yielded) and restores the caller's setting afterwards, unless
someone changed it in between. Nested and concurrent readers share one hold.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["FULL_COLLECTION_EVERY", "full_collections_held"]

#: Collections of the middle generation between two full passes while reading (the default is 10):
#: a full pass every ~100,000 surviving containers instead of every ~7,000 — still bounded for
#: inputs of any size, should something make cyclic garbage.
FULL_COLLECTION_EVERY = 1000

_lock = threading.Lock()
_holders = 0
_saved: tuple[int, int, int] | None = None
_held: tuple[int, int, int] | None = None


@contextmanager
def full_collections_held() -> Iterator[None]:
    """Full collector passes held off inside the block (see the module docstring)."""
    _hold()
    try:
        yield
    finally:
        _release()


def _hold() -> None:
    global _holders, _saved, _held
    with _lock:
        _holders += 1
        if _holders > 1:
            return
        current = gc.get_threshold()
        if current[0] == 0 or current[2] >= FULL_COLLECTION_EVERY:
            _saved = _held = None  # the collector is off, or already set this way: left alone
            return
        _saved = current
        _held = (current[0], current[1], FULL_COLLECTION_EVERY)
        gc.set_threshold(*_held)


def _release() -> None:
    global _holders, _saved, _held
    with _lock:
        _holders -= 1
        if _holders > 0:
            return
        if _saved is not None and gc.get_threshold() == _held:
            gc.set_threshold(*_saved)
        _saved = _held = None
