"""High watermark and log start offset (LOG-5..LOG-11, LOG-29)."""

from __future__ import annotations

import pytest
from kafkalog.model import log
from kafkalog.model.errors import IllegalArgumentError, OffsetOutOfRangeError
from kafkalog.model.state import PartitionState
from kafkalog.model.values import EpochEntry, LogConfig, LogOffsetMetadata, Record


def three_batches() -> PartitionState:
    s = log.empty_log(LogConfig(), log_start_offset=10)
    for ts in range(3):
        s, _ = log.append_as_leader(s, (Record(None, b"test", ts),), 0)
    return s


@pytest.mark.parametrize(("offset", "hw"), [(0, 10), (9, 10), (11, 11), (13, 13), (99, 13)])
def test_update_high_watermark__clamped_into_log_start_and_leo(offset: int, hw: int) -> None:
    """LOG-5. Spec: KL-HW-1"""
    s, result = log.update_high_watermark(three_batches(), offset)
    assert result == hw == s.high_watermark.message_offset


def test_update_high_watermark__at_leo__stores_the_leo_metadata() -> None:
    """Spec: KL-HW-1"""
    s, _ = log.update_high_watermark(three_batches(), 13)
    assert s.high_watermark == LogOffsetMetadata(13, 10, 216)


def test_update_high_watermark__lower_value__decreases_the_hw() -> None:
    """Spec: KL-HW-2"""
    s, _ = log.update_high_watermark(three_batches(), 13)
    s, hw = log.update_high_watermark(s, 11)
    assert hw == 11 and s.high_watermark.message_offset_only


def test_maybe_increment_high_watermark__above_leo__raises_illegal_argument() -> None:
    """ERR-28. Spec: KL-HW-3"""
    with pytest.raises(IllegalArgumentError):
        log.maybe_increment_high_watermark(three_batches(), LogOffsetMetadata(14))


def test_maybe_increment_high_watermark__higher__returns_materialised_old_hw() -> None:
    """Spec: KL-HW-3, KL-HW-4"""
    s, old = log.maybe_increment_high_watermark(three_batches(), LogOffsetMetadata(12, 10, 144))
    assert old == LogOffsetMetadata(10, 10, 0)
    assert s.high_watermark == LogOffsetMetadata(12, 10, 144)


def test_maybe_increment_high_watermark__same_offset_newer_segment__updates() -> None:
    """LOG-8 (KAFKA-9196). Spec: KL-HW-3"""
    s, _ = log.maybe_increment_high_watermark(three_batches(), LogOffsetMetadata(13, 10, 216))
    s, old = log.maybe_increment_high_watermark(s, LogOffsetMetadata(13, 13, 0))
    assert old == LogOffsetMetadata(13, 10, 216)
    assert s.high_watermark == LogOffsetMetadata(13, 13, 0)


@pytest.mark.parametrize("new", [LogOffsetMetadata(12), LogOffsetMetadata(11, 10, 72)])
def test_maybe_increment_high_watermark__not_higher__returns_none(new: LogOffsetMetadata) -> None:
    """Never decreases; equal message-only offsets do not update. Spec: KL-HW-3"""
    s, _ = log.update_high_watermark(three_batches(), 12)
    s2, old = log.maybe_increment_high_watermark(s, new)
    assert old is None and s2.high_watermark.message_offset == 12


def test_append__hw_at_leo__hw_metadata_follows_but_offset_stays() -> None:
    """LOG-10 only rewrites metadata when HW >= LEO. Spec: KL-HW-5"""
    s = log.empty_log(LogConfig())
    s, _ = log.append_as_leader(s, (Record(None, b"x", 0),), 0)
    assert s.high_watermark == LogOffsetMetadata(0)


def test_maybe_increment_log_start_offset__above_hw__raises_offset_out_of_range() -> None:
    """ERR-30. Spec: KL-LSO-1"""
    s, _ = log.update_high_watermark(three_batches(), 11)
    with pytest.raises(OffsetOutOfRangeError):
        log.maybe_increment_log_start_offset(s, 12)


def test_maybe_increment_log_start_offset__raises_lso_and_recovery_point_keeps_segments() -> None:
    """LOG-29 / LOG-30. Spec: KL-LSO-1, KL-LSO-2"""
    s, _ = log.update_high_watermark(three_batches(), 13)
    s, _ = log.assign_epoch(s, 4, 11)
    s, moved = log.maybe_increment_log_start_offset(s, 12)
    assert moved and s.log_start_offset == 12 and s.recovery_point == 12
    assert [seg.base_offset for seg in s.segments] == [10]
    assert s.epochs == (EpochEntry(4, 12),)
    s, moved = log.maybe_increment_log_start_offset(s, 11)
    assert not moved and s.log_start_offset == 12


def test_update_high_watermark__below_lso_when_lso_equals_leo__is_message_only_lso() -> None:
    """LOG-5 checks the LSO branch first. Spec: KL-HW-1"""
    s, hw = log.update_high_watermark(log.empty_log(LogConfig(), log_start_offset=5), 2)
    assert hw == 5 and s.high_watermark == LogOffsetMetadata(5)
