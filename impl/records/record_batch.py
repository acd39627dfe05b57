"""`RecordBatch`: a zero-copy view over the bytes of one v2 record batch, and its records.

Byte layout (FMT-45; all integers big-endian; 61-byte header then the records):

    0 baseOffset i64 | 8 batchLength i32 | 12 partitionLeaderEpoch i32 | 16 magic i8 (=2)
    17 crc u32 | 21 attributes i16 | 23 lastOffsetDelta i32 | 27 baseTimestamp i64
    35 maxTimestamp i64 | 43 producerId i64 | 51 producerEpoch i16 | 53 baseSequence i32
    57 recordCount i32 | 61 records...

The CRC-32C covers bytes [21, end) (FMT-46), so base offset and partition leader epoch can be
stamped in place without recomputing it (FMT-47); max timestamp and attributes cannot.

Header fields are read with `struct.unpack_from` straight from the buffer; nothing is copied
until `records()` decodes (and, for compressed batches, decompresses) the record section.
Legacy v0/v1 message sets get the same read-only properties from `legacy_records.LegacyRecordBatch`
(pick the class with `memory_records.batch_of`).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from crc32c import crc32c
from kafkalog.impl.records.compression import CompressionType, compression_type_of, decompress
from kafkalog.impl.records.varint import decode_varint, decode_varlong
from kafkalog.model.errors import CorruptRecordError, IllegalArgumentError, IllegalStateError
from kafkalog.model.values import NO_TIMESTAMP, Header, TimestampType
from kafkalog.model.values import Record as ProducerRecord

BASE_OFFSET_OFFSET = 0
LENGTH_OFFSET = 8
LOG_OVERHEAD = 12  # offset + length fields, common to every magic
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
HEADER_SIZE_UP_TO_MAGIC = 17
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
LAST_OFFSET_DELTA_OFFSET = 23
BASE_TIMESTAMP_OFFSET = 27
MAX_TIMESTAMP_OFFSET = 35
PRODUCER_ID_OFFSET = 43
RECORDS_COUNT_OFFSET = 57
RECORD_BATCH_OVERHEAD = 61  # RECORDS_OFFSET: size of a v2 header
RECORD_OVERHEAD_V0 = 14  # smallest legal size field (FMT-52)

MAGIC_V2 = 2
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40

# Precompiled readers: a bound Struct.unpack_from skips the format-string cache lookup that
# struct.unpack_from(">i", ...) pays on every call, and header fields are read per batch on
# every append, read and recovery.
_I8 = struct.Struct(">b").unpack_from
_I16 = struct.Struct(">h").unpack_from
_I32 = struct.Struct(">i").unpack_from
_U32 = struct.Struct(">I").unpack_from
_I64 = struct.Struct(">q").unpack_from
# batchLength, partitionLeaderEpoch, magic, crc: bytes [8, 21) in one call (FMT-45).
_LENGTH_TO_CRC = struct.Struct(">iibI").unpack_from
_PUT_I32 = struct.Struct(">i").pack_into
_PUT_I64 = struct.Struct(">q").pack_into


@dataclass(frozen=True, slots=True)
class Record:
    """One record read from a batch: its absolute offset, effective timestamp, key, value, headers.

    With LogAppendTime the timestamp is the batch's max timestamp, as Kafka's reader reports it.
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()

    def to_value(self) -> ProducerRecord:
        """The offset-less shared value (what a producer sent)."""
        return ProducerRecord(self.key, self.value, self.timestamp, self.headers)


class RecordBatch:
    """A view over one batch's bytes (v2). `position` is where it starts in its file, or -1.

    Writers (`set_*`) need a writable buffer (bytearray or a writable memoryview).
    """

    __slots__ = ("_buf", "position", "source")

    def __init__(self, data: bytes | bytearray | memoryview, position: int = -1,
                 source: str | None = None) -> None:
        self._buf = memoryview(data)
        self.position = position
        self.source = source

    # --- where, for error messages ---

    def where(self) -> str:
        """`file@position` (or what is known of it), for typed errors."""
        name = self.source or "<memory>"
        return f"{name}@{self.position}" if self.position >= 0 else name

    @property
    def buffer(self) -> memoryview:
        """The batch's bytes (zero-copy)."""
        return self._buf

    # --- header fields (FMT-45) ---

    @property
    def size_in_bytes(self) -> int:
        return LOG_OVERHEAD + _I32(self._buf, LENGTH_OFFSET)[0]

    @property
    def base_offset(self) -> int:
        return _I64(self._buf, BASE_OFFSET_OFFSET)[0]

    @property
    def last_offset_delta(self) -> int:
        return _I32(self._buf, LAST_OFFSET_DELTA_OFFSET)[0]

    @property
    def last_offset(self) -> int:
        # Both fields read here rather than through the two properties: this runs several
        # times per batch on every append (LegacyRecordBatch overrides it).
        buf = self._buf
        return _I64(buf, BASE_OFFSET_OFFSET)[0] + _I32(buf, LAST_OFFSET_DELTA_OFFSET)[0]

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def partition_leader_epoch(self) -> int:
        return _I32(self._buf, PARTITION_LEADER_EPOCH_OFFSET)[0]

    @property
    def magic(self) -> int:
        return _I8(self._buf, MAGIC_OFFSET)[0]

    @property
    def crc(self) -> int:
        return _U32(self._buf, CRC_OFFSET)[0]

    @property
    def attributes(self) -> int:
        return _I16(self._buf, ATTRIBUTES_OFFSET)[0]

    @property
    def compression_type(self) -> CompressionType:
        return compression_type_of(self.attributes & COMPRESSION_CODEC_MASK, self.where())

    @property
    def timestamp_type(self) -> TimestampType:
        if self.attributes & TIMESTAMP_TYPE_MASK:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control_batch(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_FLAG_MASK)

    @property
    def base_timestamp(self) -> int:
        return _I64(self._buf, BASE_TIMESTAMP_OFFSET)[0]

    @property
    def max_timestamp(self) -> int:
        return _I64(self._buf, MAX_TIMESTAMP_OFFSET)[0]

    @property
    def producer_id(self) -> int:
        return _I64(self._buf, PRODUCER_ID_OFFSET)[0]

    @property
    def producer_epoch(self) -> int:
        return _I16(self._buf, 51)[0]

    @property
    def base_sequence(self) -> int:
        return _I32(self._buf, 53)[0]

    @property
    def record_count(self) -> int:
        return _I32(self._buf, RECORDS_COUNT_OFFSET)[0]

    # --- validity (FMT-46) ---

    def compute_checksum(self) -> int:
        """CRC-32C over [attributes, end), computed on the buffer without copying."""
        return crc32c(self._buf[ATTRIBUTES_OFFSET : self.size_in_bytes])

    def is_valid(self) -> bool:
        """Size >= 61, whole, magic 2 and the stored CRC equals the computed one.

        One unpack of bytes [8, 21) instead of four property reads: this runs once per batch
        on every append and every checked read.
        """
        buf = self._buf
        if len(buf) < RECORD_BATCH_OVERHEAD:
            return False  # then size < 61 or size > len(buf), whatever the size field says
        length, _, magic, crc = _LENGTH_TO_CRC(buf, LENGTH_OFFSET)
        size = LOG_OVERHEAD + length
        if size < RECORD_BATCH_OVERHEAD or size > len(buf) or magic != MAGIC_V2:
            return False
        return crc == crc32c(buf[ATTRIBUTES_OFFSET:size])

    def ensure_valid(self, where: str | None = None) -> None:
        """CorruptRecordError (ERR-20) naming file and position unless `is_valid()`."""
        if self.is_valid():
            return  # the common case, without building the error location
        at = where or self.where()
        size = self.size_in_bytes
        if size < RECORD_BATCH_OVERHEAD:
            raise CorruptRecordError(
                f"record batch is only {size} bytes, smaller than the minimum "
                f"{RECORD_BATCH_OVERHEAD}", where=at)
        if size > len(self._buf):
            raise CorruptRecordError(f"record batch of {size} bytes is truncated to "
                                     f"{len(self._buf)}", where=at)
        if self.magic != MAGIC_V2:
            raise CorruptRecordError(f"record batch has invalid magic {self.magic}", where=at)
        stored, computed = self.crc, self.compute_checksum()
        if stored != computed:
            raise CorruptRecordError(
                f"record batch is corrupt (stored crc = {stored}, computed crc = {computed})",
                where=at)

    # --- deep iteration ---

    def records_section(self) -> bytes | memoryview:
        """The records after the header, decompressed (a view of the buffer when uncompressed).

        Raises what `decompress` raises for an unknown codec or corrupt compressed bytes.
        """
        body = self._buf[RECORD_BATCH_OVERHEAD : self.size_in_bytes]
        codec = self.compression_type
        return body if codec is CompressionType.NONE else decompress(codec, body, self.where())

    def records(self) -> Iterator[Record]:
        """Every record, decompressing if needed; offsets and timestamps made absolute.

        Raises CorruptRecordError (naming this batch) on malformed record bytes.
        """
        where = self.where()
        # Deep iteration copies the record section once: indexing bytes is much faster than
        # indexing a memoryview, and every key and value is copied out anyway.
        data = bytes(self.records_section())
        log_append = (self.max_timestamp if self.timestamp_type is TimestampType.LOG_APPEND_TIME
                      else None)
        base_offset, base_ts = self.base_offset, self.base_timestamp
        pos = 0
        for _ in range(self.record_count):
            record, pos = _read_record(data, pos, base_offset, base_ts, log_append, where)
            yield record
        if pos != len(data):
            raise CorruptRecordError(
                f"{len(data) - pos} bytes left after {self.record_count} records", where=where)

    def offset_of_max_timestamp(self) -> int | None:
        """The offset of the first record whose timestamp equals the batch's max timestamp.

        Spec: LOG-48 (KAFKA-16310). None when no record carries it.
        """
        max_ts = self.max_timestamp
        for record in self.records():
            if record.timestamp == max_ts:
                return record.offset
        return None

    # --- writers (stamping in place) ---

    def _writable(self) -> memoryview:
        if self._buf.readonly:
            raise IllegalStateError("record batch buffer is read-only", where=self.where())
        return self._buf

    def set_base_offset(self, offset: int) -> None:
        """Stamp the base offset; outside the CRC (which starts at byte 21), so no recompute."""
        _PUT_I64(self._writable(), BASE_OFFSET_OFFSET, offset)

    def set_last_offset(self, offset: int) -> None:
        """Stamp offsets so that the last offset is `offset` (Kafka's setLastOffset)."""
        self.set_base_offset(offset - self.last_offset_delta)

    def set_partition_leader_epoch(self, epoch: int) -> None:
        """Stamp the partition leader epoch; outside the CRC (FMT-47), so no recompute."""
        _PUT_I32(self._writable(), PARTITION_LEADER_EPOCH_OFFSET, epoch)

    def set_max_timestamp(self, timestamp_type: TimestampType, max_timestamp: int) -> None:
        """Set the timestamp-type bit and max timestamp, then recompute the CRC (FMT-47)."""
        if self.max_timestamp == max_timestamp and self.timestamp_type is timestamp_type:
            return
        buf = self._writable()
        attrs = self.attributes & ~TIMESTAMP_TYPE_MASK
        if timestamp_type is TimestampType.LOG_APPEND_TIME:
            attrs |= TIMESTAMP_TYPE_MASK
        struct.pack_into(">h", buf, ATTRIBUTES_OFFSET, attrs)
        struct.pack_into(">q", buf, MAX_TIMESTAMP_OFFSET, max_timestamp)
        struct.pack_into(">I", buf, CRC_OFFSET, self.compute_checksum())

    def __repr__(self) -> str:
        return (f"RecordBatch(magic={self.magic}, offsets={self.base_offset}..{self.last_offset}, "
                f"size={self.size_in_bytes}, position={self.position})")


def _read_bytes(data: bytes | memoryview, pos: int, where: str) -> tuple[bytes | None, int]:
    length, pos = decode_varint(data, pos, where)
    if length < 0:
        return None, pos
    if pos + length > len(data):
        raise CorruptRecordError("record field runs past the end of the batch", where=where)
    return bytes(data[pos : pos + length]), pos + length


def _read_headers(data: bytes | memoryview, pos: int, where: str
                  ) -> tuple[tuple[Header, ...], int]:
    count, pos = decode_varint(data, pos, where)
    if count < 0:
        raise CorruptRecordError(f"invalid negative header count {count}", where=where)
    headers = []
    for _ in range(count):
        raw_key, pos = _read_bytes(data, pos, where)
        if raw_key is None:
            raise CorruptRecordError("invalid null header key", where=where)
        try:
            key = raw_key.decode("utf-8")
        except UnicodeDecodeError as e:
            raise CorruptRecordError(f"header key is not UTF-8: {e}", where=where) from e
        value, pos = _read_bytes(data, pos, where)
        headers.append(Header(key, value))
    return tuple(headers), pos


def _read_record(data: bytes | memoryview, pos: int, base_offset: int, base_ts: int,
                 log_append_time: int | None, where: str) -> tuple[Record, int]:
    """Decode one record (FMT-49) at `pos`; returns it and the position after it."""
    size, body = decode_varint(data, pos, where)
    end = body + size
    if size < 0 or end > len(data):
        raise CorruptRecordError(f"record of {size} bytes runs past the batch", where=where)
    p = body + 1  # attributes: unused
    ts_delta, p = decode_varlong(data, p, where)
    offset_delta, p = decode_varint(data, p, where)
    key, p = _read_bytes(data, p, where)
    value, p = _read_bytes(data, p, where)
    headers, p = _read_headers(data, p, where)
    if p != end:
        raise CorruptRecordError(f"record size {size} does not match its fields", where=where)
    timestamp = base_ts + ts_delta if log_append_time is None else log_append_time
    return Record(base_offset + offset_delta, timestamp, key, value, headers), end


def check_header_args(magic: int, base_timestamp: int) -> None:
    """ERR-49: v2 headers need magic >= 2 and a base timestamp >= 0 or NO_TIMESTAMP."""
    if magic < MAGIC_V2:
        raise IllegalArgumentError(f"invalid magic {magic} for a v2 batch header")
    if base_timestamp < 0 and base_timestamp != NO_TIMESTAMP:
        raise IllegalArgumentError(f"invalid base timestamp {base_timestamp}")
