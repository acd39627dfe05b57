"""Transactions at the level of one producer entry (TXN-1..TXN-6, PST-18): control records,
end-transaction markers and the open-transaction bookkeeping of a `ProducerEntry`.

Kafka's `ProducerAppendInfo.appendEndTxnMarker` and the transactional steps of `appendDataBatch`
as pure functions. `producer_state.apply_append` calls them for every batch with a producer id;
the log-level consequences (first unstable offset, last stable offset, `.txnindex`) are in
`transactions.py`. It builds only on the values of `producer_entry.py`, so `producer_state`
can use it.

Rules: KL-TXN-1..KL-TXN-4 in specs/log.md.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import (
    IllegalArgumentError,
    InvalidRecordError,
    InvalidTxnStateError,
    TransactionCoordinatorFencedError,
)
from ..producer.producer_entry import (
    AppendOrigin,
    ControlMarker,
    ProducerBatch,
    ProducerEntry,
)
from ..values import Record

ABORT = 0  # PSF-11 control record type ids
COMMIT = 1
CONTROL_KEY_SIZE = 4  # int16 version + int16 type
MARKER_VALUE_SIZE = 6  # int16 version + int32 coordinator epoch


@dataclass(frozen=True)
class CompletedTxn:
    """CT: a transaction closed by a marker (TXN-3 step 3); `last_offset` is the marker's."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


def marker_record(commit: bool, coordinator_epoch: int, timestamp: int) -> Record:
    """PSF-11: the one control record of a marker batch (key version 0 + type, value version 0 +
    coordinator epoch). Spec: KL-TXN-1."""
    if not -(2**31) <= coordinator_epoch < 2**31:
        raise IllegalArgumentError(f"coordinator epoch {coordinator_epoch} is not an int32",
                                   where="marker")
    key = (0).to_bytes(2, "big") + (COMMIT if commit else ABORT).to_bytes(2, "big")
    value = (0).to_bytes(2, "big") + coordinator_epoch.to_bytes(4, "big", signed=True)
    return Record(key=key, value=value, timestamp=timestamp)


def parse_marker(record: Record, where: str) -> ControlMarker:
    """TXN-4 marker parsing (ControlRecordType, EndTransactionMarker): short or negative-version
    keys and values are InvalidRecordError; higher versions parse as 0; a type other than
    ABORT/COMMIT is IllegalArgumentError. Spec: KL-TXN-1."""
    key, value = record.key or b"", record.value or b""
    if len(key) < CONTROL_KEY_SIZE or int.from_bytes(key[:2], "big", signed=True) < 0:
        raise InvalidRecordError(f"Invalid control record key of {len(key)} bytes", where=where)
    kind = int.from_bytes(key[2:4], "big", signed=True)
    if kind not in (ABORT, COMMIT):
        raise IllegalArgumentError(f"Invalid control record type for end transaction marker "
                                   f"{kind}", where=where)
    if len(value) < MARKER_VALUE_SIZE or int.from_bytes(value[:2], "big", signed=True) < 0:
        raise InvalidRecordError(f"Invalid end transaction marker value of {len(value)} bytes",
                                 where=where)
    return ControlMarker(kind == COMMIT, int.from_bytes(value[2:6], "big", signed=True))


def check_coordinator_epoch(entry: ProducerEntry, batch: ProducerBatch, marker: ControlMarker,
                            origin: AppendOrigin) -> None:
    """TXN-3 step 2: a lower coordinator epoch is fenced except on the replication path.

    Spec: KL-TXN-2.
    """
    fenced = marker.coordinator_epoch < entry.coordinator_epoch
    if fenced and origin is not AppendOrigin.REPLICATION:
        raise TransactionCoordinatorFencedError(
            f"Invalid coordinator epoch for producer {batch.producer_id} at offset "
            f"{batch.base_offset}: {marker.coordinator_epoch} (zombie), "
            f"{entry.coordinator_epoch} (current)",
            where=f"producer {batch.producer_id}",
        )


def end_txn(entry: ProducerEntry, batch: ProducerBatch, marker: ControlMarker,
            origin: AppendOrigin) -> tuple[ProducerEntry, CompletedTxn | None]:
    """TXN-3 appendEndTxnMarker on the working copy (the epoch is checked by the caller):
    coordinator epoch check, the completed transaction if one was open (an empty transaction
    completes nothing, KAFKA-10702), then adopt the epoch (clearing the batch cache iff it
    changed), close the transaction, store the coordinator epoch and the marker's timestamp.

    Spec: KL-TXN-2.
    """
    check_coordinator_epoch(entry, batch, marker, origin)
    completed = None
    if entry.current_txn_first_offset >= 0:
        completed = CompletedTxn(batch.producer_id, entry.current_txn_first_offset,
                                 batch.last_offset, not marker.commit)
    batches = entry.batches if entry.producer_epoch == batch.producer_epoch else ()
    return replace(entry, producer_epoch=batch.producer_epoch, batches=batches,
                   current_txn_first_offset=-1, coordinator_epoch=marker.coordinator_epoch,
                   last_timestamp=batch.max_timestamp), completed


def data_txn(entry: ProducerEntry, batch: ProducerBatch) -> ProducerEntry:
    """PST-18 steps 3-4: non-transactional data inside an open transaction is InvalidTxnState
    (every origin); the first transactional batch opens a transaction at its base offset.

    Spec: KL-TXN-3.
    """
    if entry.current_txn_first_offset >= 0 and not batch.is_transactional:
        raise InvalidTxnStateError(
            f"Expected transactional write from producer {batch.producer_id} at offset "
            f"{batch.base_offset} in partition",
            where=f"producer {batch.producer_id}",
        )
    if entry.current_txn_first_offset < 0 and batch.is_transactional:
        return replace(entry, current_txn_first_offset=batch.base_offset)
    return entry
