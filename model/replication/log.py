"""One replica's log for the replication model: the single-log model seen record by record.

Each replica is a `PartitionState` of `kafkalog.model.log`; this module is the thin adapter the
replication protocol needs on top of it. Every leader append is one batch holding one record,
like the records of the TLA+ specifications (`[id, epoch]` pairs), so offsets and records map one
to one. Not modelled: multi-record batches, so the mid-batch outcomes of KAFKA-6361 (the
published n < 20 and n > 20 cases) collapse onto its silent-divergence case (n = 20).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import log
from ..state import PartitionState
from ..values import BatchSpec, EpochEntry, LogConfig, Record

ReplicaLog = PartitionState

_CONFIG = LogConfig()
_TIMESTAMP = 0  # records carry a fixed timestamp: time plays no part in replication here


@dataclass(frozen=True)
class Entry:
    """The record at one offset as replication sees it: the epoch that wrote it and its payload."""

    epoch: int  # the batch's partition leader epoch (FMT-45)
    payload: str  # unique per leader append ("m1", "m2", ...), so equal payload = same record

    def label(self) -> str:
        """`m2@e0`: the notation of the published scenarios."""
        return f"{self.payload}@e{self.epoch}"


def new_replica_log() -> ReplicaLog:
    """An empty replica log with Kafka's default configuration. Spec: KL-STATE-1."""
    return log.empty_log(_CONFIG)


def entries(replica: ReplicaLog) -> tuple[Entry, ...]:
    """The records from offset 0 to the LEO (exclusive), in offset order; O(records)."""
    out: list[Entry] = []
    for segment in replica.segments:
        for batch in segment.batches:
            out.extend(
                Entry(batch.partition_leader_epoch, (record.value or b"").decode())
                for record in batch.records
            )
    return tuple(out)


def log_end_offset(replica: ReplicaLog) -> int:
    """The LEO (exclusive)."""
    return replica.log_end_offset


def high_watermark(replica: ReplicaLog) -> int:
    """The local HW (exclusive)."""
    return replica.high_watermark.message_offset


def epoch_entries(replica: ReplicaLog) -> tuple[EpochEntry, ...]:
    """The leader-epoch cache (EPO-1)."""
    return replica.epochs


def append_as_leader(replica: ReplicaLog, payload: str, epoch: int) -> ReplicaLog:
    """Append one record as one batch stamped with `epoch`. Spec: KL-APPEND-1."""
    record = Record(key=None, value=payload.encode(), timestamp=_TIMESTAMP)
    replica, _ = log.append_as_leader(replica, (record,), epoch)
    return replica


def append_as_follower(replica: ReplicaLog, base_offset: int,
                       records: tuple[Entry, ...]) -> ReplicaLog:
    """Append records the leader returned, starting at `base_offset`; one batch per record.

    Raises UnexpectedAppendOffsetError when `base_offset` is below the LEO (ERR-26).
    """
    batches = tuple(
        BatchSpec(base_offset + i, entry.epoch,
                  (Record(key=None, value=entry.payload.encode(), timestamp=_TIMESTAMP),))
        for i, entry in enumerate(records)
    )
    replica, _ = log.append_as_follower(replica, batches)
    return replica


def truncate_to(replica: ReplicaLog, offset: int) -> ReplicaLog:
    """Truncate to `offset`; the HW, recovery point and epoch cache follow (LOG-40, EPO-6)."""
    replica, _ = log.truncate_to(replica, offset)
    return replica


def update_high_watermark(replica: ReplicaLog, offset: int) -> ReplicaLog:
    """Set the local HW, clamped into [log start, LEO]; it may go down (LOG-5)."""
    replica, _ = log.update_high_watermark(replica, offset)
    return replica


def flush(replica: ReplicaLog) -> ReplicaLog:
    """Flush to the LEO: everything below the recovery point survives a crash (LOG-26)."""
    replica, _ = log.flush(replica)
    return replica


def assign_epoch(replica: ReplicaLog, epoch: int) -> ReplicaLog:
    """A new leader records (epoch, LEO) in its cache (LOG-50, KAFKA-7415)."""
    replica, _ = log.assign_epoch(replica, epoch, replica.log_end_offset)
    return replica


def crash(replica: ReplicaLog, lost: int) -> tuple[ReplicaLog, int]:
    """Lose up to `lost` unflushed records from the tail; returns how many were lost.

    Only records at or above the recovery point can be lost. Recovery then truncates the epoch
    cache to the new LEO (REC-13) and the checkpointed HW is clamped to it (LOG-5), which
    `truncate_to` does. A negative `lost` is a programmer error.
    """
    assert lost >= 0, "lost is a count of records"
    keep = max(replica.recovery_point, replica.log_end_offset - lost)
    return truncate_to(replica, keep), replica.log_end_offset - keep
