"""Producer state per partition (PST-*, PSR-*): idempotence bookkeeping as pure values.

Kafka's `ProducerStateManager` reduced to what one partition log observes for idempotent
producers: per producer id its epoch, the metadata of its last 5 batches, coordinator epoch, last
timestamp and the first offset of its open transaction;
plus the manager's `lastMapOffset`, `lastSnapOffset`, its `.snapshot` files and the schedule of
the periodic expiration check. Every function is pure; `append.py`, `log.py`, `local_log.py`,
`retention.py` and `reload.py` call them at the points Kafka's `UnifiedLog` calls the PSM.

Rules: KL-PROD-1..KL-PROD-12 in specs/log.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from ..errors import (
    InvalidProducerEpochError,
    InvalidRecordError,
    OutOfOrderSequenceError,
)
from ..producer.producer_entry import (
    NO_PRODUCER_EPOCH,
    NUM_BATCHES_TO_RETAIN,
    AppendOrigin,
    BatchMetadata,
    ProducerBatch,
    ProducerEntry,
    in_sequence,
)
from ..producer.transaction_entry import CompletedTxn, data_txn, end_txn
from ..values import ProducerBatchView, ProducerView

DEFAULT_EXPIRATION_CHECK_INTERVAL_MS = 600_000  # PST-26 producer.id.expiration.check.interval.ms

Producers = tuple[ProducerEntry, ...]  # sorted by producer id, unique


@dataclass(frozen=True)
class ProducerState:
    """The PSM of one partition (PST-2): producers, map/snapshot offsets, the `.snapshot` files
    (offset -> the trimmed table it holds, PSF-4), the expiry schedule and the completed
    transactions not yet below the high watermark."""

    producers: Producers = ()
    last_map_offset: int = 0
    last_snap_offset: int = 0
    snapshots: tuple[tuple[int, Producers], ...] = ()  # ascending offsets
    expiry_due_ms: int = DEFAULT_EXPIRATION_CHECK_INTERVAL_MS  # next periodic check (PST-22)
    # TXN-6/TXN-7 unreplicatedTxns: completed transactions whose marker is not yet below the HW,
    # in completion order. Ongoing transactions are the entries' current_txn_first_offset.
    unreplicated: tuple[CompletedTxn, ...] = ()


# --- table helpers -----------------------------------------------------------------------------


def lookup(producers: Producers, producer_id: int) -> ProducerEntry | None:
    for entry in producers:
        if entry.producer_id == producer_id:
            return entry
    return None


def put(producers: Producers, entry: ProducerEntry) -> Producers:
    rest = [e for e in producers if e.producer_id != entry.producer_id]
    return tuple(sorted((*rest, entry), key=lambda e: e.producer_id))


def add_batch(entry: ProducerEntry, batch: ProducerBatch) -> ProducerEntry:
    """PST-13, PST-18 step 2: adopt the epoch (clearing the cache on change), push, evict.

    Spec: KL-PROD-4.
    """
    batches = entry.batches if batch.producer_epoch == entry.producer_epoch else ()
    meta = BatchMetadata(batch.last_sequence, batch.last_offset,
                         batch.last_offset - batch.base_offset, batch.max_timestamp)
    batches = (*batches, meta)[-NUM_BATCHES_TO_RETAIN:]
    return replace(entry, producer_epoch=batch.producer_epoch, batches=batches,
                   last_timestamp=batch.max_timestamp)


# --- validation (PST-8..PST-21) ----------------------------------------------------------------


def check_client_fields(batch: ProducerBatch, where: str) -> None:
    """PSE-5: a client batch with a producer id must carry a sequence. Spec: KL-PROD-2."""
    if batch.producer_id >= 0 and batch.base_sequence < 0:
        raise InvalidRecordError(
            f"Invalid sequence number {batch.base_sequence} in record batch with producerId "
            f"{batch.producer_id}",
            where=where,
        )


def find_duplicate(entry: ProducerEntry | None, batch: ProducerBatch) -> BatchMetadata | None:
    """PST-10 findDuplicateBatch: same epoch and an exactly matching cached sequence range.

    Spec: KL-PROD-5.
    """
    if entry is None or batch.producer_epoch != entry.producer_epoch:
        return None
    for meta in entry.batches:
        if meta.first_seq == batch.base_sequence and meta.last_seq == batch.last_sequence:
            return meta
    return None


def check_epoch(entry: ProducerEntry | None, batch: ProducerBatch, origin: AppendOrigin) -> None:
    """PST-12: a lower epoch is fenced except on the replication path. Spec: KL-PROD-6."""
    current = entry.producer_epoch if entry is not None else NO_PRODUCER_EPOCH
    if batch.producer_epoch < current and origin is not AppendOrigin.REPLICATION:
        raise InvalidProducerEpochError(
            f"Epoch of producer {batch.producer_id} at offset {batch.base_offset} is "
            f"{batch.producer_epoch}, which is smaller than the last seen epoch {current}",
            where=f"producer {batch.producer_id}",
        )


def check_sequence(entry: ProducerEntry | None, batch: ProducerBatch) -> None:
    """PST-14 / PST-15 checkSequence for one client batch (no earlier batch of this producer in
    the same append: client appends carry one batch). Spec: KL-PROD-7."""
    current = entry if entry is not None else ProducerEntry(batch.producer_id)
    first = batch.base_sequence
    if batch.producer_epoch != current.producer_epoch:
        if first != 0 and current.producer_epoch != NO_PRODUCER_EPOCH:
            raise OutOfOrderSequenceError(
                f"Invalid sequence number for new epoch of producer {batch.producer_id} at "
                f"offset {batch.base_offset}: {batch.producer_epoch} (request epoch), {first} "
                f"(seq. number), {current.producer_epoch} (current producer epoch)",
                where=f"producer {batch.producer_id}",
            )
        return
    if current.producer_epoch == NO_PRODUCER_EPOCH or in_sequence(current.last_seq, first):
        return
    raise OutOfOrderSequenceError(
        f"Out of order sequence number for producer {batch.producer_id} at offset "
        f"{batch.base_offset}: {first} (incoming seq. number), {current.last_seq} (current end "
        "sequence number)",
        where=f"producer {batch.producer_id}",
    )


def validate(producers: Producers, batch: ProducerBatch,
             origin: AppendOrigin) -> BatchMetadata | None:
    """PST-8 for one batch: duplicate (client only), epoch, sequence (client only).

    Returns the cached metadata of the original batch when `batch` is a duplicate. Raises
    InvalidProducerEpochError or OutOfOrderSequenceError. Spec: KL-PROD-5, KL-PROD-6, KL-PROD-7.
    """
    entry = lookup(producers, batch.producer_id)
    if origin is AppendOrigin.CLIENT:
        duplicate = find_duplicate(entry, batch)
        if duplicate is not None:
            return duplicate
    check_epoch(entry, batch, origin)
    if origin is AppendOrigin.CLIENT:
        check_sequence(entry, batch)
    return None


def merge(current: ProducerEntry | None, updated: ProducerEntry) -> ProducerEntry:
    """PST-19 update: adopt the working copy's epoch (clearing on change), push its batches,
    copy its coordinator epoch, transaction start and last timestamp. Spec: KL-PROD-4."""
    if current is None:
        return updated
    kept = current.batches if current.producer_epoch == updated.producer_epoch else ()
    return replace(updated, batches=(*kept, *updated.batches)[-NUM_BATCHES_TO_RETAIN:])


def apply_batches(producers: Producers, batches: Iterable[ProducerBatch],
                  origin: AppendOrigin) -> Producers:
    """`apply_append` without the completed transactions. Spec: KL-PROD-4, KL-PROD-8."""
    return apply_append(producers, batches, origin)[0]


def apply_append(producers: Producers, batches: Iterable[ProducerBatch],
                 origin: AppendOrigin) -> tuple[Producers, tuple[CompletedTxn, ...]]:
    """PST-8, PST-18, PST-19, TXN-3: validate (per `origin`) and apply one append's batches; pid
    -1 is skipped. As in Kafka each producer's batches build one working copy (stored entry
    without its batches) that is merged once at the end (`merge`). Markers close transactions;
    the completed ones are returned in batch order.

    Spec: KL-PROD-4, KL-PROD-8, KL-TXN-2, KL-TXN-3.
    """
    working: dict[int, ProducerEntry] = {}
    completed: list[CompletedTxn] = []
    for batch in batches:
        if batch.producer_id < 0:
            continue
        stored = lookup(producers, batch.producer_id)
        updated = working.get(batch.producer_id)
        if updated is None:
            updated = replace(stored or ProducerEntry(batch.producer_id), batches=())
        if batch.empty_control:
            working[batch.producer_id] = updated
            continue
        check_epoch(updated, batch, origin)
        if batch.marker is not None:
            updated, done = end_txn(updated, batch, batch.marker, origin)
            if done is not None:
                completed.append(done)
            working[batch.producer_id] = updated
            continue
        if origin is AppendOrigin.CLIENT:
            check_sequence(stored, batch)
        working[batch.producer_id] = data_txn(add_batch(updated, batch), batch)
    for pid, updated in working.items():
        producers = put(producers, merge(lookup(producers, pid), updated))
    return producers, tuple(completed)


# --- expiry (PST-22) ---------------------------------------------------------------------------


def is_expired(entry: ProducerEntry, now_ms: int, expiration_ms: int) -> bool:
    """PST-22: no open transaction and now - lastTimestamp >= expiration. Spec: KL-PROD-9."""
    return entry.current_txn_first_offset < 0 and now_ms - entry.last_timestamp >= expiration_ms


def remove_expired(producers: Producers, now_ms: int, expiration_ms: int) -> Producers:
    return tuple(e for e in producers if not is_expired(e, now_ms, expiration_ms))


def run_due_expiry(ps: ProducerState, now_ms: int, expiration_ms: int,
                   interval_ms: int) -> ProducerState:
    """PST-22: the periodic check runs at each due time passed, with the clock reading that due
    time (KL-CLOCK-1); the last run subsumes the earlier ones (expiry is monotonic in time).

    Spec: KL-PROD-9.
    """
    if ps.expiry_due_ms > now_ms:
        return ps
    runs = (now_ms - ps.expiry_due_ms) // interval_ms + 1
    last_run = ps.expiry_due_ms + (runs - 1) * interval_ms
    return replace(ps, producers=remove_expired(ps.producers, last_run, expiration_ms),
                   expiry_due_ms=ps.expiry_due_ms + runs * interval_ms)


# --- snapshots and rebuilds (PSF-4, PSR-*) -----------------------------------------------------


def snapshot_content(producers: Producers) -> Producers:
    """PSF-4 / PSF-5: a snapshot keeps only the newest batch, stamped with lastTimestamp.

    Spec: KL-PROD-10.
    """
    out = []
    for e in producers:
        kept: tuple[BatchMetadata, ...] = ()
        if e.batches and e.last_data_offset >= 0:
            newest = e.batches[-1]
            kept = (BatchMetadata(newest.last_seq, newest.last_offset, newest.offset_delta,
                                  e.last_timestamp),)
        out.append(replace(e, batches=kept))
    return tuple(out)


def take_snapshot(ps: ProducerState) -> ProducerState:
    """PSR-1: write `<lastMapOffset>.snapshot` iff lastMapOffset > lastSnapOffset. KL-PROD-10."""
    if ps.last_map_offset <= ps.last_snap_offset:
        return ps
    offset = ps.last_map_offset
    files = dict(ps.snapshots)
    files[offset] = snapshot_content(ps.producers)
    return replace(ps, snapshots=tuple(sorted(files.items())), last_snap_offset=offset)


def on_roll(ps: ProducerState, new_base: int) -> ProducerState:
    """PSR-1 roll: map end = the new segment's base, then a snapshot. Spec: KL-PROD-10."""
    return take_snapshot(replace(ps, last_map_offset=new_base))


def delete_snapshots(ps: ProducerState, offsets: Iterable[int]) -> ProducerState:
    """PSR-2: the snapshots named after deleted segments' bases go. Spec: KL-PROD-11."""
    gone = set(offsets)
    return replace(ps, snapshots=tuple(s for s in ps.snapshots if s[0] not in gone))


def on_log_start_offset_incremented(ps: ProducerState, log_start: int) -> ProducerState:
    """PSR-12: producers kept; map end raised; lastSnapOffset = newest snapshot or log start.

    Spec: KL-PROD-11.
    """
    last_map = max(ps.last_map_offset, log_start)
    last_snap = ps.snapshots[-1][0] if ps.snapshots else log_start
    unreplicated = tuple(c for c in ps.unreplicated if c.last_offset >= log_start)
    return replace(ps, last_map_offset=last_map, last_snap_offset=last_snap,
                   unreplicated=unreplicated)


def truncate_and_reload(ps: ProducerState, log_start: int, end: int, now_ms: int,
                        expiration_ms: int) -> ProducerState:
    """PSR-4: drop snapshots > end or <= log start; reload from the newest if end moved
    (unreplicated transactions are dropped, TXN-13).

    Spec: KL-PROD-12, KL-TXN-7.
    """
    kept = tuple(s for s in ps.snapshots if log_start < s[0] <= end)
    ps = replace(ps, snapshots=kept)
    if end == ps.last_map_offset:
        return on_log_start_offset_incremented(ps, log_start)
    # TXN-13: unreplicated transactions are not persisted and are dropped by the reload.
    if not kept:
        return replace(ps, producers=(), last_map_offset=log_start, last_snap_offset=log_start,
                       unreplicated=())
    offset, content = kept[-1]
    return replace(ps, producers=remove_expired(content, now_ms, expiration_ms),
                   last_map_offset=offset, last_snap_offset=offset, unreplicated=())


def rebuild(ps: ProducerState, segments: tuple[tuple[int, tuple[ProducerBatch, ...]], ...],
            log_start: int, last_offset: int, now_ms: int, expiration_ms: int,
            clean_shutdown: bool) -> ProducerState:
    """PSR-5 rebuildProducerState over `segments` ((base, producer batches) ascending).

    Spec: KL-PROD-12.
    """
    bases = [base for base, _ in segments]
    to_snapshot = {*bases[-2:], last_offset}
    if clean_shutdown and not ps.snapshots:
        for offset in sorted(to_snapshot):
            ps = take_snapshot(replace(ps, last_map_offset=offset))
        return ps
    empty_before = not ps.producers and ps.last_map_offset >= last_offset
    ps = truncate_and_reload(ps, log_start, last_offset, now_ms, expiration_ms)
    if last_offset > ps.last_map_offset and not empty_before:
        for i, (base, batches) in enumerate(segments):
            upper = segments[i + 1][0] if i + 1 < len(segments) else None
            if upper is not None and upper <= ps.last_map_offset:
                continue
            if base >= last_offset:
                break
            start = max(base, ps.last_map_offset, log_start)
            ps = replace(ps, last_map_offset=start)
            if base in to_snapshot:
                ps = take_snapshot(ps)
            replay = [b for b in batches if b.last_offset >= start and b.last_offset < last_offset]
            # PSR-6: replayed completions start out unreplicated (never indexed here).
            producers, completed = apply_append(ps.producers, replay, AppendOrigin.REPLICATION)
            ps = replace(ps, producers=producers, unreplicated=ps.unreplicated + completed)
    return take_snapshot(replace(ps, last_map_offset=last_offset))


def remove_stray_snapshots(ps: ProducerState, bases: Iterable[int]) -> ProducerState:
    """PSR-3: keep segment-base snapshots plus the largest stray if >= the largest base.

    Spec: KL-PROD-12.
    """
    base_set = sorted(set(bases))
    strays = [off for off, _ in ps.snapshots if off not in base_set]
    doomed = set(strays[:-1])
    if strays and base_set and strays[-1] < base_set[-1]:
        doomed.add(strays[-1])
    return delete_snapshots(ps, doomed)


def producer_views(producers: Producers) -> tuple[ProducerView, ...]:
    """The producer table as `LogStateView.producers` shows it (PST-25 plus the batch cache)."""
    return tuple(
        ProducerView(
            producer_id=e.producer_id,
            producer_epoch=e.producer_epoch,
            coordinator_epoch=e.coordinator_epoch,
            last_timestamp=e.last_timestamp,
            current_txn_first_offset=e.current_txn_first_offset,
            batches=tuple(ProducerBatchView(b.first_seq, b.last_seq, b.first_offset,
                                            b.last_offset, b.timestamp) for b in e.batches),
        )
        for e in producers
    )
