"""Finding one minimal trace per spec rule, for the conformance vectors (corpus.py).

The conformance machine runs with the model on both sides (fast, nothing on disk) over the config
families; every step is classified by `model.coverage.rules_exercised`. For each rule the shortest
prefix ending at a step that exercised it is kept, then shrunk greedily: an earlier step is
dropped when the model, replaying the rest, still exercises the rule at the last step. Seeds are
fixed, so the search is deterministic for a given code base and Hypothesis version.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from hypothesis import seed as hypothesis_seed
from hypothesis.stateful import run_state_machine_as_test
from kafkalog.conformance.adapter.json_codec import FEATURES
from kafkalog.conformance.check.lockstep import Lockstep
from kafkalog.conformance.check.runner import run_settings
from kafkalog.conformance.check.session import START_MS, Session
from kafkalog.conformance.check.sut import ModelSut
from kafkalog.conformance.gen.configs import CONFIG_FAMILIES, config_family
from kafkalog.conformance.gen.machines import make_machine
from kafkalog.model import log
from kafkalog.model import values as v
from kafkalog.model.coverage.rules import rules_exercised
from kafkalog.model.errors import KafkalogError

Call = tuple[str, dict[str, Any]]
#: (rule, family) -> the shortest calls found whose last step exercises the rule.
Found = dict[str, tuple[str, list[Call]]]


class _Recorder(Lockstep):
    """A lockstep that keeps each executed call with the rules its step exercised."""

    calls: list[tuple[Call, frozenset[str]]]

    def step(self, action: str, args: dict[str, Any]) -> Any:
        done = super().step(action, args)
        if done is not None:
            self.calls.append(((action, dict(args)), self.last_rules))
        return done


class _SearchSession(Session):
    """Collects every example's calls; the model runs on both sides."""

    def __init__(self, config: v.LogConfig, steps: int) -> None:
        super().__init__(config, ModelSut, frozenset(FEATURES), now_ms=START_MS,
                         verify_every=0, max_steps=steps)
        self.runs: list[list[tuple[Call, frozenset[str]]]] = []

    def start(self) -> Lockstep:
        base = super().start()
        recorder = _Recorder(base.model, base.sut, 0)
        recorder.calls = []
        self.runs.append(recorder.calls)
        return recorder


def search(seeds: Iterable[int], steps: int = 30,
           families: Sequence[str] | None = None) -> Found:
    """The shortest prefix per rule over `seeds` x `families`, each shrunk."""
    found: Found = {}
    for family in families or sorted(CONFIG_FAMILIES):
        config = config_family(family)
        for seed in seeds:
            session = _SearchSession(config, steps)
            machine = hypothesis_seed(seed)(make_machine(session))
            run_state_machine_as_test(machine, settings=run_settings(steps))
            for run in session.runs:
                _keep_shortest(found, family, run)
    return {rule: (family, shrink(config_family(family), calls, rule))
            for rule, (family, calls) in found.items()}


def _keep_shortest(found: Found, family: str,
                   run: list[tuple[Call, frozenset[str]]]) -> None:
    for index, (_, rules) in enumerate(run):
        for rule in rules:
            if rule not in found or index + 1 < len(found[rule][1]):
                found[rule] = (family, [call for call, _ in run[: index + 1]])


def exercises(config: v.LogConfig, calls: Sequence[Call], rule: str) -> bool:
    """True iff the model, running `calls`, exercises `rule` at the last call."""
    state = log.empty_log(config, START_MS)
    for number, (action, args) in enumerate(calls, start=1):
        before = state
        try:
            state, outcome = getattr(log, action)(state, **args)
        except KafkalogError as error:
            outcome = error
        if number == len(calls):
            return rule in rules_exercised(action, before, state, outcome)
    return False


def shrink(config: v.LogConfig, calls: list[Call], rule: str) -> list[Call]:
    """Drop earlier calls one at a time while the last call still exercises `rule`."""
    index = len(calls) - 2
    while index >= 0:
        candidate = calls[:index] + calls[index + 1:]
        if exercises(config, candidate, rule):
            calls = candidate
        index -= 1
    return calls
