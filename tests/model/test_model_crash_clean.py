"""Crashes after and inside a cleaning pass (specs/log.md KL-CRASH-15, model/crash/cleaning.py).

A pass's swaps and its checkpoint are durable once it returns (strict); a crash inside it
leaves each group old or swapped, a group whose cleaned segment ends below some of its old
bases possibly with those old segments beside it, and the checkpoint old, reset or (after the
last swap) new. The load keeps the cleaner checkpoint file's entry, lowered to the active base
when it lies above the LEO.
"""

from __future__ import annotations

from typing import Any

import pytest
from kafkalog.model import log
from kafkalog.model.crash import crash
from kafkalog.model.crash import inside as crash_inside
from kafkalog.model.crash.cleaning import pass_stages
from kafkalog.model.crash.crash import CrashMode, FaultModel
from kafkalog.model.crash.invariants import crash_violations
from kafkalog.model.invariants import check_all
from kafkalog.model.recovery import Checkpoints, recover_unclean
from kafkalog.model.state import PartitionState
from kafkalog.model.values import LogConfig, Record

COMPACT = LogConfig(segment_bytes=500, index_interval_bytes=100, segment_index_bytes=48,
                    file_delete_delay_ms=1000, cleanup_policy="compact",
                    min_cleanable_dirty_ratio=0.0, delete_retention_ms=2000)
FAULTS = tuple(FaultModel)


class Tracked:
    """A compacted model log with its durability, advanced like the checker's ModelSut."""

    def __init__(self, mode: CrashMode = CrashMode.STRICT) -> None:
        self.mode = mode
        self.state = log.empty_log(COMPACT)
        self.durable = crash.initial_durable(self.state)
        self.last: tuple[str, PartitionState, crash.Durable] | None = None

    def do(self, action: str, *args: Any) -> Any:
        before, durable = self.state, self.durable
        self.last = (action, before, durable)
        self.state, result = getattr(log, action)(self.state, *args)
        self.durable = crash.observe(durable, action, before, self.state, self.mode)
        return result

    def put(self, *keys: int) -> None:
        for key in keys:
            self.do("append_as_leader", (Record(b"k%d" % key, b"v", self.state.now_ms),), 0)

    def seal(self) -> None:
        self.do("roll", None)
        self.do("update_high_watermark", self.state.log_end_offset)

    def after(self, fault: FaultModel) -> tuple[crash.Outcome, ...]:
        return crash.crash_states(self.state, self.durable, fault, self.mode)

    def inside(self, fault: FaultModel) -> tuple[crash.Outcome, ...]:
        assert self.last is not None
        action, before, durable = self.last
        return crash_inside.crash_between(before, durable, self.state, self.durable, action,
                                          fault, self.mode)


def _layout(state: PartitionState) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """Each segment's base and the base offsets of its batches."""
    return tuple((s.base_offset, tuple(b.base_offset for b in s.batches)) for s in state.segments)


def _offsets(layout: tuple[tuple[int, tuple[int, ...]], ...]) -> list[int]:
    return [offset for _, batches in layout for offset in batches]


def _members(outcomes: tuple[crash.Outcome, ...]) -> set[tuple[Any, int | None]]:
    return {(_layout(s), s.cleaner_checkpoint) for s, _ in crash.loaded_outcomes(outcomes)}


def _three_rounds() -> Tracked:
    """Three sealed segments, each k0..k3 once: a pass keeps only the last segment's records."""
    t = Tracked()
    for _ in range(3):
        t.put(0, 1, 2, 3)
        t.seal()
    return t


@pytest.mark.parametrize("fault", FAULTS)
def test_crash_after_a_pass__keeps_the_cleaned_log_and_the_new_checkpoint(
        fault: FaultModel) -> None:
    """Strict: the swaps are durable before `clean` returns and the checkpoint file is written
    atomically and fsynced, so every member is the cleaned log with the pass's end offset.
    Spec: KL-CRASH-15"""
    t = _three_rounds()
    t.do("clean")
    assert t.durable.checkpoints.cleaner == t.state.cleaner_checkpoint == 12
    members = _members(t.after(fault))
    assert members and all(_offsets(layout) == [8, 9, 10, 11] and entry == 12
                           for layout, entry in members)


@pytest.mark.parametrize("fault", FAULTS)
def test_crash_inside_a_pass__old_or_swapped__checkpoint_new_only_once_swapped(
        fault: FaultModel) -> None:
    """The checkpoint is written after the last swap (CLN-22): the uncleaned log comes back
    only with the old entry (none here, -1 in the view), the cleaned one with either.
    Spec: KL-CRASH-8, KL-CRASH-15"""
    t = _three_rounds()
    old = _layout(t.state)
    t.do("clean")
    members = _members(t.inside(fault))
    cleaned = _layout(t.state)
    assert (old, None) in members
    assert (cleaned, None) in members and (cleaned, 12) in members
    assert (old, 12) not in members


def test_crash_inside_a_pass_of_two_groups__may_leave_the_first_swapped_alone() -> None:
    """Groups are swapped one by one (CLN-51..CLN-57). Spec: KL-CRASH-15"""
    t = Tracked()
    t.put(0, 1, 0, 1)
    t.seal()
    t.put(2, 3)
    t.seal()
    t.put(2, 3, 2, 3)
    t.seal()
    before = t.state
    t.do("clean")
    stages = pass_stages(before, t.state)
    assert [tuple(s.base_offset for s in group) for _, group in stages.swaps] == [(0, 4), (6,)]
    first_only = _layout(stages.swaps[0][0])
    assert first_only not in {_layout(before), _layout(t.state)}
    assert (first_only, None) in _members(t.inside(FaultModel.PROCESS_CRASH))


def test_crash_inside_a_pass__old_segment_beyond_the_cleaned_end__may_stay_beside_it() -> None:
    """Group [0, 4): the cleaned segment keeps offsets 2 and 3 only, so the load's swap range
    [0, 4) does not reach base 4; a crash after segment 0's `.deleted` rename and before
    segment 4's leaves segment 4 beside the cleaned one (RCV-4; Kafka's loader alike).
    Spec: KL-CRASH-15"""
    t = Tracked()
    t.put(0, 1, 0, 1)
    t.seal()
    t.put(2, 3)
    t.seal()
    t.put(2, 3, 2, 3)
    t.seal()
    t.do("clean")
    hybrid = ((0, (2, 3)), (4, (4, 5)), (6, (6, 7, 8, 9)), (10, ()))
    assert (hybrid, None) in _members(t.inside(FaultModel.PROCESS_CRASH))


def test_crash_inside_a_pass__every_member_keeps_the_invariants() -> None:
    """KL-INV-18 and KL-INV-19 (keys unique below the checkpoint) hold in every member: a
    checkpoint that covers a range is only paired with a log whose range is cleaned; after the
    pass, KL-CRASH-10's properties hold too. Spec: KL-CRASH-10, KL-CRASH-15, KL-INV-19"""
    t = _three_rounds()
    t.do("clean")
    t.put(0, 1)
    t.seal()
    t.do("clean")
    for fault in FAULTS:
        for state, _ in crash.loaded_outcomes(t.inside(fault)):
            assert check_all(state) == [], (fault, _layout(state))
        for state, durable in crash.loaded_outcomes(t.after(fault)):
            assert check_all(state) == [], (fault, _layout(state))
            assert crash_violations(t.state, durable, state, CrashMode.STRICT) == []


def test_unclean_load__cleaner_checkpoint_above_the_log_end__is_lowered_to_the_active_base(
) -> None:
    """A crash inside a truncation after its cut and before CLN-68 lowered the entry leaves it
    above the LEO: the load lowers it (KL-INV-18). Spec: KL-CRASH-15, KL-CLEAN-13"""
    t = _three_rounds()
    t.do("clean")
    t.do("truncate_to", 10)
    loaded, _, _ = recover_unclean(t.state.segments, Checkpoints(cleaner=12), COMPACT,
                                   t.state.now_ms)
    assert loaded.log_end_offset == 10
    assert loaded.cleaner_checkpoint == loaded.active.base_offset == 8
    assert check_all(loaded) == []
    kept, _, _ = recover_unclean(t.state.segments, Checkpoints(cleaner=9), COMPACT,
                                 t.state.now_ms)
    assert kept.cleaner_checkpoint == 9  # within [0, LEO]: the file's entry as it is


def test_crash_inside_a_truncation__may_keep_the_old_cleaner_checkpoint() -> None:
    """CRP-8: the cleaner checkpoint file is old or new like the others; the truncation lowers
    it after its cut, and the load lowers an entry above the LEO itself.
    Spec: KL-CRASH-8, KL-CRASH-15, KL-CLEAN-13"""
    t = _three_rounds()
    t.do("clean")
    t.do("truncate_to", 10)
    assert t.state.cleaner_checkpoint == 8
    entries = {(s.log_end_offset, s.cleaner_checkpoint) for s, _ in
               crash.loaded_outcomes(t.inside(FaultModel.PROCESS_CRASH))}
    # Cut (LEO 10): the old entry 12 above the LEO is lowered to the active base 8 by the
    # load, the new one is 8; not cut yet (LEO 12): the old entry or the new one.
    assert {(10, 8), (12, 12), (12, 8)} <= entries
    assert all(entry <= leo for leo, entry in entries)


def test_kafka_mode__crash_after_a_pass__has_the_strict_members() -> None:
    """Kafka mode adds outcomes to the strict set (KL-CRASH-1), but not the layout before a pass
    that returned: Kafka's `replaceSegments` ends with a directory fsync (CLN-57), so its renames
    are durable, unlike retention's (GAP-2).
    Spec: KL-CRASH-1, KL-CRASH-15"""
    strict, kafka = _three_rounds(), Tracked(CrashMode.KAFKA)
    for _ in range(3):
        kafka.put(0, 1, 2, 3)
        kafka.seal()
    strict.do("clean")
    kafka.do("clean")
    for fault in FAULTS:
        assert _members(strict.after(fault)) <= _members(kafka.after(fault))
    assert kafka.durable.checkpoints.cleaner == 12


def test_kafka_mode__a_pass_that_merged_segments__leaves_no_layout_to_come_back() -> None:
    """Three one-record segments cleaned into one group: the segments the pass replaced never
    come back in kafka mode (its renames end in a directory fsync, CLN-57), while retention's
    removals may (GAP-2). Spec: KL-CRASH-1, KL-CRASH-15"""
    kafka = Tracked(CrashMode.KAFKA)
    for _ in range(3):
        kafka.put(0)
        kafka.seal()
    before = kafka.state.segments
    kafka.do("clean")
    assert len(kafka.state.segments) < len(before)
    assert before not in kafka.durable.layouts
