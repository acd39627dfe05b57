"""Which segments retention may delete: pure decisions over segments and offsets (LOG-32..38).

`Log.delete_old_segments` asks these functions what to delete, in Kafka's order (log start, then
size, then time, LOG-32), and applies each answer itself (roll if everything would go, raise the
log start offset, rename to `.deleted`, LOG-34). Keeping the decision pure makes it testable on
its own and keeps the walk's stopping rule in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol


class SegmentLike(Protocol):
    """What retention needs to know about a segment."""

    base_offset: int

    def size(self) -> int: ...

    def largest_timestamp(self) -> int: ...


Predicate = Callable[[SegmentLike, SegmentLike | None], bool]


def deletable_segments(
    segments: Sequence[SegmentLike], high_watermark: int, log_end_offset: int, predicate: Predicate
) -> list[SegmentLike]:
    """Oldest first, the segments wholly below the HW that `predicate` accepts (LOG-33).

    The walk stops at the first segment that may not go; an empty last segment never goes
    (BUG-36: nothing at or above the HW is deleted). O(segments).
    """
    deletable: list[SegmentLike] = []
    for i, segment in enumerate(segments):
        nxt = segments[i + 1] if i + 1 < len(segments) else None
        last_and_empty = nxt is None and segment.size() == 0
        upper = nxt.base_offset if nxt is not None else log_end_offset
        if high_watermark >= upper and predicate(segment, nxt) and not last_and_empty:
            deletable.append(segment)
        else:
            break
    return deletable


def log_start_offset_breached(log_start_offset: int) -> Predicate:
    """LOG-38: a segment goes when its successor starts at or below the log start offset."""
    return lambda _s, nxt: nxt is not None and nxt.base_offset <= log_start_offset


def retention_size_breached(total_size: int, retention_bytes: int) -> Predicate | None:
    """LOG-37: oldest segments go while the log stays at or above `retention_bytes`.

    None when size retention does not apply. The predicate is stateful: each accepted segment
    reduces the excess by its size.
    """
    if retention_bytes < 0 or total_size < retention_bytes:
        return None
    excess = total_size - retention_bytes

    def predicate(segment: SegmentLike, _next: SegmentLike | None) -> bool:
        nonlocal excess
        if excess - segment.size() >= 0:
            excess -= segment.size()
            return True
        return False

    return predicate


def retention_ms_breached(now_ms: int, retention_ms: int) -> Predicate | None:
    """LOG-36: a segment goes when now - its largest timestamp > retention (strictly)."""
    if retention_ms < 0:
        return None
    return lambda segment, _next: now_ms - segment.largest_timestamp() > retention_ms
