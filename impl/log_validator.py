"""Append validation and offset assignment: Kafka's `analyzeAndValidateRecords` + `LogValidator`.

Pure over the bytes of one append (no log state besides the arguments): `analyze_and_validate`
checks every batch from its header fields and CRC (LOG-15, LOG-15a, LOG-16) and returns what the
append will write; `assign_offsets` stamps a leader append in place (LOG-18): base offsets from the
LEO, the partition leader epoch, and with LogAppendTime the clock as max timestamp (CRC recomputed,
FMT-47). Nothing is decompressed; only the batch carrying the maximum timestamp is iterated, once,
to find the first record holding it (docs/design.md "Leader batches").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kafkalog.model.errors import (
    CorruptRecordError,
    InvalidRecordError,
    OffsetsOutOfOrderError,
    RecordTooLargeError,
)
from kafkalog.model.values import NO_TIMESTAMP, LogAppendInfo, TimestampType

from .compression import CompressionType
from .memory_records import MemoryRecords
from .record_batch import RECORD_BATCH_OVERHEAD
from .varint import decode_varint, decode_varlong

NO_PARTITION_LEADER_EPOCH = -1


@dataclass
class Analysis:
    """The facts gathered from the batches of one append (LOG-15)."""

    batches: list[Any] = field(default_factory=list)
    first_offset: int = -1  # the first batch's base offset (v2), else its last offset
    last_offset: int = -1
    max_timestamp: int = NO_TIMESTAMP
    max_timestamp_batch: Any = None
    valid_bytes: int = 0
    record_count: int = 0
    monotonic: bool = True  # every batch's last offset exceeds the previous one's

    def follower_info(self) -> LogAppendInfo:
        """The LogAppendInfo of a follower append, whose offsets are kept as given."""
        return LogAppendInfo(
            self.first_offset, self.last_offset, self.max_timestamp,
            _offset_of_max_timestamp(self.max_timestamp_batch), NO_TIMESTAMP, self.valid_bytes,
            self.record_count,
        )


def analyze_and_validate(
    records: MemoryRecords,
    *,
    leader: bool,
    max_message_bytes: int,
    where: str,
    leader_epoch: int | None = None,
) -> Analysis:
    """Validate each batch in order; stop at a follower batch from a newer epoch (LOG-15a).

    Raises InvalidRecordError (a client batch with base offset != 0), RecordTooLargeError (leader
    batch > max.message.bytes), CorruptRecordError (CRC or size), OffsetsOutOfOrderError
    (follower last offsets not strictly increasing). O(batches), header fields only.
    """
    a = Analysis()
    for batch in records.batches():
        epoch = batch.partition_leader_epoch
        if (not leader and leader_epoch is not None and epoch != NO_PARTITION_LEADER_EPOCH
                and epoch > leader_epoch):
            break
        if leader and batch.magic >= 2 and batch.base_offset != 0:
            raise InvalidRecordError(
                f"The baseOffset of the record batch in the append to {where} should be 0, but "
                f"it is {batch.base_offset}"
            )
        if not a.batches:
            a.first_offset = batch.base_offset if batch.magic >= 2 else -1
        elif a.last_offset >= batch.last_offset:
            a.monotonic = False
        a.last_offset = batch.last_offset
        size = batch.size_in_bytes
        if leader and size > max_message_bytes:
            raise RecordTooLargeError(
                f"The record batch size in the append to {where} is {size} bytes which exceeds "
                f"the maximum configured value of {max_message_bytes}."
            )
        if not batch.is_valid():
            raise CorruptRecordError(
                f"Record batch is corrupt (CRC or size) in the append to {where}",
                where=f"batch {len(a.batches)} at byte {a.valid_bytes}",
            )
        if batch.max_timestamp > a.max_timestamp:
            a.max_timestamp, a.max_timestamp_batch = batch.max_timestamp, batch
        a.valid_bytes += size
        a.record_count += batch.record_count
        a.batches.append(batch)
    if not leader and not a.monotonic:
        raise OffsetsOutOfOrderError(
            f"Out of order offsets found in append to {where}: last offsets do not strictly "
            f"increase"
        )
    if a.first_offset < 0 and a.batches:
        a.first_offset = a.batches[0].last_offset  # pre-v2: firstOrLastOffsetOfFirstBatch
    return a


def assign_offsets(
    valid: MemoryRecords,
    first_offset: int,
    leader_epoch: int,
    timestamp_type: TimestampType,
    now: int,
) -> LogAppendInfo:
    """Stamp base offsets from `first_offset`, the epoch and LogAppendTime in place (LOG-18).

    `valid` must be a writable buffer holding only whole, validated batches.
    """
    next_offset = first_offset
    log_append = timestamp_type is TimestampType.LOG_APPEND_TIME
    max_ts, max_batch, count = NO_TIMESTAMP, None, 0
    for batch in valid.batches():
        batch.set_base_offset(next_offset)
        batch.set_partition_leader_epoch(leader_epoch)
        if log_append:
            batch.set_max_timestamp(TimestampType.LOG_APPEND_TIME, now)
        if batch.max_timestamp > max_ts:
            max_ts, max_batch = batch.max_timestamp, batch
        next_offset = batch.next_offset
        count += batch.record_count
    size = valid.size_in_bytes
    if log_append:
        return LogAppendInfo(first_offset, next_offset - 1, now, first_offset, now, size, count)
    return LogAppendInfo(first_offset, next_offset - 1, max_ts, _offset_of_max_timestamp(max_batch),
                         NO_TIMESTAMP, size, count)


def _offset_of_max_timestamp(batch: Any) -> int:
    """The first record carrying the batch's max timestamp, or -1 when there is no batch."""
    if batch is None:
        return -1
    if batch.timestamp_type is TimestampType.LOG_APPEND_TIME:
        return int(batch.base_offset)  # every record reports the batch's (append) time
    if batch.magic >= 2 and batch.compression_type is CompressionType.NONE:
        found = _scan_timestamps(batch)
    else:
        found = batch.offset_of_max_timestamp()
    return int(found) if found is not None else int(batch.last_offset)


def _scan_timestamps(batch: Any) -> int | None:
    """Walk an uncompressed v2 batch's records reading only length and timestamp delta (FMT-49).

    Equivalent to RecordBatch.offset_of_max_timestamp but without decoding keys, values and
    headers, which keeps the append path cheap for many-record batches.
    """
    buf = batch.buffer
    end = batch.size_in_bytes
    target = batch.max_timestamp - batch.base_timestamp
    pos = RECORD_BATCH_OVERHEAD
    where = batch.where()
    for _ in range(batch.record_count):
        length, body = decode_varint(buf, pos, where)
        delta, after = decode_varlong(buf, body + 1, where)  # skip the attributes byte
        if delta == target:
            offset_delta, _ = decode_varint(buf, after, where)
            return int(batch.base_offset) + offset_delta
        pos = body + length
        if pos > end:
            return None
    return None
