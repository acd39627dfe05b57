"""`LogSegments`: the sorted map from base offset to segment (MAP-1..4).

Readers never block: the map is copy-on-write. Each mutation (under the log's writer lock) builds
a new immutable snapshot `(bases, segments)` and publishes it with one reference assignment, so a
concurrent reader always sees either the old or the new map, never a half-updated one, and never an
empty one (KAFKA-12875: a replacement is added before the old segment is removed).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

from kafkalog.impl.segment.log_segment import LogSegment
from kafkalog.model.errors import IllegalArgumentError

_Snapshot = tuple[tuple[int, ...], tuple[LogSegment, ...]]


class LogSegments:
    """Segments sorted by base offset; lookups are O(log n) over the current snapshot."""

    def __init__(self) -> None:
        self._snap: _Snapshot = ((), ())

    # --- mutation (callers hold the writer lock) --------------------------------------------

    def add(self, segment: LogSegment) -> LogSegment:
        """Insert `segment`, replacing any segment with the same base offset (MAP-1)."""
        bases, segs = self._snap
        i = bisect.bisect_left(bases, segment.base_offset)
        if i < len(bases) and bases[i] == segment.base_offset:
            self._snap = (bases, segs[:i] + (segment,) + segs[i + 1 :])
        else:
            self._snap = (bases[:i] + (segment.base_offset,) + bases[i:],
                          segs[:i] + (segment,) + segs[i:])
        return segment

    def remove(self, base_offset: int) -> None:
        bases, segs = self._snap
        i = bisect.bisect_left(bases, base_offset)
        if i < len(bases) and bases[i] == base_offset:
            self._snap = (bases[:i] + bases[i + 1 :], segs[:i] + segs[i + 1 :])

    def clear(self) -> None:
        self._snap = ((), ())

    # --- navigation (MAP-2) ----------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._snap[0])

    def is_empty(self) -> bool:
        return not self._snap[0]

    def __iter__(self) -> Iterator[LogSegment]:
        return iter(self._snap[1])

    def values(
        self, from_offset: int | None = None, to_offset: int | None = None
    ) -> list[LogSegment]:
        """All segments, or those overlapping [from, to) (MAP-3, BUG-28).

        Raises IllegalArgumentError when `to < from` (ERR-39).
        """
        bases, segs = self._snap
        if from_offset is None or to_offset is None:
            return list(segs)
        if from_offset == to_offset:
            return []
        if to_offset < from_offset:
            raise IllegalArgumentError(
                f"Invalid log segment range: requested segments from offset {from_offset} "
                f"mapping to segment with base offset {to_offset}, which is lower"
            )
        start = max(0, bisect.bisect_right(bases, from_offset) - 1)
        end = bisect.bisect_left(bases, to_offset)
        return list(segs[start:end])

    def non_active_log_segments_from(self, from_offset: int) -> list[LogSegment]:
        active = self.active_segment()
        if from_offset > active.base_offset:
            return []
        return self.values(from_offset, active.base_offset)

    def get(self, base_offset: int) -> LogSegment | None:
        bases, segs = self._snap
        i = bisect.bisect_left(bases, base_offset)
        return segs[i] if i < len(bases) and bases[i] == base_offset else None

    def contains(self, base_offset: int) -> bool:
        return self.get(base_offset) is not None

    def floor_segment(self, offset: int) -> LogSegment | None:
        bases, segs = self._snap
        i = bisect.bisect_right(bases, offset) - 1
        return segs[i] if i >= 0 else None

    def lower_segment(self, offset: int) -> LogSegment | None:
        bases, segs = self._snap
        i = bisect.bisect_left(bases, offset) - 1
        return segs[i] if i >= 0 else None

    def higher_segment(self, offset: int) -> LogSegment | None:
        bases, segs = self._snap
        i = bisect.bisect_right(bases, offset)
        return segs[i] if i < len(bases) else None

    def higher_segments(self, offset: int) -> list[LogSegment]:
        bases, segs = self._snap
        return list(segs[bisect.bisect_right(bases, offset) :])

    def active_segment(self) -> LogSegment:
        segs = self._snap[1]
        assert segs, "a log always has at least one segment (LOG-2 (5))"
        return segs[-1]

    def first_segment(self) -> LogSegment | None:
        segs = self._snap[1]
        return segs[0] if segs else None

    def first_segment_base_offset(self) -> int | None:
        bases = self._snap[0]
        return bases[0] if bases else None

    def last_segment(self) -> LogSegment | None:
        segs = self._snap[1]
        return segs[-1] if segs else None

    def base_offsets(self) -> tuple[int, ...]:
        return self._snap[0]

    def size_in_bytes(self) -> int:
        """Total `.log` bytes, an unbounded int (MAP-4, BUG-27)."""
        return sum(s.size() for s in self._snap[1])

    def check(self) -> None:
        """Bases strictly increase and each segment's batches stay below the next base. O(n)."""
        bases, segs = self._snap
        assert segs, "segment map is empty"
        for i, seg in enumerate(segs):
            assert seg.base_offset == bases[i], "map key differs from the segment's base"
            next_offset = seg.check()
            if i + 1 < len(segs):
                assert bases[i] < bases[i + 1], "base offsets not strictly increasing"
                assert next_offset <= bases[i + 1], (
                    f"segment {bases[i]} holds offsets at or above the next base {bases[i + 1]}"
                )
