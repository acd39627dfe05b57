"""The small pure helpers the actions are built from (and CrossHair checks)."""

from __future__ import annotations

import pytest
from kafkalog.model import helpers as h


@pytest.mark.parametrize(("hw", "expected"), [(-5, 3), (3, 3), (5, 5), (9, 9), (10, 9)])
def test_clamp_high_watermark__into_log_start_and_leo(hw: int, expected: int) -> None:
    """Spec: KL-HW-1"""
    assert h.clamp_high_watermark(hw, 3, 9) == expected


@pytest.mark.parametrize(("offset", "floor", "higher"), [(-1, -1, 0), (0, 0, 1), (7, 1, 2),
                                                         (10, 2, -1), (99, 2, -1)])
def test_floor_and_higher_index__segment_navigation(offset: int, floor: int, higher: int) -> None:
    """MAP-2. Spec: KL-READ-1"""
    assert h.floor_index([0, 5, 10], offset) == floor
    assert h.higher_index([0, 5, 10], offset) == higher


def test_index_floor_position__no_entry_below_means_position_zero() -> None:
    """FMT-13. Spec: KL-READ-4"""
    assert h.index_floor_position([4, 8], [100, 200], 3) == 0
    assert h.index_floor_position([4, 8], [100, 200], 8) == 200


def test_file_name_prefix__and_back() -> None:
    """FMT-4 / FMT-5 / ERR-48."""
    assert h.file_name_prefix(2147483649) == "00000000002147483649"
    assert h.offset_from_file_name("00000000002147483649.index") == 2147483649
    assert h.offset_from_file_name("foo.bar") is None


@pytest.mark.parametrize(("offset", "fits"), [(9, False), (10, True), (10 + 2**31 - 1, True),
                                              (10 + 2**31, False)])
def test_relative_offset_fits__int32_range_above_base(offset: int, fits: bool) -> None:
    """FMT-11. Spec: KL-ROLL-9"""
    assert h.relative_offset_fits(offset, 10) is fits


def test_roll_jitter__zero_without_jitter_else_base_modulo_the_smaller_bound() -> None:
    """Spec: KL-ROLL-4"""
    assert h.roll_jitter_ms(17, 0, 100) == 0
    assert h.roll_jitter_ms(17, 10, 100) == 7
    assert h.roll_jitter_ms(17, 1000, 5) == 2


def test_should_roll_for_size__subtraction_form() -> None:
    """KAFKA-1670. Spec: KL-ROLL-1"""
    assert not h.should_roll_for_size(144, 72, 216)
    assert h.should_roll_for_size(145, 72, 216)
    assert h.should_roll_for_size(1, 2**31 - 1, 2**31 - 1)


def test_index_full__time_index_reserves_its_last_slot() -> None:
    """FMT-21. Spec: KL-ROLL-8"""
    assert h.offset_index_full(3, 3) and not h.offset_index_full(2, 3)
    assert h.time_index_full(1, 2) and not h.time_index_full(0, 2)
    assert h.time_index_full(0, 0)


@pytest.mark.parametrize(
    ("sizes", "retention", "count"),
    [([72, 72, 72], -1, 0), ([72, 72, 72], 300, 0), ([72, 72, 72], 144, 1),
     ([72, 72, 72], 143, 1), ([72, 72, 72], 72, 2), ([72, 72, 72], 0, 3), ([100, 10, 10], 50, 0)],
)
def test_retention_size_deletable__stateful_diff(sizes: list[int], retention: int,
                                                 count: int) -> None:
    """LOG-37. Spec: KL-RET-4"""
    assert h.retention_size_deletable(sizes, retention) == count


def test_deletable_prefix__stops_at_hw_predicate_or_empty_last() -> None:
    """LOG-33. Spec: KL-RET-2"""
    assert h.deletable_prefix([5, 9, 12], [1, 1, 1], [True] * 3, 9) == 2
    assert h.deletable_prefix([5, 9, 12], [1, 1, 1], [True, False, True], 12) == 1
    assert h.deletable_prefix([5, 9, 9], [1, 1, 0], [True] * 3, 9) == 2
    assert h.deletable_prefix([5, 9, 12], [1, 1, 1], [True] * 3, 12) == 3


def test_retention_time_breached__strict_and_disabled_by_minus_one() -> None:
    """Spec: KL-RET-5"""
    assert not h.retention_time_breached(200, 100, 100)
    assert h.retention_time_breached(201, 100, 100)
    assert not h.retention_time_breached(10**9, 0, -1)


def test_time_waited_for_roll__message_time_else_wall_clock() -> None:
    """SEG-7. Spec: KL-ROLL-2"""
    assert h.time_waited_for_roll(5000, 1200, 1000, 0) == 200
    assert h.time_waited_for_roll(5000, 1200, -1, 4000) == 1000
