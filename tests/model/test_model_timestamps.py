"""fetch_offset_by_timestamp: EARLIEST, LATEST, MAX_TIMESTAMP and search (LOG-43..LOG-49)."""

from __future__ import annotations

from kafkalog.model import log
from kafkalog.model.state import PartitionState
from kafkalog.model.values import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    BatchSpec,
    LogConfig,
    Record,
    TimestampAndOffset,
    TimestampType,
)


def rec(ts: int) -> Record:
    return Record(None, b"test", ts)


def sample(kafka_version: str = "4.4") -> PartitionState:
    """Segments [0: ts 10, 30, 20 in one batch], [3: ts 30, 40], epochs 1 then 2."""
    s = log.empty_log(LogConfig(kafka_version=kafka_version))
    s, _ = log.append_as_leader(s, (rec(10), rec(30), rec(20)), 1)
    s, _ = log.roll(s)
    s, _ = log.append_as_leader(s, (rec(30),), 2)
    s, _ = log.append_as_leader(s, (rec(40),), 2)
    return s


def test_earliest__log_start_and_first_epoch_when_it_covers_the_start() -> None:
    """LOG-45. Spec: KL-TIME-1"""
    _, result = log.fetch_offset_by_timestamp(sample(), EARLIEST_TIMESTAMP)
    assert result == TimestampAndOffset(-1, 0, 1)


def test_earliest__first_epoch_starting_after_log_start__has_no_epoch() -> None:
    """Spec: KL-TIME-1"""
    s = log.empty_log(LogConfig())
    s, _ = log.assign_epoch(s, 3, 5)
    result = log.fetch_offset_by_timestamp(s, EARLIEST_TIMESTAMP)[1]
    assert result == TimestampAndOffset(-1, 0, None)


def test_latest__leo_and_latest_epoch() -> None:
    """LOG-47. Spec: KL-TIME-2"""
    _, result = log.fetch_offset_by_timestamp(sample(), LATEST_TIMESTAMP)
    assert result == TimestampAndOffset(-1, 5, 2)
    empty = log.empty_log(LogConfig())
    assert log.fetch_offset_by_timestamp(empty, LATEST_TIMESTAMP)[1] == TimestampAndOffset(
        -1, 0, None)


def test_max_timestamp__first_record_carrying_the_largest_timestamp() -> None:
    """KAFKA-16310: the record, not the batch's last offset. Spec: KL-TIME-3"""
    s = log.empty_log(LogConfig())
    s, _ = log.append_as_leader(s, (rec(10), rec(50), rec(20)), 4)
    assert log.fetch_offset_by_timestamp(s, MAX_TIMESTAMP)[1] == TimestampAndOffset(50, 1, 4)


def test_max_timestamp__ties_across_segments__first_segment_wins() -> None:
    """Spec: KL-TIME-3"""
    s = log.empty_log(LogConfig())
    s, _ = log.append_as_leader(s, (rec(40),), 0)
    s, _ = log.roll(s)
    s, _ = log.append_as_leader(s, (rec(40),), 0)
    assert log.fetch_offset_by_timestamp(s, MAX_TIMESTAMP)[1] == TimestampAndOffset(40, 0, 0)


def test_max_timestamp__empty_log__is_none() -> None:
    """Spec: KL-TIME-3"""
    assert log.fetch_offset_by_timestamp(log.empty_log(LogConfig()), MAX_TIMESTAMP)[1] is None


def test_search__first_record_at_or_after_the_target_in_first_qualifying_segment() -> None:
    """LOG-49 / FMT-55. Spec: KL-TIME-4"""
    s = sample()
    assert log.fetch_offset_by_timestamp(s, 25)[1] == TimestampAndOffset(30, 1, 1)
    assert log.fetch_offset_by_timestamp(s, 35)[1] == TimestampAndOffset(40, 4, 2)
    assert log.fetch_offset_by_timestamp(s, 41)[1] is None


def test_search__target_minus_6_before_4_2__is_searched_like_any_other_target() -> None:
    """Spec: KL-TIME-4, KL-VERSION-7 (no -6 constant up to 4.1: `fetchOffsetByTimestamp`'s else
    branch)."""
    s = sample("4.1")
    assert log.fetch_offset_by_timestamp(s, -6)[1] == TimestampAndOffset(10, 0, 1)
    assert log.fetch_offset_by_timestamp(s, -6) == log.fetch_offset_by_timestamp(s, 0)


def test_earliest_pending_upload_from_4_2__without_remote_storage__answers_minus_ones() -> None:
    """Spec: KL-VERSION-7 (`fetchEarliestPendingUploadOffset`: (-1, -1, -1) without remote
    storage, like LATEST_TIERED)."""
    s = sample("4.2")
    assert log.fetch_offset_by_timestamp(s, -6)[1] == TimestampAndOffset(-1, -1, -1)


def test_search__skips_records_below_the_log_start_offset() -> None:
    """Spec: KL-TIME-4, KL-LSO-2"""
    s, _ = log.update_high_watermark(sample(), 5)
    s, _ = log.maybe_increment_log_start_offset(s, 2)
    assert log.fetch_offset_by_timestamp(s, 15)[1] == TimestampAndOffset(20, 2, 1)


def test_search__log_append_time__every_record_has_the_batch_timestamp() -> None:
    """Spec: KL-TIME-4, KL-APPEND-3"""
    s = log.empty_log(LogConfig())
    batch = BatchSpec(0, 7, (rec(1), rec(2)), TimestampType.LOG_APPEND_TIME, 500)
    s, _ = log.append_as_follower(s, (batch,))
    assert log.fetch_offset_by_timestamp(s, 100)[1] == TimestampAndOffset(500, 0, 7)
