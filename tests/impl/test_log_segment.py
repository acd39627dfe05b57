"""LogSegment: scenarios ported from Kafka's LogSegmentTest (v2 batches, trunk semantics)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from kafkalog.impl.checkpoint.checkpoint_file import LeaderEpochCheckpointFile
from kafkalog.impl.checkpoint.epoch_cache import LeaderEpochCache
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.segment.check import _check_batch_by_batch
from kafkalog.impl.segment.log_segment import LogSegment, RollParams, offset_from_file_name
from kafkalog.impl.time import MockTime
from kafkalog.model.errors import (
    IllegalArgumentError,
    InvalidFileNameError,
    LogSegmentOffsetOverflowError,
)
from kafkalog.model.values import INT32_MAX, NO_TIMESTAMP, EpochEntry, LogConfig, LogOffsetMetadata
from kafkalog.model.values import Record as ValueRecord

FS = FileSystem()


def records(offset: int, *values: str, epoch: int = -1, ts: int | None = None) -> MemoryRecords:
    """One v2 batch at `offset` whose records carry timestamp offset * 10 (LogSegmentTest)."""
    stamp = offset * 10 if ts is None else ts
    return MemoryRecords.with_records(
        [ValueRecord(None, v.encode(), stamp) for v in values], base_offset=offset,
        partition_leader_epoch=epoch,
    )


def values_of(recs: MemoryRecords) -> list[tuple[int, bytes | None]]:
    return [(r.offset, r.value) for r in recs.records()]


@pytest.fixture
def make_segment(tmp_path: Path):  # type: ignore[no-untyped-def]
    made: list[LogSegment] = []

    def make(base: int, index_interval_bytes: int = 10, time: MockTime | None = None,
             segment_index_bytes: int = 10 * 1024 * 1024) -> LogSegment:
        config = LogConfig(index_interval_bytes=index_interval_bytes,
                           segment_index_bytes=segment_index_bytes)
        seg = LogSegment.open(FS, tmp_path, base, config, time or MockTime(),
                              file_already_exists=(tmp_path / f"{base:020d}.log").exists())
        made.append(seg)
        return seg

    yield make
    for seg in made:
        seg.close_handlers()


@pytest.mark.parametrize(
    ("base", "largest"),
    [(0, -(2**31)), (0, 2**31), (1, 0), (100, 10), (2**31, 0), (2**31, 2**32)],
)
def test_append__largest_offset_outside_relative_range__raises_offset_overflow(
    make_segment, base: int, largest: int
) -> None:
    """Spec: SEG-2, SEG-3 step 3 (testAppendForLogSegmentOffsetOverflowException)."""
    seg = make_segment(base)
    with pytest.raises(LogSegmentOffsetOverflowError):
        seg.append(largest, records(0, "hello"))
    assert seg.size() == 0


def test_read__empty_segment__returns_none(make_segment) -> None:
    """Spec: SEG-10 step 2 (testReadOnEmptySegment)."""
    assert make_segment(40).read(40, 300) is None


def test_read__before_first_offset__returns_from_first_batch(make_segment) -> None:
    """Spec: SEG-11 (testReadBeforeFirstOffset)."""
    seg = make_segment(40)
    ms = records(50, "hello", "there", "little", "bee")
    seg.append(53, ms)
    info = seg.read(41, 300)
    assert values_of(info.records) == values_of(ms)


def test_read__after_last_offset__returns_none(make_segment) -> None:
    """Spec: SEG-10 step 2 (testReadAfterLast)."""
    seg = make_segment(40)
    seg.append(51, records(50, "hello", "there"))
    assert seg.read(52, 200) is None


def test_read__offset_in_gap__returns_next_batch(make_segment) -> None:
    """Spec: FMT-54 (testReadFromGap)."""
    seg = make_segment(40)
    seg.append(51, records(50, "hello", "there"))
    ms2 = records(60, "alpha", "beta")
    seg.append(61, ms2)
    assert values_of(seg.read(55, 200).records) == values_of(ms2)


@pytest.mark.parametrize("min_one_message", [True, False])
def test_read__no_max_position__returns_metadata_without_records(
    make_segment, min_one_message: bool
) -> None:
    """Spec: SEG-10 step 5, CHG-1 (testReadWhenNoMaxPosition; v2: one batch holds 50..51)."""
    seg = make_segment(40)
    seg.append(51, records(50, "hello", "there"))
    for start in (48, 50, 51):
        info = seg.read(start, 1, None, min_one_message)
        assert info.fetch_offset_metadata == LogOffsetMetadata(50, 40, 0)
        assert info.records.size_in_bytes == 0
    assert seg.read(52, 1, None, min_one_message) is None
    assert seg.read(53, 1, None, min_one_message) is None


def test_read__middle_of_batch__reports_batch_base_offset(make_segment) -> None:
    """Spec: SEG-10 [TRUNK], CHG-1 (testReadFromMiddleOfBatch: read(52) of 50..53 gives 50)."""
    seg = make_segment(40)
    seg.append(53, records(50, "hello", "there", "little", "bee"))
    info = seg.read(52, 300)
    assert info.fetch_offset_metadata.message_offset == 50


def test_read__max_size_one__returns_one_byte_and_incomplete(make_segment) -> None:
    """Spec: SEG-11 (byte-granular end), SEG-10 step 6."""
    seg = make_segment(40)
    seg.append(51, records(50, "hello", "there"))
    info = seg.read(50, 1)
    assert info.records.size_in_bytes == 1 and info.first_entry_incomplete
    whole = seg.read(50, 1, min_one_message=True)
    assert whole.records.size_in_bytes == seg.size() and not whole.first_entry_incomplete


def test_read__negative_max_size__raises_illegal_argument(make_segment) -> None:
    """Spec: ERR-15."""
    seg = make_segment(0)
    with pytest.raises(IllegalArgumentError):
        seg.read(0, -1)


def test_truncate_to__second_of_two_batches__keeps_only_first(make_segment) -> None:
    """Spec: SEG-13 (testTruncate: 30 rounds of append two, truncate one)."""
    seg = make_segment(40)
    offset = 40
    for _ in range(30):
        ms1, ms2 = records(offset, "hello"), records(offset + 1, "hello")
        seg.append(offset, ms1)
        seg.append(offset + 1, ms2)
        assert values_of(seg.read(offset, 10000).records) == values_of(ms1) + values_of(ms2)
        seg.truncate_to(offset + 1)
        assert values_of(seg.read(offset, 10000).records) == values_of(ms1)
        offset += 1


def test_truncate_to__empty_reopened_segment__resizes_indexes_and_does_not_roll(
    make_segment,
) -> None:
    """Spec: SEG-13 steps 3 and 5, SEG-6 (testTruncateEmptySegment, KAFKA-6492)."""
    max_segment_ms = 300_000
    time = MockTime()
    seg = make_segment(0, time=time)
    assert seg.time_index.entries == 0 and seg.offset_index.entries == 0  # force both to load
    seg.close()
    reopened = make_segment(0, time=time)
    assert reopened.time_index.size_in_bytes() == 0
    assert reopened.offset_index.size_in_bytes() == 0
    time.sleep(500)
    reopened.truncate_to(57)
    assert reopened.time_waited_for_roll(time.milliseconds(), NO_TIMESTAMP) == 0
    assert not reopened.time_index.is_full() and not reopened.offset_index.is_full()
    params = RollParams(max_segment_ms, INT32_MAX, NO_TIMESTAMP, 100, 1024, time.milliseconds())
    assert not reopened.should_roll(params)
    time.sleep(max_segment_ms + 1)
    assert reopened.time_waited_for_roll(time.milliseconds(), NO_TIMESTAMP) == max_segment_ms + 1
    params = RollParams(max_segment_ms, INT32_MAX, NO_TIMESTAMP, 100, 1024, time.milliseconds())
    assert not reopened.should_roll(params)
    overflow = RollParams(max_segment_ms, INT32_MAX, NO_TIMESTAMP, INT32_MAX + 200, 1024,
                          time.milliseconds())
    assert reopened.should_roll(overflow)


def test_truncate_to__reloads_largest_timestamp_and_next_offset(make_segment) -> None:
    """Spec: SEG-13 step 7, SEG-14 (testReloadLargestTimestampAndNextOffsetAfterTruncation)."""
    size = records(0, "hello").size_in_bytes
    seg = make_segment(40, index_interval_bytes=2 * size - 1)
    offset = 40
    for _ in range(30):
        seg.append(offset, records(offset, "hello"))
        offset += 1
    assert seg.read_next_offset() == offset
    assert seg.time_index.entries == 30 // 2 - 1
    seg.truncate_to(41)
    assert seg.time_index.entries == 0
    assert seg.largest_timestamp() == 400
    assert seg.read_next_offset() == 41


def test_truncate_to__whole_segment__resets_created_and_accepts_original_offsets(
    make_segment,
) -> None:
    """Spec: SEG-13 step 5, BUG-18 (testTruncateFull)."""
    time = MockTime()
    seg = make_segment(40, time=time)
    seg.append(41, records(40, "hello", "there"))
    time.sleep(500)
    # The first batch carries a timestamp, so the wait is message-time based (SEG-7).
    assert seg.time_waited_for_roll(time.milliseconds(), 900) == 500
    seg.truncate_to(0)
    assert seg.time_waited_for_roll(time.milliseconds(), NO_TIMESTAMP) == 0
    assert not seg.time_index.is_full() and not seg.offset_index.is_full()
    assert seg.read(0, 1024) is None
    seg.append(41, records(40, "hello", "there"))
    assert seg.read_next_offset() == 42


def test_truncate_to__offset_in_gap__drops_the_batch_after_the_gap(make_segment) -> None:
    """Spec: SEG-14 (shouldTruncateEvenIfOffsetPointsToAGapInTheLog)."""
    seg = make_segment(40)
    seg.append(40, records(40, "first message"))
    seg.append(43, records(43, "message after gap"))
    seg.truncate_to(41)
    batches = list(seg.read(40, 10000).records.batches())
    assert [b.base_offset for b in batches] == [40]


def test_find_offset_by_timestamp__indexed_and_unindexed_targets(make_segment) -> None:
    """Spec: SEG-18, FMT-55 (testFindOffsetByTimestamp)."""
    size = records(0, "msg00").size_in_bytes
    seg = make_segment(40, index_interval_bytes=size * 2 - 1)
    for i in range(40, 50):
        seg.append(i, records(i, f"msg{i}"))
    assert seg.largest_timestamp() == 490
    expected = {420: 42, 421: 43, 430: 43, 431: 44, 401: 41, 399: 40}
    for target, offset in expected.items():
        assert seg.find_offset_by_timestamp(target, 0).offset == offset
    assert seg.find_offset_by_timestamp(491, 0) is None


def test_read_next_offset__after_append__is_last_offset_plus_one(make_segment) -> None:
    """Spec: SEG-12 (testNextOffsetCalculation)."""
    seg = make_segment(40)
    assert seg.read_next_offset() == 40
    seg.append(52, records(50, "hello", "there", "you"))
    assert seg.read_next_offset() == 53


def test_change_file_suffixes__lazy_indexes__are_not_created_by_rename(make_segment) -> None:
    """Spec: FMT-7, FMT-31 (testChangeFileSuffixes)."""
    seg = make_segment(40)
    log_file, index_file, time_file = Path(seg.log.path), seg.offset_index_file, seg.time_index_file
    assert not index_file.exists() and not time_file.exists()
    seg.change_file_suffixes("", ".deleted")
    assert not seg.offset_index_file.exists() and not seg.time_index_file.exists()
    assert Path(seg.log.path) == Path(str(log_file) + ".deleted")
    assert seg.offset_index_file == Path(str(index_file) + ".deleted")
    assert seg.time_index_file == Path(str(time_file) + ".deleted")
    assert Path(seg.log.path).exists()
    assert seg.offset_index.entries == 0
    assert seg.offset_index_file.exists()
    assert seg.time_index.entries == 0
    assert seg.time_index_file.exists()


def _write_nonsense(path: Path, position: int, size: int, rng: random.Random) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        f.write(rng.randbytes(size))


def test_recover__corrupt_offset_index__rebuilds_it(make_segment) -> None:
    """Spec: SEG-15 (testRecoveryFixesCorruptIndex)."""
    seg = make_segment(0)
    for i in range(100):
        seg.append(i, records(i, str(i)))
    seg.offset_index.flush()
    _write_nonsense(seg.offset_index_file, 5, seg.offset_index.length() - 5, random.Random(1))
    seg.recover()
    for i in range(100):
        info = seg.read(i, 1, -1, True)
        assert next(info.records.records()).offset == i


def test_recover__corrupt_time_index__rebuilds_it(make_segment) -> None:
    """Spec: SEG-15 (testRecoveryFixesCorruptTimeIndex)."""
    seg = make_segment(0)
    for i in range(100):
        seg.append(i, records(i, str(i)))
    _write_nonsense(seg.time_index_file, 5, seg.time_index.length() - 5, random.Random(2))
    seg.recover()
    for i in range(100):
        assert seg.find_offset_by_timestamp(i * 10, 0).offset == i
        if i < 99:
            assert seg.find_offset_by_timestamp(i * 10 + 1, 0).offset == i + 1


def test_recover__more_index_points_than_segment_index_bytes_holds__rebuilds_them_all(
        make_segment) -> None:
    """KL-CRASH-5: recovery indexes from the segment start, so it can need more entries than
    the live segment (whose counter a truncation reset) fit in a 24-byte index; it grows the
    index instead of raising ERR-3/ERR-7, and trims it afterwards."""
    seg = make_segment(0, index_interval_bytes=1 << 20)
    for i in range(5):
        seg.append(i, records(i, str(i)))
    seg.close()
    seg = make_segment(0, index_interval_bytes=1, segment_index_bytes=24)
    assert seg.recover() == 0
    assert seg.offset_index.entries == 4
    assert seg.time_index.entries == 4
    assert seg.offset_index.length() == 4 * 8 and seg.time_index.length() == 4 * 12
    for i in range(5):
        assert seg.find_offset_by_timestamp(i * 10, 0).offset == i


def _rebuilt_beyond_capacity(make_segment) -> LogSegment:  # type: ignore[no-untyped-def]
    """A segment of 6 batches whose recovery indexed 5 of them (offsets 1-5) where
    segment_index_bytes holds 3 entries."""
    seg = make_segment(0, index_interval_bytes=1 << 20)
    for i in range(6):
        seg.append(i, records(i, str(i)))
    seg.close()
    seg = make_segment(0, index_interval_bytes=1, segment_index_bytes=24)
    seg.recover()
    assert seg.offset_index.entries == 5
    return seg


def test_resize_indexes__rebuilt_index_beyond_segment_index_bytes__keeps_entries_and_reads_full(
        make_segment) -> None:
    """KL-CRASH-5, REC-12: the load's resize of a rebuilt active segment keeps every entry (Kafka's
    resize throws there and the log never loads again); the index reads full, so the next
    append rolls."""
    seg = _rebuilt_beyond_capacity(make_segment)
    seg.resize_indexes(24)
    assert (seg.offset_index.entries, seg.offset_index.length()) == (5, 5 * 8)
    assert seg.offset_index.is_full()
    for i in range(6):
        assert seg.find_offset_by_timestamp(i * 10, 0).offset == i
    seg.resize_indexes(10 * 24)
    assert seg.offset_index.length() == 10 * 24 and not seg.offset_index.is_full()


def test_truncate_to__rebuilt_index_beyond_segment_index_bytes__keeps_the_entries_below(
        make_segment) -> None:
    """KL-CRASH-5, SEG-13: a truncation that keeps more entries than segment_index_bytes holds
    resizes to them instead of raising."""
    seg = _rebuilt_beyond_capacity(make_segment)
    assert seg.truncate_to(5) > 0
    assert seg.offset_index.entries == 4 and seg.offset_index.is_full()
    assert [b.last_offset for b in seg.log.batches()] == [0, 1, 2, 3, 4]


def test_recover__corrupt_batches__truncates_at_first_invalid(make_segment, tmp_path) -> None:
    """Spec: SEG-15 step 4-5 (testRecoveryWithCorruptMessage, 10 random rounds)."""
    rng = random.Random(7)
    for round_ in range(10):
        seg = make_segment(round_ * 1000)
        base = round_ * 1000
        for j in range(20):
            seg.append(base + j, records(base + j, str(j)))
        start = rng.randrange(20)
        found = seg.log.search_for_offset_with_size(base + start, 0)
        position = found.position + rng.randrange(15)
        _write_nonsense(Path(seg.log.path), position, seg.size() - position, rng)
        seg.recover()
        assert [b.last_offset for b in seg.log.batches()] == [base + j for j in range(start)]
        seg.delete_if_exists()


def test_recover__batches_with_epochs__rebuild_epoch_cache(make_segment, tmp_path) -> None:
    """Spec: SEG-15 step 3.6 (testRecoveryRebuildsEpochCache)."""
    seg = make_segment(0)
    cache = LeaderEpochCache(LeaderEpochCheckpointFile(FS, tmp_path / "leader-epoch-checkpoint"))
    for base, epoch in ((104, 0), (106, 1), (108, 1), (110, 2)):
        seg.append(base + 1, records(base, "a", "b", epoch=epoch))
    seg.recover(cache)
    assert cache.epoch_entries() == (EpochEntry(0, 104), EpochEntry(1, 106), EpochEntry(2, 110))


def test_recover__epoch_zero__is_assigned(make_segment) -> None:
    """Spec: SEG-15 step 3.6, BUG-53 (epoch 0 included, KAFKA-10432)."""
    seg = make_segment(0)
    cache = LeaderEpochCache(None)
    seg.append(1, records(0, "a", "b", epoch=0))
    seg.recover(cache)
    assert cache.epoch_entries() == (EpochEntry(0, 0),)


def test_get_first_batch_timestamp__empty_then_first_batch(make_segment) -> None:
    """Spec: SEG-7 (testGetFirstBatchTimestamp)."""
    seg = make_segment(1)
    assert seg.get_first_batch_timestamp() == 2**63 - 1
    seg.append(1, records(1, "one", ts=1000))
    assert seg.get_first_batch_timestamp() == 1000


def test_append__index_entries__one_per_batch_after_interval(make_segment) -> None:
    """Spec: SEG-3 [TRUNK] (KAFKA-806): a multi-batch append gets an entry per batch."""
    seg = make_segment(0, index_interval_bytes=1)
    data = b"".join(bytes(records(i, "x").buffer) for i in range(5))
    seg.append(4, MemoryRecords(data))
    size = records(0, "x").size_in_bytes
    entries = [seg.offset_index.entry(n) for n in range(seg.offset_index.entries)]
    assert [(e.offset, e.position) for e in entries] == [(i, i * size) for i in range(1, 5)]


def test_close__then_reopen__keeps_data_and_trimmed_indexes(make_segment) -> None:
    """Spec: SEG-17, FMT-29."""
    seg = make_segment(0, index_interval_bytes=1)
    for i in range(10):
        seg.append(i, records(i, "v"))
    entries = seg.offset_index.entries
    seg.close()
    again = make_segment(0, index_interval_bytes=1)
    assert again.offset_index.entries == entries
    assert again.read_next_offset() == 10
    assert again.time_index.last_entry.timestamp == 90


def test_offset_from_file_name__not_20_digits__raises_invalid_file_name() -> None:
    """Spec: FMT-5, ERR-48."""
    assert offset_from_file_name("00000000000000000042.log") == 42
    with pytest.raises(InvalidFileNameError):
        offset_from_file_name("foo.bar")


def test_should_roll__size_time_and_index_full(make_segment) -> None:
    """Spec: SEG-6 (size with subtraction form, time with jitter, full index)."""
    time = MockTime()
    seg = make_segment(0, time=time, segment_index_bytes=24)
    seg.append(0, records(0, "a", ts=0))
    size = seg.size()
    p = RollParams(1000, size + 10, 0, 1, 10, time.milliseconds())
    assert not seg.should_roll(p)
    assert seg.should_roll(RollParams(1000, size + 9, 0, 1, 10, time.milliseconds()))
    assert seg.should_roll(RollParams(1000, 10**9, 1001, 1, 10, time.milliseconds()))
    for offset in (5, 6, 7):
        seg.offset_index.append(offset, 0)
    assert seg.offset_index.is_full()
    assert seg.should_roll(p)


def test_check__plain_segment__returns_the_next_offset_both_ways(make_segment) -> None:
    """The header-facts check and the batch walk agree, and with `read_next_offset` (SEG-12)."""
    seg = make_segment(40)
    assert seg.check() == _check_batch_by_batch(seg) == 40  # empty
    for offset in (40, 43, 50):
        seg.append(offset + 1, records(offset, "a", "b"))
    assert seg.check() == _check_batch_by_batch(seg) == seg.read_next_offset() == 52


@pytest.mark.parametrize("damage, message", [
    ("decreasing", "offsets not increasing"),
    ("below_base", "ends at"),
    ("torn", "torn bytes"),
])
def test_check__broken_segment__raises_naming_the_problem(make_segment, damage: str,
                                                          message: str) -> None:
    """Whatever the header-facts check refuses, the batch walk names (SEG-2)."""
    seg = make_segment(40)
    seg.append(46, records(45, "a", "b"))
    if damage == "decreasing":
        seg.log.append(records(41, "c"))  # below the previous batch: only the file sees it
    elif damage == "below_base":
        seg.log.append(records(10, "c"))
    else:
        seg.log.append(records(47, "c").buffer[:-3].tobytes())  # a batch cut short
    with pytest.raises(AssertionError, match=message):
        seg.check()


def test_read_next_offset__torn_tail__ignored_like_the_batch_walk(make_segment) -> None:
    """SEG-12 over the header pass: a batch cut short after the last whole one is not there."""
    seg = make_segment(40, index_interval_bytes=4096)
    for offset in (40, 42):
        seg.append(offset + 1, records(offset, "a", "b"))
    seg.log.append(records(44, "c").buffer[:-3].tobytes())
    assert seg.read_next_offset() == 44
    seg.log.truncate_to(0)
    seg.log.append(records(44, "c").buffer[:-3].tobytes())  # nothing whole at all
    assert seg.read_next_offset() == 40
