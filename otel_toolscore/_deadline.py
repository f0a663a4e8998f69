"""``Deadline``: a point on the monotonic clock that a bounded wait must not pass.

A bounded operation (a flush, a shutdown, a judgment, a capped read) is given its time once and
hands what is left of it to each step it takes. This value holds that point and answers the two
questions every step asks — how long may I wait (never a negative number: ``queue.Queue.get``
raises on one) and is it over — on the monotonic clock, which the wall clock's jumps cannot move.
"""

from __future__ import annotations

import time
from dataclasses import FrozenInstanceError

__all__ = ["Deadline"]


class Deadline:
    """A moment on :func:`time.monotonic`'s clock (``instant``; ``inf``: never); immutable.

    A plain class, not a dataclass: it sits on the span processor's import path, where the
    dataclass decorator would generate and compile methods at import time.
    """

    __slots__ = ("instant",)
    instant: float

    def __init__(self, instant: float) -> None:
        object.__setattr__(self, "instant", float(instant))

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}: a Deadline is immutable")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Deadline) and other.instant == self.instant

    def __hash__(self) -> int:
        return hash(self.instant)

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        """The deadline ``seconds`` from now (zero or less: already expired)."""
        return cls(time.monotonic() + seconds)

    def remaining(self) -> float:
        """Seconds left before the deadline; ``0.0`` once it has passed, never negative."""
        return max(0.0, self.instant - time.monotonic())

    @property
    def expired(self) -> bool:
        """Whether the deadline has been reached."""
        return time.monotonic() >= self.instant

    def sooner(self, other: Deadline) -> Deadline:
        """The earlier of this deadline and ``other``."""
        return other if other.instant < self.instant else self

    def within(self, seconds: float) -> Deadline:
        """The earlier of this deadline and ``seconds`` from now (for a step that may take no longer)."""
        return self.sooner(Deadline.after(seconds))

    def __repr__(self) -> str:
        return f"Deadline(remaining={self.remaining():.3f}s)"
