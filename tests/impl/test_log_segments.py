"""LogSegments: the segment map's navigation and range queries (MAP-1..4)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.segment.log_segment import LogSegment
from kafkalog.impl.segment.log_segments import LogSegments
from kafkalog.impl.time import MockTime
from kafkalog.model.errors import IllegalArgumentError
from kafkalog.model.values import LogConfig

FS = FileSystem()


@pytest.fixture
def segments(tmp_path: Path) -> LogSegments:
    segs = LogSegments()
    for base in (0, 10, 20, 30):
        segs.add(LogSegment.open(FS, tmp_path, base, LogConfig(), MockTime()))
    return segs


def bases(segs: list[LogSegment]) -> list[int]:
    return [s.base_offset for s in segs]


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (5, 5, []),  # from == to: nothing (KAFKA-9826)
        (10, 10, []),
        (0, 10, [0]),
        (5, 25, [0, 10, 20]),  # the floor of `from` is included (KAFKA-1042)
        (10, 30, [10, 20]),  # the segment starting at `to` is excluded
        (25, 2**63 - 1, [20, 30]),
        (-5, 5, [0]),  # no floor: from the first segment
    ],
)
def test_values__range__overlapping_segments(
    segments: LogSegments, start: int, end: int, expected: list[int]
) -> None:
    """Spec: MAP-3, BUG-28."""
    assert bases(segments.values(start, end)) == expected


def test_values__to_below_from__raises_illegal_argument(segments: LogSegments) -> None:
    """Spec: MAP-3, ERR-39."""
    with pytest.raises(IllegalArgumentError):
        segments.values(20, 10)


def test_navigation__floor_lower_higher_active(segments: LogSegments) -> None:
    """Spec: MAP-2."""
    assert segments.floor_segment(15).base_offset == 10
    assert segments.floor_segment(10).base_offset == 10
    assert segments.floor_segment(-1) is None
    assert segments.lower_segment(10).base_offset == 0
    assert segments.higher_segment(10).base_offset == 20
    assert segments.higher_segment(30) is None
    assert bases(segments.higher_segments(10)) == [20, 30]
    assert segments.active_segment().base_offset == 30
    assert bases(segments.non_active_log_segments_from(5)) == [0, 10, 20]
    assert segments.non_active_log_segments_from(31) == []


def test_add__same_base__replaces_and_remove_keeps_order(
    segments: LogSegments, tmp_path: Path
) -> None:
    """Spec: MAP-1 (add replaces a segment with the same base offset)."""
    (tmp_path / "other").mkdir()
    replacement = LogSegment.open(FS, tmp_path / "other", 20, LogConfig(), MockTime())
    segments.add(replacement)
    assert segments.get(20) is replacement and len(segments) == 4
    segments.remove(10)
    assert bases(segments.values()) == [0, 20, 30]
    assert segments.size_in_bytes() == 0


def test_snapshot__reader_iteration_survives_concurrent_mutation(segments: LogSegments) -> None:
    """Copy-on-write: an iteration sees the map as it was when it started (BUG-47)."""
    seen = []
    for seg in segments:
        seen.append(seg.base_offset)
        segments.remove(seg.base_offset)
    assert seen == [0, 10, 20, 30] and segments.is_empty()
