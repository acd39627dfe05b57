"""Log (UnifiedLog): HW, append, read, close and concurrency scenarios from UnifiedLogTest."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.log.log import Log
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.time import MockTime
from kafkalog.model.errors import (
    CorruptRecordError,
    IllegalArgumentError,
    InvalidRecordError,
    LogClosedError,
    OffsetOutOfRangeError,
    OffsetsOutOfOrderError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
    UnexpectedAppendOffsetError,
)
from kafkalog.model.values import (
    EpochEntry,
    Isolation,
    LogConfig,
    LogOffsetMetadata,
    Record,
    TimestampType,
)
from log_builders import batch, leader

FS = FileSystem()


def test_high_watermark__maintenance_as_leader_and_follower(open_log) -> None:
    """Spec: LOG-5, LOG-7, LOG-40, LOG-41 (testHighWatermarkMaintenance)."""
    log = open_log(LogConfig(segment_bytes=1024 * 1024))
    three = ("value", "value", "value")
    assert log.high_watermark == 0
    log.append_as_leader(leader(*three), 0)
    assert log.high_watermark == 0
    log.maybe_increment_high_watermark(LogOffsetMetadata(1))
    assert log.high_watermark == 1
    assert log.update_high_watermark(5) == 3
    log.append_as_follower(batch(3, *three), 0)
    assert log.update_high_watermark(6) == 6
    log.truncate_to(3)
    assert log.high_watermark == 3
    log.append_as_leader(leader(*three), 0)
    assert (log.high_watermark, log.log_end_offset, log.log_start_offset) == (3, 6, 0)
    log.truncate_fully_and_start_at(4)
    assert (log.log_end_offset, log.log_start_offset, log.high_watermark) == (4, 4, 4)
    assert log.recovery_point == 0  # KL-TRUNC-4: min(recovery point, offset), never raised
    log.check()


def test_read__up_to_log_end_offset__reports_batch_base(open_log) -> None:
    """Spec: LOG-27, LOG-28 [TRUNK], CHG-1 (testFetchUpToLogEndOffset)."""
    log = open_log(LogConfig(segment_bytes=1024 * 1024))
    log.append_as_leader(leader("0", "1", "2"), 0)
    log.append_as_leader(leader("3", "4"), 0)
    for offset, base in [(0, 0), (1, 0), (2, 0), (3, 3), (4, 3)]:
        info = log.read(offset, 2**31 - 1, Isolation.LOG_END, True)
        assert info.records.size_in_bytes > 0 and not info.first_entry_incomplete
        assert info.fetch_offset_metadata.message_offset == base
        assert all(r.offset < log.log_end_offset for r in info.records.records())


def test_read__up_to_high_watermark__empty_between_hw_and_leo(open_log) -> None:
    """Spec: LOG-27, LOG-28, LOC-4 steps 2-3 (testFetchUpToHighWatermark)."""
    log = open_log(LogConfig(segment_bytes=1024 * 1024))
    log.append_as_leader(leader("0", "1", "2"), 0)
    log.append_as_leader(leader("3", "4"), 0)
    bases = {0: 0, 1: 0, 2: 0, 3: 3, 4: 3, 5: 5}

    def check_bounded() -> None:
        for offset in range(log.log_start_offset, log.high_watermark):
            info = log.read(offset, 2**31 - 1, Isolation.HIGH_WATERMARK, True)
            assert info.records.size_in_bytes > 0
            assert all(r.offset < log.high_watermark for r in info.records.records())
            assert info.fetch_offset_metadata.message_offset == bases[offset]
        for offset in range(log.high_watermark, log.log_end_offset + 1):
            info = log.read(offset, 2**31 - 1, Isolation.HIGH_WATERMARK, True)
            assert info.records.size_in_bytes == 0

    check_bounded()
    log.update_high_watermark(3)
    check_bounded()
    log.update_high_watermark(5)
    check_bounded()


def test_read__out_of_range__raises(open_log) -> None:
    """Spec: LOG-27, LOC-4, ERR-31, ERR-32 (testReadOutOfRange)."""
    log = open_log(LogConfig(segment_bytes=1024))
    log.append_as_leader(leader("42"), 0)
    assert log.read(1, 1000).records.size_in_bytes == 0
    with pytest.raises(OffsetOutOfRangeError):
        log.read(2, 1000)
    log.update_high_watermark(1)
    log.maybe_increment_log_start_offset(1)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 1000)


def test_append_as_leader__assigns_offsets_and_stamps_epoch(open_log) -> None:
    """Spec: LOG-18, LOG-20, FMT-47 (leader only stamps base offset and epoch)."""
    log = open_log()
    info = log.append_as_leader(leader("a", "b", ts=5), 7)
    assert (info.first_offset, info.last_offset, info.record_count, info.valid_bytes) == (
        0, 1, 2, info.valid_bytes)
    info2 = log.append_as_leader(leader("c", ts=9), 8)
    assert (info2.first_offset, info2.last_offset, info2.max_timestamp) == (2, 2, 9)
    batches = list(log.read(0, 10_000).records.batches())
    assert [(b.base_offset, b.partition_leader_epoch) for b in batches] == [(0, 7), (2, 8)]
    assert all(b.is_valid() for b in batches)
    assert log.leader_epoch_cache.epoch_entries() == (EpochEntry(7, 0), EpochEntry(8, 2))


def test_append_as_leader__one_record_batch__is_72_bytes(open_log) -> None:
    """Spec: FMT-50 (value b"test", no key: 72 bytes)."""
    info = open_log().append_as_leader(leader("test", ts=0), 0)
    assert info.valid_bytes == 72


def test_append_as_leader__offset_of_max_timestamp__is_the_batch_last_offset(open_log) -> None:
    """Spec: KL-APPEND-3 (Kafka 3.8+ LogValidator: shallowOffsetOfMaxTimestamp = last offset)."""
    log = open_log()
    records = [Record(None, b"a", 5), Record(None, b"b", 9), Record(None, b"c", 7)]
    info = log.append_as_leader(MemoryRecords.with_records(records), 0)
    assert (info.max_timestamp, info.offset_of_max_timestamp) == (9, 2)


def test_append_as_leader__log_append_time__uses_clock(open_log, time: MockTime) -> None:
    """Spec: LOG-18, FMT-47 (LogAppendTime stamps the clock and recomputes the CRC)."""
    log = open_log(LogConfig(message_timestamp_type=TimestampType.LOG_APPEND_TIME))
    log.append_as_leader(leader("x"), 0)
    info = log.append_as_leader(leader("a", "b", ts=5), 0)
    now = time.milliseconds()
    assert (info.max_timestamp, info.offset_of_max_timestamp, info.log_append_time) == (now, 2, now)
    last = list(log.read(1, 10_000).records.batches())[-1]
    assert last.is_valid() and last.max_timestamp == now


def test_append_as_leader__empty__returns_empty_info(open_log) -> None:
    """Spec: LOG-16 (docs/design.md: LogAppendInfo(-1, -1, -1, -1, -1, 0, 0))."""
    log = open_log()
    info = log.append_as_leader(MemoryRecords(b""), 0)
    assert (info.first_offset, info.last_offset, info.valid_bytes, info.record_count) == (
        -1, -1, 0, 0)
    assert log.log_end_offset == 0


def test_append_as_leader__invalid_input__raises_typed_errors(open_log) -> None:
    """Spec: LOG-15 (2, 5, 6), LOG-21, ERR-21..24."""
    log = open_log(LogConfig(max_message_bytes=100, segment_bytes=150))
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(batch(5, "x"), 0)
    with pytest.raises(RecordTooLargeError):
        log.append_as_leader(leader("x" * 200), 0)
    corrupt = bytearray(leader("abc").buffer)
    corrupt[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        log.append_as_leader(MemoryRecords(corrupt), 0)
    two = MemoryRecords(bytes(leader("a" * 20).buffer) + bytes(leader("b" * 20).buffer))
    with pytest.raises(RecordBatchTooLargeError):
        log.append_as_leader(two, 0)
    assert log.log_end_offset == 0


def test_append_as_follower__offsets_below_leo__raises_unexpected_append_offset(open_log) -> None:
    """Spec: LOG-19, ERR-26, BUG-24."""
    log = open_log()
    log.append_as_follower(batch(0, "a", "b"), 0)
    with pytest.raises(UnexpectedAppendOffsetError) as info:
        log.append_as_follower(batch(1, "c", "d"), 0)
    assert (info.value.first_offset, info.value.last_offset) == (1, 2)
    log.append_as_follower(batch(10, "gap"), 0)
    assert log.log_end_offset == 11


def test_append_as_follower__non_increasing_last_offsets__raises_out_of_order(open_log) -> None:
    """Spec: LOG-15 (4), ERR-25."""
    log = open_log()
    data = bytes(batch(5, "a", "b").buffer) + bytes(batch(3, "c", "d").buffer)
    with pytest.raises(OffsetsOutOfOrderError):
        log.append_as_follower(MemoryRecords(data), 0)


def test_append_as_follower__batch_with_higher_epoch__skipped_with_the_rest(open_log) -> None:
    """Spec: LOG-15a [TRUNK], CHG-3, BUG-58."""
    log = open_log()
    data = b"".join(bytes(batch(o, "v", epoch=e).buffer) for o, e in ((0, 1), (1, 3), (2, 1)))
    info = log.append_as_follower(MemoryRecords(data), 2)
    assert (info.first_offset, info.last_offset, log.log_end_offset) == (0, 0, 1)


def test_end_offset_for_epoch__undefined_and_known(open_log) -> None:
    """Spec: LOG-51, EPO-4, BUG-50."""
    log = open_log()
    log.append_as_leader(leader("a", "b"), 1)
    log.append_as_leader(leader("c"), 3)
    assert log.end_offset_for_epoch(-1) is None
    assert log.end_offset_for_epoch(5) is None
    assert (log.end_offset_for_epoch(1).epoch, log.end_offset_for_epoch(1).end_offset) == (1, 2)
    assert log.end_offset_for_epoch(2).end_offset == 2
    assert log.end_offset_for_epoch(3).end_offset == 3


def test_fetch_offset_by_timestamp__special_targets_and_search(open_log) -> None:
    """Spec: LOG-45, LOG-47, LOG-48, LOG-49 (testFetchOffsetByTimestampIncludesLeaderEpoch)."""
    log = open_log(LogConfig(segment_bytes=200, index_interval_bytes=1))
    log.append_as_leader(MemoryRecords.with_records(
        [Record(None, b"a", 100), Record(None, b"b", 300)]), 0)
    log.append_as_leader(MemoryRecords.with_records([Record(None, b"c", 200)]), 2)
    log.append_as_leader(MemoryRecords.with_records([Record(None, b"d", 300)]), 5)
    assert log.fetch_offset_by_timestamp(-2) == _tao(-1, 0, 0)
    assert log.fetch_offset_by_timestamp(-1) == _tao(-1, 4, 5)
    assert log.fetch_offset_by_timestamp(-3) == _tao(300, 1, 0)
    assert log.fetch_offset_by_timestamp(150) == _tao(300, 1, 0)
    assert log.fetch_offset_by_timestamp(200) == _tao(300, 1, 0)
    assert log.fetch_offset_by_timestamp(301) is None
    assert log.fetch_offset_by_timestamp(50) == _tao(100, 0, 0)


def _tao(ts: int, offset: int, epoch: int | None):  # type: ignore[no-untyped-def]
    from kafkalog.model.values import TimestampAndOffset

    return TimestampAndOffset(ts, offset, epoch)


def test_fetch_offset_by_timestamp__empty_log__max_is_none(open_log) -> None:
    """Spec: LOG-48 (an empty log finds no batch)."""
    log = open_log()
    assert log.fetch_offset_by_timestamp(-3) is None
    assert log.fetch_offset_by_timestamp(-2) == _tao(-1, 0, None)


def test_close__then_mutations__raise_log_closed(open_log) -> None:
    """Spec: LOC-13, ERR-35 (testLogRollAfterLogHandlerClosed-style)."""
    log = open_log()
    log.append_as_leader(leader("a"), 0)
    log.close_handlers()
    with pytest.raises(LogClosedError):
        log.roll()
    with pytest.raises(LogClosedError):
        log.append_as_leader(leader("b"), 0)


def test_close_and_reopen__clean__keeps_everything(open_log, tmp_path: Path, time) -> None:
    """Spec: FMT-44, REC-19 (clean path: recovery point = LEO, no recovery)."""
    log = open_log(LogConfig(segment_bytes=200, index_interval_bytes=50))
    for i in range(10):
        log.append_as_leader(leader(f"v{i}", ts=i), i // 4)
    log.update_high_watermark(7)
    before = log.state()
    offsets = log.close()
    config = LogConfig(segment_bytes=200, index_interval_bytes=50)
    again = Log.open(FS, tmp_path / "topic-0", config, time,
                     log_start_offset=offsets.log_start_offset,
                     recovery_point=offsets.recovery_point, high_watermark=offsets.high_watermark,
                     had_clean_shutdown=True)
    try:
        after = again.state()
        assert after.segments == before.segments
        assert after.epoch_entries == before.epoch_entries
        assert (after.high_watermark, after.log_end_offset, after.recovery_point) == (7, 10, 10)
        values = [r.value for r in again.read(0, 100_000).records.records()]
        assert values[:2] == [b"v0", b"v1"]
        again.check()
    finally:
        again.close_handlers()


def test_concurrent_reader__never_sees_unpublished_bytes(open_log) -> None:
    """Spec: LOC-3, LOC-4, BUG-29/30: reads are bounded by the published LEO position."""
    import threading

    log = open_log(LogConfig(segment_bytes=10_000))
    stop = threading.Event()
    problems: list[str] = []

    def reader() -> None:
        while not stop.is_set():
            leo = log.log_end_offset
            info = log.read(0, 1_000_000)
            for b in info.records.batches():
                if b.last_offset >= leo + 1000:
                    problems.append("impossible offset")
                if not b.is_valid():
                    problems.append(f"torn batch at {b.base_offset}")

    t = threading.Thread(target=reader)
    t.start()
    try:
        for i in range(200):
            log.append_as_leader(leader(f"value-{i}"), 0)
    finally:
        stop.set()
        t.join()
    assert problems == []


def test_fetch_high_watermark_metadata__gap_at_segment_end__keeps_hw_offset(
    open_log, tmp_path: Path, time: MockTime
) -> None:
    """Spec: LOG-11 (kafkalog KL-HW-4: keep the HW offset, take segment and position only)."""
    log = open_log()
    log.roll(1)
    offsets = log.close()
    again = Log.open(FS, tmp_path / "topic-0", LogConfig(), time,
                     recovery_point=offsets.recovery_point, high_watermark=0,
                     had_clean_shutdown=True)
    try:
        assert again.log_end_offset == 1 and again.high_watermark == 0
        assert again.maybe_increment_high_watermark(LogOffsetMetadata(-1)) is None
        assert again.high_watermark == 0
        assert again.fetch_high_watermark_metadata().message_offset == 0
    finally:
        again.close_handlers()


def test_close__active_segment_above_leo__still_gets_index_files(open_log) -> None:
    """Spec: LOG-26, BUG-61 (KAFKA-13603's intent also for a roll beyond the LEO)."""
    log = open_log()
    log.roll(5)
    log.close()
    assert (log.dir / f"{5:020d}.index").exists()
    assert (log.dir / f"{5:020d}.timeindex").exists()


def test_append_as_follower__would_overflow_index__raises_before_writing(open_log) -> None:
    """Spec: ERR-3/ERR-7, SEG-5 (kafkalog: the error leaves no state change, KL-APPEND-9)."""
    log = open_log(LogConfig(index_interval_bytes=1, segment_index_bytes=24))
    data = b"".join(bytes(batch(o, "v", ts=o).buffer) for o in range(4))
    before = log.state()
    with pytest.raises(IllegalArgumentError):
        log.append_as_follower(MemoryRecords(data), 0)
    assert log.state() == before


def test_concurrent_hw_reader__never_sees_offsets_at_or_above_hw(open_log) -> None:
    """Spec: LOG-27, LOG-11: HIGH_WATERMARK reads stop at the published HW while appends run."""
    import threading

    log = open_log(LogConfig(segment_bytes=4000))
    stop = threading.Event()
    problems: list[str] = []

    def reader() -> None:
        while not stop.is_set():
            offset = log.log_start_offset
            info = log.read(offset, 1_000_000, Isolation.HIGH_WATERMARK)
            hw_after = log.high_watermark
            for b in info.records.batches():
                if b.last_offset >= hw_after:
                    problems.append(f"batch ending at {b.last_offset} >= HW {hw_after}")

    t = threading.Thread(target=reader)
    t.start()
    try:
        for i in range(150):
            log.append_as_leader(leader(f"value-{i}"), 0)
            if i % 3 == 0:
                log.update_high_watermark(log.log_end_offset - 1)
    finally:
        stop.set()
        t.join()
    assert problems == []
    log.check()


def test_append_as_follower__offset_overflow__raises_before_rolling(open_log) -> None:
    """Spec: SEG-2, ERR-14 (kafkalog KL-APPEND-9: no roll is left behind by the error)."""
    log = open_log()
    data = bytes(batch(0, "a").buffer) + bytes(batch(2**31 + 1, "b").buffer)
    before = log.state()
    from kafkalog.model.errors import LogSegmentOffsetOverflowError

    with pytest.raises(LogSegmentOffsetOverflowError):
        log.append_as_follower(MemoryRecords(data), None)
    assert log.state() == before


def test_append_as_follower__new_segment_index_would_overflow__raises_before_rolling(
    open_log,
) -> None:
    """Spec: SEG-6 (5), ERR-7 (kafkalog KL-APPEND-9: the roll is not left behind)."""
    log = open_log(LogConfig(index_interval_bytes=1, segment_index_bytes=24))
    base = 2**31
    data = b"".join(bytes(batch(base + i, "v", ts=i).buffer) for i in range(3))
    before = log.state()
    with pytest.raises(IllegalArgumentError):
        log.append_as_follower(MemoryRecords(data), None)
    assert log.state() == before
