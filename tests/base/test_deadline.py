"""``Deadline``: the one way the package counts down a time budget (monotonic, never negative)."""

from __future__ import annotations

import dataclasses
import math
import time

import pytest

from otel_toolscore._deadline import Deadline


def test_after_counts_down_on_the_monotonic_clock() -> None:
    before = time.monotonic()
    deadline = Deadline.after(60.0)
    after = time.monotonic()
    assert before + 60.0 <= deadline.instant <= after + 60.0
    assert 59.0 < deadline.remaining() <= 60.0
    assert not deadline.expired


def test_a_passed_deadline_has_nothing_remaining_and_is_expired() -> None:
    for seconds in (0.0, -5.0, -math.inf):
        deadline = Deadline.after(seconds)
        assert deadline.remaining() == 0.0
        assert deadline.expired


def test_remaining_is_never_negative_once_the_moment_passes() -> None:
    deadline = Deadline.after(0.01)
    time.sleep(0.05)
    assert deadline.remaining() == 0.0
    assert deadline.expired


def test_never_is_an_infinite_deadline() -> None:
    never = Deadline(math.inf)
    assert never.remaining() == math.inf
    assert not never.expired


def test_sooner_and_within_pick_the_earlier_deadline() -> None:
    long, short = Deadline.after(100.0), Deadline.after(1.0)
    assert long.sooner(short) is short
    assert short.sooner(long) is short
    assert long.within(1.0).remaining() <= 1.0
    assert short.within(100.0) is short
    assert Deadline(math.inf).within(2.0).remaining() <= 2.0


def test_a_deadline_is_an_immutable_value() -> None:
    deadline = Deadline(123.0)
    assert deadline == Deadline(123.0)
    assert hash(deadline) == hash(Deadline(123.0))
    assert deadline != Deadline(124.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        deadline.instant = 0.0  # type: ignore[misc]
    assert "remaining=" in repr(Deadline.after(5.0))
