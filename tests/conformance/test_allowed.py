"""Allowed sets (KL-ALLOW-1..4): the checker accepts every behaviour Kafka itself may show.

Kafka draws roll jitter at random, flushes after a roll on a background thread and stores the HW
lookup's metadata as it is; kafkalog decides each deterministically. An implementation making any
other Kafka-legal choice must conform, and one whose choices contradict each other must not.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest
from kafkalog.conformance.adapter.json_codec import FEATURES
from kafkalog.conformance.check.impl_sut import ImplSut
from kafkalog.conformance.check.runner import run_settings
from kafkalog.conformance.check.session import START_MS, Session
from kafkalog.conformance.check.sut import ModelSut
from kafkalog.conformance.gen.configs import config_family
from kafkalog.conformance.gen.machines import make_machine
from kafkalog.conformance.traces.scripted import run_calls
from kafkalog.impl.segment import log_segment
from kafkalog.model import log
from kafkalog.model.choices import outcomes
from kafkalog.model.local_log import complete_pending_flushes, fire_pending_flushes
from kafkalog.model.values import BatchSpec, LogConfig, LogOffsetMetadata, Record

TIME_ROLL = config_family("time_roll")  # segment_ms 1000, jitter 300: Kafka draws in [0, 300)


def rec(ts: int) -> Record:
    return Record(None, b"test", ts)


def leader(ts: int) -> tuple[str, dict[str, Any]]:
    return ("append_as_leader", {"records": (rec(ts),), "leader_epoch": 0})


def _kafka_jitter(config: LogConfig, base_offset: int) -> int:
    """Another Kafka-legal draw: a random value in [0, min(jitter, segment_ms))."""
    if config.segment_jitter_ms <= 0:
        return 0
    return random.Random(base_offset * 7919 + 1).randrange(
        min(config.segment_jitter_ms, config.segment_ms))


def test_time_roll__impl_with_another_jitter_draw__conforms_by_a_recorded_choice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Spec: KL-ALLOW-2 (jitter 299 rolls at waited 800 where kafkalog's jitter 0 does not)."""
    monkeypatch.setattr(log_segment, "roll_jitter_ms", lambda config, base: 299)
    calls = [leader(START_MS), leader(START_MS + 800), leader(START_MS + 1600)]
    lockstep, signature = run_calls(TIME_ROLL, calls)
    assert signature is None, lockstep.steps[-1].divergence
    assert lockstep.steps[1].choice == "roll_jitter=1"
    assert len(lockstep.model.state().segments) == 3


class _NoSnapshotTablesSut(ImplSut):
    """The built-in log reporting no producer snapshot tables, as Kafka's own log (the JVM
    adapter) does: the checker must leave them out of an allowed outcome's state too."""

    def state(self) -> Any:
        return replace(super().state(), producer_snapshot_tables=None)


def test_time_roll__another_jitter_draw_on_an_adapter_without_snapshot_tables__conforms(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Spec: KL-ALLOW-1, KL-ALLOW-2 (an allowed outcome is compared as every step is: without
    what the implementation does not report)."""
    monkeypatch.setattr(log_segment, "roll_jitter_ms", lambda config, base: 299)
    calls = [leader(START_MS), leader(START_MS + 800)]
    lockstep, signature = run_calls(TIME_ROLL, calls, factory=_NoSnapshotTablesSut)
    assert signature is None, lockstep.steps[-1].divergence
    assert lockstep.steps[1].choice == "roll_jitter=1"


def test_time_roll__decisions_on_one_segment__narrow_the_jitters_kafka_may_have_drawn() -> None:
    """Spec: KL-ALLOW-2 (no roll at waited 900 means jitter <= 100: a roll at 850 is excluded)."""
    s = log.empty_log(TIME_ROLL, START_MS)
    s, _ = log.append_as_leader(s, (rec(START_MS),), 0)
    s, _ = log.append_as_leader(s, (rec(START_MS + 900),), 0)  # kafkalog's jitter 0: no roll
    assert s.active.roll_jitter_bounds == (0, 100)
    rolls = {len(o.value[0].segments)
             for o in outcomes(log.append_as_leader, s, (rec(START_MS + 850),), 0)}
    assert rolls == {1}  # a roll needs jitter > 150
    rolls = {len(o.value[0].segments)
             for o in outcomes(log.append_as_leader, s, (rec(START_MS + 950),), 0)}
    assert rolls == {1, 2}  # jitter in (50, 100] rolls, [0, 50] does not


def test_time_roll__segment_opened_at_load__draws_afresh() -> None:
    """Spec: KL-ALLOW-2 (a reload makes new segment objects: earlier decisions no longer bind)."""
    s = log.empty_log(TIME_ROLL, START_MS)
    s, _ = log.append_as_leader(s, (rec(START_MS),), 0)
    s, _ = log.append_as_leader(s, (rec(START_MS + 900),), 0)
    s, _ = log.close_and_reopen(s)
    rolls = {len(o.value[0].segments)
             for o in outcomes(log.append_as_leader, s, (rec(START_MS + 850),), 0)}
    assert rolls == {1, 2}


def test_machine__impl_with_random_jitter__conforms_on_the_time_roll_family(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Spec: KL-ALLOW-2 (a generated run against a randomly jittered implementation)."""
    from hypothesis import seed
    from hypothesis.stateful import run_state_machine_as_test
    from kafkalog.conformance.check import lockstep

    monkeypatch.setattr(log_segment, "roll_jitter_ms", _kafka_jitter)
    choices: list[str] = []
    real_step = lockstep.Lockstep.step

    def step(self: lockstep.Lockstep, action: str, args: dict[str, Any]) -> Any:
        done = real_step(self, action, args)
        if self.steps and self.steps[-1].choice:
            choices.append(self.steps[-1].choice)
        return done

    monkeypatch.setattr(lockstep.Lockstep, "step", step)
    # crash_weight=0: the seed was chosen for the machine without crash steps
    session = Session(TIME_ROLL, ImplSut, frozenset(FEATURES), max_steps=80, crash_weight=0)
    run_state_machine_as_test(seed(4)(make_machine(session)), settings=run_settings(80))
    assert session.best is None, session.best_signature
    assert choices == ["roll_jitter=1"]  # the seed reaches a decision only Kafka's draw explains


def test_roll__allowed_recovery_points__synchronous_or_pending_then_fired() -> None:
    """Spec: KL-ALLOW-3 (Kafka's roll flush runs later; the recovery point may lag)."""
    s = log.empty_log(LogConfig(), START_MS)
    s, _ = log.append_as_leader(s, (rec(START_MS), rec(START_MS)), 0)
    found = [(o.choices, o.value[0].recovery_point, o.value[0].pending_flushes)
             for o in outcomes(log.roll, s, None)]
    assert found == [((), 2, ()), (("roll_flush=1",), 0, (2,))]
    pending = found[1]
    lagging = next(o.value[0] for o in outcomes(log.roll, s, None) if o.choices)
    assert pending[1] == 0
    fired = [o.value.recovery_point for o in outcomes(fire_pending_flushes, lagging)]
    assert fired == [0, 2]


def test_hw_materialisation__kafka_stores_the_lookup_metadata__is_allowed() -> None:
    """Spec: KL-ALLOW-4 (an HW inside a batch may become the batch base, as trunk stores it)."""
    s = log.empty_log(LogConfig(), START_MS)
    s, _ = log.append_as_leader(s, (rec(START_MS), rec(START_MS), rec(START_MS)), 0)
    s, _ = log.update_high_watermark(s, 1)
    answers = [o.value[1] for o in outcomes(log.maybe_increment_high_watermark, s,
                                            LogOffsetMetadata(2))]
    assert answers == [LogOffsetMetadata(1, 0, 0), LogOffsetMetadata(0, 0, 0)]


class _LastChoiceModel(ModelSut):
    """The model taking, at every step, the last of its allowed outcomes (never kafkalog's)."""

    name = "model-last-choice"

    def _step(self, action: str, *args: Any) -> Any:
        function = getattr(self._log, action)
        chosen = list(outcomes(lambda s: function(fire_pending_flushes(s), *args),
                               self.partition_state))[-1]
        if chosen.error is not None:
            raise chosen.error
        self.partition_state, result = chosen.value
        return result


@pytest.mark.parametrize("family", ["time_roll", "tiny"])
def test_machine__sut_taking_other_kafka_choices_everywhere__conforms(family: str) -> None:
    """Spec: KL-ALLOW-1 (every choice point's alternatives are accepted by the checker)."""
    from hypothesis import seed
    from hypothesis.stateful import run_state_machine_as_test

    session = Session(config_family(family), _LastChoiceModel, frozenset(FEATURES),
                      max_steps=40)
    run_state_machine_as_test(seed(5)(make_machine(session)), settings=run_settings(40))
    assert session.best is None, session.best_signature


def test_roll_flush__pending__runs_at_the_latest_when_the_clock_moves() -> None:
    """Spec: KL-ALLOW-3 (a roll that never flushes is caught at the next advance_clock)."""
    s = log.empty_log(LogConfig(), START_MS)
    s, _ = log.append_as_leader(s, (rec(START_MS), rec(START_MS)), 0)
    lagging = next(o.value[0] for o in outcomes(log.roll, s, None) if o.choices)
    assert (lagging.recovery_point, lagging.pending_flushes) == (0, (2,))
    moved, _ = log.advance_clock(lagging, 1)
    assert (moved.recovery_point, moved.pending_flushes) == (2, ())
    assert {o.value[0].recovery_point for o in outcomes(log.advance_clock, lagging, 1)} == {2}


class _SchedulerRunsFlushesAtOnce(ModelSut):
    """The model with Kafka's roll flush scheduled and run as soon as the step is done (a
    `MockScheduler`, or a fast background thread): never kafkalog's synchronous clamp."""

    name = "model-flush-after-step"

    def _step(self, action: str, *args: Any) -> Any:
        function = getattr(self._log, action)
        every = list(outcomes(function, self.partition_state, *args))
        chosen = next((o for o in every if o.choices == ("roll_flush=1",)), every[0])
        if chosen.error is not None:
            raise chosen.error
        state, result = chosen.value
        self.partition_state = complete_pending_flushes(state)
        return result


def _far_follower(base: int) -> tuple[str, dict[str, Any]]:
    return ("append_as_follower", {"batches": (BatchSpec(base, 0, (rec(START_MS),)),)})


@pytest.mark.parametrize("calls", [
    [_far_follower(2**31 + 1)],  # the offset overflows the empty segment at 0: roll to the base
    [leader(START_MS), ("roll", {"expected_next_offset": None}),
     ("append_as_leader", {"records": (rec(START_MS),), "leader_epoch": 0}),
     ("flush", {"offset": None}), _far_follower(2**31 + 5)],
], ids=["empty-log", "after-a-flush"])
def test_roll_inside_follower_append__base_above_leo__flush_of_the_base_is_allowed(
    calls: list[tuple[str, dict[str, Any]]],
) -> None:
    """Spec: KL-ALLOW-3 (the roll's flush of a base above the LEO sets the recovery point to the
    base once the append has passed it)."""
    lockstep, signature = run_calls(LogConfig(), calls, factory=_SchedulerRunsFlushesAtOnce)
    assert signature is None, lockstep.steps[-1].divergence
    assert lockstep.model.state().recovery_point == calls[-1][1]["batches"][0].base_offset
