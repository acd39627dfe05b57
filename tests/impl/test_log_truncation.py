"""Log (UnifiedLog): truncation, log start and retention scenarios from UnifiedLogTest."""

from __future__ import annotations

import pytest
from kafkalog.impl.time import MockTime
from kafkalog.model.errors import (
    IllegalArgumentError,
    OffsetOutOfRangeError,
)
from kafkalog.model.values import (
    EpochEntry,
    LogConfig,
)
from log_builders import batch, leader


def test_truncate_to__at_or_above_leo__clears_trailing_epoch(open_log) -> None:
    """Spec: LOG-40 step 2, BUG-54 (testTruncateToEndOffsetClearsEpochCache)."""
    log = open_log()
    log.append_as_follower(batch(27, "a", "b", epoch=19), 19)
    assert log.leader_epoch_cache.latest_entry == EpochEntry(19, 27)
    for epoch, target in ((20, 29), (24, 30)):
        log.assign_epoch(epoch, log.log_end_offset)
        assert log.leader_epoch_cache.latest_entry == EpochEntry(epoch, 29)
        assert log.truncate_to(target) is False
        assert log.leader_epoch_cache.latest_entry == EpochEntry(19, 27)
        assert log.log_end_offset == 29


def test_truncate_to__negative__raises_illegal_argument(open_log) -> None:
    """Spec: LOG-40 step 1, ERR-33."""
    with pytest.raises(IllegalArgumentError):
        open_log().truncate_to(-1)


def test_truncate_to__across_segments__deletes_later_segments_async(open_log, time) -> None:
    """Spec: LOC-8, LOC-11, LOG-40, LOG-42 (LEO = target even inside a batch)."""
    log = open_log(LogConfig(segment_bytes=200, file_delete_delay_ms=1000))
    for _ in range(6):
        log.append_as_leader(leader("test", "two"), 0)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) >= 3
    log.update_high_watermark(12)
    assert log.truncate_to(3) is True
    assert log.log_end_offset == 3 and log.high_watermark == 3
    assert log.state().pending_deletions == tuple(b for b in bases if b > 3)
    deleted = [p for p in log.dir.iterdir() if p.name.endswith(".deleted")]
    assert deleted
    time.sleep(1000)
    assert log.state().pending_deletions == ()
    assert not [p for p in log.dir.iterdir() if p.name.endswith(".deleted")]
    log.check()


def test_close__before_deletion_timers_fire__releases_every_file_handle(open_log) -> None:
    """Segments waiting in `.deleted` keep no descriptor open past close (they leaked in campaigns).

    Spec: LOC-11, REC-2
    """
    import os

    def open_descriptors() -> int:
        return len(os.listdir("/proc/self/fd"))

    log = open_log(LogConfig(segment_bytes=200, file_delete_delay_ms=1000))
    before = open_descriptors()
    for _ in range(6):
        log.append_as_leader(leader("test", "two"), 0)
    log.truncate_to(1)
    assert log.state().pending_deletions
    log.close()
    assert open_descriptors() <= before
    assert [p for p in log.dir.iterdir() if p.name.endswith(".deleted")]


def test_truncate_to__below_first_segment__truncates_fully(open_log) -> None:
    """Spec: LOG-40 step 3, LOG-41."""
    log = open_log(LogConfig(segment_bytes=200))
    log.truncate_fully_and_start_at(10)
    log.append_as_leader(leader("a"), 0)
    log.update_high_watermark(11)
    assert log.truncate_to(5) is True
    assert (log.log_start_offset, log.high_watermark, log.log_end_offset) == (5, 5, 5)
    assert log.leader_epoch_cache.epoch_entries() == ()


def test_maybe_increment_log_start_offset__above_hw__raises_out_of_range(open_log) -> None:
    """Spec: LOG-29 step 1, ERR-30."""
    log = open_log()
    log.append_as_leader(leader("a", "b", "c"), 0)
    log.update_high_watermark(2)
    with pytest.raises(OffsetOutOfRangeError):
        log.maybe_increment_log_start_offset(3)
    assert log.maybe_increment_log_start_offset(2) is True
    assert log.maybe_increment_log_start_offset(1) is False
    assert log.log_start_offset == 2


def test_maybe_increment_log_start_offset__truncates_epochs_from_start(open_log) -> None:
    """Spec: LOG-29 step 4.2, EPO-7."""
    log = open_log()
    log.append_as_leader(leader("a", "b"), 1)
    log.append_as_leader(leader("c", "d"), 2)
    log.update_high_watermark(4)
    log.maybe_increment_log_start_offset(1)
    assert log.leader_epoch_cache.epoch_entries() == (EpochEntry(1, 1), EpochEntry(2, 2))


def test_delete_old_segments__start_offset_first__second_call_deletes_nothing(
    open_log, time
) -> None:
    """Spec: LOG-32, LOG-38, BUG-41 (KAFKA-12177: 2 then 0)."""
    log = open_log(LogConfig(segment_bytes=144, retention_ms=999_999_999))
    for _ in range(6):
        log.append_as_leader(leader("test"), 0)
    assert len(log.segments) == 3
    log.update_high_watermark(log.log_end_offset)
    log.maybe_increment_log_start_offset(4)
    assert log.delete_old_segments() == 2
    assert log.delete_old_segments() == 0
    assert log.log_start_offset == 4 and [s.base_offset for s in log.segments] == [4]


def test_delete_old_segments__never_at_or_above_hw(open_log, time: MockTime) -> None:
    """Spec: LOG-33 step 3, BUG-36 (retention stops at the HW)."""
    log = open_log(LogConfig(segment_bytes=144, retention_ms=10))
    for _ in range(6):
        log.append_as_leader(leader("test", ts=0), 0)
    time.sleep(1000)
    log.update_high_watermark(3)
    assert log.delete_old_segments() == 1
    assert log.log_start_offset == 2
    log.check()


def test_delete_old_segments__all_expired_and_hw_at_leo__rolls_first(
    open_log, time: MockTime
) -> None:
    """Spec: LOG-34 step 1 (a log never has zero segments), LOG-35."""
    log = open_log(LogConfig(segment_bytes=144, retention_ms=10, file_delete_delay_ms=50))
    for _ in range(4):
        log.append_as_leader(leader("test", ts=0), 0)
    log.update_high_watermark(log.log_end_offset)
    time.sleep(100)
    assert log.delete_old_segments() == 2
    assert [s.base_offset for s in log.segments] == [4]
    assert log.log_start_offset == 4 and log.state().pending_deletions == (0, 2)
    time.sleep(50)
    assert log.state().pending_deletions == ()
    log.check()


def test_delete_old_segments__size_retention__oldest_first(open_log) -> None:
    """Spec: LOG-37 (stateful size predicate)."""
    log = open_log(LogConfig(segment_bytes=144, retention_bytes=150, retention_ms=-1))
    for _ in range(6):
        log.append_as_leader(leader("test"), 0)
    log.update_high_watermark(log.log_end_offset)
    # 3 segments of 144 bytes = 432; diff 282 allows deleting one (282 - 144 >= 0) then stops.
    assert log.delete_old_segments() == 1
    assert [s.base_offset for s in log.segments] == [2, 4]


def test_delete_old_segments__no_timestamps__falls_back_to_last_modified(
    open_log, time: MockTime
) -> None:
    """Spec: LOG-36, SEG-19 (largestTimestamp = last-modified when no record timestamp)."""
    log = open_log(LogConfig(segment_bytes=144, retention_ms=500))
    for _ in range(4):
        log.append_as_leader(leader("test"), 0)
    log.update_high_watermark(log.log_end_offset)
    time.sleep(400)
    assert log.delete_old_segments() == 0
    time.sleep(101)
    assert log.delete_old_segments() == 2


def test_flush__offset_bounds_and_recovery_point(open_log) -> None:
    """Spec: LOG-26, LOC-12 (kafkalog: offset must be in [0, LEO])."""
    log = open_log()
    log.append_as_leader(leader("a", "b", "c"), 0)
    assert log.flush(2) == 2
    assert log.flush(1) == 2, "the recovery point never moves back"
    assert log.flush() == 3
    with pytest.raises(IllegalArgumentError):
        log.flush(4)
