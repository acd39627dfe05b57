"""Truncation: batch-aligned cuts, epochs, offsets, full truncation (LOG-40, LOG-41, SEG-13)."""

from __future__ import annotations

import pytest
from kafkalog.model import log
from kafkalog.model.errors import IllegalArgumentError
from kafkalog.model.helpers import index_entries_after_truncation
from kafkalog.model.state import PartitionState
from kafkalog.model.values import BatchSpec, EpochEntry, LogConfig, LogOffsetMetadata, Record


def rec(ts: int = 0) -> Record:
    return Record(None, b"test", ts)


def two_batches_of_three() -> PartitionState:
    s = log.empty_log(LogConfig())
    s, _ = log.append_as_leader(s, (rec(1), rec(2), rec(3)), 1)
    s, _ = log.append_as_leader(s, (rec(4), rec(5), rec(6)), 2)
    return s


def test_truncate_to__offset_inside_batch__drops_the_whole_batch_but_leo_is_the_target() -> None:
    """SEG-14 / LOG-42. Spec: KL-TRUNC-2, KL-TRUNC-5"""
    s, _ = log.update_high_watermark(two_batches_of_three(), 6)
    s, truncated = log.truncate_to(s, 4)
    assert truncated
    assert log.view(s).segments[0].next_offset == 3 and s.log_end_offset == 4
    assert s.high_watermark == LogOffsetMetadata(4, 0, s.active.size)
    # Epochs are cut at the target, not at the physical cut: epoch 2 still "starts" at 3.
    assert s.epochs == (EpochEntry(1, 0), EpochEntry(2, 3))
    assert s.active.max_timestamp_and_offset == (3, 2)


def test_truncate_to__at_or_above_leo__trims_trailing_epochs_and_returns_false() -> None:
    """KAFKA-10706. Spec: KL-TRUNC-1, KL-EPOCH-3"""
    s, _ = log.assign_epoch(two_batches_of_three(), 3, 6)
    s, truncated = log.truncate_to(s, 6)
    assert not truncated and s.epochs == (EpochEntry(1, 0), EpochEntry(2, 3))
    assert s.log_end_offset == 6


def test_truncate_to__negative__raises_illegal_argument() -> None:
    """ERR-33. Spec: KL-TRUNC-1"""
    with pytest.raises(IllegalArgumentError):
        log.truncate_to(two_batches_of_three(), -1)


def test_truncate_to__deletes_later_segments_and_reactivates_a_trimmed_one() -> None:
    """KAFKA-6492: the new active segment's indexes regain full capacity.
    Spec: KL-TRUNC-2, KL-TRUNC-3, KL-DEL-1"""
    s = two_batches_of_three()
    s, _ = log.roll(s)
    s, _ = log.append_as_leader(s, (rec(7),), 2)
    assert s.segments[0].offset_index_max_entries == 0
    s, _ = log.advance_clock(s, 5)
    s, _ = log.truncate_to(s, 3)
    assert [seg.base_offset for seg in s.segments] == [0]
    assert s.active.offset_index_max_entries == 10 * 1024 * 1024 // 8
    assert s.deleted_files == (6,)
    assert (s.active.last_modified_ms, s.active.created_ms) == (5, 0)


def test_truncate_to__empties_the_segment__resets_created_time() -> None:
    """KAFKA-596. Spec: KL-TRUNC-3"""
    s = log.empty_log(LogConfig(), now_ms=100)
    s, _ = log.append_as_follower(s, (BatchSpec(0, 0, (rec(),)), BatchSpec(1, 0, (rec(),))))
    s, _ = log.advance_clock(s, 50)
    s, _ = log.truncate_to(s, 0)
    assert s.active.created_ms == 150 and s.active.size == 0 and s.log_end_offset == 0


def test_truncate_to__below_first_segment__truncates_fully_at_the_target() -> None:
    """LOG-40 step 3. Spec: KL-TRUNC-1, KL-TRUNC-4"""
    s = log.empty_log(LogConfig(), log_start_offset=10)
    s, _ = log.append_as_leader(s, (rec(),), 0)
    s, truncated = log.truncate_to(s, 5)
    v = log.view(s)
    assert truncated and (v.log_start_offset, v.high_watermark, v.log_end_offset) == (5, 5, 5)
    assert v.epoch_entries == () and v.pending_deletions == (10,)


def test_truncate_to__below_lso__lowers_the_lso_and_recovery_point() -> None:
    """LOG-40 step 3.4. Spec: KL-TRUNC-5, KL-FLUSH-1"""
    s, _ = log.update_high_watermark(two_batches_of_three(), 6)
    s, _ = log.flush(s)
    s, _ = log.maybe_increment_log_start_offset(s, 5)
    s, _ = log.truncate_to(s, 3)
    assert (s.log_start_offset, s.recovery_point, s.log_end_offset) == (3, 3, 3)


def test_truncate_fully_and_start_at__offsets_equal_it_and_recovery_point_never_rises() -> None:
    """KAFKA-9491; the LSO is assigned directly, so the recovery point keeps min(rp, offset).

    Spec: KL-TRUNC-4
    """
    before = two_batches_of_three()
    s, _ = log.truncate_fully_and_start_at(before, 100)
    v = log.view(s)
    assert (v.log_start_offset, v.high_watermark, v.log_end_offset) == (100, 100, 100)
    assert v.recovery_point == min(before.recovery_point, 100)
    flushed, _ = log.flush(two_batches_of_three())
    lowered, _ = log.truncate_fully_and_start_at(flushed, 2)
    assert log.view(lowered).recovery_point == 2
    assert v.segments[0].base_offset == 100 and v.epoch_entries == ()
    assert s.high_watermark == LogOffsetMetadata(100, 100, 0)


def test_truncate_fully_and_start_at__negative__raises_illegal_argument() -> None:
    """ERR-29. Spec: KL-TRUNC-4"""
    with pytest.raises(IllegalArgumentError):
        log.truncate_fully_and_start_at(two_batches_of_three(), -1)


@pytest.mark.parametrize(("offset", "kept"), [(1, 0), (2, 0), (3, 1), (4, 1), (5, 2), (99, 3)])
def test_index_entries_after_truncation__three_case_rule(offset: int, kept: int) -> None:
    """FMT-15 with keys 2, 4, 6. Spec: KL-TRUNC-3"""
    assert index_entries_after_truncation([2, 4, 6], offset) == kept


T = 1_700_000_000_000


def _follower_5_then_max_at_6_reopened() -> PartitionState:
    """Batch 5 (T+5) from a follower, 6 (T+10, the max), 7 and 8 (T) from the leader, then a
    clean reopen: the time index holds only the final entry (T+10, 6) and the max is unread."""
    s = log.empty_log(LogConfig())
    s, _ = log.append_as_follower(s, (BatchSpec(5, 0, (rec(T + 5),)),), None)
    for ts in (T + 10, T, T):
        s, _ = log.append_as_leader(s, (rec(ts),), 0)
    s, _ = log.close_and_reopen(s)
    assert s.active.time_index == ((T + 10, 6),) and s.active.max_so_far is None
    return s


def test_truncate_to__after_reload_emptying_the_time_index__forgets_the_batches_kept() -> None:
    """LogSegment.truncateTo reads the unread max from the cut (empty) index: (-1, base), never
    re-derived; the next append's max replaces it. Spec: KL-TRUNC-3, KL-TIME-3, KL-TIME-4"""
    s, _ = log.truncate_to(_follower_5_then_max_at_6_reopened(), 6)
    assert s.active.max_so_far == (-1, 0)  # batch 5 (T+5) is still there
    s, _ = log.append_as_leader(s, (rec(T),), 0)
    s, _ = log.close_and_reopen(s)
    assert s.active.time_index == ((T, 6),)
    _, found = log.fetch_offset_by_timestamp(s, -3)
    assert found is not None and (found.timestamp, found.offset) == (T, 6)
    # The search starts at the time index's (T, 6): batch 5's T+5 is never looked at.
    _, found = log.fetch_offset_by_timestamp(s, T + 1)
    assert found is None


def test_truncate_to__max_read_before_the_cut__is_re_derived_from_the_batches_kept() -> None:
    """A MAX_TIMESTAMP lookup reads every segment's max first; the cut then re-derives it
    (readLargestTimestamp) and batch 5 keeps its place. Spec: KL-TRUNC-3, KL-TIME-3"""
    s, _ = log.fetch_offset_by_timestamp(_follower_5_then_max_at_6_reopened(), -3)
    assert s.active.max_so_far == (T + 10, 6)
    s, _ = log.truncate_to(s, 6)
    assert s.active.max_so_far == (T + 5, 5)
    s, _ = log.append_as_leader(s, (rec(T),), 0)
    s, _ = log.close_and_reopen(s)
    _, found = log.fetch_offset_by_timestamp(s, -3)
    assert found is not None and (found.timestamp, found.offset) == (T + 5, 5)
