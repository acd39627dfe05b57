"""A run's shared context: what to test, how to build it, and what the examples found.

Hypothesis creates a fresh machine for every example it tries (the generated run, then each
shrink candidate). They all report to one `Session`, which keeps the counts of the generated run
(steps, actions, spec rules) and the shortest failing trace seen, so a run that hits its time
limit in the middle of shrinking still hands back the best trace so far.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from kafkalog.conformance.check import black_box
from kafkalog.conformance.check.deadline import check_deadline
from kafkalog.conformance.check.lockstep import Lockstep
from kafkalog.conformance.check.sut import ModelSut, Sut
from kafkalog.conformance.errors import AdapterError
from kafkalog.conformance.traces.trace import TraceStep
from kafkalog.model import values as v
from kafkalog.model.crash.crash import CrashMode

SutFactory = Callable[[v.LogConfig, int, int], Sut]

#: The clock a run starts at (2023-11-14). A realistic epoch keeps record timestamps away from 0,
#: where a time-index entry (timestamp 0, relative offset 0) is all zero bytes and looks like
#: preallocated space.
START_MS = 1_700_000_000_000


class AdapterAbort(BaseException):  # noqa: N818 - a control-flow signal, not an error type
    """Stops Hypothesis at once (no shrinking) when the adapter cannot be driven.

    It derives from BaseException because Hypothesis treats every Exception as a failure to
    shrink, and shrinking a crashed or hanging adapter would only repeat the crash.
    """

    def __init__(self, error: AdapterError) -> None:
        super().__init__(str(error))
        self.error = error


class Session:
    """Builds the two sides for each example and collects what the examples found."""

    def __init__(
        self,
        config: v.LogConfig,
        factory: SutFactory,
        features: frozenset[str],
        *,
        now_ms: int = START_MS,
        log_start_offset: int = 0,
        verify_every: int = 10,
        time_limit_s: float | None = None,
        max_steps: int | None = None,
        crash_weight: int = 0,
        crash_sweep: bool = False,
        crash_in_load: bool = False,
        shrink_budget_s: float | None = None,
    ) -> None:
        self.config = config
        self.factory = factory
        self.features = features
        self.now_ms = now_ms
        self.log_start_offset = log_start_offset
        self.verify_every = verify_every
        # Actions per example: scenario rules run several, so the machine stops at this many.
        self.max_steps = max_steps
        # Copies of the crash rule in the machine (0 = none); crash steps per fault model.
        self.crash_weight = crash_weight
        self.crash_sweep = crash_sweep  # every crash step also loads every point of its action
        # KL-CRASH-14: the sweep also crashes inside the load of every distinct image.
        self.crash_in_load: int | None = 0 if crash_in_load else None
        self._in_load_verdicts: dict[Any, Any] = {}  # KL-CRASH-14 verdicts, one implementation
        self.crashes: Counter[str] = Counter()
        self.crash_images = 0  # distinct crash images loaded (summed over examples)
        self.crash_idempotence = 0  # of them, reloaded after a crash right after the load
        self.crash_in_clean = 0  # swept crash points inside cleaning passes (KL-CRASH-15)
        self.crash_s = 0.0  # CPU seconds in crash steps, sweeps included
        self.shrink_budget_s = shrink_budget_s
        self.deadline = None if time_limit_s is None else time.monotonic() + time_limit_s
        self.failed = False
        self.steps_executed = 0
        self.actions: Counter[str] = Counter()
        self.rules: set[str] = set()
        self.best: list[TraceStep] | None = None
        self.best_signature: str | None = None
        self.examples = 0
        self.close_error: str | None = None  # the first failure of an implementation's close()
        self.swarm_off: tuple[str, ...] = ()  # rules this run leaves out (swarm.py)
        # Leftovers this run's crash steps never plant (they plant none instead): the default
        # campaign's kafka-mode runs (kafka_gaps.py CAMPAIGN_UNPLANTED).
        self.leftovers_off: frozenset[str] = frozenset()

    def start(self) -> Lockstep:
        """Fresh model and implementation logs for one example.

        Raises AdapterAbort when the adapter cannot open a log, and the model's error (the
        implementation's log closed again) when the model refuses the config.
        """
        try:
            sut = self.factory(self.config, self.now_ms, self.log_start_offset)
        except AdapterError as error:
            raise AdapterAbort(error) from None
        try:
            # A variant with Kafka's fsync choices names the kafka crash mode (KL-CRASH-1).
            mode = CrashMode(getattr(sut, "crash_mode", CrashMode.STRICT))
            model = ModelSut(self.config, self.now_ms, self.log_start_offset, mode=mode)
            if black_box.is_black_box(self.features):
                black_box.become_leader(model, self.log_start_offset)
        except BaseException:
            # The model refused what the implementation opened (a config outside KL-STATE-2,
            # or an interrupt): nothing else will ever close the implementation's log.
            with contextlib.suppress(Exception):
                sut.close()
            raise
        lockstep = Lockstep(model, sut, self._verify_every(), sweep=self.crash_sweep,
                            in_load=self.crash_in_load is not None,
                            in_load_verdicts=self._in_load_verdicts)
        lockstep.crash_steps.deadline = self.deadline  # a sweep stops at the time limit too
        return lockstep

    def _verify_every(self) -> int:
        """How often the on-disk verify runs in the next example.

        While generating: every `verify_every` steps (it costs a few ms). Once a failure is
        known, shrink candidates verify after every step if the failure was found by verify, so
        a directory problem shrinks to the step that caused it rather than to the next multiple
        of `verify_every`; for any other failure they skip verify, which makes shrinking faster.
        """
        if not self.failed:
            return self.verify_every
        return 1 if "|verify|" in (self.best_signature or "") else 0

    def tick(self) -> None:
        """Called before each step: stops the run once its time limit has passed."""
        check_deadline(self.deadline)

    def finish(self, lockstep: Lockstep) -> None:
        """Record one finished example and release its logs."""
        self.examples += 1
        diverged = bool(lockstep.steps) and lockstep.steps[-1].divergence is not None
        if not self.failed:
            self.steps_executed += sum(lockstep.actions.values())
            self.actions.update(lockstep.actions)
            self.rules |= lockstep.rules
            crash_steps = lockstep.crash_steps
            self.crashes.update(crash_steps.crashes)
            self.crash_images += crash_steps.distinct_images()
            self.crash_idempotence += crash_steps.crash_idempotence()
            self.crash_in_clean += crash_steps.inside_passes
            self.crash_s += crash_steps.crash_s
            if self.crash_in_load is not None:
                self.crash_in_load += crash_steps.in_load_points()
        if diverged:
            if not self.failed and self.shrink_budget_s is not None:
                # Shrinking stops this long after the first failure (TimeUp between steps); the
                # shortest trace so far then goes to minimise.py, which is cheaper per step.
                budget_end = time.monotonic() + self.shrink_budget_s
                self.deadline = budget_end if self.deadline is None else min(self.deadline,
                                                                              budget_end)
            self.failed = True
            if self.best is None or len(lockstep.steps) <= len(self.best):
                self.best = list(lockstep.steps)
                self.best_signature = lockstep.last_signature
        close_sides(lockstep, self)

    def note_close_error(self, error: BaseException) -> None:
        """Keep the first teardown failure: a run that found nothing else reports it."""
        if self.close_error is None:
            self.close_error = f"{type(error).__name__}: {error}"


def close_sides(lockstep: Lockstep, session: Session | None = None) -> None:
    """Close both sides of one example; never raises.

    The verdict of the example is already decided when this runs, so an implementation whose
    `close()` fails (a truncation that broke its segment list, a failing file operation) must
    not take the run down with it: the failure is noted on the session, if any, and the run
    goes on to its outcome and trace.
    """
    try:
        lockstep.sut.close()
    except AdapterError:
        pass  # the adapter process is gone; the run's own checks report that
    except Exception as error:  # noqa: BLE001 - any failure of an implementation's close
        if session is not None:
            session.note_close_error(error)
    with contextlib.suppress(Exception):
        lockstep.model.close()
