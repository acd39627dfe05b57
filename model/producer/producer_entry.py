"""One producer's entry and the facts of its batches (PST-3..PST-6, PST-21): frozen values.

Kafka's `ProducerStateEntry`, `BatchMetadata` and `AppendOrigin`, plus the sequence arithmetic
they need. Both `producer_state.py` (the table and its snapshots) and `transaction_entry.py`
(markers and open transactions) build on these values, so they live below both.

Rules: KL-PROD-3, KL-PROD-4 in specs/log.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from ..values import INT32_MAX, NO_TIMESTAMP

NUM_BATCHES_TO_RETAIN = 5  # PST-27
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1


class AppendOrigin(StrEnum):
    """AppendOrigin (PST-21): who appends decides what is validated."""

    CLIENT = "client"
    REPLICATION = "replication"
    COORDINATOR = "coordinator"


def increment_sequence(sequence: int, increment: int) -> int:
    """PST-5 incrementSequence: wraps from Int.MAX to 0. Spec: KL-PROD-3."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    """PST-5 decrementSequence: the inverse of `increment_sequence`. Spec: KL-PROD-3."""
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


def in_sequence(last_seq: int, next_seq: int) -> bool:
    """PST-14 inSequence: next == last + 1 (no 32-bit wrap), or 0 after Int.MAX. KL-PROD-3."""
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


@dataclass(frozen=True)
class ControlMarker:
    """An end-transaction marker (PSF-11): COMMIT or ABORT with the coordinator epoch."""

    commit: bool
    coordinator_epoch: int


@dataclass(frozen=True)
class ProducerBatch:
    """The producer facts of one v2 batch (PST-6): what the PSM reads from a batch header."""

    producer_id: int
    producer_epoch: int
    base_sequence: int
    base_offset: int
    last_offset: int
    max_timestamp: int
    is_transactional: bool = False
    marker: ControlMarker | None = None  # set for a control batch (TXN-1, TXN-3)
    # CLN-44, TXN-4: a control batch the cleaner emptied; replaying it changes nothing but
    # creates an empty entry for an unknown producer (Kafka's `prepareUpdate` copy).
    empty_control: bool = False

    @property
    def last_sequence(self) -> int:
        """PST-5: -1 without sequences, else base + lastOffsetDelta with wrap."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, self.last_offset - self.base_offset)


@dataclass(frozen=True)
class BatchMetadata:
    """PST-4 BatchMetadata: (lastSeq, lastOffset, offsetDelta, timestamp)."""

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


@dataclass(frozen=True)
class ProducerEntry:
    """PST-3 ProducerStateEntry; `batches` oldest first, at most NUM_BATCHES_TO_RETAIN."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    coordinator_epoch: int = -1
    last_timestamp: int = NO_TIMESTAMP
    current_txn_first_offset: int = -1  # -1 = no open transaction
    batches: tuple[BatchMetadata, ...] = ()

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batches[-1].offset_delta if self.batches else 0
