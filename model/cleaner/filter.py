"""What a pass keeps of one batch: the batch decision, the record decisions and the output batch
(CLN-30..CLN-46). Pure; rules KL-CLEAN-6..KL-CLEAN-9.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

from ..sizes import RECORD_BATCH_OVERHEAD, rebuilt_batch_size
from ..state import Batch
from ..values import NO_TIMESTAMP, AbortedTxnEntry, Record, TimestampType
from .offset_map import OffsetMap
from .transactions import TxnTracker, on_control_batch, on_data_batch


class BatchRetention(Enum):
    """Kafka's `BatchRetention` (CLN-30)."""

    DELETE = "delete"  # dropped unread
    DELETE_EMPTY = "delete_empty"  # filtered; dropped if nothing is kept
    RETAIN_EMPTY = "retain_empty"  # filtered; written as an empty batch if nothing is kept


@dataclass(frozen=True)
class PassContext:
    """What a pass freezes at its start (CLN-84) and reads per group (CLN-41)."""

    offset_map: OffsetMap
    now_ms: int  # the cleaner clock of the pass
    delete_retention_ms: int
    # CLN-41: producer id -> (last data offset or -1, producer epoch) of each active producer.
    active_producers: tuple[tuple[int, tuple[int, int]], ...]
    first_uncleanable: int  # CLN-42's upper bound of the round
    keep_round_last: bool  # CLN-42, CLN-72: 3.9.2 and 4.0+ keep the round's last batch


def _is_last_of_producer(batch: Batch, ctx: PassContext) -> bool:
    """CLN-41 (KAFKA-8335): the batch ending at the producer's last data offset, or, with none
    known, a control batch of its current epoch."""
    last = dict(ctx.active_producers).get(batch.producer_id)
    if last is None:
        return False
    last_data_offset, epoch = last
    if last_data_offset >= 0:
        return batch.last_offset == last_data_offset
    return batch.is_control and batch.producer_epoch == epoch


def batch_retention(batch: Batch, ctx: PassContext, discard_records: bool) -> BatchRetention:
    """CLN-30 step 3: the first of RETAIN_EMPTY (last batch of an active producer; from 4.0 the
    round's last batch), DELETE (records discardable), DELETE_EMPTY. Spec: KL-CLEAN-6."""
    if batch.producer_id >= 0 and _is_last_of_producer(batch, ctx):
        return BatchRetention.RETAIN_EMPTY
    if ctx.keep_round_last and batch.next_offset == ctx.first_uncleanable:
        return BatchRetention.RETAIN_EMPTY
    return BatchRetention.DELETE if discard_records else BatchRetention.DELETE_EMPTY


def retain_record(batch: Batch, index: int, ctx: PassContext) -> bool:
    """CLN-31 steps 3-5 for a data record of a batch whose records are not discarded: kept above
    the map's latest offset; dropped without a key; else kept iff it is its key's newest and a
    value or a tombstone before its batch's delete horizon (CLN-33). Spec: KL-CLEAN-6."""
    offset = batch.record_offset(index)
    if offset > ctx.offset_map.latest_offset:
        return True
    record = batch.records[index]
    if record.key is None:
        return False
    newest = offset >= ctx.offset_map.get(record.key)
    horizon = batch.delete_horizon_ms
    keeps_deletes = horizon is None or ctx.now_ms < horizon
    return newest and (record.value is not None or keeps_deletes)


def empty_batch(batch: Batch) -> Batch:
    """CLN-43: a 61-byte header keeping offsets, producer fields and max timestamp; no horizon."""
    return replace(batch, records=(), record_offsets=(), size=RECORD_BATCH_OVERHEAD,
                   delete_horizon_ms=None, reported_max_offset=None)


def rebuilt_batch(batch: Batch, kept: list[int], horizon: int | None) -> Batch:
    """CLN-46: the kept records at their offsets (effective timestamps), the same offset range
    and producer fields, a recomputed max timestamp (create time) and the horizon. KL-CLEAN-9."""
    records = tuple(replace(batch.records[i], timestamp=batch.record_timestamp(i)) for i in kept)
    offsets = tuple(batch.record_offset(i) for i in kept)
    base_timestamp = horizon if horizon is not None else records[0].timestamp
    max_ts = batch.max_timestamp
    if batch.timestamp_type is TimestampType.CREATE_TIME:
        max_ts = max((r.timestamp for r in records), default=NO_TIMESTAMP)
    consecutive = offsets == tuple(range(batch.base_offset, batch.last_offset + 1))
    return replace(
        batch, records=records, record_offsets=None if consecutive else offsets,
        size=rebuilt_batch_size(records, tuple(o - batch.base_offset for o in offsets),
                                base_timestamp),
        max_timestamp=max_ts, delete_horizon_ms=horizon, reported_max_offset=None,
    )


def _has_tombstone(records: tuple[Record, ...]) -> bool:
    return any(r.value is None for r in records)


def filter_batch(batch: Batch, ctx: PassContext, tracker: TxnTracker
                 ) -> tuple[TxnTracker, Batch | None, AbortedTxnEntry | None]:
    """CLN-30..CLN-45 for one source batch: (tracker, the output batch or None, the `.txnindex`
    entry a kept ABORT marker carries into the cleaned segment). Spec: KL-CLEAN-6, KL-CLEAN-7,
    KL-CLEAN-8, KL-CLEAN-9."""
    entry = None
    if batch.is_control:
        tracker, can_discard, entry = on_control_batch(tracker, batch)
        horizon = batch.delete_horizon_ms
        discard_records = can_discard and horizon is not None and horizon <= ctx.now_ms
    else:
        tracker, can_discard = on_data_batch(tracker, batch)
        discard_records = can_discard
    retention = batch_retention(batch, ctx, discard_records)
    if retention is BatchRetention.DELETE:
        return tracker, None, entry
    kept = [] if discard_records else [
        i for i in range(len(batch.records)) if batch.is_control or retain_record(batch, i, ctx)
    ]
    if not kept:
        retained = retention is BatchRetention.RETAIN_EMPTY
        return tracker, empty_batch(batch) if retained else None, entry
    tombstones = _has_tombstone(tuple(batch.records[i] for i in kept))
    needs_horizon = ((tombstones or (can_discard and batch.is_control))
                     and batch.delete_horizon_ms is None)
    if len(kept) == len(batch.records) and not needs_horizon:
        return tracker, replace(batch, reported_max_offset=None), entry  # CLN-45: verbatim
    horizon = ctx.now_ms + ctx.delete_retention_ms if needs_horizon else batch.delete_horizon_ms
    return tracker, rebuilt_batch(batch, kept, horizon), entry
