"""KL-ROLL-6, KL-ALLOW-6: a roll onto the empty active segment's base, kafkalog's way and Kafka's.

kafkalog builds the new files under `.cleaned` and renames them over the old names, so the base
is never without a `.log` (§17). Kafka (`LocalLog.createAndDeleteSegment`) renames the old files
`.deleted`, creates the new ones and deletes the old after `file_delete_delay_ms`: a crash between
the rename and the create leaves no segment at the base, and the load falls back to the
log-start checkpoint. The checker accepts both; it rejects a variant whose completed roll leaves
no segment a load would find.

The scenario: `truncate_fully_and_start_at(5)` (the log-start checkpoint still says 0), then a
roll, which lands on the empty active segment's base 5.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from kafkalog.conformance.broken.variants import patched_variant
from kafkalog.conformance.check.impl_sut import ImplSut
from kafkalog.conformance.check.lockstep import DivergenceError, Lockstep
from kafkalog.conformance.check.sut import ModelSut
from kafkalog.model import log
from kafkalog.model import values as v
from kafkalog.model.crash import crash
from kafkalog.model.crash.inside import crash_between

T = 1700000000000
CONFIG = v.LogConfig(segment_bytes=150, segment_ms=600000, index_interval_bytes=64,
                     segment_index_bytes=48, retention_ms=-1, max_message_bytes=140,
                     file_delete_delay_ms=1000)
START = ("truncate_fully_and_start_at", {"offset": 5})
ROLL = ("roll", {"expected_next_offset": None})
FAULTS = ("process_crash", "power_loss")


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    logging.disable(logging.WARNING)  # recovery logs the segments it drops
    yield
    logging.disable(logging.NOTSET)


def _run(steps: list[tuple[str, dict[str, Any]]], sweep: bool = False) -> tuple[Lockstep, ImplSut]:
    impl = ImplSut(CONFIG, T, 0)
    lockstep = Lockstep(ModelSut(CONFIG, T, 0), impl, 1, sweep=sweep)
    try:
        for action, args in steps:
            lockstep.step(action, args)
    except BaseException:
        impl.close()
        raise
    return lockstep, impl


def _names(impl: ImplSut) -> list[str]:
    return sorted(p.name for p in impl.partition_dir.iterdir() if p.name.startswith("0000"))


def _starts_after_crash_inside_roll(fault: str) -> set[int]:
    """The log start offsets the implementation recovers to, over every crash point of the
    roll; every one of them must be accepted by the checker (DivergenceError otherwise)."""
    starts = set()
    for point in range(16):
        lockstep, impl = _run([START, ROLL])
        try:
            lockstep.step("crash", {"point": point, "fault": fault, "seed": 0})
            starts.add(impl.state().log_start_offset)
        finally:
            impl.close()
    return starts


@pytest.mark.parametrize("fault", FAULTS)
def test_roll_replace__kafkalog_atomic_replace__never_loses_the_base(fault: str) -> None:
    """Spec: KL-ROLL-6, KL-ALLOW-6 (kafkalog's choice, §17: the base always has a `.log`)."""
    assert _starts_after_crash_inside_roll(fault) == {5}


@pytest.mark.parametrize("fault", FAULTS)
def test_roll_replace__kafka_variant_crash_between_rename_and_create__accepted(
        fault: str) -> None:
    """Spec: KL-ALLOW-6 (Kafka's window: the load restarts at the log-start checkpoint)."""
    with patched_variant("roll_replace_renames_deleted"):
        assert _starts_after_crash_inside_roll(fault) == {0, 5}


def test_roll_replace__kafka_variant__deleted_files_pending_until_the_delay_in_lockstep() -> None:
    """Spec: KL-ROLL-6, KL-DEL-1, KL-ALLOW-6 (every crash point swept, then the timer fires)."""
    with patched_variant("roll_replace_renames_deleted"):
        lockstep, impl = _run([START, ROLL], sweep=True)
        try:
            base = f"{5:020d}"
            assert {f"{base}.log.deleted", f"{base}.log"} <= set(_names(impl))
            assert impl.state().pending_deletions == lockstep.model.state().pending_deletions
            lockstep.step("crash", {"point": 1 << 20, "fault": "power_loss", "seed": 0})
            lockstep.step(*ROLL)
            lockstep.step("advance_clock", {"ms": CONFIG.file_delete_delay_ms})
            assert impl.state().pending_deletions == ()
            assert not any(n.endswith(".deleted") for n in _names(impl))
        finally:
            impl.close()


def test_roll_replace__variant_whose_completed_roll_loses_the_base__rejected() -> None:
    """Spec: KL-ALLOW-6 (only a crash inside the roll may lose the base; a reload may not)."""
    with patched_variant("roll_replace_loses_base"), pytest.raises(DivergenceError):
        lockstep, impl = _run([START, ROLL])
        try:
            lockstep.step("close_and_reopen", {})
        finally:
            impl.close()


def test_crash_between__roll_onto_the_empty_active_base__allows_the_log_without_it() -> None:
    """Spec: KL-ALLOW-6 (the layout without the replaced segment is a member; a roll to a new
    base does not add it)."""
    state = log.empty_log(CONFIG, T)
    durable = crash.initial_durable(state)
    started, _ = log.truncate_fully_and_start_at(state, 5)
    durable = crash.observe(durable, "truncate_fully_and_start_at", state, started)
    rolled, _ = log.roll(started, None)
    after = crash.observe(durable, "roll", started, rolled)
    members = crash_between(started, durable, rolled, after, "roll", crash.FaultModel.POWER_LOSS)
    assert {m[0].log_start_offset for m in crash.loaded_outcomes(members)} == {0, 5}
    moved, _ = log.roll(started, 9)
    members = crash_between(started, durable, moved, crash.observe(durable, "roll", started,
                                                                   moved),
                            "roll", crash.FaultModel.POWER_LOSS)
    assert {m[0].log_start_offset for m in crash.loaded_outcomes(members)} == {5}
