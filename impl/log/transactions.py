"""Transactions at the log level for `Log` (TXN-7..TXN-16): the cached first unstable offset, the
last stable offset, `.txnindex` appends for aborted transactions and the aborted list of a
`read_committed` fetch.

Kafka's `UnifiedLog.maybeIncrementFirstUnstableOffset`, `fetchLastStableOffsetMetadata`,
`LogSegment.updateTxnIndex` and `LocalLog.addAbortedTransactions`/`collectAbortedTransactions`,
as functions over the log's parts so `log.py` stays small.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from kafkalog.impl.index.offset_index import OffsetPosition
from kafkalog.impl.producer.producer_state_manager import CompletedTxn, ProducerStateManager
from kafkalog.model.errors import OffsetOutOfRangeError
from kafkalog.model.values import AbortedTransaction, AbortedTxnEntry, LogOffsetMetadata

if TYPE_CHECKING:
    from kafkalog.impl.segment.log_segment import FetchDataInfo, LogSegment
    from kafkalog.impl.segment.log_segments import LogSegments


class LocalLog(Protocol):
    """What these functions read of `local_log.LocalLog`. `LocalLog.read` calls
    `add_aborted_transactions`, so naming the class itself here would make the two modules
    import each other."""

    segments: LogSegments

    @property
    def log_end_offset(self) -> int: ...

    def convert_to_offset_metadata_or_throw(self, offset: int) -> LogOffsetMetadata: ...


def first_unstable_offset(psm: ProducerStateManager, log_start_offset: int) -> int | None:
    """TXN-8: the PSM's FUO clamped up to the log start offset (None without transactions)."""
    fuo = psm.first_unstable_offset()
    return None if fuo is None else max(fuo, log_start_offset)


def last_stable_offset(fuo: int | None, high_watermark: int) -> int:
    """TXN-9: the FUO if it is below the HW, else the HW."""
    return fuo if fuo is not None and fuo < high_watermark else high_watermark


def last_stable_offset_metadata(local_log: LocalLog, fuo: int | None,
                                hw: LogOffsetMetadata) -> LogOffsetMetadata:
    """TXN-9 fetchLastStableOffsetMetadata with the HW metadata read once (KAFKA-9807): a FUO
    below it converted to full metadata (message-only when out of range)."""
    if fuo is None or fuo >= hw.message_offset:
        return hw
    try:
        return local_log.convert_to_offset_metadata_or_throw(fuo)
    except OffsetOutOfRangeError:
        return LogOffsetMetadata(fuo)


def index_aborted(local_log: LocalLog, txn: CompletedTxn, lso: int) -> None:
    """TXN-11 updateTxnIndex: an aborted transaction goes to the active segment's index."""
    if txn.is_aborted:
        local_log.segments.active_segment().txn_index.append(
            AbortedTxnEntry(txn.producer_id, txn.first_offset, txn.last_offset, lso))


def add_aborted_transactions(local_log: LocalLog, start_offset: int, segment: LogSegment,
                             info: FetchDataInfo) -> FetchDataInfo:
    """TXN-15/TXN-16 addAbortedTransactions: the upper bound from the read segment's offset
    index (else the next segment's base, else the LEO), then the per-segment scan from the
    read segment until an entry's last stable offset reaches the bound."""
    md = info.fetch_offset_metadata
    start = OffsetPosition(md.message_offset, md.relative_position_in_segment)
    found = segment.offset_index.fetch_upper_bound_offset(start, len(info.records))
    if found is not None:
        upper = found.offset
    else:
        higher = local_log.segments.higher_segment(segment.base_offset)
        upper = higher.base_offset if higher is not None else local_log.log_end_offset
    aborted: list[AbortedTransaction] = []
    current: LogSegment | None = segment
    while current is not None:
        entries, complete = current.txn_index.collect_aborted(start_offset, upper)
        aborted.extend(AbortedTransaction(e.producer_id, e.first_offset) for e in entries)
        if complete:
            break
        current = local_log.segments.higher_segment(current.base_offset)
    return replace(info, aborted_transactions=tuple(aborted))


def aborted_txn_entries(local_log: LocalLog) -> tuple[AbortedTxnEntry, ...]:
    """Every live segment's `.txnindex` entries, in segment order (the state view)."""
    return tuple(e for s in local_log.segments for e in s.txn_index.entries())
