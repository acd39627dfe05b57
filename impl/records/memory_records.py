"""`MemoryRecords`: batches in a buffer, shallow iteration (FMT-52) and the v2 batch builder.

A buffer holds zero or more whole batches back to back. `batches()` walks their size fields
without decompressing or checking CRCs; a torn tail ends iteration silently and a size field
below 14 is a CorruptRecordError (ERR-19). The same scanner serves `FileRecords` (chunk by chunk).

The builder writes exactly the bytes of Kafka's `MemoryRecordsBuilder` for magic 2: base timestamp
= the first record's timestamp, producer id/epoch/sequence -1, attributes = codec | timestamp-type
bit. One record with value b"test", no key, no headers, timestamp delta 0 makes a 72-byte batch
(FMT-50).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence

from crc32c import crc32c
from kafkalog.impl.bounds import require_int32, require_int64, require_records
from kafkalog.impl.records.batch_scan import STOP_END, STOP_MORE, compiled_scan_headers, scan_valid
from kafkalog.impl.records.compression import CompressionType, compress
from kafkalog.impl.records.legacy_records import LegacyRecordBatch
from kafkalog.impl.records.record_batch import (
    CONTROL_FLAG_MASK,
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V2,
    RECORD_BATCH_OVERHEAD,
    RECORD_OVERHEAD_V0,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
    Record,
    RecordBatch,
    check_header_args,
)
from kafkalog.impl.records.varint import varint_bytes, varlong_bytes
from kafkalog.model.errors import CorruptRecordError, IllegalArgumentError
from kafkalog.model.values import INT64_MAX, NO_TIMESTAMP, BatchSpec, TimestampType
from kafkalog.model.values import Record as ProducerRecord

_OFFSET_AND_SIZE = struct.Struct(">qi")
# Header after the CRC: attributes, lastOffsetDelta, baseTimestamp, maxTimestamp, producerId,
# producerEpoch, baseSequence, recordCount.
_HEADER_AFTER_CRC = struct.Struct(">hiqqqhii")
_HEADER_BEFORE_CRC = struct.Struct(">qiib")


# The whole 61-byte v2 header in one unpack (FMT-45), skipping (pad bytes) the fields the append
# path never reads: baseOffset, batchLength, epoch, magic, crc, [attributes], lastOffsetDelta,
# [baseTimestamp], maxTimestamp, [producerId, producerEpoch, baseSequence], recordCount.
_V2_HEADER = struct.Struct(">qiibI2xi8xq14xi")

# One `scan_headers` entry per batch: (position, size, base offset, last offset delta, partition
# leader epoch, max timestamp, record count, crc ok). Tuples, not objects: building and unpacking
# them is the cheapest per-batch work Python offers, and the append path touches each once.
BatchFacts = tuple[int, int, int, int, int, int, int, bool]


def py_scan_headers(buf: memoryview) -> list[BatchFacts] | None:
    """One pass over the whole v2 batches of `buf`: each one's header facts and CRC validity.

    Stops silently at a torn tail (FMT-52) like `MemoryRecords.batches()`. Returns None when a
    batch is not a plain v2 batch (magic < 2, size < 61 or a size field < 14): callers then take
    the batch-object path, which raises its errors in batch order. O(batches) plus the CRCs.
    """
    unpack, out, pos, end = _V2_HEADER.unpack_from, [], 0, len(buf)
    append = out.append
    while pos + RECORD_BATCH_OVERHEAD <= end:
        # A whole header is there: one unpack gives size, magic and every fact at once.
        base, length, epoch, magic, crc, delta, max_ts, count = unpack(buf, pos)
        size = LOG_OVERHEAD + length
        if size < RECORD_BATCH_OVERHEAD or magic != MAGIC_V2:
            return None
        if pos + size > end:
            return out  # a torn tail (FMT-52)
        # The CRC covers [attributes, end) (FMT-46); same test as RecordBatch.is_valid.
        append((pos, size, base, delta, epoch, max_ts, count,
                crc == crc32c(buf[pos + 21 : pos + size])))
        pos += size
    if pos + HEADER_SIZE_UP_TO_MAGIC < end:
        # Fewer than 61 bytes left but more than 17: a torn tail only if its size field says so.
        size = LOG_OVERHEAD + _OFFSET_AND_SIZE.unpack_from(buf, pos)[1]
        if size < RECORD_BATCH_OVERHEAD or buf[pos + MAGIC_OFFSET] != MAGIC_V2:
            return None
    return out


# The active pass: the compiled twin (impl/records/_scan_append.c, same values) when built.
scan_headers = py_scan_headers if compiled_scan_headers is None else compiled_scan_headers


def batch_of(view: memoryview, position: int = -1, source: str | None = None) -> RecordBatch:
    """The right view class for a whole batch: v2 (`RecordBatch`) or v0/v1 (legacy)."""
    if view[MAGIC_OFFSET] in (0, 1):
        return LegacyRecordBatch(view, position, source)
    return RecordBatch(view, position, source)


def next_batch_size(buf: memoryview, pos: int, end: int, base_position: int,
                    source: str | None) -> int | None:
    """FMT-52 for the batch at `pos`: its total size, or None when the rest is a torn tail.

    `base_position` is the file position of buf[0] (for error messages). Raises
    CorruptRecordError when the size field is below 14 (a zero-filled tail included).
    """
    if pos + HEADER_SIZE_UP_TO_MAGIC >= end:
        return None
    _, size = _OFFSET_AND_SIZE.unpack_from(buf, pos)
    if size < RECORD_OVERHEAD_V0:
        raise CorruptRecordError(
            f"record size {size} is less than the minimum record overhead ({RECORD_OVERHEAD_V0})",
            where=f"{source or '<memory>'}@{base_position + pos}")
    if size < V2_MIN_SIZE_FIELD and buf[pos + MAGIC_OFFSET] >= 2:
        # A v2 header is 61 bytes; a smaller one cannot be read (FMT-45).
        raise CorruptRecordError(
            f"record batch size {LOG_OVERHEAD + size} is less than the v2 header size "
            f"({RECORD_BATCH_OVERHEAD})", where=f"{source or '<memory>'}@{base_position + pos}")
    if pos + LOG_OVERHEAD + size > end:
        return None
    return LOG_OVERHEAD + size


V2_MIN_SIZE_FIELD = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD  # 49: the size field of an empty batch


class MemoryRecords:
    """Zero or more batches in memory (a bytes-like buffer, viewed without copying)."""

    __slots__ = ("buffer",)

    def __init__(self, buffer: bytes | bytearray | memoryview) -> None:
        self.buffer = memoryview(buffer)

    @property
    def size_in_bytes(self) -> int:
        return len(self.buffer)

    def __len__(self) -> int:
        return len(self.buffer)

    def to_bytes(self) -> bytes:
        return bytes(self.buffer)

    def batches(self) -> Iterator[RecordBatch]:
        """Whole batches in order (shallow: no decompression, no CRC check). O(batches).

        `next_batch_size` and `batch_of` inlined: this loop runs for every batch of every
        append and read, and the two calls per batch cost as much as the rest of it.
        """
        buf, pos, end = self.buffer, 0, len(self.buffer)
        unpack = _OFFSET_AND_SIZE.unpack_from
        while pos + HEADER_SIZE_UP_TO_MAGIC < end:
            size = unpack(buf, pos)[1]
            if size < RECORD_OVERHEAD_V0:
                next_batch_size(buf, pos, end, 0, None)  # raises the CorruptRecordError
            size += LOG_OVERHEAD
            if pos + size > end:
                return  # a torn tail (FMT-52)
            view = buf[pos : pos + size]
            if view[MAGIC_OFFSET] in (0, 1):
                yield LegacyRecordBatch(view, pos)
            else:
                yield RecordBatch(view, pos)
            pos += size

    def ensure_valid_batches(self) -> tuple[int, int]:
        """Check every whole batch as `RecordBatch.ensure_valid` does, in one pass (FMT-46).

        Returns (whole batches, the next offset after the last one, -1 when there is none). A
        torn tail ends the walk (FMT-52). Raises CorruptRecordError naming the first bad batch,
        or a size field below 14 (ERR-19), exactly as the per-batch walk does: the one-pass
        scan (`batch_scan.scan_valid`) handles plain v2 batches, and anything else (an invalid
        batch, legacy magic, a short tail, an offset at the int64 limit) sends the whole buffer
        through that walk. O(batches) plus the CRCs.
        """
        buf = self.buffer
        consumed, stop, count, next_offset = scan_valid(buf)
        # STOP_MORE with a whole header left: a v2 batch the buffer cuts short (a torn tail).
        if stop == STOP_END or (stop == STOP_MORE
                                and len(buf) - consumed >= RECORD_BATCH_OVERHEAD):
            return count, next_offset
        count, next_offset = 0, -1
        for batch in self.batches():
            batch.ensure_valid()
            count, next_offset = count + 1, batch.next_offset
        return count, next_offset

    def valid_bytes(self) -> int:
        """Bytes covered by whole batches (a torn tail excluded)."""
        return sum(b.size_in_bytes for b in self.batches())

    def records(self) -> Iterator[Record]:
        """Every record of every batch (deep iteration)."""
        for batch in self.batches():
            yield from batch.records()

    @classmethod
    def with_records(cls, records: Sequence[ProducerRecord], base_offset: int = 0,
                     partition_leader_epoch: int = -1,
                     timestamp_type: TimestampType = TimestampType.CREATE_TIME,
                     log_append_time: int = NO_TIMESTAMP,
                     compression: CompressionType | None = None,
                     producer: tuple[int, int, int] = (-1, -1, -1),
                     is_transactional: bool = False, is_control: bool = False) -> MemoryRecords:
        """One v2 batch of `records` at offsets base_offset..; empty input gives an empty buffer.

        `producer` is (producer id, epoch, base sequence), -1 each when not idempotent.
        """
        if not records:
            return cls(bytearray())
        data = build_batch(records, base_offset, partition_leader_epoch, timestamp_type,
                           log_append_time, compression or CompressionType.NONE, producer,
                           is_transactional, is_control)
        return cls(data)

    @classmethod
    def end_txn_marker(cls, producer_id: int, producer_epoch: int, commit: bool,
                       coordinator_epoch: int, timestamp: int,
                       timestamp_type: TimestampType = TimestampType.CREATE_TIME
                       ) -> MemoryRecords:
        """TXN-1/PSF-12: the 78-byte marker batch the leader writes for the coordinator: one
        control record (key version 0 + COMMIT 1 / ABORT 0, value version 0 + coordinator
        epoch), transactional + control, sequence -1, timestamp = the leader's clock."""
        if not -(2**31) <= coordinator_epoch < 2**31:
            raise IllegalArgumentError(f"coordinator epoch {coordinator_epoch} is not an int32")
        key = struct.pack(">hh", 0, 1 if commit else 0)
        value = struct.pack(">hi", 0, coordinator_epoch)
        record = ProducerRecord(key=key, value=value, timestamp=timestamp)
        return cls.with_records((record,), timestamp_type=timestamp_type,
                                log_append_time=timestamp,
                                producer=(producer_id, producer_epoch, -1),
                                is_transactional=True, is_control=True)

    @classmethod
    def from_batch_specs(cls, specs: Sequence[BatchSpec]) -> MemoryRecords:
        """The uncompressed v2 batches of `specs`, back to back (empty specs are skipped)."""
        out = bytearray()
        for spec in specs:
            if spec.records:
                out += build_batch(spec.records, spec.base_offset, spec.partition_leader_epoch,
                                   spec.timestamp_type, spec.log_append_time, CompressionType.NONE,
                                   (spec.producer_id, spec.producer_epoch, spec.base_sequence),
                                   spec.is_transactional, spec.is_control)
        return cls(out)


class ScannedRecords(MemoryRecords):
    """Validated batches plus their `scan_headers` facts, so later steps need not re-parse them.

    The facts must describe the buffer as it is: whoever stamps the buffer passes new facts.
    """

    __slots__ = ("facts",)

    def __init__(self, buffer: bytes | bytearray | memoryview, facts: list[BatchFacts]) -> None:
        super().__init__(buffer)
        self.facts = facts

    @property
    def after_stamps(self) -> memoryview:
        """Bytes equal to `buffer` but perhaps in each batch's first 16 bytes (what a leader
        stamps): enough for any field from the attributes on, without building a stamped copy
        (impl/records/stamped_records.py)."""
        return self.buffer


def batch_facts(records: MemoryRecords) -> list[BatchFacts]:
    """The `BatchFacts` of `records`: the carried ones, else read from batch objects.

    The fallback serves legacy (v0/v1) batches and callers outside the append path; it reads
    header fields only (crc ok is reported True: nothing is checked) and keeps position, size,
    offsets and max timestamp exact for every magic, epoch as the batch reports it.
    """
    if isinstance(records, ScannedRecords):
        return records.facts
    out: list[BatchFacts] = []
    for b in records.batches():
        base = b.base_offset
        out.append((b.position, b.size_in_bytes, base, b.last_offset - base,
                    b.partition_leader_epoch, b.max_timestamp, b.record_count, True))
    return out


def encode_record(record: ProducerRecord, offset_delta: int, timestamp_delta: int) -> bytes:
    """One v2 record (FMT-49): varint length, then attributes 0 and the fields."""
    return b"".join(_record_parts(record, offset_delta, timestamp_delta))


def _record_parts(record: ProducerRecord, offset_delta: int, timestamp_delta: int) -> list[bytes]:
    """The pieces of `encode_record`, length first, to be joined once per batch (the builder
    joins every record's pieces in one go: no per-record buffer)."""
    key, value, headers = record.key, record.value, record.headers
    parts = [b"", b"\x00", varlong_bytes(timestamp_delta), varint_bytes(offset_delta)]
    if key is None:
        parts.append(_NULL)
    else:
        parts += (varint_bytes(len(key)), key)
    if value is None:
        parts.append(_NULL)
    else:
        parts += (varint_bytes(len(value)), value)
    parts.append(varint_bytes(len(headers)))
    for header in headers:
        name = header.key.encode("utf-8")
        parts += (varint_bytes(len(name)), name)
        if header.value is None:
            parts.append(_NULL)
        else:
            parts += (varint_bytes(len(header.value)), header.value)
    parts[0] = varint_bytes(sum(map(len, parts)))
    return parts


_NULL = varint_bytes(-1)  # the length of a null key, value or header value


def build_batch(records: Sequence[ProducerRecord], base_offset: int, partition_leader_epoch: int,
                timestamp_type: TimestampType, log_append_time: int,
                codec: CompressionType, producer: tuple[int, int, int] = (-1, -1, -1),
                is_transactional: bool = False, is_control: bool = False) -> bytearray:
    """The bytes of one v2 batch, CRC included. IllegalArgumentError on impossible input
    (including producer fields outside the header's widths, and a transactional batch without
    a producer id, which MemoryRecordsBuilder refuses). A control batch is transactional."""
    require_records(records, "record batch")
    require_int32(partition_leader_epoch, "partition leader epoch", "record batch")
    require_int64(log_append_time, "log append time", "record batch")
    producer_id, producer_epoch, base_sequence = producer
    if not (-1 <= producer_id <= INT64_MAX and -1 <= producer_epoch <= 32767
            and -1 <= base_sequence <= 2**31 - 1):
        raise IllegalArgumentError(
            f"producer fields out of range: id {producer_id}, epoch {producer_epoch}, "
            f"base sequence {base_sequence}")
    if (is_transactional or is_control) and producer_id < 0:
        raise IllegalArgumentError(
            "Cannot write transactional messages without a valid producer ID")
    base_ts = records[0].timestamp
    check_header_args(MAGIC_V2, base_ts)
    for r in records:
        if r.timestamp < NO_TIMESTAMP:
            raise IllegalArgumentError(f"invalid negative timestamp {r.timestamp}")
    if base_offset < 0 or base_offset + len(records) - 1 > INT64_MAX:
        raise IllegalArgumentError(f"invalid base offset {base_offset}")
    parts: list[bytes] = []
    for i, r in enumerate(records):
        parts += _record_parts(r, i, r.timestamp - base_ts)
    body = b"".join(parts)
    if codec is not CompressionType.NONE:
        body = compress(codec, body)
    attributes = int(codec)
    if is_transactional or is_control:
        attributes |= TRANSACTIONAL_FLAG_MASK
    if is_control:
        attributes |= CONTROL_FLAG_MASK
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
        max_ts = log_append_time
    else:
        max_ts = max(r.timestamp for r in records)
    size = RECORD_BATCH_OVERHEAD + len(body)
    out = bytearray(size)
    _HEADER_BEFORE_CRC.pack_into(out, 0, base_offset, size - LOG_OVERHEAD, partition_leader_epoch,
                                 MAGIC_V2)
    _HEADER_AFTER_CRC.pack_into(out, 21, attributes, len(records) - 1, base_ts, max_ts,
                                producer_id, producer_epoch, base_sequence, len(records))
    out[RECORD_BATCH_OVERHEAD:] = body
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[21:]))
    return out
