"""What the invariants (model/invariants.py) need of one segment, worked out once per segment value.

Conformance checks every invariant after every step, and a step changes at most a few segments:
the others are the very same frozen objects as in the state before. So a segment's facts are
kept by object identity (`IdentityMemo`). The memo holds the value itself, so its id cannot be
reused by another object while its answer is kept; a segment changed in any way is a new object
and gets new facts. The invariants combine these facts with what lies outside the segment (the
next segment's base, the log end offset), so every predicate answers exactly as a full walk
would.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from .helpers import relative_offset_fits
from .state import Batch, Segment

_Value = TypeVar("_Value")
_Answer = TypeVar("_Answer")


class IdentityMemo(Generic[_Value, _Answer]):
    """`compute(value, *qualifier)` kept by the identity of a frozen `value` and the qualifier.
    Starts over when full: a step asks about a handful of values, most of them asked before,
    and a small memo keeps few dead values alive (fewer objects for the garbage collector)."""

    def __init__(self, compute: Callable[..., _Answer], limit: int = 256) -> None:
        self._compute = compute
        self._limit = limit
        self._known: dict[Hashable, tuple[_Value, _Answer]] = {}

    def __call__(self, value: _Value, *qualifier: Hashable) -> _Answer:
        key = (id(value), qualifier) if qualifier else id(value)
        known = self._known.get(key)
        if known is not None and known[0] is value:
            return known[1]
        if len(self._known) >= self._limit:
            self._known.clear()
        answer = self._compute(value, *qualifier)
        self._known[key] = (value, answer)
        return answer


@dataclass(frozen=True)
class SegmentFacts:
    """One segment's part of the segment invariants; offsets are None when there is none."""

    base_offset: int
    batches_in_range: bool  # KL-INV-5 inside the segment: base <= batch base <= last, fits
    max_last: int | None  # the largest batch last offset
    first_last: int | None  # the first batch's last offset
    last_last: int | None  # the last batch's last offset
    lasts_increasing: bool  # KL-INV-6 inside the segment
    positions_contiguous: bool  # KL-INV-8
    time_index_ordered: bool  # KL-INV-12 inside: strictly increasing times, offsets >= base
    max_time_index_offset: int | None
    indexes_within_capacity: bool  # KL-INV-13
    txn_index_consistent: bool  # KL-INV-17 inside the segment (all but the upper bound)
    max_txn_last: int | None  # the largest `.txnindex` marker offset


def _facts_of(seg: Segment) -> SegmentFacts:
    lasts = [b.last_offset for b in seg.batches]
    times = [o for _, o in seg.time_index]
    txn_lasts = [e.last_offset for e in seg.txn_index]
    return SegmentFacts(
        base_offset=seg.base_offset,
        batches_in_range=all(
            seg.base_offset <= b.base_offset <= b.last_offset
            and relative_offset_fits(b.last_offset, seg.base_offset) for b in seg.batches),
        max_last=max(lasts, default=None),
        first_last=lasts[0] if lasts else None,
        last_last=lasts[-1] if lasts else None,
        lasts_increasing=all(a < b for a, b in zip(lasts, lasts[1:], strict=False)),
        positions_contiguous=_positions_contiguous(seg),
        time_index_ordered=_time_index_ordered(seg),
        max_time_index_offset=max(times, default=None),
        indexes_within_capacity=len(seg.offset_index) <= seg.offset_index_max_entries
        and len(seg.time_index) <= max(seg.time_index_max_entries, 0),
        txn_index_consistent=_txn_index_consistent(seg),
        max_txn_last=max(txn_lasts, default=None),
    )


def _positions_contiguous(seg: Segment) -> bool:
    position = 0
    for batch in seg.batches:
        if batch.position != position:
            return False
        position += batch.size
    return position == seg.size


def _time_index_ordered(seg: Segment) -> bool:
    entries = seg.time_index
    for (t1, o1), (t2, o2) in zip(entries, entries[1:], strict=False):
        if t1 >= t2 or o1 > o2:
            return False
    return all(seg.base_offset <= o for _, o in entries)


def _is_commit(batch: Batch) -> bool:
    marker = batch.producer_batch().marker
    return marker is not None and marker.commit


def _txn_index_consistent(seg: Segment) -> bool:
    lasts = [e.last_offset for e in seg.txn_index]
    if lasts != sorted(set(lasts)):
        return False
    aborts = {b.base_offset: b.producer_id for b in seg.batches
              if b.is_control and not _is_commit(b)}
    return all(seg.base_offset <= e.last_offset and e.first_offset <= e.last_offset
               and e.last_stable_offset <= e.last_offset + 1
               and aborts.get(e.last_offset) == e.producer_id for e in seg.txn_index)


def _offset_index_of(seg: Segment, per_batch: bool) -> bool:
    keys = [k for k, _ in seg.offset_index]
    if any(a >= b for a, b in zip(keys, keys[1:], strict=False)):
        return False
    if per_batch:
        starts = {(b.last_offset, b.position) for b in seg.batches}
        return all(entry in starts for entry in seg.offset_index)
    ends = {b.last_offset: b.position for b in seg.batches}
    positions = {b.position for b in seg.batches}
    return not any(key not in ends or position not in positions or position > ends[key]
                   for key, position in seg.offset_index)


#: The facts of a segment, computed on its first question.
segment_facts: IdentityMemo[Segment, SegmentFacts] = IdentityMemo(_facts_of)
#: KL-INV-11 of one segment, by (segment, one index entry per batch).
offset_index_consistent: IdentityMemo[Segment, bool] = IdentityMemo(_offset_index_of)


@dataclass(frozen=True)
class LogFacts:
    """The segment invariants over a whole segment tuple: what depends on the segments alone,
    and the largest offsets that the invariants compare with the log end offset."""

    batches_inside: bool  # KL-INV-5
    lasts_increasing: bool  # KL-INV-6
    max_last: int | None  # KL-INV-7 compares it with the LEO
    positions_contiguous: bool  # KL-INV-8
    time_index_ordered: bool  # KL-INV-12 but for the LEO bound
    max_time_index_offset: int | None  # KL-INV-12 compares it with the LEO
    indexes_within_capacity: bool  # KL-INV-13
    txn_index_consistent: bool  # KL-INV-17's `.txnindex` part but for the active segment's bound
    active_max_txn_last: int | None  # bounded by the LEO: the active segment has no next base


def _log_facts_of(segments: tuple[Segment, ...]) -> LogFacts:
    facts = [segment_facts(segment) for segment in segments]
    # Each segment but the active one with the next segment's base, its upper bound.
    bounded = list(zip(facts[:-1], [f.base_offset for f in facts[1:]], strict=True))
    return LogFacts(
        batches_inside=all(f.batches_in_range for f in facts) and all(
            f.max_last is None or f.max_last < upper for f, upper in bounded),
        lasts_increasing=_lasts_increasing(facts),
        max_last=max((f.max_last for f in facts if f.max_last is not None), default=None),
        positions_contiguous=all(f.positions_contiguous for f in facts),
        time_index_ordered=all(f.time_index_ordered for f in facts),
        max_time_index_offset=max((f.max_time_index_offset for f in facts
                                   if f.max_time_index_offset is not None), default=None),
        indexes_within_capacity=all(f.indexes_within_capacity for f in facts),
        txn_index_consistent=all(f.txn_index_consistent for f in facts) and all(
            f.max_txn_last is None or f.max_txn_last < upper for f, upper in bounded),
        active_max_txn_last=facts[-1].max_txn_last if facts else None,
    )


def _lasts_increasing(facts: list[SegmentFacts]) -> bool:
    """Batch last offsets strictly increase across the segments (empty ones hold none)."""
    previous_last: int | None = None
    for f in facts:
        if not f.lasts_increasing:
            return False
        if f.first_last is None:
            continue
        if previous_last is not None and previous_last >= f.first_last:
            return False
        previous_last = f.last_last
    return True


def _offset_indexes_of(segments: tuple[Segment, ...], per_batch: bool) -> bool:
    return all(offset_index_consistent(segment, per_batch) for segment in segments)


#: The facts of a state's segment tuple, itself a frozen value: a step that leaves every
#: segment alone keeps the very same tuple.
log_facts: IdentityMemo[tuple[Segment, ...], LogFacts] = IdentityMemo(_log_facts_of)
#: KL-INV-11 of every segment of a tuple, by (tuple, one index entry per batch).
offset_indexes_consistent: IdentityMemo[tuple[Segment, ...], bool] = IdentityMemo(
    _offset_indexes_of)
