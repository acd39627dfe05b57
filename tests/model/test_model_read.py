"""Reads: batch-granular start, byte-granular end, bounds by isolation (LOG-27, LOC-4, SEG-10)."""

from __future__ import annotations

import pytest
from kafkalog.model import log
from kafkalog.model.errors import IllegalArgumentError, OffsetOutOfRangeError
from kafkalog.model.state import PartitionState
from kafkalog.model.values import BatchSpec, Isolation, LogConfig, LogOffsetMetadata, Record

LOG_END = Isolation.LOG_END
HW = Isolation.HIGH_WATERMARK


def rec(ts: int = 0) -> Record:
    return Record(None, b"test", ts)


def three_batches(config: LogConfig | None = None) -> PartitionState:
    s = log.empty_log(config or LogConfig())
    for ts in range(3):
        s, _ = log.append_as_leader(s, (rec(ts),), 0)
    return s


def test_read__start_inside_batch__metadata_is_the_batch_base_offset() -> None:
    """KAFKA-17803 [TRUNK]: batch 50..53 read at 52 reports 50. Spec: KL-READ-4"""
    s = log.empty_log(LogConfig(), log_start_offset=50)
    s, _ = log.append_as_follower(s, (BatchSpec(50, 0, tuple(rec() for _ in range(4))),))
    _, info = log.read(s, 52, 300, LOG_END, False)
    assert info.fetch_offset_metadata == LogOffsetMetadata(50, 50, 0)
    assert [b.base_offset for b in info.batches] == [50]


def test_read__max_one_byte__returns_one_byte_and_first_entry_incomplete() -> None:
    """SEG-11. Spec: KL-READ-5"""
    _, info = log.read(three_batches(), 0, 1, LOG_END, False)
    assert (info.size_in_bytes, info.batches, info.first_entry_incomplete) == (1, (), True)


def test_read__min_one_message__returns_the_whole_first_batch() -> None:
    """Spec: KL-READ-5"""
    _, info = log.read(three_batches(), 1, 1, LOG_END, True)
    assert (info.size_in_bytes, info.first_entry_incomplete) == (72, False)
    assert info.fetch_offset_metadata == LogOffsetMetadata(1, 0, 72)


def test_read__slice_ends_mid_batch__only_whole_batches_listed() -> None:
    """Spec: KL-READ-5"""
    _, info = log.read(three_batches(), 0, 100, LOG_END, False)
    assert info.size_in_bytes == 100
    assert [b.base_offset for b in info.batches] == [0]


def test_read__zero_max_bytes__empty_records_with_metadata() -> None:
    """Spec: KL-READ-5"""
    _, info = log.read(three_batches(), 1, 0, LOG_END, False)
    assert (info.size_in_bytes, info.fetch_offset_metadata.message_offset) == (0, 1)


def test_read__negative_max_bytes__raises_illegal_argument() -> None:
    """ERR-15. Spec: KL-READ-5"""
    with pytest.raises(IllegalArgumentError):
        log.read(three_batches(), 0, -1, LOG_END, False)


def test_read__at_leo__is_empty_with_leo_metadata() -> None:
    """Spec: KL-READ-2"""
    s = three_batches()
    _, info = log.read(s, 3, 100, LOG_END, False)
    assert info.fetch_offset_metadata == LogOffsetMetadata(3, 0, 216)
    assert info.size_in_bytes == 0


@pytest.mark.parametrize("offset", [4, -1])
def test_read__above_leo_or_below_log_start__raises_offset_out_of_range(offset: int) -> None:
    """ERR-31, ERR-32. Spec: KL-READ-1"""
    with pytest.raises(OffsetOutOfRangeError):
        log.read(three_batches(), offset, 100, LOG_END, False)


def test_read__below_log_start_inside_a_segment__raises_offset_out_of_range() -> None:
    """Spec: KL-READ-1, KL-LSO-2"""
    s = three_batches()
    s, _ = log.update_high_watermark(s, 3)
    s, _ = log.maybe_increment_log_start_offset(s, 2)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(s, 1, 100, LOG_END, False)


def test_read__high_watermark_isolation__stops_at_the_hw_batch() -> None:
    """The materialised HW bounds the slice at its batch's position. Spec: KL-READ-3, KL-HW-4"""
    s = three_batches()
    s, _ = log.update_high_watermark(s, 2)
    s, info = log.read(s, 0, 1000, HW, False)
    assert info.size_in_bytes == 144 and [b.base_offset for b in info.batches] == [0, 1]
    assert s.high_watermark == LogOffsetMetadata(2, 0, 144)


def test_read__between_hw_and_leo__is_empty_not_an_error() -> None:
    """LOG-28. Spec: KL-READ-2"""
    s = three_batches()
    s, _ = log.update_high_watermark(s, 1)
    _, info = log.read(s, 2, 1000, HW, False)
    assert info.size_in_bytes == 0 and info.fetch_offset_metadata == LogOffsetMetadata(2, 0, 144)


def test_read__offset_in_gap_at_segment_end__continues_in_next_segment() -> None:
    """LOC-4 step 4.3. Spec: KL-READ-3"""
    s, _ = log.append_as_follower(log.empty_log(LogConfig()), (BatchSpec(0, 0, (rec(),)),))
    s, _ = log.roll(s, 5)
    s, _ = log.append_as_follower(s, (BatchSpec(5, 0, (rec(),)),))
    _, info = log.read(s, 2, 1000, LOG_END, False)
    assert info.fetch_offset_metadata == LogOffsetMetadata(5, 5, 0)
    assert [b.base_offset for b in info.batches] == [5]


def test_read__across_segments__reads_only_the_floor_segment() -> None:
    """Spec: KL-READ-3, KL-READ-4"""
    s = three_batches(LogConfig(segment_bytes=144))
    _, info = log.read(s, 0, 10_000, LOG_END, False)
    assert [b.base_offset for b in info.batches] == [0, 1]
