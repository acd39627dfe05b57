"""Swarm testing (Groce et al. 2012): each run leaves out a seeded rule subset.

With every rule always on, the default mix decides what a run of 40 steps can build, and a
scenario that needs several rare steps in a row starves. A swarm run disables each rule with
probability SWARM_OFF, drawn from the seed alone (so the run is reproducible), which shifts
the weight onto the rules left on. Hypothesis adds its own per-example rule flags on top; this
layer is explicit so that it is reproducible from the seed and recorded in the trace header
(`swarm_off`). `append_one` always stays on, so every run can grow a log.
"""

from __future__ import annotations

import inspect
import random
from collections.abc import Iterable
from typing import Any

from hypothesis.stateful import RuleBasedStateMachine

RULE_MARKER = "hypothesis_stateful_rule"  # hypothesis.stateful's marker on rule methods
SWARM_OFF = 0.25  # the chance that a rule is off in a run
ALWAYS_ON = frozenset({"append_one"})


def rule_names(machine: type[RuleBasedStateMachine]) -> list[str]:
    """The names of the machine's rules (not its initializers or invariants), sorted."""
    return sorted(name for name, member in inspect.getmembers(machine)
                  if getattr(member, RULE_MARKER, None) is not None)


def swarm_off(seed: int, names: Iterable[str]) -> tuple[str, ...]:
    """The rules a run with `seed` leaves out: each with probability SWARM_OFF, seeded."""
    rng = random.Random(f"kafkalog-swarm-{seed}")  # a string seed hashes the same everywhere
    return tuple(name for name in sorted(names)
                 if name not in ALWAYS_ON and rng.random() < SWARM_OFF)


def without_rules(machine: type[RuleBasedStateMachine], off: Iterable[str]
                  ) -> type[RuleBasedStateMachine]:
    """A subclass in which the named rules are plain methods: still callable by the scenario
    rules that use them as helpers, but never chosen by Hypothesis."""
    overrides: dict[str, Any] = {}
    for name in off:
        method = getattr(machine, name)

        def plain(self: Any, *args: Any, _method: Any = method, **kwargs: Any) -> Any:
            return _method(self, *args, **kwargs)

        overrides[name] = plain
    if not overrides:
        return machine
    return type(machine.__name__, (machine,), overrides)
