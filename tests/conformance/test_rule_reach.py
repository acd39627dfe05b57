"""Rules the default campaign once never recorded: each is now met by the steps that exercise it,
or named with the reason no generated input can reach it."""

from __future__ import annotations

import logging

import pytest
from kafkalog.conformance.adapter.json_codec import FEATURES
from kafkalog.conformance.check.coverage import UNREACHABLE_BY_GENERATION
from kafkalog.conformance.check.impl_sut import ImplSut
from kafkalog.conformance.check.runner import run_seed
from kafkalog.conformance.check.session import START_MS, Session
from kafkalog.conformance.check.sut import StepResult
from kafkalog.conformance.crash.crash_steps import crash_rules
from kafkalog.conformance.gen import picks
from kafkalog.conformance.gen.configs import CONFIG_FAMILIES, DEFAULT_MIX
from kafkalog.model import values as v

AFTER = 1 << 20  # a crash point past any action


@pytest.fixture(autouse=True)
def _quiet() -> None:
    logging.disable(logging.WARNING)
    yield
    logging.disable(logging.NOTSET)


def _lockstep(family: str = "tiny") -> object:
    return Session(CONFIG_FAMILIES[family], ImplSut, frozenset(FEATURES), verify_every=1).start()


def _append(ls: object) -> None:
    ls.step("append_as_leader", {"records": (v.Record(None, b"test", START_MS),),  # type: ignore[attr-defined]
                                 "leader_epoch": 0})


def test_crash_rules__after_a_truncation__exercise_kl_crash_3() -> None:
    """KL-CRASH-3 (a cut durable before it returns) is met by a crash after a cutting action."""
    ok = StepResult(value=0)
    assert "KL-CRASH-3" in crash_rules({"fault": "power_loss"}, ok, frozenset({"truncate_to"}))
    assert "KL-CRASH-3" not in crash_rules({"fault": "power_loss"}, ok, frozenset({"read"}))


def test_crash_rules__after_a_cleaning_pass__exercise_kl_crash_15() -> None:
    """KL-CRASH-15 (a pass's swaps and checkpoint) is met by a crash after or inside `clean`."""
    ok = StepResult(value=0)
    assert "KL-CRASH-15" in crash_rules({"fault": "power_loss"}, ok, frozenset({"clean"}))
    assert "KL-CRASH-15" not in crash_rules({"fault": "power_loss"}, ok, frozenset({"roll"}))


def test_crash_rules__with_transactional_data__exercise_kl_crash_12() -> None:
    ok = StepResult(value=0)
    assert "KL-CRASH-12" in crash_rules({"fault": "power_loss"}, ok, frozenset(), True)
    assert "KL-CRASH-12" not in crash_rules({"fault": "power_loss"}, ok, frozenset(), False)


def test_lockstep__crash_after_truncation__records_kl_crash_3() -> None:
    ls = _lockstep()
    try:
        for _ in range(3):
            _append(ls)
        ls.step("truncate_to", {"offset": 1})
        assert "KL-CRASH-3" not in ls.rules
        ls.step("crash", {"point": AFTER, "fault": "power_loss", "seed": 0, "leftover": "none"})
        assert "KL-CRASH-3" in ls.rules
    finally:
        ls.sut.close()


@pytest.mark.parametrize(("target", "rule"), [(-3, "KL-VERSION-6"), (-6, "KL-VERSION-7")])
def test_lockstep__listoffsets_targets_a_profile_decides__are_recorded(target: int,
                                                                      rule: str) -> None:
    """The lockstep hands the step's arguments to the coverage classifier, which tells the
    special ListOffsets targets apart by them."""
    ls = _lockstep()
    try:
        _append(ls)
        ls.step("fetch_offset_by_timestamp", {"timestamp": target})
        assert rule in ls.rules
    finally:
        ls.sut.close()


def test_lockstep__an_epoch_past_int32__is_refused_by_both_sides_and_records_kl_bound_1() -> None:
    ls = _lockstep()
    try:
        model, impl = ls.step("end_offset_for_epoch", {"epoch": picks.BEYOND_INT32})
        assert model.code == impl.code == "IllegalArgumentError"
        assert "KL-BOUND-1" in ls.last_rules
    finally:
        ls.sut.close()


def test_query_epoch__undefined_with_delta_two__asks_past_int32_and_nothing_else_changes() -> None:
    view = v.LogStateView(0, 0, 0, 0, (), (), ())
    assert picks.resolve_query_epoch(("undefined", 0, 2), view, []) == 2**31
    for pick in (("undefined", 0, 0), ("latest", 0, 2), ("first", 0, 1), ("seen", 0, 2)):
        assert picks.resolve_query_epoch(pick, view, [3]) == picks.resolve_epoch(pick, view, [3])


def test_default_mix__runs_the_compacted_family() -> None:
    """KL-CLEAN-* are reachable: the default cycle has the family whose machine cleans."""
    assert "compact" in DEFAULT_MIX


def test_unreachable_rules__each_has_a_reason_that_names_where_it_is_pinned() -> None:
    for rule in ("KL-ALLOW-8", "KL-ALLOW-9", "KL-EPOCH-5", "KL-HW-6"):
        assert "pin" in UNREACHABLE_BY_GENERATION[rule]


def test_log_start_lookups__the_built_in_implementation__is_asked_the_profile_decided_targets(
) -> None:
    """The scenario asks EARLIEST_LOCAL and EARLIEST_PENDING_UPLOAD of every implementation
    that is not a black box; the built-in one declares every feature, `black_box` included, and
    was wrongly left out, so no run ever met KL-VERSION-7."""
    reached = [s for s in range(8)
               if "KL-VERSION-7" in run_seed(s, steps=60, config_family="tiny").rules]
    assert reached


def test_compact_scenarios__reach_the_rarest_cleaning_rules() -> None:
    """A tombstone cleaned (KL-CLEAN-8), an aborted transaction cleaned (KL-CLEAN-7) and a
    truncation below the cleaner checkpoint (KL-CLEAN-13) each come from a scenario rule of
    the compacted family: 187 compact runs of the main job met the last two once or never."""
    met: set[str] = set()
    for seed in range(15, 15 + 16 * 12, 16):
        outcome = run_seed(seed, steps=60, config_family="compact")
        assert outcome.outcome == "conformed", outcome.signature
        met |= set(outcome.rules)
    assert {"KL-CLEAN-7", "KL-CLEAN-8", "KL-CLEAN-13"} <= met
