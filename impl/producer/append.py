"""Kafka's `ProducerAppendInfo` and the values it validates against (PST-2..PST-23).

Split from producer_state_manager.py (which re-exports every name here): `ProducerStateEntry`
(one producer's epoch, last five batches and open transaction), the batch and marker facts an
append hands over, and `AppendInfo`, which checks a producer's batches against a copy of its entry
so a rejected append leaves the stored state untouched (KAFKA-6683).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from enum import Enum

from kafkalog.model.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)

INT32_MAX = 2**31 - 1
NUM_BATCHES_TO_RETAIN = 5
NO_EPOCH = -1
NO_SEQUENCE = -1


class AppendOrigin(Enum):
    """PST-21: who appends decides what is validated."""

    CLIENT = "client"
    REPLICATION = "replication"
    COORDINATOR = "coordinator"


def increment_sequence(sequence: int, increment: int) -> int:
    """DefaultRecordBatch.incrementSequence (PST-5)."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    """DefaultRecordBatch.decrementSequence (PST-5)."""
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


@dataclass(frozen=True)
class BatchMetadata:
    """PST-4: (lastSeq, lastOffset, offsetDelta, timestamp)."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass
class ProducerStateEntry:
    """PST-3; `batches` oldest first, at most NUM_BATCHES_TO_RETAIN."""

    producer_id: int
    producer_epoch: int = NO_EPOCH
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    current_txn_first_offset: int = -1
    batches: deque[BatchMetadata] = field(default_factory=deque)

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def copy_without_batches(self) -> ProducerStateEntry:
        return ProducerStateEntry(self.producer_id, self.producer_epoch, self.coordinator_epoch,
                                  self.last_timestamp, self.current_txn_first_offset)

    def maybe_update_epoch(self, epoch: int) -> None:
        """PST-13: a different epoch restarts sequence tracking."""
        if self.producer_epoch != epoch:
            self.batches.clear()
            self.producer_epoch = epoch

    def add_batch_metadata(self, meta: BatchMetadata) -> None:
        if len(self.batches) == NUM_BATCHES_TO_RETAIN:
            self.batches.popleft()
        self.batches.append(meta)

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        """PST-10 findDuplicateBatch."""
        if epoch != self.producer_epoch:
            return None
        for meta in self.batches:
            if meta.first_seq == first_seq and meta.last_seq == last_seq:
                return meta
        return None


@dataclass(frozen=True)
class EndTxnMarker:
    """PSF-11: the control record of a COMMIT/ABORT marker batch (TXN-3 reads only these)."""

    is_abort: bool
    coordinator_epoch: int
    timestamp: int


@dataclass(frozen=True)
class ProducerBatch:
    """The header facts of one v2 batch that producer state reads (PST-6)."""

    producer_id: int
    producer_epoch: int
    base_sequence: int
    base_offset: int
    last_offset: int
    max_timestamp: int
    is_transactional: bool = False
    # Control batches (TXN-1): the end-transaction marker read from the first record, if any.
    is_control: bool = False
    marker: EndTxnMarker | None = None

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, self.last_offset - self.base_offset)


@dataclass(frozen=True)
class CompletedTxn:
    """CT (TXN-3 step 3): a transaction closed by the marker at `last_offset`."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


class AppendInfo:
    """ProducerAppendInfo (PAI): validates batches of one producer against a copy."""

    def __init__(self, current: ProducerStateEntry, origin: AppendOrigin) -> None:
        self.current = current
        self.origin = origin
        self.updated = current.copy_without_batches()
        self.started_txns: list[int] = []  # first offsets of transactions opened (TXN-5)
        self.completed_txns: list[CompletedTxn] = []

    def _check_epoch(self, batch: ProducerBatch) -> None:
        """PST-12: a lower epoch is fenced except on replication."""
        if (batch.producer_epoch < self.updated.producer_epoch
                and self.origin is not AppendOrigin.REPLICATION):
            raise InvalidProducerEpochError(
                f"Epoch of producer {batch.producer_id} at offset {batch.base_offset} is "
                f"{batch.producer_epoch}, which is smaller than the last seen epoch "
                f"{self.updated.producer_epoch}"
            )

    def _check_sequence(self, batch: ProducerBatch) -> None:
        """PST-14 checkSequence (client only)."""
        first = batch.base_sequence
        if batch.producer_epoch != self.updated.producer_epoch:
            if first != 0 and self.updated.producer_epoch != NO_EPOCH:
                raise OutOfOrderSequenceError(
                    f"Invalid sequence number for new epoch of producer {batch.producer_id} at "
                    f"offset {batch.base_offset}: {batch.producer_epoch} (request epoch), "
                    f"{first} (seq. number), {self.updated.producer_epoch} (current epoch)"
                )
            return
        if self.updated.batches:
            last = self.updated.last_seq
        elif batch.producer_epoch == self.current.producer_epoch:
            last = self.current.last_seq
        else:
            last = NO_SEQUENCE
        in_sequence = first == last + 1 or (first == 0 and last == INT32_MAX)
        if not (self.current.producer_epoch == NO_EPOCH or in_sequence):
            raise OutOfOrderSequenceError(
                f"Out of order sequence number for producer {batch.producer_id} at offset "
                f"{batch.base_offset}: {first} (incoming seq. number), {last} (current end "
                "sequence number)"
            )

    def append(self, batch: ProducerBatch) -> None:
        """PAI.append: a marker (TXN-3) or a data batch (PST-18)."""
        if batch.is_control:
            if batch.marker is not None:  # a control batch emptied by compaction is ignored
                self.append_end_txn_marker(batch, batch.marker)
            return
        self.append_data_batch(batch)

    def append_end_txn_marker(self, batch: ProducerBatch, marker: EndTxnMarker) -> None:
        """TXN-3: epoch and coordinator-epoch checks (fenced except on replication), the
        completed transaction if one was open (empty ones complete nothing, KAFKA-10702), then
        epoch adopted, transaction closed, coordinator epoch and last timestamp from the marker."""
        self._check_epoch(batch)
        if (marker.coordinator_epoch < self.updated.coordinator_epoch
                and self.origin is not AppendOrigin.REPLICATION):
            raise TransactionCoordinatorFencedError(
                f"Invalid coordinator epoch for producer {batch.producer_id} at offset "
                f"{batch.base_offset}: {marker.coordinator_epoch} (zombie), "
                f"{self.updated.coordinator_epoch} (current)"
            )
        if self.updated.current_txn_first_offset >= 0:
            self.completed_txns.append(CompletedTxn(
                batch.producer_id, self.updated.current_txn_first_offset, batch.last_offset,
                marker.is_abort))
        self.updated.maybe_update_epoch(batch.producer_epoch)
        self.updated.current_txn_first_offset = -1
        self.updated.coordinator_epoch = marker.coordinator_epoch
        self.updated.last_timestamp = marker.timestamp

    def append_data_batch(self, batch: ProducerBatch) -> None:
        """PST-18: validate, then add the batch to the working copy."""
        self._check_epoch(batch)
        if self.origin is AppendOrigin.CLIENT:
            self._check_sequence(batch)
        self.updated.maybe_update_epoch(batch.producer_epoch)
        self.updated.add_batch_metadata(BatchMetadata(
            batch.last_sequence, batch.last_offset, batch.last_offset - batch.base_offset,
            batch.max_timestamp))
        self.updated.last_timestamp = batch.max_timestamp
        if self.updated.current_txn_first_offset >= 0 and not batch.is_transactional:
            raise InvalidTxnStateError(  # PST-18 step 3, every origin
                f"Expected transactional write from producer {batch.producer_id} at offset "
                f"{batch.base_offset}"
            )
        if batch.is_transactional and self.updated.current_txn_first_offset < 0:
            self.updated.current_txn_first_offset = batch.base_offset  # PST-18 step 4
            self.started_txns.append(batch.base_offset)
