"""Rolls: size, time with jitter, full indexes, offset overflow, explicit rolls (SEG-6, LOC-6)."""

from __future__ import annotations

import pytest
from kafkalog.model import log
from kafkalog.model.errors import InvalidRollError
from kafkalog.model.helpers import roll_jitter_ms
from kafkalog.model.state import PartitionState
from kafkalog.model.values import BatchSpec, LogConfig, LogOffsetMetadata, Record


def rec(ts: int = 0) -> Record:
    return Record(None, b"test", ts)


def leader(s: PartitionState, *timestamps: int) -> PartitionState:
    for ts in timestamps:
        s, _ = log.append_as_leader(s, (rec(ts),), 0)
    return s


def bases(s: PartitionState) -> list[int]:
    return [seg.base_offset for seg in s.segments]


def test_append__segment_holds_exactly_three_72_byte_batches_at_216_bytes() -> None:
    """size > segment_bytes - messages_size rolls. Spec: KL-ROLL-1"""
    s = leader(log.empty_log(LogConfig(segment_bytes=216)), *range(7))
    assert bases(s) == [0, 3, 6]
    assert [seg.size for seg in s.segments] == [216, 216, 72]


def test_append__one_byte_short__rolls_after_two_batches() -> None:
    """Spec: KL-ROLL-1"""
    s = leader(log.empty_log(LogConfig(segment_bytes=215)), *range(5))
    assert bases(s) == [0, 2, 4]


def test_append__message_time_past_segment_ms_minus_jitter__rolls() -> None:
    """Base 7, jitter 7 % min(30, 100) = 7: rolls once waited > 93. Spec: KL-ROLL-2, KL-ROLL-4"""
    config = LogConfig(segment_ms=100, segment_jitter_ms=30)
    s = log.empty_log(config, log_start_offset=7)
    assert s.active.roll_jitter_ms == 7
    s = leader(s, 1000, 1093)
    assert bases(s) == [7]
    s = leader(s, 1094)
    assert bases(s) == [7, 9]
    assert s.active.roll_jitter_ms == roll_jitter_ms(9, 30, 100) == 9


def test_append__first_batch_without_timestamp__rolls_on_wall_clock_age() -> None:
    """SEG-7 step 3: now - created. Spec: KL-ROLL-2, KL-CLOCK-1"""
    s = leader(log.empty_log(LogConfig(segment_ms=100)), -1)
    s, _ = log.advance_clock(s, 100)
    assert bases(leader(s, -1)) == [0]
    s, _ = log.advance_clock(s, 1)
    assert bases(leader(s, -1)) == [0, 1]


def test_append__empty_active_segment__never_rolls_on_time() -> None:
    """Spec: KL-ROLL-2"""
    s = log.empty_log(LogConfig(segment_ms=1))
    s, _ = log.advance_clock(s, 10_000)
    assert bases(leader(s, 5)) == [0]


def test_append__time_index_of_one_slot__rolls_every_append_replacing_the_empty_one() -> None:
    """segment_index_bytes 12: the time index is always full (FMT-21); KAFKA-6388 replaces the
    empty active segment instead of failing. Spec: KL-ROLL-8, KL-ROLL-6, KL-DEL-1"""
    s = leader(log.empty_log(LogConfig(segment_index_bytes=12)), 1, 2, 3)
    assert bases(s) == [0, 1, 2]
    assert s.deleted_files == (0,)
    assert log.view(s).pending_deletions == (0,)


def test_append__time_index_filled_by_index_points__rolls_next_append() -> None:
    """24 bytes: 3 offset entries, 2 time entries, full at 1. Spec: KL-ROLL-8, KL-APPEND-6"""
    s = leader(log.empty_log(LogConfig(segment_index_bytes=24, index_interval_bytes=0)), 1, 2)
    assert s.active.time_index == ((2, 1),)
    s = leader(s, 3)
    assert bases(s) == [0, 2]


def test_append_as_follower__last_offset_beyond_int_max_of_base__rolls_at_first_offset() -> None:
    """KAFKA-4451 / KAFKA-6530: the new base is the first offset, 2147483649.
    Spec: KL-ROLL-9, KL-APPEND-8"""
    s, _ = log.append_as_follower(log.empty_log(LogConfig()), (BatchSpec(0, 0, (rec(),)),))
    s, _ = log.append_as_follower(s, (BatchSpec(2147483649, 0, (rec(),)),))
    assert bases(s) == [0, 2147483649]


def test_roll__old_active_gets_final_time_entry_and_trimmed_indexes() -> None:
    """SEG-16. Spec: KL-ROLL-5, KL-ROLL-3"""
    s = leader(log.empty_log(LogConfig()), 50, 90, 70)
    s, base = log.roll(s)
    old = s.segments[0]
    assert base == 3 and bases(s) == [0, 3]
    assert old.time_index == ((90, 1),)
    assert (old.time_index_max_entries, old.offset_index_max_entries) == (1, 0)
    assert s.active.offset_index_max_entries == 10 * 1024 * 1024 // 8


def test_roll__expected_offset_above_leo__creates_segment_above_the_leo() -> None:
    """LOC-7. Spec: KL-ROLL-3"""
    s = leader(log.empty_log(LogConfig()), 1)
    s, base = log.roll(s, 10)
    assert base == 10 and s.log_end_offset == 1
    assert s.log_end_offset_metadata == LogOffsetMetadata(1, 10, 0)


def test_roll__empty_active_at_leo__is_replaced_not_failed() -> None:
    """KAFKA-6388. Spec: KL-ROLL-6, KL-DEL-1"""
    s = leader(log.empty_log(LogConfig()), 1)
    s, _ = log.roll(s)
    s, base = log.roll(s)
    assert base == 1 and bases(s) == [0, 1] and s.deleted_files == (1,)


def test_roll__below_active_base__raises_invalid_roll() -> None:
    """ERR-34. Spec: KL-ROLL-6"""
    s, _ = log.roll(log.empty_log(LogConfig()), 10)
    with pytest.raises(InvalidRollError):
        log.roll(s, 5)


def test_roll__hw_at_leo__follows_to_new_segment_and_recovery_point_advances() -> None:
    """KAFKA-9196 / LOG-25. Spec: KL-ROLL-7, KL-HW-5, KL-FLUSH-3"""
    s = leader(log.empty_log(LogConfig()), 1, 2)
    s, _ = log.update_high_watermark(s, 2)
    s, _ = log.roll(s)
    assert s.high_watermark == LogOffsetMetadata(2, 2, 0)
    assert s.recovery_point == 2


def test_roll__above_leo__recovery_point_clamped_to_leo() -> None:
    """kafkalog clamps the roll's flush to the LEO. Spec: KL-FLUSH-3, KL-FLUSH-1"""
    s = leader(log.empty_log(LogConfig()), 1)
    s, _ = log.roll(s, 50)
    assert s.recovery_point == 1
