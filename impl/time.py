"""Injectable clocks and schedulers: Kafka's `Time`/`MockTime` and `Scheduler`/`MockScheduler`.

The log reads "now" only through a `Time` and defers work (asynchronous segment deletion after
`file_delete_delay_ms`, LOC-11) only through `time.scheduler`, so tests and the conformance suite
drive both deterministically with `MockTime`, and production uses `SystemTime` whose scheduler runs
tasks on one background daemon thread.

Crash policy: none; these objects hold no durable state. A task that raises is reported through
`errors` (MockScheduler) or swallowed after recording (KafkaScheduler logs and continues likewise).
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time as _time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from kafkalog.model.errors import IllegalArgumentError

from .bounds import INT64_MAX, require_int64

Task = Callable[[], None]


class Scheduler(Protocol):
    """Runs a task after `delay_ms`, repeating every `period_ms` when that is positive."""

    def schedule(self, name: str, task: Task, delay_ms: int = 0, period_ms: int = -1) -> None: ...

    def shutdown(self) -> None: ...


class Time(Protocol):
    """A clock in milliseconds plus the scheduler that runs deferred work on that clock."""

    scheduler: Scheduler

    def milliseconds(self) -> int: ...

    def sleep(self, ms: int) -> None: ...


@dataclass(order=True)
class _Entry:
    due_ms: int
    seq: int
    name: str = field(compare=False)
    task: Task = field(compare=False)
    period_ms: int = field(compare=False, default=-1)


class MockScheduler:
    """A scheduler on a `MockTime`: tasks run only when the clock is advanced past their due time.

    Due tasks run in (due time, submission order) order, each one at its own due time: the clock
    reads exactly `due_ms` while the task runs, then moves on (Kafka's MockScheduler.tick).
    """

    def __init__(self, time: MockTime) -> None:
        self._time = time
        self._queue: list[_Entry] = []
        self._seq = itertools.count()
        self.errors: list[tuple[str, BaseException]] = []
        self.horizon_ms: int | None = None  # the target of the run_until in progress

    def schedule(self, name: str, task: Task, delay_ms: int = 0, period_ms: int = -1) -> None:
        """Queue `task` to run at now + `delay_ms`; a zero delay still waits for the next tick."""
        due = self._time.milliseconds() + max(0, delay_ms)
        heapq.heappush(self._queue, _Entry(due, next(self._seq), name, task, period_ms))

    def run_until(self, target_ms: int) -> None:
        """Run every task due at or before `target_ms` in time order, moving the clock along.

        While it runs, `horizon_ms` is `target_ms`, so a self-rescheduling task whose runs are
        subsumed by its last one (the producer expiry check) can skip to that last due time: a
        clock jump of 2**62 ms then costs one run, not 10**13 (the fuzz suite's no-hang rule).
        """
        self.horizon_ms = target_ms
        try:
            self._run_until(target_ms)
        finally:
            self.horizon_ms = None

    def _run_until(self, target_ms: int) -> None:
        while self._queue and self._queue[0].due_ms <= target_ms:
            entry = heapq.heappop(self._queue)
            self._time._set(max(self._time.milliseconds(), entry.due_ms))
            try:
                entry.task()
            except Exception as exc:  # a failed task must not stop later ones (KafkaScheduler)
                self.errors.append((entry.name, exc))
            if entry.period_ms > 0:
                entry.due_ms += entry.period_ms
                entry.seq = next(self._seq)
                heapq.heappush(self._queue, entry)

    def pending(self) -> list[tuple[int, str]]:
        """(due time, name) of every queued task, earliest first; for tests and state views."""
        return [(e.due_ms, e.name) for e in sorted(self._queue)]

    def shutdown(self) -> None:
        """Drop all queued tasks without running them."""
        self._queue.clear()


class MockTime:
    """A manual clock: `sleep(ms)` / `advance(ms)` move it forward and run due scheduler tasks."""

    def __init__(self, start_ms: int = 0) -> None:
        require_int64(start_ms, "clock", "MockTime")
        self._now_ms = start_ms
        self.scheduler = MockScheduler(self)

    def milliseconds(self) -> int:
        return self._now_ms

    def sleep(self, ms: int) -> None:
        """Advance by `ms` (>= 0), running every task that falls due on the way, in order."""
        if ms < 0:
            raise IllegalArgumentError(f"cannot move the clock back by {ms} ms",
                                       where="advance_clock")
        target = self._now_ms + ms
        if target > INT64_MAX:
            raise IllegalArgumentError(f"advancing the clock by {ms} ms passes Long.MAX",
                                       where="advance_clock")
        self.scheduler.run_until(target)
        self._now_ms = target

    advance = sleep

    def _set(self, now_ms: int) -> None:
        self._now_ms = now_ms


class KafkaScheduler:
    """A real scheduler: one daemon thread runs tasks at their wall-clock due time."""

    def __init__(self, time: SystemTime) -> None:
        self._time = time
        self._queue: list[_Entry] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._stopped = False
        self.errors: list[tuple[str, BaseException]] = []
        self._thread = threading.Thread(target=self._run, name="kafkalog-scheduler", daemon=True)
        self._thread.start()

    def schedule(self, name: str, task: Task, delay_ms: int = 0, period_ms: int = -1) -> None:
        with self._cond:
            if self._stopped:
                return
            due = self._time.milliseconds() + max(0, delay_ms)
            heapq.heappush(self._queue, _Entry(due, next(self._seq), name, task, period_ms))
            self._cond.notify()

    def _next_due(self) -> _Entry | None:
        """Wait until the earliest task is due (or shutdown) and pop it; caller holds the lock."""
        while not self._stopped:
            if not self._queue:
                self._cond.wait()
                continue
            wait_ms = self._queue[0].due_ms - self._time.milliseconds()
            if wait_ms <= 0:
                return heapq.heappop(self._queue)
            self._cond.wait(wait_ms / 1000.0)
        return None

    def _run(self) -> None:
        while True:
            with self._cond:
                entry = self._next_due()
            if entry is None:
                return
            try:
                entry.task()
            except Exception as exc:  # keep the thread alive; the failure is recorded
                self.errors.append((entry.name, exc))
            if entry.period_ms > 0:
                with self._cond:
                    entry.due_ms += entry.period_ms
                    entry.seq = next(self._seq)
                    heapq.heappush(self._queue, entry)

    def shutdown(self) -> None:
        """Stop the thread; queued tasks are dropped (Kafka waits for running ones only)."""
        with self._cond:
            self._stopped = True
            self._queue.clear()
            self._cond.notify_all()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)


class SystemTime:
    """The wall clock, with a lazily started background scheduler thread."""

    def __init__(self) -> None:
        self._scheduler: KafkaScheduler | None = None
        self._lock = threading.Lock()

    @property
    def scheduler(self) -> KafkaScheduler:  # type: ignore[override]
        with self._lock:
            if self._scheduler is None:
                self._scheduler = KafkaScheduler(self)
            return self._scheduler

    def milliseconds(self) -> int:
        return _time.time_ns() // 1_000_000

    def sleep(self, ms: int) -> None:
        _time.sleep(max(0, ms) / 1000.0)
