"""Retention: `delete_old_segments` (LOG-32..LOG-38), re-exported by `log.py`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from . import epochs as epoch_cache
from .helpers import deletable_prefix, retention_size_deletable, retention_time_breached
from .local_log import roll_log, schedule_deletion
from .producer.producer_state import delete_snapshots, on_log_start_offset_incremented
from .producer.transactions import refresh_first_unstable_offset
from .segment import materialised
from .state import PartitionState


def _start_offset_predicate(state: PartitionState) -> list[bool]:
    """LOG-38: a segment goes iff it has a successor whose base <= the LSO. Spec: KL-RET-3."""
    segments = state.segments
    return [
        i + 1 < len(segments) and segments[i + 1].base_offset <= state.log_start_offset
        for i in range(len(segments))
    ]


def _size_predicate(state: PartitionState) -> list[bool]:
    """LOG-37: the stateful size predicate, oldest first. Spec: KL-RET-4."""
    sizes = [s.size for s in state.segments]
    count = retention_size_deletable(sizes, state.config.retention_bytes)
    return [i < count for i in range(len(sizes))]


def _time_predicate(state: PartitionState) -> list[bool]:
    """LOG-36: now - largest timestamp > retention.ms (skipped when negative). Spec: KL-RET-5."""
    return [
        retention_time_breached(state.now_ms, s.largest_timestamp(), state.config.retention_ms)
        for s in state.segments
    ]


def _read_by_time_pass(state: PartitionState, predicate_ok: Sequence[bool]) -> PartitionState:
    """LOG-33: the time predicate reads `largestTimestamp` of each segment the walk reaches (HW
    bound first, then the predicate), which loads its max timestamp (KL-TRUNC-3)."""
    if state.config.retention_ms < 0:  # LOG-36: the pass returns before looking at a segment
        return state
    segments = list(state.segments)
    for i, segment in enumerate(segments):
        upper = segments[i + 1].base_offset if i + 1 < len(segments) else state.log_end_offset
        if state.high_watermark.message_offset < upper:
            break
        segments[i] = materialised(segment)
        if not predicate_ok[i] or (i + 1 == len(segments) and segment.size == 0):
            break
    return replace(state, segments=tuple(segments))


def _increment_log_start(state: PartitionState, offset: int) -> PartitionState:
    """LOG-34 step 2.2: the LSO moves before the segments leave the map (KAFKA-16073)."""
    if offset <= state.log_start_offset:
        return state
    assert offset <= state.high_watermark.message_offset, "retention never passes the HW"
    state = replace(state, log_start_offset=offset,
                    recovery_point=max(state.recovery_point, offset),
                    producer_state=on_log_start_offset_incremented(state.producer_state, offset))
    state = replace(state, epochs=epoch_cache.truncate_from_start(state.epochs, offset))
    return refresh_first_unstable_offset(state)  # TXN-8, KL-TXN-5


def delete_segments(state: PartitionState, count: int) -> PartitionState:
    """LOG-34: delete the `count` oldest segments, rolling first if all would go.

    Spec: KL-RET-6, KL-RET-7.
    """
    doomed = state.segments[:count]
    # PSR-2 (KL-PROD-11): snapshots go for the whole deletable list, including an empty active
    # segment that the roll below keeps.
    snapshot_bases = [s.base_offset for s in doomed]
    if count == len(state.segments):
        state, new_base = roll_log(state, None)
        if doomed[-1].base_offset == new_base:
            doomed = doomed[:-1]
    if doomed:
        remaining = state.segments[len(doomed):]
        state = _increment_log_start(state, remaining[0].base_offset)
        state = schedule_deletion(replace(state, segments=remaining), doomed)
    return replace(state, producer_state=delete_snapshots(state.producer_state, snapshot_bases))


def _delete_pass(state: PartitionState, predicate_ok: Sequence[bool]) -> tuple[PartitionState, int]:
    """LOG-33 deletableSegments with one predicate, then LOG-34 on what it selected."""
    segments = state.segments
    uppers = [
        segments[i + 1].base_offset if i + 1 < len(segments) else state.log_end_offset
        for i in range(len(segments))
    ]
    count = deletable_prefix(
        uppers, [s.size for s in segments], predicate_ok, state.high_watermark.message_offset
    )
    if count == 0:
        return state, 0
    return delete_segments(state, count), count


def delete_old_segments(state: PartitionState) -> tuple[PartitionState, int]:
    """Start-offset, then size, then time retention; the summed count (LOG-32..LOG-38).

    Spec: KL-RET-1, KL-RET-2, KL-RET-3, KL-RET-4, KL-RET-5, KL-RET-6, KL-RET-7, KL-CLEAN-14.
    Without `delete` in the cleanup policy only the start-offset deletion runs. Never deletes an
    offset at or above the HW (KAFKA-5634); a second call right after deletes nothing
    (KAFKA-12177).
    """
    total = 0
    predicates: tuple[Callable[[PartitionState], list[bool]], ...] = (
        _start_offset_predicate, _size_predicate, _time_predicate)
    if "delete" not in {w.strip() for w in state.config.cleanup_policy.split(",")}:
        predicates = (_start_offset_predicate,)  # LOG-32, CLN-20 (KAFKA-7400): KL-CLEAN-14
    for predicate in predicates:
        predicate_ok = predicate(state)
        if predicate is _time_predicate:
            state = _read_by_time_pass(state, predicate_ok)
        state, count = _delete_pass(state, predicate_ok)
        total += count
    return state, total
