"""Value types shared by the model, the implementation and the adapters (no operations here).

These are the nouns of the action vocabulary (specs/log.md): what an action takes and what it
returns. They are frozen, hashable and built from ints, bytes, strings and tuples only, so they
compare by value, cross the adapter protocol as JSON (conformance/adapter/json_codec.py) and
can be checked by CrossHair. `kafkalog.impl` may import this module and `errors`; it never
imports model operations.

Offsets are int64 and exclusive where they name an end (`log_end_offset`, `high_watermark`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

NO_TIMESTAMP = -1  # FMT-22: a record or batch without a timestamp
UNDEFINED_EPOCH = -1  # EPO-5
UNDEFINED_EPOCH_OFFSET = -1  # EPO-5
INT32_MAX = 2**31 - 1  # "Int.MAX" (SRC-5)
INT64_MAX = 2**63 - 1  # "Long.MAX" (SRC-5)

# LOG-43: special targets of fetch_offset_by_timestamp.
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3


class TimestampType(StrEnum):
    """CFG: message.timestamp.type; bit 3 of a v2 batch's attributes (FMT-45)."""

    CREATE_TIME = "CreateTime"
    LOG_APPEND_TIME = "LogAppendTime"


class Isolation(StrEnum):
    """LOG-27: how far a read may see; TXN_COMMITTED stops at the last stable offset (TXN-14)."""

    LOG_END = "log_end"
    HIGH_WATERMARK = "high_watermark"
    TXN_COMMITTED = "txn_committed"


@dataclass(frozen=True)
class LogConfig:
    """Per-log configuration with Kafka's names (snake_case) and defaults (CFG-1..CFG-9)."""

    segment_bytes: int = 1024 * 1024 * 1024  # CFG-1; roll when the active segment would exceed it
    segment_ms: int = 7 * 24 * 3600 * 1000  # CFG-2; time-based roll
    segment_jitter_ms: int = 0  # CFG-3; see SEG-8 (kafkalog draws it deterministically)
    index_interval_bytes: int = 4096  # CFG-5; bytes between offset-index entries (SEG-3)
    segment_index_bytes: int = 10 * 1024 * 1024  # CFG-4; preallocated size of each index file
    retention_ms: int = 7 * 24 * 3600 * 1000  # CFG-6; -1 = infinite
    retention_bytes: int = -1  # CFG-7; -1 = no size limit
    max_message_bytes: int = 1024 * 1024 + 12  # CFG-8; largest batch a leader accepts
    file_delete_delay_ms: int = 60_000  # CFG-9; delay before a `.deleted` file is removed
    message_timestamp_type: TimestampType = TimestampType.CREATE_TIME
    # The Kafka release profile both sides behave as (KL-VERSION-1): "3.6" .. "3.9", "3.9.2",
    # "4.0" .. "4.4" (model/versions.py PROFILES); the default is the newest release.
    kafka_version: str = "4.4"
    producer_id_expiration_ms: int = 86_400_000  # PST-22, PST-26 producer.id.expiration.ms
    # PST-22: period of the expiration check (an internal broker setting in Kafka).
    producer_id_expiration_check_interval_ms: int = 600_000
    # CLN-1: "delete", "compact" or both, comma-separated ("" sets neither); KL-CLEAN-1.
    cleanup_policy: str = "delete"
    min_cleanable_dirty_ratio: float = 0.5  # CLN-2, CLN-19; a log is eligible strictly above it
    min_compaction_lag_ms: int = 0  # CLN-2, CLN-16; Invariant: <= max_compaction_lag_ms (CLN-3)
    max_compaction_lag_ms: int = INT64_MAX  # CLN-2, CLN-18; >= 1
    delete_retention_ms: int = 86_400_000  # CLN-2, CLN-33; how long a tombstone outlives a pass


@dataclass(frozen=True)
class Header:
    """A record header (FMT-49): a UTF-8 key and a nullable value."""

    key: str
    value: bytes | None


@dataclass(frozen=True)
class Record:
    """One record as a producer sends it. Its offset is assigned by the batch it travels in."""

    key: bytes | None
    value: bytes | None
    timestamp: int  # milliseconds; NO_TIMESTAMP (-1) when absent
    headers: tuple[Header, ...] = ()


@dataclass(frozen=True)
class BatchSpec:
    """An uncompressed v2 batch as a follower receives it: offsets and epoch already stamped.

    Records take consecutive offsets `base_offset, base_offset + 1, ...`; the batch's last offset is
    `base_offset + len(records) - 1`. Gaps are allowed *between* batches (compacted data).
    """

    base_offset: int
    partition_leader_epoch: int
    records: tuple[Record, ...]
    timestamp_type: TimestampType = TimestampType.CREATE_TIME
    # With LOG_APPEND_TIME the batch's max timestamp is this value (the leader's clock), not the
    # records' own timestamps.
    log_append_time: int = NO_TIMESTAMP
    # FMT-45 producer fields (PST-6); -1 = not idempotent. `is_transactional` is reserved (#15).
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    is_transactional: bool = False
    # TXN-1: a control batch (attributes bit 5); its one record is an end-transaction marker
    # (PSF-11 key and value bytes). Control batches are always transactional.
    is_control: bool = False

    @property
    def last_offset(self) -> int:
        return self.base_offset + len(self.records) - 1


@dataclass(frozen=True)
class LogOffsetMetadata:
    """An offset plus where it lives: LogOffsetMetadata in Kafka (LOG-8, LOG-11).

    `segment_base_offset` and `relative_position_in_segment` are both -1 for "message-only"
    metadata, which carries the offset alone (KL-HW-6: Kafka's `messageOffsetOnly()` tests both
    fields against -1; one field at -1 is not message-only).
    """

    message_offset: int
    segment_base_offset: int = -1
    relative_position_in_segment: int = -1

    @property
    def message_offset_only(self) -> bool:
        return self.segment_base_offset == -1 and self.relative_position_in_segment == -1


@dataclass(frozen=True)
class LogAppendInfo:
    """What an append reports (LOG-14..LOG-24)."""

    first_offset: int  # -1 when nothing was appended
    last_offset: int  # -1 when nothing was appended
    max_timestamp: int  # NO_TIMESTAMP when no record had one
    offset_of_max_timestamp: int  # last offset of the batch carrying max_timestamp; -1 if none
    log_append_time: int  # the leader's clock for LOG_APPEND_TIME topics, else NO_TIMESTAMP
    valid_bytes: int  # bytes appended (sum of batch sizes)
    record_count: int


@dataclass(frozen=True)
class BatchView:
    """One whole batch as stored or returned by a read: its header facts and its records."""

    base_offset: int
    last_offset: int  # inclusive
    partition_leader_epoch: int
    max_timestamp: int
    size_in_bytes: int
    position: int  # byte position of the batch in its segment's `.log`
    records: tuple[Record, ...]
    timestamp_type: TimestampType = TimestampType.CREATE_TIME
    # FMT-45 producer fields as stored (feature `producer_state`; -1 = not idempotent) and
    # attribute bits 4/5 (feature `transactions`): what a consumer filters on (TXN-18).
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    is_transactional: bool = False
    is_control: bool = False
    # CLN-47: the records' offsets when cleaning left gaps inside the batch (strictly increasing,
    # within [base_offset, last_offset]); None = base_offset, base_offset + 1, ... (KL-CLEAN-9).
    record_offsets: tuple[int, ...] | None = None


@dataclass(frozen=True)
class AbortedTransaction:
    """One entry of a fetch response's aborted-transaction list (TXN-15)."""

    producer_id: int
    first_offset: int


@dataclass(frozen=True)
class AbortedTxnEntry:
    """One `.txnindex` entry (PSF-8): an aborted transaction and the last stable offset (TXN-10)."""

    producer_id: int
    first_offset: int
    last_offset: int  # the offset of the ABORT marker
    last_stable_offset: int


@dataclass(frozen=True)
class CleanResult:
    """What one cleaning pass reports (KL-CLEAN-2, KL-CLEAN-11): the dirty range it took."""

    first_dirty_offset: int  # CLN-15: where the pass started (inclusive)
    end_offset: int  # CLN-28: the new cleaner checkpoint (exclusive end of what was cleaned)
    first_uncleanable_offset: int  # CLN-17: nothing at or above it was read or changed
    groups: tuple[int, ...]  # CLN-29: the base offset of each cleaned segment written


@dataclass(frozen=True)
class FetchDataInfo:
    """The result of `read` (LOC-4, SEG-10).

    `size_in_bytes` is the byte length of the slice returned (it may end mid-batch); `batches` are
    the whole batches inside that slice, in order; `first_entry_incomplete` is SEG-10 step 6.
    """

    fetch_offset_metadata: LogOffsetMetadata
    size_in_bytes: int = 0
    batches: tuple[BatchView, ...] = ()
    first_entry_incomplete: bool = False
    # TXN-14/TXN-15: present (possibly empty) only for TXN_COMMITTED reads that reached a segment
    # or the bound; None otherwise (Kafka's Optional.empty()).
    aborted_transactions: tuple[AbortedTransaction, ...] | None = None


@dataclass(frozen=True)
class EpochEntry:
    """One leader-epoch cache entry (EPO-1): `epoch` starts at `start_offset` (inclusive)."""

    epoch: int
    start_offset: int


@dataclass(frozen=True)
class EpochEndOffset:
    """The answer of `end_offset_for_epoch` (EPO-4, LOG-51)."""

    epoch: int
    end_offset: int  # exclusive


@dataclass(frozen=True)
class TimestampAndOffset:
    """The answer of `fetch_offset_by_timestamp` (LOG-43..LOG-49)."""

    timestamp: int
    offset: int
    leader_epoch: int | None


@dataclass(frozen=True)
class SegmentView:
    """One segment as `state()` shows it."""

    base_offset: int
    size_in_bytes: int
    next_offset: int  # SEG-12 readNextOffset: last batch's last offset + 1, or base_offset if empty
    # The exact index entries (KL-STATE-3): (offset, position in the .log) of the offset index
    # (FMT-10) and (timestamp, offset) of the time index (FMT-19), absolute offsets. None when an
    # adapter does not report them (the field is optional in the adapter protocol).
    offset_index: tuple[tuple[int, int], ...] | None = None
    time_index: tuple[tuple[int, int], ...] | None = None


@dataclass(frozen=True)
class ProducerBatchView:
    """One cached batch of a producer (PST-4): sequences and offsets inclusive."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(frozen=True)
class ProducerView:
    """One producer-state entry as `state()` shows it (PST-3, PST-25)."""

    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    last_timestamp: int
    current_txn_first_offset: int  # -1 when no transaction is open
    batches: tuple[ProducerBatchView, ...]  # oldest first, at most 5


@dataclass(frozen=True)
class LogStateView:
    """The observable state of one partition log: what conformance compares after every step."""

    log_start_offset: int  # Invariant: log_start_offset <= high_watermark <= log_end_offset
    high_watermark: int  # exclusive
    log_end_offset: int  # exclusive
    recovery_point: int  # Invariant: recovery_point <= log_end_offset
    segments: tuple[SegmentView, ...]  # ascending base offsets; never empty
    epoch_entries: tuple[EpochEntry, ...]  # strictly increasing in epoch and start offset
    # Base offsets whose files are renamed `.deleted` and wait for file_delete_delay_ms (LOC-11).
    pending_deletions: tuple[int, ...] = field(default=())
    # The producer table sorted by id, and the offsets of the live `.snapshot` files (PSF-1).
    # None = the adapter does not report them (no `producer_state` feature); never compared then.
    producers: tuple[ProducerView, ...] | None = None
    producer_snapshots: tuple[int, ...] | None = None
    # Transactions (KL-TXN-*): the last stable offset and every live segment's `.txnindex`
    # entries in offset order. None = the adapter does not report them (no `transactions`
    # feature); never compared then.
    last_stable_offset: int | None = None
    aborted_txns: tuple[AbortedTxnEntry, ...] | None = None
    # KL-CLEAN-11: a compacted log's `cleaner-offset-checkpoint` entry, -1 without one. None =
    # not reported (no `clean` feature) or a log that is not compacted; never compared then.
    cleaner_checkpoint: int | None = None
    # What each live `.snapshot` file holds, in the order of `producer_snapshots` (PSF-4: a
    # producer's newest batch only, stamped with its last timestamp; a file that does not decode
    # is one entry with producer id -1). None = not reported; never compared then.
    producer_snapshot_tables: tuple[tuple[ProducerView, ...], ...] | None = None
