"""Transactions at the level of the log (TXN-5..TXN-18): the first unstable offset, the last
stable offset, the aborted-transaction index and the aborted list of a `read_committed` fetch.

Kafka's `UnifiedLog.maybeIncrementFirstUnstableOffset`, `lastStableOffset`,
`PSM.onHighWatermarkUpdated`, `PSM.lastStableOffset(completedTxn)`, `LogSegment.updateTxnIndex`
and `LocalLog.addAbortedTransactions` as pure functions over `PartitionState`. The entry-level
rules (markers, opening transactions) are in `transaction_entry.py`; the marker action is
`append.append_marker`.

Rules: KL-TXN-5..KL-TXN-10 in specs/log.md.
"""

from __future__ import annotations

from dataclasses import replace

from ..choices import choose
from ..producer.transaction_entry import CompletedTxn
from ..state import PartitionState, Segment, evolve
from ..values import AbortedTransaction, AbortedTxnEntry, FetchDataInfo
from ..versions import read_reports_batch_base


def psm_first_unstable_offset(state: PartitionState) -> int | None:
    """TXN-7 PSM.firstUnstableOffset: the smallest first offset of an ongoing or unreplicated
    transaction; None when there is neither. Spec: KL-TXN-5."""
    ps = state.producer_state
    firsts = [e.current_txn_first_offset for e in ps.producers if e.current_txn_first_offset >= 0]
    firsts += [c.first_offset for c in ps.unreplicated]
    return min(firsts) if firsts else None


def refresh_first_unstable_offset(state: PartitionState) -> PartitionState:
    """TXN-8 maybeIncrementFirstUnstableOffset: the PSM's FUO clamped up to the log start offset,
    cached on the log. Spec: KL-TXN-5, KL-ALLOW-4."""
    fuo = psm_first_unstable_offset(state)
    if fuo is not None and fuo < state.log_start_offset:
        fuo = _clamped_to_log_start(state)
    return evolve(state, first_unstable_offset=fuo)


def _clamped_to_log_start(state: PartitionState) -> int:
    """KL-ALLOW-4: Kafka caches `convertToOffsetMetadataOrThrow(logStartOffset)` as is, and from
    4.0 a lookup's offset is the base of the batch it lands in (KL-VERSION-3): a log start in a
    gap before a batch moves the FUO, and so the LSO, to that batch. kafkalog keeps the log start.
    An offset below the log start (a log start inside a batch) is not offered (KL-INV-1)."""
    start = state.log_start_offset
    if not read_reports_batch_base(state.config.kafka_version):
        return start
    # LOC-5's 1-byte read at `start`: the first batch ending at or after it (in a later segment
    # when its own segment has none), or the LEO itself.
    found = next((b.base_offset for s in state.segments for b in s.batches
                  if b.last_offset >= start), start)
    return choose("fuo_materialisation", (start, found) if found > start else (start,))


def on_high_watermark_updated(state: PartitionState) -> PartitionState:
    """UL.updateHighWatermarkMetadata: unreplicated transactions whose marker is below the new HW
    retire (TXN-7), then the FUO is recomputed (TXN-8). Every HW assignment, including the
    materialisation of message-only HW metadata, goes through here. Spec: KL-TXN-6."""
    hw = state.high_watermark.message_offset
    ps = state.producer_state
    kept = tuple(c for c in ps.unreplicated if c.last_offset >= hw)
    if len(kept) != len(ps.unreplicated):
        state = replace(state, producer_state=replace(ps, unreplicated=kept))
    return refresh_first_unstable_offset(state)


def last_stable_offset(state: PartitionState) -> int:
    """TXN-9: the cached FUO if it is below the HW, else the HW; also a read_committed
    consumer's LATEST offset (TXN-19). Spec: KL-TXN-6, KL-TXN-10."""
    hw = state.high_watermark.message_offset
    fuo = state.first_unstable_offset
    return fuo if fuo is not None and fuo < hw else hw


def index_completed(state: PartitionState, completed: tuple[CompletedTxn, ...]) -> PartitionState:
    """PST-9 step 4 after `PSM.update`: for each completed transaction in batch order, its last
    stable offset (TXN-10: the first ongoing transaction of another producer, counting
    transactions that complete later in this append; else marker + 1), an entry in the active
    segment's `.txnindex` if aborted (TXN-11), then completeTxn (unreplicated, TXN-6).

    Spec: KL-TXN-4, KL-TXN-7.
    """
    if not completed:
        return state
    ps = state.producer_state
    ongoing = [(e.current_txn_first_offset, e.producer_id) for e in ps.producers
               if e.current_txn_first_offset >= 0]
    ongoing += [(c.first_offset, c.producer_id) for c in completed]
    entries = list(state.active.txn_index)
    for txn in completed:
        others = sorted(first for first, pid in ongoing if pid != txn.producer_id)
        lso = others[0] if others else txn.last_offset + 1
        if txn.is_aborted:
            entries.append(AbortedTxnEntry(txn.producer_id, txn.first_offset, txn.last_offset,
                                           lso))
        ongoing.remove((txn.first_offset, txn.producer_id))
    active = replace(state.active, txn_index=tuple(entries))
    return replace(state, segments=(*state.segments[:-1], active),
                   producer_state=replace(ps, unreplicated=ps.unreplicated + completed))


def truncate_txn_index(segment: Segment, offset: int) -> tuple[AbortedTxnEntry, ...]:
    """PSF-10 truncateTo: cut at the first entry whose marker offset >= `offset`.

    Spec: KL-TXN-8.
    """
    kept = []
    for entry in segment.txn_index:
        if entry.last_offset >= offset:
            break
        kept.append(entry)
    return tuple(kept)


def upper_bound_offset(state: PartitionState, index: int, info: FetchDataInfo) -> int:
    """TXN-15: the first offset-index entry of the read segment at or after the end of the
    returned bytes (Kafka's search quirk: the second entry when the first matches exactly);
    else the next segment's base; else the LEO. Spec: KL-TXN-9."""
    segment = state.segments[index]
    target = info.fetch_offset_metadata.relative_position_in_segment + info.size_in_bytes
    entries = segment.offset_index
    for slot, (key, position) in enumerate(entries):
        if position >= target:
            if slot == 0 and position == target:
                # AbstractIndex.indexSlotRangeFor: an exact match on the first entry is never
                # probed by the binary search, which then answers the next slot (or none).
                if len(entries) == 1:
                    break
                return entries[1][0]
            return key
    if index + 1 < len(state.segments):
        return state.segments[index + 1].base_offset
    return state.log_end_offset


def collect_aborted(state: PartitionState, start_offset: int, index: int,
                    upper: int) -> tuple[AbortedTransaction, ...]:
    """TXN-16: scan `.txnindex` entries from the read segment on: an entry counts iff its marker
    is >= the fetch offset and it began below `upper`; the scan stops after the first entry
    whose last stable offset >= `upper`. Spec: KL-TXN-9."""
    found: list[AbortedTransaction] = []
    for segment in state.segments[index:]:
        for entry in segment.txn_index:
            if entry.last_offset >= start_offset and entry.first_offset < upper:
                found.append(AbortedTransaction(entry.producer_id, entry.first_offset))
            if entry.last_stable_offset >= upper:
                return tuple(found)
    return tuple(found)


def add_aborted_transactions(state: PartitionState, start_offset: int, index: int,
                             info: FetchDataInfo) -> FetchDataInfo:
    """LL.addAbortedTransactions for a `read_committed` read served by segment `index`.

    Spec: KL-TXN-9.
    """
    upper = upper_bound_offset(state, index, info)
    return replace(info, aborted_transactions=collect_aborted(state, start_offset, index, upper))


def aborted_txn_entries(state: PartitionState) -> tuple[AbortedTxnEntry, ...]:
    """Every live segment's `.txnindex` entries in segment order (the view's `aborted_txns`)."""
    return tuple(entry for segment in state.segments for entry in segment.txn_index)
