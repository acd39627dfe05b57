"""Kafka mode: layouts a power loss brings back under a later action or load (KL-CRASH-8, -9).

Found by the default campaign's kafka-mode runs (seeds 100133, 100774: a second truncation over
the layout an unsynced first one may bring back; seeds 100087, 100702: the `offsets_back`
batches a load emptied without an fsync, back after a power loss; seeds 101944, 102479: the same
batches emptied again by the next load, back under later appends).
"""

from __future__ import annotations

from typing import Any

from kafkalog.model import log
from kafkalog.model.crash import crash
from kafkalog.model.crash import inside as crash_inside
from kafkalog.model.crash.crash import CrashMode, FaultModel
from kafkalog.model.invariants import check_all
from kafkalog.model.values import NO_TIMESTAMP, LogConfig, Record

CONFIG = LogConfig(segment_bytes=300, index_interval_bytes=100, segment_index_bytes=48,
                   file_delete_delay_ms=1000)


class _Tracked:
    """A model log with its durability, advanced by `observe` like the checker's ModelSut."""

    def __init__(self, mode: CrashMode) -> None:
        self.mode = mode
        self.state = log.empty_log(CONFIG)
        self.durable = crash.initial_durable(self.state)

    def do(self, action: str, *args: Any) -> None:
        before = self.state
        self.state, _ = getattr(log, action)(self.state, *args)
        self.durable = crash.observe(self.durable, action, before, self.state, self.mode)

    def segments_of(self, n: int) -> None:
        """`n` segments of two batches each, the last one active."""
        for i in range(n):
            for _ in range(2):
                self.do("append_as_leader", (Record(None, b"test", 100),), 0)
            if i < n - 1:
                self.do("roll", None)


def _layouts(outcomes: tuple[crash.Outcome, ...]) -> set[tuple[tuple[int, int], ...]]:
    return {tuple((s.base_offset, s.next_offset) for s in state.segments)
            for state, _ in crash.loaded_outcomes(outcomes)}


def test_kafka_mode__a_crash_inside_a_second_truncation__over_the_first_ones_undone_cut() -> None:
    """Kafka renames a truncation's segments `.deleted` lowest first; the first truncation's cut
    of segment 4 was never synced, so a power loss inside the second may leave segment 2 gone
    and segment 4 back whole (seeds 100133, 100774). Strict truncations are durable.
    Spec: KL-CRASH-8"""
    for mode, back in ((CrashMode.STRICT, False), (CrashMode.KAFKA, True)):
        t = _Tracked(mode)
        t.segments_of(4)  # segments at 0, 2, 4, 6
        t.do("flush", None)
        t.do("truncate_to", 5)  # segment 4 cut to one batch, segment 6 removed
        before, durable_before = t.state, t.durable
        t.do("truncate_to", 1)  # removes 2 and 4 (lowest first), then cuts 0
        inside = crash_inside.crash_between(before, durable_before, t.state, t.durable,
                                            "truncate_to", FaultModel.POWER_LOSS, mode)
        assert (((0, 2), (4, 6)) in _layouts(inside)) is back, mode
        assert all(check_all(s) == [] for s, _ in crash.loaded_outcomes(inside))


def test_kafka_mode__planted_offsets_back__come_back_as_data_after_the_load_emptied_them() -> None:
    """The load empties the segment holding planted offsets going back (RCV-6) without an fsync
    (GAP-4): a later power loss may undo that cut, and recovery keeps the planted batches that
    continue the offsets, timeless and epochless (seeds 100087, 100702). Strict loads sync the
    cut. Spec: KL-CRASH-9"""
    for mode, back in ((CrashMode.STRICT, False), (CrashMode.KAFKA, True)):
        t = _Tracked(mode)
        t.segments_of(2)  # segments at 0 and 2
        t.do("flush", None)
        planted = crash.crash_states(t.state, t.durable, FaultModel.POWER_LOSS, mode,
                                     offsets_back=True)
        state, durable = next((s, d) for s, d in crash.loaded_outcomes(planted)
                              if s.log_end_offset == 2)  # segment 2 emptied
        again = crash.loaded_outcomes(crash.crash_states(state, durable,
                                                         FaultModel.POWER_LOSS, mode))
        grown = [s for s, _ in again if s.log_end_offset > 4]
        assert bool(grown) is back, mode
        assert {s.log_end_offset for s in grown} == ({5, 6} if back else set())
        for s in grown:
            planted_batches = [b for b in s.segments[-1].batches if b.base_offset >= 4]
            assert all(b.partition_leader_epoch == -1 and b.max_timestamp == NO_TIMESTAMP
                       for b in planted_batches)
            assert check_all(s) == []


def test_kafka_mode__planted_offsets_back__emptied_again_by_the_next_load__stay_on_disk() -> None:
    """A power loss brings the planted image back whole; the next load reaches the batch going
    back and empties the segment again (RCV-6), again without an fsync, so the image is still
    one a later power loss may bring back, under the appends made since (seeds 101944,
    102479). Strict loads sync the cut. Spec: KL-CRASH-9"""
    for mode, back in ((CrashMode.STRICT, False), (CrashMode.KAFKA, True)):
        t = _Tracked(mode)
        t.segments_of(2)  # segments at 0 and 2
        t.do("flush", None)
        planted = crash.crash_states(t.state, t.durable, FaultModel.POWER_LOSS, mode,
                                     offsets_back=True)
        t.state, t.durable = next((s, d) for s, d in crash.loaded_outcomes(planted)
                                  if s.log_end_offset == 2)  # segment 2 emptied
        again = crash.loaded_outcomes(crash.crash_states(t.state, t.durable,
                                                         FaultModel.POWER_LOSS, mode))
        grown: set[int] = set()
        for state, durable in again:
            if state.log_end_offset != 2:  # only the segment emptied a second time
                continue
            t.state, t.durable = state, durable
            t.do("append_as_leader", (Record(None, b"test", 100),), 0)
            later = crash.loaded_outcomes(crash.crash_states(t.state, t.durable,
                                                             FaultModel.POWER_LOSS, mode))
            grown |= {s.log_end_offset for s, _ in later if s.log_end_offset > 4}
            assert all(check_all(s) == [] for s, _ in later)
        assert grown == ({5, 6} if back else set()), mode


def _cut_then_restarted_higher() -> tuple[_Tracked, Any, crash.Durable]:
    """Seed 75's shape: three synced batches, an unsynced cut to 0, one batch appended, then
    `truncate_fully_and_start_at(1)`: the log restarts above its active base, no fsync."""
    log_ = _Tracked(CrashMode.KAFKA)
    for _ in range(3):
        log_.do("append_as_leader", (Record(None, b"test", 100),), 0)
    log_.do("close_and_reopen")
    log_.do("truncate_to", 0)
    log_.do("append_as_leader", (Record(None, b"test", 100),), 0)
    before, durable = log_.state, log_.durable
    log_.do("truncate_fully_and_start_at", 1)
    return log_, before, durable


def test_kafka_full_truncation_above_the_active_base__is_no_roll__the_cut_layout_stays(
) -> None:
    """A full truncation moving the active base up is not a roll: it flushes nothing
    (LOG-41, DUR-23), so the layout the unsynced cut removed may still come back after a power
    loss. Spec: KL-CRASH-2, KL-CRASH-3"""
    log_, _, _ = _cut_then_restarted_higher()
    assert log_.durable.flushed == 0
    outcomes = crash.crash_states(log_.state, log_.durable, FaultModel.POWER_LOSS, log_.mode)
    assert ((0, 3),) in _layouts(outcomes)


def test_kafka_process_crash_inside_a_full_truncation__the_cut_layout_stays() -> None:
    """A process crash inside the action leaves the disk as the crash between actions would:
    the layouts an earlier unsynced cut may bring back stay in the loaded states' durable
    part, so a later power loss may still resurrect them. Spec: KL-CRASH-8, KL-CRASH-3"""
    log_, before, durable = _cut_then_restarted_higher()
    outcomes = crash_inside.crash_between(before, durable, log_.state, log_.durable,
                                          "truncate_fully_and_start_at",
                                          FaultModel.PROCESS_CRASH, log_.mode)
    kept = [after.layouts for _, after in crash.loaded_outcomes(outcomes)]
    assert kept and all(any(sum(len(s.batches) for s in layout) == 3 for layout in layouts)
                        for layouts in kept)
