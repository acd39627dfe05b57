"""The Hypothesis search over the replication model: a rule per action, an invariant per predicate.

`search(policy, ...)` runs the machine once under a truncation policy, derandomized, and hands
back every distinct invariant violation Hypothesis found, already shrunk, as replayable `Step`
lists, plus how long and how many generated examples it took to hit each one first.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cache

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from kafkalog.model.replication import replication as rep
from kafkalog.model.replication.invariants import (
    high_watermark_within_log_end,
    logs_match_below_high_watermark,
    no_committed_data_loss,
)
from kafkalog.model.replication.steps import Step, apply_step


class Violation(AssertionError):
    """An invariant broken by a generated scenario; carries the steps that led there."""

    invariant = "?"

    def __init__(self, steps: tuple[Step, ...]) -> None:
        super().__init__(f"{self.invariant} after {len(steps)} steps: "
                         + "; ".join(s.describe() for s in steps))
        self.steps = steps


class CommittedDataLoss(Violation):
    invariant = "no_committed_data_loss"


class LogDivergence(Violation):
    invariant = "logs_match_below_high_watermark"


class HighWatermarkAboveLogEnd(Violation):
    invariant = "high_watermark_within_log_end"


@dataclass
class Recorder:
    """Counts generated examples and notes when each invariant first broke."""

    start: float = field(default_factory=time.perf_counter)
    examples: int = 0
    first: dict[str, tuple[int, float]] = field(default_factory=dict)  # name -> (examples, s)

    def broke(self, name: str) -> None:
        self.first.setdefault(name, (self.examples, time.perf_counter() - self.start))


@dataclass(frozen=True)
class SearchOutcome:
    """What one run of the machine found: shrunk scenarios by invariant, and the effort spent."""

    policy: str
    found: dict[str, tuple[Step, ...]]
    first: dict[str, tuple[int, float]]
    examples: int
    seconds: float


@cache
def _choices(replicas: tuple[int, ...]) -> st.SearchStrategy[int]:
    """One cached strategy per set of eligible replicas: building strategies is not free."""
    return st.sampled_from(replicas)


def make_machine(policy: str, replica_count: int,
                 recorder: Recorder) -> type[RuleBasedStateMachine]:
    """A state machine class over the model under `policy` with `replica_count` replicas."""
    ids = range(replica_count)

    def some(test):  # noqa: ANN001, ANN202 - a precondition factory over the live state
        return lambda self: any(test(self.state, r) for r in ids)

    class ReplicationMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.state = rep.initial_state(replica_count)
            self.steps: list[Step] = []
            recorder.examples += 1

        def do(self, action: str, **args: int) -> None:
            step = Step(action, args)
            self.state, _ = apply_step(self.state, step, policy)
            self.steps.append(step)

        def pick(self, data: st.DataObject, test) -> int:  # noqa: ANN001
            return data.draw(_choices(tuple(r for r in ids if test(self.state, r))))

        @precondition(lambda self: rep.can_append(self.state))
        @rule()
        def append(self) -> None:
            self.do("append")

        @precondition(some(rep.can_fetch))
        @rule(data=st.data(), max_records=st.integers(1, 3))
        def fetch(self, data: st.DataObject, max_records: int) -> None:
            self.do("fetch", replica=self.pick(data, rep.can_fetch), max_records=max_records)

        @precondition(lambda self: bool(self.state.up))
        @rule(data=st.data(), lost=st.integers(0, 2))
        def crash(self, data: st.DataObject, lost: int) -> None:
            self.do("crash", replica=self.pick(data, lambda s, r: r in s.up), lost=lost)

        @precondition(lambda self: len(self.state.up) < replica_count)
        @rule(data=st.data())
        def restart(self, data: st.DataObject) -> None:
            self.do("restart", replica=self.pick(data, lambda s, r: r not in s.up))

        @precondition(some(rep.can_truncate))
        @rule(data=st.data())
        def truncate(self, data: st.DataObject) -> None:
            self.do("truncate", replica=self.pick(data, rep.can_truncate))

        @precondition(some(rep.can_elect))
        @rule(data=st.data())
        def elect(self, data: st.DataObject) -> None:
            self.do("elect", replica=self.pick(data, rep.can_elect))

        @precondition(some(rep.can_shrink_isr))
        @rule(data=st.data())
        def shrink_isr(self, data: st.DataObject) -> None:
            self.do("shrink_isr", replica=self.pick(data, rep.can_shrink_isr))

        @invariant()
        def committed_data_is_never_lost(self) -> None:
            if not no_committed_data_loss(self.state):
                recorder.broke(CommittedDataLoss.invariant)
                raise CommittedDataLoss(tuple(self.steps))

        @invariant()
        def logs_agree_below_high_watermarks(self) -> None:
            if not logs_match_below_high_watermark(self.state):
                recorder.broke(LogDivergence.invariant)
                raise LogDivergence(tuple(self.steps))

        @invariant()
        def high_watermark_never_passes_log_end(self) -> None:
            if not high_watermark_within_log_end(self.state):
                recorder.broke(HighWatermarkAboveLogEnd.invariant)
                raise HighWatermarkAboveLogEnd(tuple(self.steps))

    ReplicationMachine.__name__ = f"ReplicationMachine_{policy}_{replica_count}"
    return ReplicationMachine


def _violations(error: BaseException) -> list[Violation]:
    if isinstance(error, Violation):
        return [error]
    if isinstance(error, BaseExceptionGroup):
        return [v for inner in error.exceptions for v in _violations(inner)]
    return []


# The CI budgets (generated-example limits) per policy, at STEPS steps per example. The two
# broken policies fail within a small fraction of the budget KIP-279 must stay clean under.
STEPS = 30
BUDGETS = {
    "truncate_to_high_watermark": 1500,
    "leader_epoch_request": 800,
    "leader_epoch_kip279": 4000,
}


def search(policy: str, *, max_examples: int, replica_count: int = 2,
           steps: int = STEPS) -> SearchOutcome:
    """Run the machine once under `policy`; derandomized, so a run replays exactly."""
    recorder = Recorder()
    machine = make_machine(policy, replica_count, recorder)
    config = settings(
        max_examples=max_examples,
        stateful_step_count=steps,
        derandomize=True,
        database=None,
        deadline=None,
        print_blob=False,
        report_multiple_bugs=True,
        phases=(Phase.explicit, Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
    )
    found: dict[str, tuple[Step, ...]] = {}
    try:
        run_state_machine_as_test(machine, settings=config)
    except BaseException as error:  # noqa: BLE001 - sorted below; anything else re-raises
        violations = _violations(error)
        if not violations:
            raise
        for violation in violations:
            found[violation.invariant] = violation.steps
    return SearchOutcome(policy, found, dict(recorder.first), recorder.examples,
                         time.perf_counter() - recorder.start)
