"""Append validation and offset assignment: Kafka's `analyzeAndValidateRecords` + `LogValidator`.

Pure over the bytes of one append (no log state besides the arguments): `analyze_and_validate`
checks every batch from its header fields and CRC (LOG-15, LOG-15a, LOG-16) and returns what the
append will write; `assign_offsets` stamps a leader append in place (LOG-18): base offsets from the
LEO, the partition leader epoch, and with LogAppendTime the clock as max timestamp (CRC recomputed,
FMT-47). Nothing is decompressed and no record is iterated: the reported offset of the max
timestamp is the last offset of the batch carrying it, as Kafka 3.8+ reports it (KL-APPEND-3).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field, replace
from typing import Any

from kafkalog.impl.records.batch_scan import compiled_stamp_headers
from kafkalog.impl.records.facts_summary import facts_summary
from kafkalog.impl.records.memory_records import (
    BatchFacts,
    MemoryRecords,
    ScannedRecords,
    scan_headers,
)
from kafkalog.impl.records.record_batch import LOG_OVERHEAD, RecordBatch
from kafkalog.impl.records.stamped_records import STAMP_BYTES, StampedRecords
from kafkalog.impl.versions import leader_reports_last_offset, max_timestamp_offset_of_3_6
from kafkalog.model.errors import (
    CorruptRecordError,
    InvalidRecordError,
    OffsetsOutOfOrderError,
    RecordTooLargeError,
)
from kafkalog.model.values import NO_TIMESTAMP, LogAppendInfo, LogConfig, TimestampType

NO_PARTITION_LEADER_EPOCH = -1
# baseOffset, batchLength, partitionLeaderEpoch: bytes [0, 16) of a v2 header (FMT-45).
_PUT_OFFSET_LENGTH_EPOCH = struct.Struct(">qii").pack_into


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
    facts: list[BatchFacts] | None = None  # scan_headers entries of the accepted batches

    def follower_info(self) -> LogAppendInfo:
        """The LogAppendInfo of a follower append, whose offsets are kept as given."""
        return LogAppendInfo(
            self.first_offset, self.last_offset, self.max_timestamp,
            _shallow_offset_of_max_timestamp(self.max_timestamp_batch), NO_TIMESTAMP,
            self.valid_bytes,
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
    (follower last offsets not strictly increasing). O(batches), header fields only; plain v2
    input takes one `scan_headers` pass whose facts later steps reuse (`Analysis.facts`).
    """
    facts = scan_headers(records.buffer)
    if facts is not None:
        return _analyze_facts(records.buffer, facts, leader, max_message_bytes, where,
                              leader_epoch)
    return analyze_batches(records, leader=leader, max_message_bytes=max_message_bytes,
                           where=where, leader_epoch=leader_epoch)


def analyze_batches(
    records: MemoryRecords,
    *,
    leader: bool,
    max_message_bytes: int,
    where: str,
    leader_epoch: int | None = None,
) -> Analysis:
    """`analyze_and_validate` through batch objects: any magic, errors in batch order.

    The path for input `scan_headers` declines (legacy or undersized batches); also the
    reference the single-pass path is tested against.
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


def _analyze_facts(
    buf: memoryview, facts: list[BatchFacts], leader: bool, max_message_bytes: int, where: str,
    leader_epoch: int | None,
) -> Analysis:
    """`analyze_and_validate` over `scan_headers` facts: the same checks in the same order."""
    stop_above = leader_epoch if not leader and leader_epoch is not None else None
    quick = _analyze_clean(buf, facts, leader, max_message_bytes, stop_above) if facts else None
    if quick is not None:
        return quick
    return _analyze_rows(buf, facts, leader, max_message_bytes, where, stop_above)


def _analyze_rows(
    buf: memoryview, facts: list[BatchFacts], leader: bool, max_message_bytes: int, where: str,
    stop_above: int | None,
) -> Analysis:
    """`_analyze_facts` batch by batch: the reference, and the path that raises in order."""
    a = Analysis(first_offset=facts[0][2] if facts else -1)
    last, max_ts, max_at, valid_bytes, count, accepted = -1, NO_TIMESTAMP, -1, 0, 0, 0
    for pos, size, base, delta, epoch, batch_max_ts, records, crc_ok in facts:
        if stop_above is not None and epoch != NO_PARTITION_LEADER_EPOCH and epoch > stop_above:
            break
        if leader and base != 0:
            raise InvalidRecordError(
                f"The baseOffset of the record batch in the append to {where} should be 0, but "
                f"it is {base}"
            )
        if accepted and last >= base + delta:
            a.monotonic = False
        last = base + delta
        if leader and size > max_message_bytes:
            raise RecordTooLargeError(
                f"The record batch size in the append to {where} is {size} bytes which exceeds "
                f"the maximum configured value of {max_message_bytes}."
            )
        if not crc_ok:
            raise CorruptRecordError(
                f"Record batch is corrupt (CRC or size) in the append to {where}",
                where=f"batch {accepted} at byte {valid_bytes}",
            )
        if batch_max_ts > max_ts:
            max_ts, max_at = batch_max_ts, pos
        valid_bytes += size
        count += records
        accepted += 1
    if not leader and not a.monotonic:
        raise OffsetsOutOfOrderError(
            f"Out of order offsets found in append to {where}: last offsets do not strictly "
            f"increase"
        )
    a.facts = facts if accepted == len(facts) else facts[:accepted]
    if not accepted:
        a.first_offset = -1
    a.last_offset, a.max_timestamp, a.valid_bytes, a.record_count = last, max_ts, valid_bytes, count
    if max_at >= 0 and not leader:  # only follower_info needs it; the leader's is re-found
        a.max_timestamp_batch = _batch_at(buf, max_at)  # after stamping (assign_offsets_scanned)
    return a


def _analyze_clean(buf: memoryview, facts: list[BatchFacts], leader: bool,
                   max_message_bytes: int, stop_above: int | None) -> Analysis | None:
    """`_analyze_facts` when every batch passes and none is cut, decided on the facts' summary
    (one C call for a 1 MiB append's 63 batches), else None and the row loop decides, so errors
    keep their batch order (tests/impl/test_append_scan.py holds the two together)."""
    s = facts_summary(facts)
    if s is None or not s.crc_all_ok:
        return None
    if stop_above is not None and s.max_epoch > stop_above and any(
            f[4] != NO_PARTITION_LEADER_EPOCH and f[4] > stop_above for f in facts):
        return None
    if leader and (not s.bases_all_zero or s.max_size > max_message_bytes):
        return None
    if not leader and not s.lasts_increasing:
        return None
    a = Analysis(first_offset=facts[0][2], last_offset=s.last_offset, valid_bytes=s.total_size,
                 record_count=s.total_records, monotonic=s.lasts_increasing, facts=facts)
    if s.max_timestamp > NO_TIMESTAMP:  # the first batch holding it, as the loop's strict >
        a.max_timestamp = s.max_timestamp
        if not leader:
            a.max_timestamp_batch = _batch_at(buf, facts[s.max_timestamp_index][0])
    return a


def _batch_at(buf: memoryview, pos: int) -> RecordBatch:
    """The v2 batch object at `pos`, positioned as `MemoryRecords.batches()` would yield it."""
    size = LOG_OVERHEAD + int.from_bytes(buf[pos + 8 : pos + 12], "big", signed=True)
    return RecordBatch(buf[pos : pos + size], pos)


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
        return LogAppendInfo(first_offset, next_offset - 1, now, next_offset - 1, now, size, count)
    return LogAppendInfo(first_offset, next_offset - 1, max_ts,
                         _shallow_offset_of_max_timestamp(max_batch), NO_TIMESTAMP, size, count)


def assign_offsets_scanned(
    source: memoryview,
    facts: list[BatchFacts],
    first_offset: int,
    leader_epoch: int,
    timestamp_type: TimestampType,
    now: int,
) -> tuple[ScannedRecords, LogAppendInfo]:
    """`assign_offsets` over the `scan_headers` facts of `source` (LOG-18), without re-parsing
    and without modifying `source`.

    Returns the stamped records, carrying facts that describe them after the stamps: with
    CreateTime a `StampedRecords` (the stamps beside the unchanged `source`, no copy), with
    LogAppendTime a stamped copy (its max timestamps lie inside the CRC, which is recomputed).
    """
    size = len(source)
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        valid = bytearray(source)
        stamped, next_offset = _stamp_log_append_time(valid, facts, first_offset, leader_epoch,
                                                      now)
        return ScannedRecords(valid, stamped), LogAppendInfo(
            first_offset, next_offset - 1, now, next_offset - 1, now, size,
            sum(f[6] for f in facts))
    done = None if compiled_stamp_headers is None else compiled_stamp_headers(
        facts, first_offset, leader_epoch)
    if done is None:  # the reference: no compiled twin, or offsets beyond int64
        done = py_stamp_headers(facts, first_offset, leader_epoch)
    headers, stamped, next_offset, max_ts, max_last, count = done
    return StampedRecords(source, headers, stamped), LogAppendInfo(
        first_offset, next_offset - 1, max_ts, max_last, NO_TIMESTAMP, size, count)


def py_stamp_headers(facts: list[BatchFacts], first_offset: int, leader_epoch: int
                     ) -> tuple[bytes, list[BatchFacts], int, int, int, int]:
    """Each batch's first 16 bytes as the leader stamps them (base offset from
    `first_offset`, batch length, epoch), 16 bytes a batch; the facts after the stamps, the next
    offset, the max timestamp, its offset and the record count. The reference of the compiled
    `stamp_headers` (impl/records/_scan_append.c)."""
    headers = bytearray(STAMP_BYTES * len(facts))
    put = _PUT_OFFSET_LENGTH_EPOCH
    next_offset, max_ts, max_last, count = first_offset, NO_TIMESTAMP, -1, 0
    stamped: list[BatchFacts] = []
    for i, (pos, size, _, delta, _, batch_max_ts, records, crc_ok) in enumerate(facts):
        # Base offset and epoch lie outside the CRC (FMT-47); the length between them is kept.
        put(headers, STAMP_BYTES * i, next_offset, size - LOG_OVERHEAD, leader_epoch)
        if batch_max_ts > max_ts:
            max_ts, max_last = batch_max_ts, next_offset + delta
        stamped.append((pos, size, next_offset, delta, leader_epoch, batch_max_ts, records, crc_ok))
        next_offset += delta + 1
        count += records
    return bytes(headers), stamped, next_offset, max_ts, max_last, count


def _stamp_log_append_time(valid: bytearray, facts: list[BatchFacts], first_offset: int,
                           leader_epoch: int, now: int) -> tuple[list[BatchFacts], int]:
    """The stamps with LogAppendTime: each batch's max timestamp becomes `now` (its CRC is
    recomputed, LOG-18); the facts after the stamps and the next offset."""
    view = memoryview(valid)
    put = _PUT_OFFSET_LENGTH_EPOCH
    next_offset = first_offset
    stamped: list[BatchFacts] = []
    for pos, size, _, delta, _, _, records, crc_ok in facts:
        put(view, pos, next_offset, size - LOG_OVERHEAD, leader_epoch)
        _batch_at(view, pos).set_max_timestamp(TimestampType.LOG_APPEND_TIME, now)
        stamped.append((pos, size, next_offset, delta, leader_epoch, now, records, crc_ok))
        next_offset += delta + 1
    return stamped, next_offset


def _shallow_offset_of_max_timestamp(batch: Any) -> int:
    """KL-APPEND-3: the last offset of the batch carrying the append's max timestamp, else -1.

    Kafka 3.8+ `LogValidator.assignOffsetsNonCompressed` and `analyzeAndValidateRecords`
    (`shallowOffsetOfMaxTimestamp = lastOffset` of the batch whose max timestamp is the first
    strictly greater one); no record is iterated.
    """
    return -1 if batch is None else int(batch.last_offset)


def reported_max_timestamp_offset(valid: MemoryRecords, info: LogAppendInfo, from_client: bool,
                                  config: LogConfig) -> LogAppendInfo:
    """KL-VERSION-2: the offset of the max timestamp a client append reports before 3.8 (the
    segment pairs it with the max timestamp, KL-VERSION-4 and 6); 3.8+ and the coordinator's
    markers keep KL-APPEND-3's, and `info` itself is returned. O(records) only on 3.6 CreateTime.
    """
    version = config.kafka_version
    if not from_client or not (max_timestamp_offset_of_3_6(version)
                               or leader_reports_last_offset(version)):
        return info
    if leader_reports_last_offset(version) or (
            config.message_timestamp_type is TimestampType.LOG_APPEND_TIME):
        return replace(info, offset_of_max_timestamp=info.last_offset)
    best, reported = NO_TIMESTAMP, -1
    for record in valid.records():
        if record.timestamp > best:
            best, reported = record.timestamp, record.offset
    return replace(info, offset_of_max_timestamp=reported)
