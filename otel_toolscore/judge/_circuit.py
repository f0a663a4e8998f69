"""The judge's circuit breaker: after a run of failed judgments, stop calling the endpoint for a while.

``threshold`` consecutive failures open the circuit for ``cooldown_s``; runs offered meanwhile are
skipped (``circuit_open``) instead of queueing up behind an endpoint that is down. When the cooldown
ends the circuit is half-open: one trial judgment goes through, and its outcome closes the circuit
or opens it for another cooldown.
"""

from __future__ import annotations

import threading

from .._deadline import Deadline

_CLOSED = Deadline(float("-inf"))


class Circuit:
    """Opens after ``threshold`` consecutive failures for ``cooldown_s``, then lets one trial through."""

    def __init__(self, threshold: int, cooldown_s: float) -> None:
        self.threshold = threshold
        self.cooldown_s = cooldown_s
        self.failures = 0
        self.open_until = _CLOSED
        self.trial = False
        self.times_opened = 0
        self._lock = threading.Lock()

    def is_open(self) -> bool:
        """Cheap check for the span's thread (no lock: a stale read only delays the skip)."""
        return self.failures >= self.threshold and not self.open_until.expired

    def allow(self) -> bool:
        """Whether a judgment may call the endpoint now (in the half-open state: only the trial)."""
        with self._lock:
            if self.failures < self.threshold:
                return True
            if not self.open_until.expired or self.trial:
                return False
            self.trial = True  # half-open: one request decides
            return True

    def release(self) -> None:
        """An allowed judgment did not call the endpoint after all (a limit skipped it)."""
        with self._lock:
            self.trial = False

    def record(self, ok: bool) -> None:
        """The outcome of a judgment that called the endpoint."""
        with self._lock:
            self.trial = False
            if ok:
                self.failures = 0
                self.open_until = _CLOSED
                return
            self.failures += 1
            if self.failures >= self.threshold:
                if self.open_until.expired:
                    self.times_opened += 1
                self.open_until = Deadline.after(self.cooldown_s)
