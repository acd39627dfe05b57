"""Named replication steps: what a search, a trace file and `kafkalog explain` replay.

A step is an action name plus its keyword arguments (ints only), so it round-trips through JSON.
`apply_step` runs one against a state under a truncation policy; `replay` runs a whole scenario
and reports the state and violated invariants after every step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import IllegalArgumentError
from ..replication import replication as rep
from ..replication.invariants import violated_invariants

ACTION_ARGS: dict[str, tuple[str, ...]] = {
    "append": (),
    "fetch": ("replica", "max_records"),
    "advance_high_watermark": (),
    "flush": ("replica",),
    "crash": ("replica", "lost"),
    "restart": ("replica",),
    "truncate": ("replica",),
    "elect": ("replica",),
    "shrink_isr": ("replica",),
}


@dataclass(frozen=True)
class Step:
    """One action and its integer arguments, e.g. `Step("fetch", {"replica": 1, ...})`."""

    action: str
    args: dict[str, int] = field(default_factory=dict)

    def describe(self) -> str:
        """`fetch(replica=1, max_records=2)`."""
        inner = ", ".join(f"{k}={v}" for k, v in self.args.items())
        return f"{self.action}({inner})"


@dataclass(frozen=True)
class Outcome:
    """A step's result and the state and broken invariants after it."""

    step: Step
    result: Any
    state: rep.ReplicationState
    violated: tuple[str, ...]


def check_step(step: Step, where: str = "step") -> None:
    """Raise IllegalArgumentError unless `step` names a known action with exactly its int args."""
    expected = ACTION_ARGS.get(step.action)
    if expected is None:
        raise IllegalArgumentError(
            f"unknown replication action {step.action!r} (known: {', '.join(ACTION_ARGS)})",
            where=where,
        )
    if set(step.args) != set(expected) or not all(
        isinstance(value, int) and not isinstance(value, bool) for value in step.args.values()
    ):
        raise IllegalArgumentError(
            f"{step.action} takes integer arguments {list(expected)}, got {step.args}",
            where=where,
        )


def apply_step(s: rep.ReplicationState, step: Step,
               policy: str) -> tuple[rep.ReplicationState, Any]:
    """Run `step` on `s`; raises the action's typed errors (IllegalArgumentError, ...)."""
    check_step(step)
    a = step.args
    actions: dict[str, Callable[[], tuple[rep.ReplicationState, Any]]] = {
        "append": lambda: rep.append(s),
        "fetch": lambda: rep.fetch(s, a["replica"], a["max_records"]),
        "advance_high_watermark": lambda: rep.advance_high_watermark(s),
        "flush": lambda: rep.flush(s, a["replica"]),
        "crash": lambda: rep.crash(s, a["replica"], a["lost"]),
        "restart": lambda: rep.restart(s, a["replica"], policy),
        "truncate": lambda: rep.truncate(s, a["replica"], policy),
        "elect": lambda: rep.elect(s, a["replica"]),
        "shrink_isr": lambda: rep.shrink_isr(s, a["replica"]),
    }
    return actions[step.action]()


def replay(steps: Iterable[Step], policy: str, replica_count: int = 2) -> list[Outcome]:
    """Run `steps` from the initial state; one Outcome per step. Raises on a disabled step."""
    s = rep.initial_state(replica_count)
    out: list[Outcome] = []
    for step in steps:
        s, result = apply_step(s, step, policy)
        out.append(Outcome(step, result, s, violated_invariants(s)))
    return out
