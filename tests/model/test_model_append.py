"""Leader and follower appends: offsets, sizes, timestamps, validation, index decisions."""

from __future__ import annotations

import pytest
from kafkalog.model import log
from kafkalog.model.append import EMPTY_APPEND_INFO
from kafkalog.model.errors import (
    IllegalArgumentError,
    IndexOffsetOverflowError,
    OffsetsOutOfOrderError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
    UnexpectedAppendOffsetError,
)
from kafkalog.model.state import PartitionState
from kafkalog.model.values import BatchSpec, EpochEntry, LogConfig, Record, TimestampType


def rec(ts: int = 0, value: bytes = b"test") -> Record:
    return Record(None, value, ts)


def leader(s: PartitionState, *timestamps: int, epoch: int = 0) -> PartitionState:
    for ts in timestamps:
        s, _ = log.append_as_leader(s, (rec(ts),), epoch)
    return s


def test_append_as_leader__one_test_record__is_one_72_byte_batch_at_the_leo() -> None:
    """Spec: KL-APPEND-1, KL-APPEND-2, KL-APPEND-5"""
    s = log.empty_log(LogConfig(), log_start_offset=5)
    s, info = log.append_as_leader(s, (rec(100),), 3)
    assert (info.first_offset, info.last_offset) == (5, 5)
    assert (info.valid_bytes, info.record_count) == (72, 1)
    assert s.log_end_offset == 6
    batch = s.active.batches[0]
    assert (batch.position, batch.size, batch.partition_leader_epoch) == (0, 72, 3)
    assert s.epochs == (EpochEntry(3, 5),)


def test_append_as_leader__second_batch__starts_where_the_first_ended() -> None:
    """Spec: KL-APPEND-5"""
    s = leader(log.empty_log(LogConfig()), 1, 2)
    assert [b.position for b in s.active.batches] == [0, 72]
    assert s.active.size == 144


def test_append_as_leader__create_time__reports_the_last_offset_for_the_max_timestamp() -> None:
    """Spec: KL-APPEND-3 (Kafka 3.8+: shallowOffsetOfMaxTimestamp is the batch's last offset)"""
    s = log.empty_log(LogConfig())
    s, info = log.append_as_leader(s, (rec(5), rec(9), rec(9), rec(7)), 0)
    assert (info.max_timestamp, info.offset_of_max_timestamp, info.log_append_time) == (9, 3, -1)
    assert s.active.batches[0].max_timestamp == 9


def test_append_as_leader__no_timestamps__max_timestamp_and_offset_are_minus_one() -> None:
    """Spec: KL-APPEND-3"""
    s, info = log.append_as_leader(log.empty_log(LogConfig()), (rec(-1), rec(-1)), 0)
    assert (info.max_timestamp, info.offset_of_max_timestamp) == (-1, -1)


def test_append_as_leader__log_append_time__stamps_the_clock_on_the_batch() -> None:
    """Spec: KL-APPEND-3"""
    config = LogConfig(message_timestamp_type=TimestampType.LOG_APPEND_TIME)
    s = log.empty_log(config, now_ms=777)
    s, info = log.append_as_leader(s, (rec(5), rec(900)), 0)
    assert (info.max_timestamp, info.offset_of_max_timestamp, info.log_append_time) == (
        777, 1, 777)
    assert s.active.batches[0].timestamp_type is TimestampType.LOG_APPEND_TIME


def test_append_as_leader__batch_above_max_message_bytes__raises_record_too_large() -> None:
    """ERR-23. Spec: KL-APPEND-4, KL-APPEND-9"""
    s = log.empty_log(LogConfig(max_message_bytes=71))
    with pytest.raises(RecordTooLargeError):
        log.append_as_leader(s, (rec(),), 0)


def test_append_as_leader__append_above_segment_bytes__raises_record_batch_too_large() -> None:
    """ERR-24. Spec: KL-APPEND-5"""
    s = log.empty_log(LogConfig(segment_bytes=71))
    with pytest.raises(RecordBatchTooLargeError):
        log.append_as_leader(s, (rec(),), 0)


def test_append_as_leader__negative_epoch__raises_and_changes_nothing() -> None:
    """LOG-20 has no guard for -1. Spec: KL-APPEND-5, KL-APPEND-9"""
    s = leader(log.empty_log(LogConfig()), 1)
    with pytest.raises(IllegalArgumentError):
        log.append_as_leader(s, (rec(),), -1)


def test_append_as_leader__timestamp_below_minus_one__raises_illegal_argument() -> None:
    """FMT-47. Spec: KL-APPEND-2"""
    with pytest.raises(IllegalArgumentError):
        log.append_as_leader(log.empty_log(LogConfig()), (rec(-2),), 0)


def test_append__no_records__appends_nothing_and_returns_minus_ones() -> None:
    """Spec: KL-APPEND-10"""
    s = log.empty_log(LogConfig())
    assert log.append_as_leader(s, (), 0) == (s, EMPTY_APPEND_INFO)
    assert log.append_as_follower(s, ()) == (s, EMPTY_APPEND_INFO)
    assert EMPTY_APPEND_INFO.first_offset == -1 and EMPTY_APPEND_INFO.valid_bytes == 0


def spec(base: int, n: int = 1, epoch: int = 0, ts: int = 0) -> BatchSpec:
    return BatchSpec(base, epoch, tuple(rec(ts) for _ in range(n)))


def test_append_as_follower__gap_above_leo__is_kept_with_its_offsets() -> None:
    """Spec: KL-APPEND-7, KL-APPEND-8"""
    s, info = log.append_as_follower(log.empty_log(LogConfig()), (spec(0, 2), spec(10, 3)))
    assert (info.first_offset, info.last_offset, info.record_count) == (0, 12, 5)
    assert s.log_end_offset == 13
    assert [(b.base_offset, b.last_offset) for b in s.active.batches] == [(0, 1), (10, 12)]


def test_append_as_follower__first_offset_below_leo__raises_unexpected_append_offset() -> None:
    """ERR-26 carries the first and last offsets. Spec: KL-APPEND-7"""
    s, _ = log.append_as_follower(log.empty_log(LogConfig()), (spec(0, 3),))
    with pytest.raises(UnexpectedAppendOffsetError) as caught:
        log.append_as_follower(s, (spec(2, 4),))
    assert (caught.value.first_offset, caught.value.last_offset) == (2, 5)


def test_append_as_follower__last_offsets_not_increasing__raises_offsets_out_of_order() -> None:
    """ERR-25 compares last offsets of consecutive batches. Spec: KL-APPEND-7"""
    with pytest.raises(OffsetsOutOfOrderError):
        log.append_as_follower(log.empty_log(LogConfig()), (spec(5, 2), spec(3, 3)))


def test_append_as_follower__out_of_order_is_checked_before_the_leo() -> None:
    """LOG-15 runs before LOG-19. Spec: KL-APPEND-7"""
    s, _ = log.append_as_follower(log.empty_log(LogConfig()), (spec(0, 3),))
    with pytest.raises(OffsetsOutOfOrderError):
        log.append_as_follower(s, (spec(0, 2), spec(0, 1)))


def test_append_as_follower__batch_from_newer_epoch__skips_it_and_everything_after() -> None:
    """KAFKA-18723 [TRUNK]. Spec: KL-APPEND-8"""
    batches = (spec(0, epoch=1), spec(1, epoch=3), spec(2, epoch=1))
    s, info = log.append_as_follower(log.empty_log(LogConfig()), batches, leader_epoch=2)
    assert (info.first_offset, info.last_offset, s.log_end_offset) == (0, 0, 1)


def test_append_as_follower__every_batch_skipped__is_an_empty_append() -> None:
    """Spec: KL-APPEND-8, KL-APPEND-10"""
    s = log.empty_log(LogConfig())
    assert log.append_as_follower(s, (spec(0, epoch=4),), leader_epoch=2) == (s, EMPTY_APPEND_INFO)


def test_append_as_follower__ignores_max_message_bytes() -> None:
    """Spec: KL-APPEND-4, KL-APPEND-7"""
    s, info = log.append_as_follower(log.empty_log(LogConfig(max_message_bytes=10)), (spec(0),))
    assert info.valid_bytes == 72


def test_append_as_follower__epochs_assigned_per_batch() -> None:
    """LOG-20. Spec: KL-APPEND-5, KL-EPOCH-1"""
    batches = (spec(0, epoch=1), spec(1, epoch=1), spec(4, epoch=3))
    s, _ = log.append_as_follower(log.empty_log(LogConfig()), batches)
    assert s.epochs == (EpochEntry(1, 0), EpochEntry(3, 4))


def test_append__index_interval_2s_minus_1__indexes_appends_3_5_7() -> None:
    """SEG-3: strict '>' tested before the batch counts. Spec: KL-APPEND-6"""
    s = leader(log.empty_log(LogConfig(index_interval_bytes=143)), *range(100, 107))
    assert s.active.offset_index == ((2, 144), (4, 288), (6, 432))
    assert s.active.time_index == ((102, 2), (104, 4), (106, 6))


def test_append_as_follower__one_append_of_many_batches__gets_one_entry_per_batch() -> None:
    """KAFKA-806 [TRUNK]: the first batch is never indexed. Spec: KL-APPEND-6"""
    batches = tuple(spec(i, ts=10 + i) for i in range(4))
    s, _ = log.append_as_follower(log.empty_log(LogConfig(index_interval_bytes=0)), batches)
    assert s.active.offset_index == ((1, 72), (2, 144), (3, 216))
    assert s.active.bytes_since_last_index_entry == 72


def test_append__index_point_with_full_time_index__raises_and_changes_nothing() -> None:
    """ERR-7: with 24 index bytes one time entry fills the index. Spec: KL-APPEND-6, KL-APPEND-9"""
    s = log.empty_log(LogConfig(segment_index_bytes=24, index_interval_bytes=0))
    batches = tuple(spec(i, ts=10 + i) for i in range(3))
    with pytest.raises(IllegalArgumentError):
        log.append_as_follower(s, batches)


def test_append_as_follower__below_a_base_rolled_above_the_leo__index_point_overflows() -> None:
    """Kafka checks only the largest offset (SEG-3 step 3); the index entry for offset 8 in
    segment 9 cannot be stored (ERR-2). Spec: KL-APPEND-6, KL-APPEND-9"""
    s = log.empty_log(LogConfig(index_interval_bytes=0), log_start_offset=7)
    s, _ = log.roll(s, 9)
    with pytest.raises(IndexOffsetOverflowError):
        log.append_as_follower(s, (spec(7), spec(8), spec(9)))
    s2, _ = log.append_as_follower(log.roll(log.empty_log(LogConfig()), 9)[0], (spec(9),))
    assert s2.log_end_offset == 10
