"""The background thread machinery: the wake-up signal and the bounded queue worker."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from otel_toolscore import _workers as workers
from otel_toolscore._workers import QueueWorker, WakeGate


def test_a_signal_given_while_nobody_waits_is_kept_once() -> None:
    gate = WakeGate()
    assert gate.wait(0) is False  # nothing given yet
    gate.set()
    gate.set()  # given twice before anyone waits: still one signal
    assert gate.wait(0) is True
    assert gate.wait(0.01) is False


def test_signals_from_many_threads_never_raise_and_wake_the_waiter() -> None:
    gate = WakeGate()
    errors: list[BaseException] = []

    def hammer() -> None:
        try:
            for _ in range(5_000):
                gate.set()
        except BaseException as exc:  # pragma: no cover - what the test is about
            errors.append(exc)

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for t in threads:
        t.start()
    woken = 0
    while any(t.is_alive() for t in threads):
        woken += gate.wait(0.001)
    for t in threads:
        t.join()
    woken += gate.wait(0)  # the last signal given is kept for the next wait
    assert not errors
    assert woken >= 1
    assert gate.wait(0) is False  # and taken by it


def test_the_worker_handles_items_in_order_wakes_on_demand_and_drains_at_stop() -> None:
    handled: list[int] = []
    idle = threading.Event()
    worker = QueueWorker("test-worker", handled.extend, 1_000, idle=idle.set)
    try:
        for i in range(100):
            assert worker.put(i)
        worker.wake()
        assert worker.wait_idle(time.monotonic() + 10)
        assert handled == list(range(100))
        time.sleep(0.2)  # long enough to back off to the slow poll
        worker.put(100)
        worker.nudge()
        assert worker.wait_idle(time.monotonic() + 10)
        assert handled[-1] == 100
        for i in range(101, 200):
            worker.put(i)
    finally:
        assert worker.stop(time.monotonic() + 10)
    assert handled == list(range(200))
    assert idle.is_set()


def _until(check: Any, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def test_an_idle_worker_sleeps_until_an_item_is_queued(monkeypatch: pytest.MonkeyPatch) -> None:
    # Idle, a thread without periodic work sleeps (here: 60 s); the first item queued wakes it at once.
    monkeypatch.setattr(workers, "IDLE_POLL_S", 60.0)
    handled: list[int] = []
    worker = QueueWorker("test-idle", handled.extend, 1_000)
    try:
        assert _until(lambda: worker._wake.idle)
        assert worker.put(1)
        assert _until(lambda: handled == [1])
        assert _until(lambda: worker._wake.idle)  # nothing more: asleep again
        progress = worker.progress
        time.sleep(0.3)
        assert worker.progress == progress  # no wake-up that finds nothing
    finally:
        assert worker.stop(time.monotonic() + 10)


def test_the_idle_hook_says_how_long_the_thread_sleeps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "IDLE_POLL_S", 60.0)
    due: list[float | None] = [60.0]
    calls: list[float] = []

    def idle() -> float | None:
        calls.append(time.monotonic())
        return due[0]

    worker = QueueWorker("test-hook", lambda batch: None, 1_000, idle=idle)
    try:
        assert _until(lambda: worker._wake.idle)
        due[0] = 0.05  # periodic work due: the hook is asked again within its period
        worker.nudge()
        assert _until(lambda: len(calls) >= 6)
        due[0] = 60.0
        time.sleep(0.2)  # the next call hears it
        settled = len(calls)
        time.sleep(0.3)
        assert len(calls) == settled  # nothing due: no poll
    finally:
        assert worker.stop(time.monotonic() + 10)


def test_the_worker_hands_on_at_most_max_batch_items_at_once() -> None:
    """A backlog is taken in bounded batches: what a batch builds stays alive until it is handled."""
    sizes: list[int] = []
    lock = threading.Lock()
    worker = QueueWorker("test-worker", lambda batch: sizes.append(len(batch)), 10_000, lock=lock, max_batch=256)
    try:
        with lock:  # no batch taken while the backlog is queued
            for i in range(1_000):
                assert worker.put(i)
        worker.wake()
        assert worker.wait_idle(time.monotonic() + 10)
        assert sum(sizes) == 1_000
        assert max(sizes) == 256
    finally:
        worker.stop(time.monotonic() + 5)
