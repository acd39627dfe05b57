"""Operations on one segment (SEG-*), pure: each returns a new `Segment`.

Index lookups are plain floor searches over the entries: FMT-17 guarantees Kafka's warm/cold
search returns the same. For offsets the `.log` scan that follows a lookup (FMT-54) finds the
same batch whatever entry it started from; timestamp scans (SEG-18, LOG-48) start where Kafka's
do, because after a truncation that forgot a prefix (KL-TRUNC-3) the start decides the answer.
"""

from __future__ import annotations

from dataclasses import replace

from .errors import (
    IllegalArgumentError,
    IndexOffsetOverflowError,
    LogSegmentOffsetOverflowError,
)
from .helpers import (
    OFFSET_INDEX_ENTRY_SIZE,
    TIME_INDEX_ENTRY_SIZE,
    index_entries_after_truncation,
    index_max_entries,
    offset_index_full,
    regained_capacity,
    relative_offset_fits,
    roll_jitter_ms,
    time_index_full,
    truncation_cut,
)
from .state import Batch, Segment, evolve
from .values import (
    NO_TIMESTAMP,
    BatchView,
    FetchDataInfo,
    LogConfig,
    LogOffsetMetadata,
    TimestampAndOffset,
)


def new_segment(base_offset: int, config: LogConfig, now_ms: int) -> Segment:
    """LOC-6 step 5.3: an empty segment with full-capacity indexes, created now. Spec: KL-ROLL-3."""
    return Segment(
        base_offset=base_offset,
        batches=(),
        size=0,
        offset_index=(),
        offset_index_max_entries=index_max_entries(
            config.segment_index_bytes, OFFSET_INDEX_ENTRY_SIZE
        ),
        time_index=(),
        time_index_max_entries=index_max_entries(config.segment_index_bytes, TIME_INDEX_ENTRY_SIZE),
        bytes_since_last_index_entry=0,
        created_ms=now_ms,
        last_modified_ms=now_ms,
        roll_jitter_ms=roll_jitter_ms(base_offset, config.segment_jitter_ms, config.segment_ms),
    )


def indexes_full(segment: Segment) -> bool:
    """SEG-6 (3) and (4): either index is full."""
    return offset_index_full(
        len(segment.offset_index), segment.offset_index_max_entries
    ) or time_index_full(len(segment.time_index), segment.time_index_max_entries)


def _time_index_maybe_append(
    entries: tuple[tuple[int, int], ...], timestamp: int, offset: int
) -> tuple[tuple[int, int], ...]:
    """FMT-22 step 4: append only a strictly greater timestamp (>= 0 for an empty index)."""
    last_ts = entries[-1][0] if entries else NO_TIMESTAMP
    if timestamp > last_ts:
        return (*entries, (timestamp, offset))
    return entries


def _check_index_offset(base_offset: int, offset: int) -> None:
    """FMT-11 / ERR-2: an index entry's offset must be storable relative to the base."""
    if not relative_offset_fits(offset, base_offset):
        raise IndexOffsetOverflowError(
            f"offset {offset} cannot be stored relative to base {base_offset}",
            where=f"segment {base_offset} index",
        )


def append_batches(segment: Segment, batches: tuple[Batch, ...], now_ms: int,
                   index_interval_bytes: int, per_batch: bool = True) -> Segment:
    """SEG-3 [TRUNK]: write the batches, one index decision per batch. Spec: KL-APPEND-6.

    With `per_batch` False (Kafka <= 3.9, SEG-4, KL-VERSION-4) the whole append is one unit: one
    decision, keyed by its last offset at its first batch's position. `batches` carry their final
    positions. Raises LogSegmentOffsetOverflowError if the last offset cannot be stored relative
    to the base (SEG-2), and IllegalArgumentError if an index point meets a full index (ERR-3,
    ERR-7), IndexOffsetOverflowError if an entry's offset is below the base (ERR-2); all before
    anything changes (KL-APPEND-9).
    """
    if not batches:
        return segment
    largest = batches[-1].last_offset
    if not relative_offset_fits(largest, segment.base_offset):
        raise LogSegmentOffsetOverflowError(
            f"offset {largest} cannot be stored relative to segment base {segment.base_offset}",
            where=f"segment {segment.base_offset}",
        )
    offset_index = segment.offset_index
    time_index = segment.time_index
    since = segment.bytes_since_last_index_entry
    max_ts, max_ts_offset = segment.max_timestamp_and_offset
    for last_offset, position, size, unit_max in _index_units(batches, per_batch):
        if unit_max[0] > max_ts:
            max_ts, max_ts_offset = unit_max
        if since > index_interval_bytes:
            if offset_index_full(len(offset_index), segment.offset_index_max_entries):
                raise IllegalArgumentError(
                    "Attempt to append to a full index", where=f"segment {segment.base_offset}"
                )
            if time_index_full(len(time_index), segment.time_index_max_entries):
                raise IllegalArgumentError(
                    "Attempt to append to a full time index", where=f"segment {segment.base_offset}"
                )
            _check_index_offset(segment.base_offset, last_offset)
            if max_ts > (time_index[-1][0] if time_index else NO_TIMESTAMP):
                # Only an entry that is really written has its offset made relative (FMT-22).
                _check_index_offset(segment.base_offset, max_ts_offset)
            offset_index = (*offset_index, (last_offset, position))
            time_index = _time_index_maybe_append(time_index, max_ts, max_ts_offset)
            since = 0
        since += size
    return evolve(
        segment,
        batches=segment.batches + batches,
        size=segment.size + sum(b.size for b in batches),
        offset_index=offset_index,
        time_index=time_index,
        bytes_since_last_index_entry=since,
        last_modified_ms=now_ms,
        max_so_far=(max_ts, max_ts_offset),
    )


def _index_units(batches: tuple[Batch, ...],
                 per_batch: bool) -> list[tuple[int, int, int, tuple[int, int]]]:
    """(last offset, position, size, (max timestamp, its offset)) of each index unit."""
    if per_batch:
        return [(b.last_offset, b.position, b.size, (b.max_timestamp, b.max_timestamp_offset))
                for b in batches]
    best = (NO_TIMESTAMP, -1)
    for b in batches:
        if b.max_timestamp > best[0]:
            best = (b.max_timestamp, b.max_timestamp_offset)
    return [(batches[-1].last_offset, batches[0].position, sum(b.size for b in batches), best)]


def become_inactive(segment: Segment) -> Segment:
    """SEG-16 / SEG-17: the final time-index entry, then both indexes trimmed. Spec: KL-ROLL-5.

    Trimming sets each capacity to the entry count, so a trimmed offset index is full (FMT-29).
    The `.log` trim changes nothing the model sees (no bytes, no mtime).
    """
    max_ts, max_offset = segment.max_timestamp_and_offset
    time_index = _time_index_maybe_append(segment.time_index, max_ts, max_offset)
    return replace(
        segment,
        max_so_far=(max_ts, max_offset),
        time_index=time_index,
        time_index_max_entries=len(time_index),
        offset_index_max_entries=len(segment.offset_index),
    )


def translate(segment: Segment, offset: int) -> Batch | None:
    """SEG-9 / FMT-54: the first batch whose last offset >= offset, or None."""
    index = truncation_cut([b.last_offset for b in segment.batches], offset)
    return segment.batches[index] if index < len(segment.batches) else None


def batch_view(batch: Batch) -> BatchView:
    """The value a read returns for one stored batch.

    Records carry their effective timestamps: under LOG_APPEND_TIME every record reads back with
    the batch's max timestamp, as Kafka's DefaultRecordBatch iterator reports it (KL-READ-5).
    """
    records = tuple(
        replace(record, timestamp=batch.record_timestamp(i))
        for i, record in enumerate(batch.records)
    )
    return BatchView(
        base_offset=batch.base_offset,
        last_offset=batch.last_offset,
        partition_leader_epoch=batch.partition_leader_epoch,
        max_timestamp=batch.max_timestamp,
        size_in_bytes=batch.size,
        position=batch.position,
        records=records,
        timestamp_type=batch.timestamp_type,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        is_transactional=batch.is_transactional,
        is_control=batch.is_control,
        record_offsets=batch.record_offsets,
    )


def read(segment: Segment, start_offset: int, max_size: int, max_position: int | None,
         min_one_message: bool, batch_base: bool = True) -> FetchDataInfo | None:
    """SEG-10 with the [TRUNK] metadata of CHG-1; None when the offset is past this segment.

    Spec: KL-READ-4, KL-READ-5, KL-VERSION-3 (`batch_base` False: Kafka <= 3.9 reports
    `start_offset` itself). Raises IllegalArgumentError for `max_size < 0` (ERR-15) and for a
    slice with a negative size (ERR-16).
    """
    if max_size < 0:
        raise IllegalArgumentError(f"Invalid max size {max_size}", where="read")
    first = translate(segment, start_offset)
    if first is None:
        return None
    offset = first.base_offset if batch_base else start_offset
    metadata = LogOffsetMetadata(offset, segment.base_offset, first.position)
    adjusted = max(max_size, first.size) if min_one_message else max_size
    if adjusted == 0 or max_position is None:
        return FetchDataInfo(metadata)
    fetch_size = min(max_position - first.position, adjusted)
    if fetch_size < 0:
        raise IllegalArgumentError(
            f"Invalid slice size {fetch_size} at position {first.position}", where="read"
        )
    end = min(first.position + fetch_size, segment.size)
    batches = tuple(
        batch_view(b)
        for b in segment.batches
        if b.position >= first.position and b.position + b.size <= end
    )
    return FetchDataInfo(metadata, end - first.position, batches, adjusted < first.size)


def truncate(segment: Segment, offset: int, config: LogConfig, now_ms: int) -> tuple[Segment, int]:
    """SEG-13: drop batches with last offset >= offset; returns (segment, bytes removed).

    Spec: KL-TRUNC-2, KL-TRUNC-3. Indexes are cut per FMT-15/FMT-24 and resized to full capacity
    (KAFKA-6492), never below the entries kept (KL-CRASH-5); an emptied segment gets `created` =
    now (KAFKA-596).
    """
    kept = segment.batches[:truncation_cut([b.last_offset for b in segment.batches], offset)]
    new_size = sum(b.size for b in kept)
    removed = segment.size - new_size
    keep_offsets = index_entries_after_truncation([k for k, _ in segment.offset_index], offset)
    keep_times = index_entries_after_truncation([o for _, o in segment.time_index], offset)
    cut = replace(
        segment,
        batches=kept,
        size=new_size,
        offset_index=segment.offset_index[:keep_offsets],
        offset_index_max_entries=regained_capacity(
            config.segment_index_bytes, OFFSET_INDEX_ENTRY_SIZE, keep_offsets
        ),
        time_index=segment.time_index[:keep_times],
        time_index_max_entries=regained_capacity(
            config.segment_index_bytes, TIME_INDEX_ENTRY_SIZE, keep_times
        ),
        bytes_since_last_index_entry=0,
        # PSF-10 (KL-TXN-8): the `.txnindex` is cut at the first marker >= offset.
        txn_index=tuple(e for e in segment.txn_index if e.last_offset < offset),
        created_ms=now_ms if not kept else segment.created_ms,
        last_modified_ms=now_ms if removed > 0 else segment.last_modified_ms,
    )
    # SEG-13 step 7: `maxTimestampSoFar()` is read after the index cut: a max not yet read since
    # the load is the cut index's last entry, and an empty one makes it (-1, base), which is
    # kept as is. Only a max >= 0 is re-derived (`readLargestTimestamp`).
    prior = segment.max_so_far if segment.max_so_far is not None else cut.max_timestamp_and_offset
    max_so_far = read_largest_timestamp(cut) if prior[0] >= 0 else prior
    return replace(cut, max_so_far=max_so_far), removed


def offset_index_position(segment: Segment, offset: int) -> int:
    """FMT-13 `OffsetIndex.lookup`: the position of the last entry whose key <= offset, else 0."""
    return next((pos for key, pos in reversed(segment.offset_index) if key <= offset), 0)


def time_index_lookup(segment: Segment, timestamp: int) -> int:
    """FMT-23 `TimeIndex.lookup`: the offset of the last entry whose timestamp <= `timestamp`,
    else the base offset."""
    return next((off for ts, off in reversed(segment.time_index) if ts <= timestamp),
                segment.base_offset)


def read_largest_timestamp(segment: Segment) -> tuple[int, int]:
    """SEG-14 `readLargestTimestamp`: the time index's last entry, unless a batch from that
    entry's offset-index position on (FMT-56: paired with its last offset) has a larger one.

    Spec: KL-TRUNC-3. Batches before that position are not looked at: after a forgetting
    truncation they may hold a larger timestamp that stays forgotten.
    """
    last = segment.time_index[-1] if segment.time_index else (NO_TIMESTAMP, segment.base_offset)
    position = offset_index_position(segment, last[1])
    best = (NO_TIMESTAMP, -1)
    for batch in segment.batches:
        if batch.position >= position and batch.max_timestamp > best[0]:
            best = (batch.max_timestamp, batch.last_offset)
    return best if best[0] > last[0] else last


def materialised(segment: Segment) -> Segment:
    """The segment once Kafka read its max timestamp (`readMaxTimestampAndOffsetSoFar`)."""
    if segment.max_so_far is not None:
        return segment
    return replace(segment, max_so_far=segment.max_timestamp_and_offset)


def find_offset_by_timestamp(
    segment: Segment, timestamp: int, starting_offset: int
) -> TimestampAndOffset | None:
    """SEG-18 / FMT-55: the first record with timestamp >= target and offset >= starting offset,
    scanning from the position the two index lookups give.

    Spec: KL-TIME-4. The start matters only after a forgetting truncation (KL-TRUNC-3): the time
    index then skips batches before the cut whose timestamps it never recorded.
    """
    start = max(time_index_lookup(segment, timestamp), starting_offset)
    position = offset_index_position(segment, start)
    for batch in segment.batches:
        if batch.position < position or batch.max_timestamp < timestamp:
            continue
        for i in range(len(batch.records)):
            record_ts = batch.record_timestamp(i)
            offset = batch.record_offset(i)
            if record_ts >= timestamp and offset >= starting_offset:
                epoch = batch.partition_leader_epoch
                return TimestampAndOffset(record_ts, offset, epoch if epoch != -1 else None)
    return None
