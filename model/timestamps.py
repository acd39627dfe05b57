"""`fetch_offset_by_timestamp` (LOG-43..LOG-49), re-exported by `log.py`."""

from __future__ import annotations

from dataclasses import replace

from . import epochs as epoch_cache
from .bounds import require_int64
from .segment import find_offset_by_timestamp, materialised, offset_index_position
from .state import PartitionState
from .values import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    NO_TIMESTAMP,
    TimestampAndOffset,
)
from .versions import earliest_pending_upload_is_special, max_timestamp_searches_records

EARLIEST_LOCAL_TIMESTAMP = -4  # LOG-43; without remote storage it answers like EARLIEST
LATEST_TIERED_TIMESTAMP = -5  # LOG-43; without remote storage the answer is (-1, -1, -1)
# KL-VERSION-7: a special target only in the releases that know it; else a timestamp search.
EARLIEST_PENDING_UPLOAD_TIMESTAMP = -6


def _earliest(state: PartitionState) -> TimestampAndOffset:
    """LOG-45: (-1, LSO, the first epoch if it starts at or before the LSO). Spec: KL-TIME-1."""
    entries = state.epochs
    covers = bool(entries) and entries[0].start_offset <= state.log_start_offset
    epoch = entries[0].epoch if covers else None
    return TimestampAndOffset(NO_TIMESTAMP, state.log_start_offset, epoch)


def _max_timestamp_stored(state: PartitionState, best_pair: tuple[int, int],
                          best_base: int) -> TimestampAndOffset:
    """KL-VERSION-6, Kafka 3.6/3.7 (`UnifiedLog.fetchOffsetByTimestamp` @ 3.6.2, 3.7.1): the
    segment's stored (max timestamp, offset) as is, with the latest epoch; a segment without
    timestamps answers its time index's empty last entry (-1, base offset)."""
    timestamp, offset = best_pair
    if timestamp == NO_TIMESTAMP:
        offset = best_base
    return TimestampAndOffset(timestamp, offset, epoch_cache.latest_epoch(state.epochs))


def _max_timestamp(state: PartitionState) -> TimestampAndOffset | None:
    """LOG-48 (KAFKA-16310): the first record carrying the log's largest timestamp, found from
    the offset-index position of the segment's max offset.

    Spec: KL-TIME-3, KL-VERSION-6.
    """
    best = state.segments[0]
    for segment in state.segments[1:]:
        if segment.max_timestamp_and_offset[0] > best.max_timestamp_and_offset[0]:
            best = segment
    if not max_timestamp_searches_records(state.config.kafka_version):
        return _max_timestamp_stored(state, best.max_timestamp_and_offset, best.base_offset)
    max_ts, max_offset = best.max_timestamp_and_offset
    position = offset_index_position(best, max_offset)
    batch = next((b for b in best.batches
                  if b.position >= position and b.max_timestamp == max_ts), None)
    if batch is None:
        return None
    # `RecordBatch.offsetOfMaxTimestamp` finds no record in a batch the cleaner emptied
    # (CLN-43 keeps its max timestamp): the answer is then empty.
    offset = next((batch.record_offset(i) for i in range(len(batch.records))
                   if batch.record_timestamp(i) == max_ts), None)
    if offset is None:
        return None
    epoch = batch.partition_leader_epoch
    return TimestampAndOffset(max_ts, offset, epoch if epoch >= 0 else None)


def _search(state: PartitionState,
            timestamp: int) -> tuple[PartitionState, TimestampAndOffset | None]:
    """LOG-49: the first segment whose largest timestamp >= target, searched from the LSO.

    Spec: KL-TIME-4. Only that segment is searched, as in Kafka; every segment asked has its max
    timestamp read (KL-TRUNC-3).
    """
    segments = list(state.segments)
    for n, segment in enumerate(segments):
        segments[n] = materialised(segment)
        if segment.largest_timestamp() >= timestamp:
            found = find_offset_by_timestamp(segment, timestamp, state.log_start_offset)
            return replace(state, segments=tuple(segments)), found
    return replace(state, segments=tuple(segments)), None


def fetch_offset_by_timestamp(state: PartitionState,
                              timestamp: int) -> tuple[PartitionState, TimestampAndOffset | None]:
    """The offset for a timestamp or a special target (-1 LATEST, -2 EARLIEST, -3 MAX).

    Spec: KL-TIME-1, KL-TIME-2, KL-TIME-3, KL-TIME-4, KL-BOUND-1, KL-VERSION-7.
    """
    require_int64(timestamp, "timestamp", "fetch_offset_by_timestamp")
    if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
        return state, _earliest(state)
    if timestamp == LATEST_TIMESTAMP:
        latest = epoch_cache.latest_epoch(state.epochs)
        return state, TimestampAndOffset(NO_TIMESTAMP, state.log_end_offset, latest)
    if timestamp == LATEST_TIERED_TIMESTAMP or (
            timestamp == EARLIEST_PENDING_UPLOAD_TIMESTAMP
            and earliest_pending_upload_is_special(state.config.kafka_version)):
        return state, TimestampAndOffset(NO_TIMESTAMP, -1, -1)
    if timestamp == MAX_TIMESTAMP:
        # `maxBy(_.maxTimestampSoFar)` reads every segment's max (KL-TRUNC-3).
        state = replace(state, segments=tuple(materialised(s) for s in state.segments))
        return state, _max_timestamp(state)
    return _search(state, timestamp)
