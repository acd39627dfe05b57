"""Broken implementations for historical transaction / last-stable-offset bugs (reference §8;
issue 15).

Each entry patches one attribute of the implementation so it behaves like Kafka did before the
fix named by its JIRA. They join the catalogue of broken/catalogue.py (`broken_class`), so
`kafkalog check --broken NAME --family transactions` and
tests/conformance/test_broken_producer_txn.py run them.
"""

from __future__ import annotations

from kafkalog.conformance.broken.catalogue import Broken
from kafkalog.impl.log.log import Log
from kafkalog.impl.log.transactions import last_stable_offset_metadata
from kafkalog.impl.producer.producer_state_manager import (
    AppendInfo,
    CompletedTxn,
    EndTxnMarker,
    ProducerBatch,
)
from kafkalog.impl.segment.log_segment import FetchDataInfo
from kafkalog.model import values as v
from kafkalog.model.errors import IllegalArgumentError, OffsetOutOfRangeError

_REAL_MARKER = AppendInfo.append_end_txn_marker


def _read_with_fuo_above_hw(self: Log, start_offset: int, max_bytes: int,
                            isolation: v.Isolation = v.Isolation.LOG_END,
                            min_one_message: bool = False) -> FetchDataInfo:
    """KAFKA-9807: the HW was read twice while computing the last stable offset, so a FUO above
    the HW (read against a newer HW) bounded read_committed and data above the HW came back."""
    if isolation is not v.Isolation.TXN_COMMITTED or self._first_unstable_offset is None:
        return _REAL_READ(self, start_offset, max_bytes, isolation, min_one_message)
    if start_offset < self._log_start_offset:
        raise OffsetOutOfRangeError(f"offset {start_offset} below the log start offset")
    hw = self.fetch_high_watermark_metadata()
    stale = v.LogOffsetMetadata(hw.message_offset + self.log_end_offset)  # "the newer HW"
    bound = last_stable_offset_metadata(self.local_log, self._first_unstable_offset, stale)
    return self.local_log.read(start_offset, max_bytes, min_one_message, bound, True)


def _marker_tracking_empty_txns(self: AppendInfo, batch: ProducerBatch,
                                marker: EndTxnMarker) -> None:
    """KAFKA-10702: a marker with no open transaction (an empty transaction) was still
    tracked and, if ABORT, indexed, holding the last stable offset until the HW passed it."""
    empty = self.updated.current_txn_first_offset < 0
    _REAL_MARKER(self, batch, marker)
    if empty:
        self.started_txns.append(batch.last_offset)
        self.completed_txns.append(CompletedTxn(batch.producer_id, batch.last_offset,
                                                batch.last_offset, marker.is_abort))


def _marker_keeping_timestamp(self: AppendInfo, batch: ProducerBatch,
                              marker: EndTxnMarker) -> None:
    """KAFKA-9144: markers did not refresh the producer's last timestamp, so a producer whose
    transaction the coordinator aborted could expire early."""
    before = self.updated.last_timestamp
    _REAL_MARKER(self, batch, marker)
    self.updated.last_timestamp = before


def _truncate_hw_before_rebuild(self: Log, target_offset: int) -> bool:
    """KAFKA-12153: truncation updated the HW (and so the FUO) before rebuilding producer state,
    so the FUO missed transactions the truncation reopened."""
    if target_offset < 0:
        raise IllegalArgumentError(f"Cannot truncate to a negative offset ({target_offset}).")
    with self.lock:
        self.local_log.check_if_memory_mapped_buffer_closed()
        if target_offset >= self.log_end_offset:
            self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
            return False
        first = self.local_log.segments.first_segment_base_offset()
        if first is not None and first > target_offset:
            self._truncate_fully_and_start_at(target_offset)
            return True
        removed = self.local_log.truncate_to(target_offset)
        self.producer_state.delete_snapshots_async(s.base_offset for s in removed)
        self.leader_epoch_cache.truncate_from_end(target_offset)
        self._log_start_offset = min(target_offset, self._log_start_offset)
        if self.high_watermark >= self.log_end_offset:
            self.update_high_watermark(self.log_end_offset_metadata)
        self._rebuild_producer_state(target_offset)
        return True


_REAL_READ = Log.read

TXN_BROKEN: dict[str, Broken] = {
    b.name: b
    for b in (
        Broken("lso_above_hw", "KAFKA-9807", "TXN-9",
               "read_committed is bounded by a FUO above the HW",
               Log, "read", _read_with_fuo_above_hw),
        Broken("empty_txn_tracked", "KAFKA-10702", "TXN-3",
               "a marker without an open transaction is tracked and indexed",
               AppendInfo, "append_end_txn_marker", _marker_tracking_empty_txns),
        Broken("marker_keeps_timestamp", "KAFKA-9144", "PST-20",
               "markers do not refresh the producer's last timestamp",
               AppendInfo, "append_end_txn_marker", _marker_keeping_timestamp),
        Broken("truncate_hw_before_rebuild", "KAFKA-12153", "PSR-10",
               "truncation moves the HW and FUO before rebuilding producer state",
               Log, "truncate_to", _truncate_hw_before_rebuild),
    )
}

#: The config family each transaction bug is checked with.
TXN_BROKEN_FAMILY: dict[str, str] = {name: "transactions" for name in TXN_BROKEN}
