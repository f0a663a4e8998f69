"""The background thread machinery: the wake-up signal and the bounded queue worker."""

from __future__ import annotations

import threading
import time

from otel_toolscore._workers import QueueWorker, _Gate


def test_a_signal_given_while_nobody_waits_is_kept_once() -> None:
    gate = _Gate()
    assert gate.wait(0) is False  # nothing given yet
    gate.set()
    gate.set()  # given twice before anyone waits: still one signal
    assert gate.wait(0) is True
    assert gate.wait(0.01) is False


def test_signals_from_many_threads_never_raise_and_wake_the_waiter() -> None:
    gate = _Gate()
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
