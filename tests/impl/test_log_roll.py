"""Log (UnifiedLog): roll by time, size, full index and jitter, from UnifiedLogTest."""

from __future__ import annotations

import pytest
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.time import MockTime
from kafkalog.model.errors import (
    InvalidRollError,
)
from kafkalog.model.values import (
    Isolation,
    LogConfig,
    Record,
)
from log_builders import leader


def test_roll__time_based_during_append(open_log, time: MockTime) -> None:
    """Spec: SEG-6, SEG-7, LOG-22 (testTimeBasedLogRollDuringAppend, segment_ms = 3600)."""
    log = open_log(LogConfig(segment_ms=3600))
    ms = log.config.segment_ms
    assert len(log.segments) == 1
    time.sleep(ms + 1)
    log.append_as_leader(leader("test"), 0)
    assert len(log.segments) == 1, "no roll that would leave an empty segment"
    log.append_as_leader(leader("test"), 0)
    assert len(log.segments) == 2
    for expected in (3, 4):
        time.sleep(ms + 1)
        log.append_as_leader(leader("test"), 0)
        assert len(log.segments) == expected
    stamp = time.milliseconds() + ms + 1
    log.append_as_leader(leader("test", ts=stamp), 0)
    assert len(log.segments) == 4, "first batch has no timestamp: wall clock decides"
    time.sleep(ms + 1)
    log.append_as_leader(leader("test", ts=stamp), 0)
    assert len(log.segments) == 5
    time.sleep(ms + 1)
    log.append_as_leader(leader("test", ts=stamp), 0)
    assert len(log.segments) == 5, "roll depends on the first message's timestamp"
    log.append_as_leader(leader("test", ts=time.milliseconds()), 0)
    assert len(log.segments) == 6
    time.sleep(ms + 1)
    log.append_as_leader(MemoryRecords(b""), 0)
    assert len(log.segments) == 6, "an empty append never rolls"
    log.check()


def test_roll__segment_that_already_exists__recreates_empty_active(open_log, time) -> None:
    """Spec: LOC-6 step 3, BUG-21 (testRollSegmentThatAlreadyExists)."""
    log = open_log(LogConfig(segment_ms=3600))
    assert log.roll(0) == 0 and len(log.segments) == 1
    log.append_as_follower(MemoryRecords.with_records(
        [Record(b"k1", b"v1", time.milliseconds())], base_offset=0, partition_leader_epoch=0), 0)
    log.append_as_follower(MemoryRecords.with_records(
        [Record(b"k2", b"v2", time.milliseconds() + 10)], base_offset=1,
        partition_leader_epoch=0), 0)
    assert log.log_end_offset == 2
    assert next(log.read(0, 1, Isolation.LOG_END, True).records.batches()).last_offset == 0
    assert next(log.read(1, 1, Isolation.LOG_END, True).records.batches()).last_offset == 1
    assert log.roll() == 2 and len(log.segments) == 2
    log.segments[-1].offset_index.resize(0)
    log.append_as_follower(MemoryRecords.with_records(
        [Record(b"k3", b"v3", time.milliseconds() + 12)], base_offset=2,
        partition_leader_epoch=0), 0)
    assert log.segments[-1].offset_index.max_entries > 1
    assert len(log.segments) == 2
    assert next(log.read(2, 100).records.batches()).last_offset == 2


def test_roll__below_active_base_or_onto_non_empty_segment__raises_invalid_roll(open_log) -> None:
    """Spec: LOC-6 steps 3-4, ERR-34."""
    log = open_log()
    log.append_as_leader(leader("a"), 0)
    log.roll()
    log.append_as_leader(leader("b"), 0)
    assert log.roll(10) == 10, "a base above the LEO is allowed (LOC-7)"
    assert log.log_end_offset == 2
    with pytest.raises(InvalidRollError):
        log.roll(5)
    assert log.roll(10) == 10, "rolling onto the empty active segment recreates it"


def test_roll__flushes_synchronously_and_advances_recovery_point(open_log) -> None:
    """Spec: LOG-25 step 4 (kafkalog: synchronous, clamped to the LEO)."""
    log = open_log()
    log.append_as_leader(leader("a", "b"), 0)
    assert log.recovery_point == 0
    log.roll()
    assert log.recovery_point == 2
    log.roll(10)
    assert log.recovery_point == 2


def test_roll__size_based__when_next_append_would_exceed_segment_bytes(open_log) -> None:
    """Spec: SEG-6 (1), LOG-22 (testSizeBasedLogRoll: 72-byte batches, segment_bytes 144)."""
    log = open_log(LogConfig(segment_bytes=144))
    for _ in range(2):
        log.append_as_leader(leader("test"), 0)
    assert len(log.segments) == 1
    log.append_as_leader(leader("test"), 0)
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_roll__index_full__rolls_at_the_appends_first_offset(open_log) -> None:
    """Spec: SEG-6 (3, 4), LOG-22 (KAFKA-6530: roll at the exact first offset)."""
    log = open_log(LogConfig(index_interval_bytes=1, segment_index_bytes=24))
    for _ in range(6):
        log.append_as_leader(leader("v"), 0)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) > 1 and all(b > 0 for b in bases[1:])
    log.check()


def test_roll__jitter__is_deterministic_from_base_offset(open_log, time: MockTime) -> None:
    """Spec: SEG-8 (kafkalog draws base % min(jitter, segment_ms)), SEG-6 (2)."""
    log = open_log(LogConfig(segment_ms=100, segment_jitter_ms=1000))
    log.append_as_leader(leader("a"), 0)
    log.roll()
    seg = log.segments[-1]
    assert seg.roll_jitter_ms == 1 % 100
    time.sleep(99)
    log.append_as_leader(leader("b"), 0)
    time.sleep(99)
    log.append_as_leader(leader("c"), 0)
    assert len(log.segments) == 3  # waited 99 > 100 - 1


def test_roll__over_the_empty_active_segment__flushes_what_lies_below_the_new_base(
        tmp_path, time: MockTime) -> None:
    """The roll moves the recovery point to the new base whichever way it goes, so a roll that
    recreates the empty active segment fsyncs the segments below it too: after an unclean load
    that left segment 0 unsynced (Kafka's recovery, GAP-4), nothing else did. Spec: LOC-6 step
    3, LOC-12, LOG-25 (campaign seed 300444: a later power loss emptied segment 0's index)."""
    from kafkalog.conformance.crash.fault_fs import RecordingFileSystem
    from kafkalog.impl.log.log import Log

    root = tmp_path / "topic-0"
    log = Log.open(RecordingFileSystem(tmp_path), root, LogConfig(), time)
    for value in ("a", "b"):
        log.append_as_leader(leader(value), 0)
    assert log.roll() == 2
    log.close()
    fs = RecordingFileSystem(tmp_path)
    log = Log.open(fs, root, LogConfig(), time, recovery_point=0)
    try:
        assert log.recovery_point == 0 and log.segments[-1].size() == 0
        mark = fs.mark()
        assert log.roll() == 2 and log.recovery_point == 2
        synced = {op.inode for op in fs.journal()[mark:] if op.kind == "fsync"}
        for name in ("00000000000000000000.log", "00000000000000000000.index"):
            inode = fs.version_of(root / name)[0]  # type: ignore[index]
            assert inode in synced, name
    finally:
        log.close_handlers()
