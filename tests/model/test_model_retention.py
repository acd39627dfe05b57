"""Retention: order, the HW bound, idempotence, roll-when-all-go, async deletion (LOG-32..38)."""

from __future__ import annotations

from kafkalog.model import log
from kafkalog.model.state import PartitionState
from kafkalog.model.values import EpochEntry, LogConfig, Record

DAY = 24 * 3600 * 1000


def segments_of_one_batch(n: int, config: LogConfig, ts: int = 0) -> PartitionState:
    """n segments each holding one 72-byte batch (segment_bytes 72 rolls before every append)."""
    s = log.empty_log(config)
    for i in range(n):
        s, _ = log.append_as_leader(s, (Record(None, b"test", ts + i),), i // 2)
    return s


def bases(s: PartitionState) -> list[int]:
    return [seg.base_offset for seg in s.segments]


def test_delete_old_segments__size_breach_below_hw_only__stops_at_the_hw() -> None:
    """KAFKA-5634: nothing at or above the HW goes. Spec: KL-RET-2, KL-RET-4"""
    s = segments_of_one_batch(4, LogConfig(segment_bytes=72, retention_bytes=72))
    s, _ = log.update_high_watermark(s, 1)
    s, count = log.delete_old_segments(s)
    assert count == 1 and bases(s) == [1, 2, 3]
    assert s.log_start_offset == 1


def test_delete_old_segments__hw_zero__deletes_nothing() -> None:
    """Spec: KL-RET-2"""
    s = segments_of_one_batch(4, LogConfig(segment_bytes=72, retention_bytes=0))
    assert log.delete_old_segments(s)[1] == 0


def test_delete_old_segments__second_call_right_after__deletes_nothing() -> None:
    """KAFKA-12177: start-offset retention runs first; 2 then 0. Spec: KL-RET-1, KL-RET-3"""
    s = segments_of_one_batch(4, LogConfig(segment_bytes=72, retention_bytes=144))
    s, _ = log.update_high_watermark(s, 4)
    s, _ = log.maybe_increment_log_start_offset(s, 1)
    s, count = log.delete_old_segments(s)
    assert count == 2 and bases(s) == [2, 3] and s.log_start_offset == 2
    s, count = log.delete_old_segments(s)
    assert count == 0


def test_delete_old_segments__all_expired__rolls_first_and_counts_every_segment() -> None:
    """LOG-34 step 1: a log never has zero segments. Spec: KL-RET-6, KL-RET-5, KL-RET-7"""
    s = segments_of_one_batch(3, LogConfig(segment_bytes=72, retention_ms=DAY))
    s, _ = log.update_high_watermark(s, 3)
    s, _ = log.advance_clock(s, DAY + 3)
    s, count = log.delete_old_segments(s)
    assert count == 3 and bases(s) == [3] and s.active.size == 0
    assert (s.log_start_offset, s.high_watermark.message_offset, s.log_end_offset) == (3, 3, 3)
    assert s.deleted_files == (0, 1, 2)
    assert s.epochs == (EpochEntry(1, 3),)


def test_delete_old_segments__time_is_strictly_greater_than_retention() -> None:
    """LOG-36. Spec: KL-RET-5"""
    s = segments_of_one_batch(2, LogConfig(segment_bytes=72, retention_ms=100), ts=0)
    s, _ = log.update_high_watermark(s, 2)
    s, _ = log.advance_clock(s, 100)
    assert log.delete_old_segments(s)[1] == 0
    s, _ = log.advance_clock(s, 1)
    assert log.delete_old_segments(s)[1] == 1


def test_delete_old_segments__no_timestamps__uses_the_last_modified_time() -> None:
    """SEG-19 fallback. Spec: KL-RET-5, KL-CLOCK-1"""
    s = segments_of_one_batch(2, LogConfig(segment_bytes=72, retention_ms=100), ts=-1)
    s = log.empty_log(LogConfig(segment_bytes=72, retention_ms=100))
    s, _ = log.append_as_leader(s, (Record(None, b"x", -1),), 0)
    s, _ = log.advance_clock(s, 50)
    s, _ = log.append_as_leader(s, (Record(None, b"x", -1),), 0)
    s, _ = log.update_high_watermark(s, 2)
    s, _ = log.advance_clock(s, 51)
    s, count = log.delete_old_segments(s)
    assert count == 1 and bases(s) == [1]


def test_delete_old_segments__empty_active_segment__is_never_deleted() -> None:
    """Spec: KL-RET-2"""
    s = segments_of_one_batch(2, LogConfig(segment_bytes=72, retention_ms=0))
    s, _ = log.roll(s)
    s, _ = log.update_high_watermark(s, 2)
    s, _ = log.advance_clock(s, 10)
    s, count = log.delete_old_segments(s)
    assert count == 2 and bases(s) == [2]


def test_delete_old_segments__files_removed_only_after_file_delete_delay() -> None:
    """LOC-11: `.deleted` now, gone at now + 60000. Spec: KL-DEL-1, KL-DEL-2"""
    s = segments_of_one_batch(3, LogConfig(segment_bytes=72))
    s, _ = log.update_high_watermark(s, 3)
    s, _ = log.maybe_increment_log_start_offset(s, 2)
    s, _ = log.delete_old_segments(s)
    assert log.view(s).pending_deletions == (0, 1)
    s, _ = log.advance_clock(s, 59_999)
    assert log.view(s).pending_deletions == (0, 1)
    s, now = log.advance_clock(s, 1)
    assert now == 60_000 and log.view(s).pending_deletions == ()


def test_advance_clock__timer_deletes_by_name_even_a_newer_rename() -> None:
    """Two renames of base 1; the first timer removes the name. Spec: KL-DEL-2"""
    s = segments_of_one_batch(1, LogConfig(file_delete_delay_ms=100))
    s, _ = log.roll(s)
    s, _ = log.roll(s)  # replaces the empty active segment 1: timer at 100
    s, _ = log.advance_clock(s, 50)
    s, _ = log.roll(s)  # again: timer at 150, same name
    s, _ = log.advance_clock(s, 50)
    assert s.deleted_files == () and len(s.deletion_timers) == 1
