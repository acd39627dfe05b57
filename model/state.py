"""The state of one partition log: frozen values only (specs/log.md, "State").

Producer and transaction state live in `ProducerState` (model/producer/); the log-level
transaction fields (first unstable offset, `.txnindex` entries) and the cleaner checkpoint are
here. Not modelled: tiered storage (specs/log.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from .producer.producer_entry import ProducerBatch
from .producer.producer_state import ProducerState
from .producer.transaction_entry import parse_marker
from .values import (
    NO_TIMESTAMP,
    AbortedTxnEntry,
    EpochEntry,
    LogConfig,
    LogOffsetMetadata,
    Record,
    TimestampType,
)

_Value = TypeVar("_Value")


def evolve(value: _Value, **changes: Any) -> _Value:
    """`dataclasses.replace(value, **changes)` for the model's frozen values at a fifth of the
    cost, for the paths every append takes. It builds the same value: none of them has a
    `__post_init__`, an init=False field or slots, so `replace` only copies the fields."""
    fields = value.__dict__
    assert changes.keys() <= fields.keys(), f"no such field: {changes.keys() - fields.keys()}"
    assert not hasattr(value, "__post_init__"), f"{type(value).__name__} needs replace()"
    copy: _Value = object.__new__(type(value))
    copy.__dict__.update(fields)
    copy.__dict__.update(changes)
    return copy


@dataclass(frozen=True)
class Batch:
    """One uncompressed v2 batch stored in a segment (FMT-45)."""

    base_offset: int  # Invariant: base_offset <= last_offset
    last_offset: int  # inclusive; records take base_offset .. last_offset consecutively
    partition_leader_epoch: int  # -1 = none (FMT-45)
    max_timestamp: int  # the header's maxTimestamp; the clock's now for LOG_APPEND_TIME
    size: int  # bytes, from sizes.batch_size (FMT-50)
    position: int  # byte position of the batch in its segment's `.log`
    records: tuple[Record, ...]
    timestamp_type: TimestampType = TimestampType.CREATE_TIME
    producer_id: int = -1  # FMT-45 producer fields (PST-6); -1 = not idempotent
    producer_epoch: int = -1
    base_sequence: int = -1
    is_transactional: bool = False  # attributes bit 4 (TXN-1)
    is_control: bool = False  # attributes bit 5: one end-transaction marker record (TXN-1)
    # KL-VERSION-2: the offset its append reported for the max timestamp when that is not the
    # batch's last offset (Kafka 3.6 leader appends: the first record carrying it); else None.
    reported_max_offset: int | None = None
    # CLN-47 (KL-CLEAN-9): the records' offsets once cleaning removed some of them (strictly
    # increasing, inside [base_offset, last_offset]); None = consecutive from base_offset.
    record_offsets: tuple[int, ...] | None = None
    # CLN-33 (KL-CLEAN-8): the KIP-534 delete horizon a cleaning pass stamped on the batch
    # (attributes bit 6; the base timestamp holds it); None = no horizon.
    delete_horizon_ms: int | None = None

    def record_offset(self, index: int) -> int:
        """The offset of the record at `index` (gaps appear once the batch was cleaned)."""
        if self.record_offsets is None:
            return self.base_offset + index
        return self.record_offsets[index]

    @property
    def max_timestamp_offset(self) -> int:
        """The offset paired with this batch's max timestamp in the segment's max so far."""
        return self.last_offset if self.reported_max_offset is None else self.reported_max_offset

    def producer_batch(self) -> ProducerBatch:
        """The producer facts the producer-state manager reads from this batch (PST-6, TXN-3)."""
        marker = None
        if self.is_control and not self.records:
            # CLN-44, TXN-4: a cleaned-out control batch changes no producer state.
            return ProducerBatch(self.producer_id, self.producer_epoch, self.base_sequence,
                                 self.base_offset, self.last_offset, self.max_timestamp,
                                 self.is_transactional, None, empty_control=True)
        if self.is_control:
            marker = parse_marker(self.records[0], f"control batch at offset {self.base_offset}")
        return ProducerBatch(self.producer_id, self.producer_epoch, self.base_sequence,
                             self.base_offset, self.last_offset, self.max_timestamp,
                             self.is_transactional, marker)

    def record_timestamp(self, index: int) -> int:
        """A record's effective timestamp: the batch's max timestamp under LOG_APPEND_TIME."""
        if self.timestamp_type is TimestampType.LOG_APPEND_TIME:
            return self.max_timestamp
        return self.records[index].timestamp

    def offset_of_max_timestamp(self) -> int:
        """LOG-48 step 4: the first record carrying the batch's max timestamp (else base)."""
        for i in range(len(self.records)):
            if self.record_timestamp(i) == self.max_timestamp:
                return self.record_offset(i)
        return self.base_offset

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


#: `Segment.roll_jitter_bounds` before any decision: every jitter of the config's range.
JITTER_UNCONSTRAINED = (0, -1)


@dataclass(frozen=True)
class Segment:
    """One segment: its batches, its two indexes and its roll clock (SEG-1)."""

    base_offset: int  # Invariant: every batch offset in [base_offset, base_offset + Int.MAX]
    batches: tuple[Batch, ...]  # in file order; positions are the running sum of sizes
    size: int  # bytes of `.log`; Invariant: size == sum of batch sizes
    # Offset index (FMT-10, FMT-12): (absolute key = a batch's last offset, batch position).
    offset_index: tuple[tuple[int, int], ...]
    offset_index_max_entries: int  # FMT-26 / FMT-28: capacity now (trimmed on roll and close)
    # Time index (FMT-19): (timestamp, absolute offset of the batch that carried it).
    time_index: tuple[tuple[int, int], ...]
    time_index_max_entries: int  # capacity now; the last slot is reserved (FMT-21)
    bytes_since_last_index_entry: int  # SEG-3; reset by truncation and reload
    created_ms: int  # SEG-1: the clock at construction (including load)
    last_modified_ms: int  # SEG-19 fallback: the clock at the last write/truncation of `.log`
    roll_jitter_ms: int  # SEG-8 drawn deterministically (KL-ROLL-4)
    # `.txnindex` (PSF-8, TXN-11): aborted transactions whose ABORT marker is in this segment,
    # in marker-offset order.
    txn_index: tuple[AbortedTxnEntry, ...] = ()
    # KL-ALLOW-2: the jitters Kafka may have drawn that agree with every roll decision observed
    # so far (inclusive bounds); JITTER_UNCONSTRAINED (hi < lo) = the config's whole range.
    roll_jitter_bounds: tuple[int, int] = JITTER_UNCONSTRAINED
    # SEG-13, SEG-17: Kafka's running (max timestamp, offset) once read; None (UNKNOWN) until
    # something reads it after the segment is opened, and then it is the time index's last
    # entry. A truncation reads it only after cutting the index, so it can forget the batches
    # before the cut (KL-TRUNC-3): state of its own, not a function of the batches.
    max_so_far: tuple[int, int] | None = None

    @property
    def is_empty(self) -> bool:
        return not self.batches

    @property
    def rolling_based_timestamp(self) -> int | None:
        """SEG-3 step 2 / SEG-7 step 1: the first batch's max timestamp, unset when empty."""
        return self.batches[0].max_timestamp if self.batches else None

    @property
    def max_timestamp_and_offset(self) -> tuple[int, int]:
        """SEG-3 step 5.1: Kafka's `readMaxTimestampAndOffsetSoFar`: the running max, or, until
        something read it, the time index's last entry ((-1, base) when empty, FMT-19)."""
        if self.max_so_far is not None:
            return self.max_so_far
        return self.time_index[-1] if self.time_index else (NO_TIMESTAMP, self.base_offset)

    @property
    def batches_max_timestamp_and_offset(self) -> tuple[int, int]:
        """SEG-15: (largest batch max timestamp, that batch's offset), first wins, as recovery
        derives it; (-1, -1) (UNKNOWN) when no batch carries a timestamp.
        """
        best = (NO_TIMESTAMP, -1)
        for batch in self.batches:
            if batch.max_timestamp > best[0]:
                best = (batch.max_timestamp, batch.max_timestamp_offset)
        return best

    @property
    def next_offset(self) -> int:
        """SEG-12 readNextOffset: the last batch's last offset + 1, or the base when empty."""
        return self.batches[-1].next_offset if self.batches else self.base_offset

    def largest_timestamp(self) -> int:
        """SEG-19: the max timestamp if >= 0, else the `.log` file's last-modified time."""
        max_ts = self.max_timestamp_and_offset[0]
        return max_ts if max_ts >= 0 else self.last_modified_ms


@dataclass(frozen=True)
class PartitionState:
    """One partition log (LOG-1, LOC-1). The observable part is `log.view(state)`."""

    config: LogConfig
    segments: tuple[Segment, ...]  # ascending, unique bases; never empty (LOG-2 (5))
    log_start_offset: int  # Invariant: first segment base <= log_start_offset <= high watermark
    # LOG-1: the HW with its metadata; message-only until materialised (LOG-11).
    # Invariant: log_start_offset <= high_watermark.message_offset <= log_end_offset
    high_watermark: LogOffsetMetadata
    log_end_offset: int  # exclusive; the next offset a leader assigns (LOC-2)
    recovery_point: int  # Invariant: recovery_point <= log_end_offset (LOC-2, KL-FLUSH-1)
    epochs: tuple[EpochEntry, ...]  # leader-epoch cache, strictly increasing (EPO-1)
    now_ms: int  # the injected clock (KL-CLOCK-1)
    # Base offsets whose `<base>.*.deleted` files exist (LOC-11); sorted, unique.
    deleted_files: tuple[int, ...] = ()
    # Timers of asynchronous deletions: (due_ms, base offset), in scheduling order (LOC-11).
    deletion_timers: tuple[tuple[int, int], ...] = ()
    # KL-ALLOW-3: bases of rolls whose asynchronous flush Kafka may not have run yet.
    pending_flushes: tuple[int, ...] = ()
    # Producer state, its snapshots and expiry schedule (KL-PROD-*).
    producer_state: ProducerState = ProducerState()
    # TXN-8: UnifiedLog's cached first unstable offset, recomputed only where Kafka recomputes it
    # (HW updates, non-duplicate appends, log-start increments, load); None = no open transaction.
    first_unstable_offset: int | None = None
    # CLN-21 `cleaner-offset-checkpoint`: the first offset not yet cleaned; None = no entry.
    # Invariant: log_start_offset <= cleaner_checkpoint <= log_end_offset after a pass (CLN-15).
    cleaner_checkpoint: int | None = None
    # KL-INV-19's lower bound: the log start offset when the cleaner last wrote its checkpoint (a
    # pass's end, or a reset, CLN-15). Below it no pass is known to have read the data, which a
    # crash can bring back above a lowered log start (GAP-12). Model bookkeeping, not observed.
    cleaner_floor: int = 0
    # KL-ALLOW-11 (kafka mode): the `cleaner-offset-checkpoint` entry Kafka's load kept above the
    # loaded LEO (its LogCleanerManager reads the file as is and resets it only at the next
    # selection, CLN-15), while `cleaner_checkpoint` holds kafkalog's lowering to the active
    # base. None otherwise; any write of the entry (a selection, a pass, CLN-68) clears it.
    cleaner_entry_kept: int | None = None

    @property
    def cleaner_file_entry(self) -> int | None:
        """What `cleaner-offset-checkpoint` holds for the log (FMT-9): the entry a Kafka load
        kept, else the cleaner checkpoint."""
        kept = self.cleaner_entry_kept
        return self.cleaner_checkpoint if kept is None else kept

    @property
    def active(self) -> Segment:
        """MAP-2 activeSegment: the last segment."""
        return self.segments[-1]

    @property
    def log_end_offset_metadata(self) -> LogOffsetMetadata:
        """LOC-2: (LEO, active segment base, active segment size)."""
        return LogOffsetMetadata(self.log_end_offset, self.active.base_offset, self.active.size)

    @property
    def size_in_bytes(self) -> int:
        """MAP-4: the sum of segment sizes (a Python int never overflows)."""
        return sum(s.size for s in self.segments)
