"""Broken implementations for historical producer-state bugs (KAFKA tickets).

Each entry changes one attribute of `kafkalog.impl.producer`, stated against the current code
(base.py), so the real implementation behaves like Kafka did before the fix named by its JIRA.
They share one namespace with the log's bugs (registry.py `broken_class`), so
`kafkalog check --broken NAME --family producers` and
tests/conformance/test_broken_producer_txn.py run them.
"""

from __future__ import annotations

from kafkalog.conformance.broken.base import Broken, diff
from kafkalog.impl.producer.producer_state_manager import (
    AppendInfo,
    BatchMetadata,
    ProducerStateEntry,
    ProducerStateManager,
)

_REAL_ON_LOG_START = ProducerStateManager.on_log_start_offset_incremented


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


PRODUCER_BROKEN: dict[str, Broken] = {
    b.name: b
    for b in (
        # KAFKA-5494: only the last batch was cached, so retries of older in-flight batches fail.
        Broken("producer_cache_one_batch", "KAFKA-5494", "PST-10",
               "only the last batch is cached: older in-flight retries are out of order",
               ProducerStateEntry, "add_batch_metadata",
               diff(("        if len(self.batches) == NUM_BATCHES_TO_RETAIN:\n"
                     "            self.batches.popleft()\n",
                     "        self.batches.clear()\n"))),
        # KAFKA-6003: replication validated sequences, so a follower looped on
        # OutOfOrderSequence.
        Broken("follower_checks_sequence", "KAFKA-6003", "PST-21",
               "follower appends validate sequences",
               AppendInfo, "append_data_batch",
               diff(("        if self.origin is AppendOrigin.CLIENT:\n"
                     "            self._check_sequence(batch)\n",
                     "        self._check_sequence(batch)\n"))),
        # KAFKA-6683: validation mutated the stored entry before the append succeeded (and
        # before the roll's snapshot), instead of working on a copy.
        Broken("validation_mutates_state", "KAFKA-6683", "PST-7",
               "validation updates the stored entry before the append (and the roll snapshot)",
               ProducerStateManager, "prepare_update",
               diff(("        current = self.producers.get(producer_id) or "
                     "ProducerStateEntry(producer_id)\n"
                     "        return AppendInfo(current, origin)\n",
                     "        current = self.producers.get(producer_id)\n"
                     "        if current is None:\n"
                     "            current = ProducerStateEntry(producer_id)\n"
                     "            self._put(current)\n"
                     "        info = AppendInfo(current, origin)\n"
                     "        info.updated = current\n"
                     "        return info\n"))),
        # KAFKA-7692: the first sequence came from plain subtraction, negative across a wrap.
        Broken("wrap_first_seq_negative", "KAFKA-7692", "PST-5",
               "a batch wrapping past Int.MAX caches a negative first sequence",
               BatchMetadata, "first_seq",
               diff(("decrement_sequence(self.last_seq, self.offset_delta)",
                     "self.last_seq - self.offset_delta"))),
        Broken("log_start_evicts_producers", "KAFKA-7190", "PST-23",
               "retention evicts producers whose data it deleted",
               ProducerStateManager, "on_log_start_offset_incremented",
               _log_start_evicts_producers),
        Broken("log_start_deletes_snapshots", "KAFKA-9393", "PSR-2",
               "a log-start increment deletes the snapshots below it",
               ProducerStateManager, "on_log_start_offset_incremented",
               _log_start_deletes_snapshots),
        # KAFKA-12964: asynchronous deletion without the `.deleted` rename, so a timer deletes
        # a newer snapshot written under the same name in the meantime.
        Broken("snapshot_deleted_by_name", "KAFKA-12964", "PSR-2",
               "a delayed snapshot deletion removes a newer file of the same name",
               ProducerStateManager, "delete_snapshots_async",
               diff(("            doomed = path.with_name(path.name + DELETED_SUFFIX)\n"
                     "            try:\n"
                     "                self.fs.rename(path, doomed)\n"
                     "            except Exception:  # noqa: BLE001 - PSM:598: an already "
                     "missing file is ignored\n"
                     "                if self.fs.exists(path):\n"
                     "                    raise\n"
                     "                continue\n",
                     "            doomed = path\n"))),
    )
}

#: The config family each producer bug is checked with.
PRODUCER_BROKEN_FAMILY: dict[str, str] = {name: "producers" for name in PRODUCER_BROKEN}
