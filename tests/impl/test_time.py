"""MockTime / MockScheduler / SystemTime: deterministic deferred work for the log."""

from __future__ import annotations

import threading

import pytest
from kafkalog.impl.time import MockTime, SystemTime


def test_mock_time__sleep__runs_due_tasks_in_time_order_at_their_due_time() -> None:
    """Tasks run in (due time, submission) order, each seeing the clock at its due time."""
    time = MockTime(1000)
    seen: list[tuple[str, int]] = []
    time.scheduler.schedule("b", lambda: seen.append(("b", time.milliseconds())), 200)
    time.scheduler.schedule("a", lambda: seen.append(("a", time.milliseconds())), 100)
    time.scheduler.schedule("c", lambda: seen.append(("c", time.milliseconds())), 200)
    time.sleep(150)
    assert seen == [("a", 1100)]
    time.sleep(50)
    assert seen == [("a", 1100), ("b", 1200), ("c", 1200)]
    assert time.milliseconds() == 1200


def test_mock_time__task_scheduling_more_work__runs_it_when_due() -> None:
    """A task scheduled by a task runs in the same advance if it falls due."""
    time = MockTime()
    seen: list[int] = []

    def outer() -> None:
        time.scheduler.schedule("inner", lambda: seen.append(time.milliseconds()), 5)

    time.scheduler.schedule("outer", outer, 10)
    time.advance(100)
    assert seen == [15]


def test_mock_scheduler__periodic_task__repeats() -> None:
    """A period > 0 reschedules the task after each run."""
    time = MockTime()
    runs: list[int] = []
    time.scheduler.schedule("tick", lambda: runs.append(time.milliseconds()), 10, period_ms=10)
    time.sleep(35)
    assert runs == [10, 20, 30]


def test_mock_scheduler__failing_task__is_recorded_and_later_tasks_run() -> None:
    """A failing task does not stop the scheduler (KafkaScheduler logs and continues)."""
    time = MockTime()
    ran: list[str] = []

    def boom() -> None:
        raise RuntimeError("boom")

    time.scheduler.schedule("boom", boom, 1)
    time.scheduler.schedule("ok", lambda: ran.append("ok"), 2)
    time.sleep(5)
    assert ran == ["ok"] and time.scheduler.errors[0][0] == "boom"


def test_mock_time__negative_sleep__is_rejected() -> None:
    """The clock never goes backwards: IllegalArgumentError, as the model answers (KL-BOUND-1)."""
    from kafkalog.model.errors import IllegalArgumentError

    with pytest.raises(IllegalArgumentError):
        MockTime().sleep(-1)


def test_system_time__scheduler__runs_task_on_background_thread() -> None:
    """SystemTime's scheduler runs a zero-delay task promptly on its own thread."""
    time = SystemTime()
    done = threading.Event()
    names: list[str] = []

    def task() -> None:
        names.append(threading.current_thread().name)
        done.set()

    time.scheduler.schedule("t", task, 0)
    assert done.wait(5)
    assert names == ["kafkalog-scheduler"]
    time.scheduler.shutdown()
