"""Broken implementations for historical producer-state bugs (reference §8; issue 14).

Each entry patches one attribute of `kafkalog.impl.producer.producer_state_manager` so the real
implementation behaves like Kafka did before the fix named by its JIRA. They are registered in
the same catalogue as broken/catalogue.py (`broken_class`), so `kafkalog check --broken NAME
--family producers` and tests/conformance/test_broken_producer_txn.py run them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kafkalog.conformance.broken.catalogue import Broken
from kafkalog.impl.producer.producer_state_manager import (
    AppendInfo,
    AppendOrigin,
    BatchMetadata,
    ProducerStateEntry,
    ProducerStateManager,
)


def _remember_last_batch_only(self: ProducerStateEntry, meta: BatchMetadata) -> None:
    """KAFKA-5494: only the last batch was cached, so retries of older in-flight batches fail."""
    self.batches.clear()
    self.batches.append(meta)


def _append_checking_every_origin(self: AppendInfo, batch: Any) -> None:
    """KAFKA-6003: replication validated sequences, so a follower looped on OutOfOrderSequence."""
    self._check_epoch(batch)
    self._check_sequence(batch)
    self.updated.maybe_update_epoch(batch.producer_epoch)
    self.updated.add_batch_metadata(BatchMetadata(
        batch.last_sequence, batch.last_offset, batch.last_offset - batch.base_offset,
        batch.max_timestamp))
    self.updated.last_timestamp = batch.max_timestamp


def _prepare_update_in_place(self: ProducerStateManager, producer_id: int,
                             origin: AppendOrigin) -> AppendInfo:
    """KAFKA-6683: validation mutated the stored entry before the append succeeded (and before
    the roll's snapshot), instead of working on a copy."""
    current = self.producers.get(producer_id)
    if current is None:
        current = ProducerStateEntry(producer_id)
        self._put(current)
    info = AppendInfo(current, origin)
    info.updated = current
    return info


def _first_seq_by_subtraction(self: BatchMetadata) -> int:
    """KAFKA-7692: the first sequence came from plain subtraction, negative across a wrap."""
    return self.last_seq - self.offset_delta


def _log_start_evicts_producers(self: ProducerStateManager, log_start: int) -> None:
    """KAFKA-7190 [HIST < 2.5]: a log-start increment evicted producers whose last data offset
    was below it, so retention made producers unknown (UNKNOWN_PRODUCER_ID)."""
    for pid in [p for p, e in self.producers.items() if e.last_data_offset < log_start]:
        del self.producers[pid]
    _REAL_ON_LOG_START(self, log_start)


def _log_start_deletes_snapshots(self: ProducerStateManager, log_start: int) -> None:
    """KAFKA-9393 [HIST < 2.8]: a log-start increment deleted the snapshots below it."""
    for offset in [o for o in self.snapshots if o < log_start]:
        self._delete_now(offset)
    _REAL_ON_LOG_START(self, log_start)


def _delete_later_by_name(self: ProducerStateManager, offsets: Iterable[int]) -> None:
    """KAFKA-12964: asynchronous deletion without the `.deleted` rename, so a timer deletes a
    newer snapshot written under the same name in the meantime."""
    for offset in offsets:
        path = self.snapshots.pop(offset, None)
        if path is None:
            continue

        def delete_later(p: Any = path) -> None:
            self.fs.delete_if_exists(p)

        self.time.scheduler.schedule("delete-producer-snapshot", delete_later,
                                     self.file_delete_delay_ms)


_REAL_ON_LOG_START = ProducerStateManager.on_log_start_offset_incremented

PRODUCER_BROKEN: dict[str, Broken] = {
    b.name: b
    for b in (
        Broken("producer_cache_one_batch", "KAFKA-5494", "PST-10",
               "only the last batch is cached: older in-flight retries are out of order",
               ProducerStateEntry, "add_batch_metadata", _remember_last_batch_only),
        Broken("follower_checks_sequence", "KAFKA-6003", "PST-21",
               "follower appends validate sequences",
               AppendInfo, "append_data_batch", _append_checking_every_origin),
        Broken("validation_mutates_state", "KAFKA-6683", "PST-7",
               "validation updates the stored entry before the append (and the roll snapshot)",
               ProducerStateManager, "prepare_update", _prepare_update_in_place),
        Broken("wrap_first_seq_negative", "KAFKA-7692", "PST-5",
               "a batch wrapping past Int.MAX caches a negative first sequence",
               BatchMetadata, "first_seq", property(_first_seq_by_subtraction)),
        Broken("log_start_evicts_producers", "KAFKA-7190", "PST-23",
               "retention evicts producers whose data it deleted",
               ProducerStateManager, "on_log_start_offset_incremented",
               _log_start_evicts_producers),
        Broken("log_start_deletes_snapshots", "KAFKA-9393", "PSR-2",
               "a log-start increment deletes the snapshots below it",
               ProducerStateManager, "on_log_start_offset_incremented",
               _log_start_deletes_snapshots),
        Broken("snapshot_deleted_by_name", "KAFKA-12964", "PSR-2",
               "a delayed snapshot deletion removes a newer file of the same name",
               ProducerStateManager, "delete_snapshots_async", _delete_later_by_name),
    )
}

#: The config family each producer bug is checked with.
PRODUCER_BROKEN_FAMILY: dict[str, str] = {name: "producers" for name in PRODUCER_BROKEN}
