"""Model rules fixed against Kafka's source (each test names the Kafka code)."""

from __future__ import annotations

from kafkalog.model import log
from kafkalog.model.values import LogConfig, LogOffsetMetadata, Record


def rec(ts: int) -> Record:
    return Record(None, b"test", ts)


def test_message_offset_only__needs_both_fields_at_minus_one() -> None:
    """Spec: KL-HW-6 (LogOffsetMetadata.messageOffsetOnly: both fields == -1)."""
    assert LogOffsetMetadata(5).message_offset_only
    assert not LogOffsetMetadata(5, -1, 7).message_offset_only
    assert not LogOffsetMetadata(5, 0, -1).message_offset_only


def test_maybe_increment_hw__equal_offsets_with_one_field_unknown__compares_segment_bases() -> None:
    """Spec: KL-HW-6, KL-HW-3 (onOlderSegment compares bases unless one side is message-only)."""
    s = log.empty_log(LogConfig())
    s, _ = log.append_as_leader(s, (rec(1), rec(2)), 0)
    s, _ = log.maybe_increment_high_watermark(s, LogOffsetMetadata(1, -1, 72))
    s, old = log.maybe_increment_high_watermark(s, LogOffsetMetadata(1, 0, 72))
    assert old == LogOffsetMetadata(1, -1, 72)
