"""Broken implementations for historical transaction / last-stable-offset bugs (KAFKA tickets).

Each entry changes one attribute of the implementation, stated against the current code
(base.py), so it behaves like Kafka did before the fix named by its JIRA. They share one
namespace with the log's bugs (registry.py `broken_class`), so
`kafkalog check --broken NAME --family transactions` and
tests/conformance/test_broken_producer_txn.py run them.
"""

from __future__ import annotations

from kafkalog.conformance.broken.base import Broken, diff
from kafkalog.impl.index.transaction_index import TransactionIndex
from kafkalog.impl.log.log import Log
from kafkalog.impl.producer.producer_state_manager import (
    AppendInfo,
    CompletedTxn,
    EndTxnMarker,
    ProducerBatch,
)

_REAL_MARKER = AppendInfo.append_end_txn_marker


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


TXN_BROKEN: dict[str, Broken] = {
    b.name: b
    for b in (
        # KAFKA-9807: the HW was read twice while computing the last stable offset, so a FUO
        # above the HW (read against a newer HW) bounded read_committed and data above the HW
        # came back.
        Broken("lso_above_hw", "KAFKA-9807", "TXN-9",
               "read_committed is bounded by a FUO above the HW",
               Log, "read",
               diff(("            hw = self.fetch_high_watermark_metadata()\n",
                     "            hw = self.fetch_high_watermark_metadata()\n"
                     "            if self._first_unstable_offset is not None:\n"
                     "                hw = LogOffsetMetadata(hw.message_offset + "
                     "self.log_end_offset)\n"))),
        Broken("empty_txn_tracked", "KAFKA-10702", "TXN-3",
               "a marker without an open transaction is tracked and indexed",
               AppendInfo, "append_end_txn_marker", _marker_tracking_empty_txns),
        Broken("marker_keeps_timestamp", "KAFKA-9144", "PST-20",
               "markers do not refresh the producer's last timestamp",
               AppendInfo, "append_end_txn_marker", _marker_keeping_timestamp),
        # KAFKA-12153: truncation updated the HW (and so the FUO) before rebuilding producer
        # state, so the FUO missed transactions the truncation reopened.
        Broken("truncate_hw_before_rebuild", "KAFKA-12153", "PSR-10",
               "truncation moves the HW and FUO before rebuilding producer state",
               Log, "truncate_to",
               diff(("            self._rebuild_producer_state(target_offset)  # PSR-10, before "
                     "the HW (KAFKA-12153)\n"
                     "            self._snapshot_removals_durable()\n"
                     "            if self.high_watermark >= self.log_end_offset:\n"
                     "                self.update_high_watermark(self.log_end_offset_metadata)\n",
                     "            if self.high_watermark >= self.log_end_offset:\n"
                     "                self.update_high_watermark(self.log_end_offset_metadata)\n"
                     "            self._rebuild_producer_state(target_offset)\n"
                     "            self._snapshot_removals_durable()\n"))),
        # Two slips of collectAbortedTxns (TXN-16) that mutation testing left alive until the
        # `reads_across_aborts` scenario read from inside a segment of several aborts.
        Broken("aborted_list_keeps_ended", "TXN-16", "TXN-15",
               "read_committed lists aborted transactions that ended before the fetch offset",
               TransactionIndex, "collect_aborted",
               diff(("if entry.last_offset >= fetch_offset and entry.first_offset",
                     "if entry.first_offset"))),
        Broken("aborted_scan_stops_at_fetch", "TXN-16", "TXN-15",
               "the aborted-transaction scan ends at the first entry stable past the fetch "
               "offset, not past the read's end",
               TransactionIndex, "collect_aborted",
               diff(("if entry.last_stable_offset >= upper_bound_offset:",
                     "if entry.last_stable_offset >= fetch_offset:"))),
    )
}

#: The config family each transaction bug is checked with.
TXN_BROKEN_FAMILY: dict[str, str] = {name: "transactions" for name in TXN_BROKEN}
