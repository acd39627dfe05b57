"""The segment map and the local log (MAP-*, LOC-*): roll, deletion scheduling, reads, metadata.

Internal building blocks of the actions in `log.py`; every function is pure.
"""

from __future__ import annotations

from dataclasses import replace

from .choices import choose
from .errors import InvalidRollError, OffsetOutOfRangeError
from .helpers import floor_index
from .producer.producer_state import on_roll
from .producer.transactions import add_aborted_transactions, on_high_watermark_updated
from .segment import become_inactive, new_segment
from .segment import read as segment_read
from .state import PartitionState, Segment
from .values import FetchDataInfo, LogOffsetMetadata
from .versions import read_reports_batch_base


def segment_bases(state: PartitionState) -> list[int]:
    """The ascending base offsets of the segment map."""
    return [s.base_offset for s in state.segments]


def schedule_deletion(state: PartitionState, removed: tuple[Segment, ...]) -> PartitionState:
    """LOC-11: rename each removed segment's files `.deleted` now, delete them after the delay.

    Spec: KL-DEL-1. A rename onto an existing `.deleted` name replaces it; each timer deletes by
    name (KL-DEL-2).
    """
    if not removed:
        return state
    due = state.now_ms + state.config.file_delete_delay_ms
    files = set(state.deleted_files) | {s.base_offset for s in removed}
    timers = state.deletion_timers + tuple((due, s.base_offset) for s in removed)
    return replace(state, deleted_files=tuple(sorted(files)), deletion_timers=timers)


def fire_due_deletions(state: PartitionState) -> PartitionState:
    """LOC-11: timers due at or before now remove the `.deleted` files they name. Spec: KL-DEL-2."""
    due = [t for t in state.deletion_timers if t[0] <= state.now_ms]
    if not due:
        return state
    pending = tuple(t for t in state.deletion_timers if t[0] > state.now_ms)
    gone = {base for _, base in due}
    files = tuple(b for b in state.deleted_files if b not in gone)
    return replace(state, deleted_files=files, deletion_timers=pending)


def update_high_watermark_with_log_end(state: PartitionState) -> PartitionState:
    """LOG-10: when HW >= LEO the HW metadata follows the LEO metadata. Spec: KL-HW-5."""
    if state.high_watermark.message_offset >= state.log_end_offset:
        return on_high_watermark_updated(
            replace(state, high_watermark=state.log_end_offset_metadata))
    return state


def clamped_high_watermark(state: PartitionState, offset: int) -> LogOffsetMetadata:
    """LOG-5: message-only at the LSO below it, the LEO metadata at or above the LEO, else the
    offset alone (message-only). Spec: KL-HW-1."""
    if offset < state.log_start_offset:
        return LogOffsetMetadata(state.log_start_offset)
    if offset >= state.log_end_offset:
        return state.log_end_offset_metadata
    return LogOffsetMetadata(offset)


def roll_local(
    state: PartitionState, expected_next_offset: int | None
) -> tuple[PartitionState, int]:
    """LOC-6: a new active segment at max(expected, LEO). Spec: KL-ROLL-3, KL-ROLL-6.

    Raises InvalidRollError (ERR-34) when a segment with that base exists and is not the empty
    active segment, or when the new base is below the active segment's base.
    """
    new_offset = max(expected_next_offset if expected_next_offset is not None else 0,
                     state.log_end_offset)
    active = state.active
    fresh = new_segment(new_offset, state.config, state.now_ms)
    if new_offset in segment_bases(state):
        if active.base_offset == new_offset and active.size == 0:
            # KAFKA-6388: replace the empty active segment (its files become `.deleted`).
            replaced = replace(state, segments=(*state.segments[:-1], fresh))
            return schedule_deletion(replaced, (active,)), new_offset
        raise InvalidRollError(
            f"Trying to roll a new log segment with start offset {new_offset} while it already "
            "exists",
            where=f"segment {new_offset}",
        )
    if new_offset < active.base_offset:
        raise InvalidRollError(
            f"Trying to roll a new log segment with start offset {new_offset} lower than start "
            f"offset of the active segment {active.base_offset}",
            where=f"segment {active.base_offset}",
        )
    segments = (*state.segments[:-1], become_inactive(active), fresh)
    return replace(state, segments=segments), new_offset


def roll_log(state: PartitionState, expected_next_offset: int | None) -> tuple[PartitionState, int]:
    """LOG-25: LOC-6, then HW follows the LEO, then the roll's flush. Spec: KL-ROLL-7, KL-ALLOW-3.

    kafkalog's flush is synchronous and advances the recovery point to min(new base, LEO) when
    higher (KL-FLUSH-3). Kafka schedules it: it may not have run yet, so the recovery point may
    also stay where it was, with the flush of the base pending (`fire_pending_flushes`) whenever
    the base is above the recovery point, even above the LEO.
    """
    rolled, base = roll_local(state, expected_next_offset)
    # PSR-1 (KL-PROD-10): the producer snapshot named after the new base.
    rolled = replace(rolled, producer_state=on_roll(rolled.producer_state, base))
    rolled = update_high_watermark_with_log_end(rolled)
    if base <= rolled.recovery_point:
        return rolled, base
    synchronous = replace(rolled, recovery_point=max(rolled.recovery_point,
                                                     min(base, rolled.log_end_offset)))
    # A base above the LEO (a roll inside a follower append starting after a gap) stays
    # pending too: Kafka's flush sets the recovery point to it, which the append's LEO
    # then passes (the checker may run it right after the step, conformance/check/allowed.py).
    pending = replace(rolled, pending_flushes=(*rolled.pending_flushes, base))
    return choose("roll_flush", (synchronous, pending)), base


def _run_flush(state: PartitionState, base: int) -> PartitionState:
    """One pending `flushUptoOffsetExclusive(base)` runs (KL-ALLOW-3)."""
    left = tuple(b for b in state.pending_flushes if b != base)
    point = state.recovery_point
    if point < base <= state.log_end_offset:
        point = base
    return replace(state, pending_flushes=left, recovery_point=point)


def complete_pending_flushes(state: PartitionState) -> PartitionState:
    """KL-ALLOW-3: when the clock moves, the scheduler runs every pending roll flush (delay 0)."""
    for base in state.pending_flushes:
        state = _run_flush(state, base)
    return state


def fire_pending_flushes(state: PartitionState) -> PartitionState:
    """KL-ALLOW-3: Kafka's scheduler may run pending roll flushes at any moment before the clock
    next moves (`complete_pending_flushes` then runs them all).

    Each pending `flushUptoOffsetExclusive(base)` either stays pending (kafkalog's choice) or runs
    now: the recovery point becomes `base` if that is higher. A run that would lift the recovery
    point above the LEO (the log was truncated below `base` meanwhile) is outside the model
    (KL-INV-2); that flush is dropped instead.
    """
    for base in state.pending_flushes:
        if choose("pending_flush", (False, True)):
            state = _run_flush(state, base)
    return state


def _position_bound(segment: Segment, bound: LogOffsetMetadata) -> int | None:
    """LOC-4 step 4.1: how far into this segment the bound lets a read go (KAFKA-16452)."""
    if segment.base_offset < bound.segment_base_offset:
        return segment.size
    if segment.base_offset == bound.segment_base_offset and not bound.message_offset_only:
        return bound.relative_position_in_segment
    return None


def local_read(state: PartitionState, start_offset: int, max_length: int, min_one_message: bool,
               bound: LogOffsetMetadata, include_aborted: bool = False) -> FetchDataInfo:
    """LOC-4: read from the floor segment onwards, bounded by `bound`.

    Spec: KL-READ-2, KL-READ-3, KL-VERSION-3.

    With `include_aborted` (TXN_COMMITTED, TXN-14) the result carries the aborted transactions
    (KL-TXN-9): an empty list at or past the bound, none past the end of the last segment.
    Raises OffsetOutOfRangeError (ERR-32) above the LEO or below the first segment.
    """
    leo = state.log_end_offset
    index = floor_index(segment_bases(state), start_offset)
    if start_offset > leo or index < 0:
        raise OffsetOutOfRangeError(
            f"Received request for offset {start_offset}, but we only have log segments upto "
            f"{leo}",
            where="read",
        )
    empty_list = () if include_aborted else None
    if start_offset == bound.message_offset:
        return FetchDataInfo(bound, aborted_transactions=empty_list)
    if start_offset > bound.message_offset:
        return FetchDataInfo(convert_to_offset_metadata(state, start_offset),
                             aborted_transactions=empty_list)
    for i in range(index, len(state.segments)):
        segment = state.segments[i]
        result = segment_read(
            segment, start_offset, max_length, _position_bound(segment, bound), min_one_message,
            read_reports_batch_base(state.config.kafka_version),
        )
        if result is not None:
            if include_aborted:
                result = add_aborted_transactions(state, start_offset, i, result)
            return result
    return FetchDataInfo(state.log_end_offset_metadata)


def convert_to_offset_metadata(state: PartitionState, offset: int) -> LogOffsetMetadata:
    """LOC-5: the metadata of a 1-byte read at `offset` bounded by the LEO."""
    return local_read(state, offset, 1, False, state.log_end_offset_metadata).fetch_offset_metadata


def materialise_high_watermark(state: PartitionState) -> tuple[PartitionState, LogOffsetMetadata]:
    """LOG-11: fill in a message-only HW's segment and position, and cache it.

    Spec: KL-HW-4, KL-ALLOW-4.

    kafkalog keeps the HW offset itself and takes only the segment base and position from LOC-5
    (KL-HW-4); an offset that LOC-5 rejects stays message-only (KAFKA-16452).
    """
    hw = state.high_watermark
    if not hw.message_offset_only:
        return state, hw
    # UL.fetchHighWatermarkMetadata re-assigns the HW, so unreplicated transactions retire and
    # the FUO is recomputed here too (KL-TXN-6).
    try:
        found = convert_to_offset_metadata(state, hw.message_offset)
    except OffsetOutOfRangeError:
        return on_high_watermark_updated(state), hw
    full = LogOffsetMetadata(
        hw.message_offset, found.segment_base_offset, found.relative_position_in_segment
    )
    # KL-ALLOW-4: Kafka stores the lookup's metadata as it is (its offset can differ from the HW);
    # an offset below the LSO would break KL-INV-1 and is not offered.
    kafka = found != full and found.message_offset >= state.log_start_offset
    full = choose("hw_materialisation", (full, found) if kafka else (full,))
    return on_high_watermark_updated(replace(state, high_watermark=full)), full


def last_stable_offset_metadata(
    state: PartitionState,
) -> tuple[PartitionState, LogOffsetMetadata]:
    """TXN-9 fetchLastStableOffsetMetadata: the HW metadata is read once; a FUO below it is
    converted to full metadata (message-only if out of range). Spec: KL-TXN-6."""
    state, hw = materialise_high_watermark(state)
    fuo = state.first_unstable_offset
    if fuo is None or fuo >= hw.message_offset:
        return state, hw
    try:
        return state, convert_to_offset_metadata(state, fuo)
    except OffsetOutOfRangeError:
        return state, LogOffsetMetadata(fuo)
