"""The cleaner's scenarios (conformance/gen/cleaning_scenarios.py): each one the dispatching
rule can draw, each conforming alone on a fresh compacted log, and each broken cleaner caught
by at least one of them alone (those only a crash inside a pass shows, `CLEANER_CRASH_ONLY`, by
crash steps instead: test_cleaner_zoo_default_check.py). Spec: KL-CLEAN-2..14."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from kafkalog.conformance.broken.cleaner import CLEANER_BROKEN, CLEANER_CRASH_ONLY
from kafkalog.conformance.check.lockstep import DivergenceError
from kafkalog.conformance.check.runner import sut_factory
from kafkalog.conformance.check.session import Session
from kafkalog.conformance.gen.cleaning_scenarios import SCENARIOS, CleaningScenarios
from kafkalog.conformance.gen.configs import CONFIG_FAMILIES
from kafkalog.conformance.gen.machines import make_machine


def _diverges(broken: str | None, scenario: str, args: dict[str, Any]) -> bool:
    factory, features, _ = sut_factory(None, broken, False)
    session = Session(CONFIG_FAMILIES["compact"], factory, features, max_steps=100)
    machine = make_machine(session)()
    machine.lockstep = session.start()  # what `open_log` does, without its `assume`
    machine.actions_done, machine.now_ms = 0, session.now_ms
    machine.seen_timestamps = [machine.now_ms]
    try:
        getattr(machine, scenario)(**args)
        return False
    except DivergenceError:
        return True
    finally:
        machine.teardown()


#: One argument set per scenario (the variants the broken cleaners need).
ARGS: dict[str, list[dict[str, Any]]] = {
    "clean_under_open_txn": [{"index": 0, "key": 1}],
    "clean_before_a_gap": [{"key": 1, "cut": 1}],
    "clean_with_hw_in_active": [{"key": 1, "more": 1}],
    "restart_above_checkpoint": [{"key": 1, "above": 2}],
    "clean_across_int_max": [{"key": 1, "first": True, "past": 1},
                             {"key": 1, "first": False, "past": 1}],
    "tombstone_past_horizon": [{"key": 1, "aged": False}, {"key": 1, "aged": True}],
    "marker_past_horizon": [{"index": 0, "roll": False, "seal": True},
                            {"index": 0, "roll": True, "seal": False}],
    "txn_across_groups": [{"index": 0, "commit": False, "fill": 7}],
    "clean_then_truncate": [{"key": 1, "back": 1}],
    "clean_twice_and_reload": [{"key": 1, "tombstone": True}],
    "delete_records_then_retention": [{"key": 1}],
}


def test_scenarios__every_rule_of_the_mixin_is_drawn_by_the_dispatcher() -> None:
    rules = {name for name, value in vars(CleaningScenarios).items()
             if hasattr(value, "hypothesis_stateful_rule")}
    assert rules == set(SCENARIOS) == set(ARGS)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_scenario__alone_on_the_real_cleaner__conforms(scenario: str) -> None:
    logging.disable(logging.WARNING)
    try:
        assert not any(_diverges(None, scenario, args) for args in ARGS[scenario])
    finally:
        logging.disable(logging.NOTSET)


@pytest.mark.parametrize("broken", sorted(set(CLEANER_BROKEN) - CLEANER_CRASH_ONLY))
def test_broken_cleaner__caught_by_one_scenario_alone(broken: str) -> None:
    logging.disable(logging.WARNING)
    try:
        assert any(_diverges(broken, scenario, args)
                   for scenario in SCENARIOS for args in ARGS[scenario]), broken
    finally:
        logging.disable(logging.NOTSET)
