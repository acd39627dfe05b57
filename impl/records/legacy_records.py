"""Legacy v0/v1 message sets ("magic 0/1"), read-only, behind `RecordBatch`'s properties.

Each shallow entry (FMT-51) is:

    0 offset i64 | 8 size i32 | 12 crc u32 (CRC-32 over [16, end)) | 16 magic i8 | 17 attributes i8
    [v1: 18 timestamp i64] | keyLength i32 | key | valueLength i32 | value

An uncompressed entry is one record. A compressed entry ("wrapper") carries, in its value, a
compressed message set of inner entries; for v1 the inner offsets are relative and the wrapper's
offset is the absolute offset of the last inner record. kafkalog reads these (for `dump` and
`verify`) but never writes them (CHG-4).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

from kafkalog.impl.records.compression import CompressionType, compression_type_of, decompress
from kafkalog.impl.records.record_batch import (
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    RECORD_OVERHEAD_V0,
    Record,
    RecordBatch,
)
from kafkalog.model.errors import CorruptRecordError, IllegalStateError
from kafkalog.model.values import NO_TIMESTAMP, TimestampType

CRC_OFFSET_V0 = 12
ATTRIBUTES_OFFSET_V0 = 17
TIMESTAMP_OFFSET_V1 = 18
TIMESTAMP_TYPE_MASK_V1 = 0x08


def _key_offset(magic: int) -> int:
    return 26 if magic == 1 else 18


class LegacyRecordBatch(RecordBatch):
    """One shallow v0/v1 entry viewed as a batch (same read-only properties as v2)."""

    __slots__ = ()

    @property
    def attributes(self) -> int:
        return struct.unpack_from(">b", self._buf, ATTRIBUTES_OFFSET_V0)[0]

    @property
    def crc(self) -> int:
        return struct.unpack_from(">I", self._buf, CRC_OFFSET_V0)[0]

    @property
    def timestamp_type(self) -> TimestampType:
        # v0 has no timestamp type (Kafka's NO_TIMESTAMP_TYPE); CreateTime is the closest here.
        if self.magic == 1 and self.attributes & TIMESTAMP_TYPE_MASK_V1:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def wrapper_timestamp(self) -> int:
        if self.magic != 1:
            return NO_TIMESTAMP
        return struct.unpack_from(">q", self._buf, TIMESTAMP_OFFSET_V1)[0]

    @property
    def last_offset(self) -> int:
        return struct.unpack_from(">q", self._buf, 0)[0]

    @property
    def last_offset_delta(self) -> int:
        return self.last_offset - self.base_offset

    @property
    def base_offset(self) -> int:
        """The first inner offset; a compressed wrapper is inflated (within the bound) to find
        it, as Kafka's LegacyFileChannelRecordBatch.baseOffset does (loadFullBatch)."""
        if self.compression_type is CompressionType.NONE:
            return self.last_offset
        for record in self.records():
            return record.offset
        raise CorruptRecordError("compressed legacy wrapper holds no message", where=self.where())

    @property
    def partition_leader_epoch(self) -> int:
        return -1

    @property
    def is_transactional(self) -> bool:
        return False

    @property
    def is_control_batch(self) -> bool:
        return False

    @property
    def has_delete_horizon(self) -> bool:
        return False

    @property
    def base_timestamp(self) -> int:
        return self.wrapper_timestamp

    @property
    def max_timestamp(self) -> int:
        return self.wrapper_timestamp

    @property
    def producer_id(self) -> int:
        return -1

    @property
    def producer_epoch(self) -> int:
        return -1

    @property
    def base_sequence(self) -> int:
        return -1

    @property
    def record_count(self) -> int:
        if self.compression_type is CompressionType.NONE:
            return 1
        return sum(1 for _ in self.records())

    def compute_checksum(self) -> int:
        """CRC-32 (not 32C) over [magic, end) of the entry."""
        return zlib.crc32(self._buf[MAGIC_OFFSET : self.size_in_bytes])

    def is_valid(self) -> bool:
        size = self.size_in_bytes
        if size - LOG_OVERHEAD < RECORD_OVERHEAD_V0 or size > len(self._buf):
            return False
        return self.magic in (0, 1) and self.crc == self.compute_checksum()

    def ensure_valid(self, where: str | None = None) -> None:
        at = where or self.where()
        if not self.is_valid():
            raise CorruptRecordError(
                f"legacy message is corrupt (magic {self.magic}, stored crc = {self.crc}, "
                f"computed crc = {self.compute_checksum()})", where=at)

    def _key_value(self) -> tuple[bytes | None, bytes | None]:
        return _key_value(self._buf[: self.size_in_bytes], self.magic, self.where())

    def records(self) -> Iterator[Record]:
        """The record itself, or the inner records of a compressed wrapper with absolute offsets."""
        where = self.where()
        codec = compression_type_of(self.attributes & 0x07, where)
        key, value = self._key_value()
        if codec is CompressionType.NONE:
            yield Record(self.last_offset, self.wrapper_timestamp, key, value)
            return
        if value is None:
            raise CorruptRecordError("compressed legacy wrapper has a null value", where=where)
        data = decompress(codec, value, where)  # bounded (compression.MAX_INFLATED_BYTES)
        if self.magic == 1:
            last = _last_inner_offset(data, where)
            if last is None:
                raise CorruptRecordError("compressed legacy wrapper holds no message",
                                         where=where)
            # v1 wrappers store relative inner offsets; the wrapper holds the last absolute
            # offset. Like Kafka's deep iterator, a negative computed base (a producer-side
            # wrapper at offset 0) leaves the inner offsets as they are.
            shift = max(self.last_offset - last, 0)
        else:
            shift = 0
        # Records are made one at a time: a small wrapper may hold a million inner messages.
        yield from self._absolute(_inner_entries(data, where), shift)

    def _absolute(self, inner: Iterator[Record], shift: int) -> Iterator[Record]:
        log_append = self.timestamp_type is TimestampType.LOG_APPEND_TIME
        for r in inner:
            ts = self.wrapper_timestamp if log_append else r.timestamp
            yield Record(r.offset + shift, ts, r.key, r.value)

    def _writable(self) -> memoryview:
        raise IllegalStateError("legacy v0/v1 batches are read-only", where=self.where())


def _key_value(entry: memoryview, magic: int, where: str) -> tuple[bytes | None, bytes | None]:
    pos = _key_offset(magic)
    key, pos = _sized(entry, pos, where)
    value, _ = _sized(entry, pos, where)
    return key, value


def _sized(buf: memoryview, pos: int, where: str) -> tuple[bytes | None, int]:
    if pos + 4 > len(buf):
        raise CorruptRecordError("legacy message field runs past its end", where=where)
    (length,) = struct.unpack_from(">i", buf, pos)
    pos += 4
    if length < 0:
        return None, pos
    if pos + length > len(buf):
        raise CorruptRecordError("legacy message field runs past its end", where=where)
    return bytes(buf[pos : pos + length]), pos + length


def _last_inner_offset(data: bytes, where: str) -> int | None:
    """The stored offset of the last inner message (headers only), or None when there is none."""
    pos, last = 0, None
    while pos + LOG_OVERHEAD <= len(data):
        last, size = struct.unpack_from(">qi", data, pos)
        if size < RECORD_OVERHEAD_V0:
            raise CorruptRecordError(f"inner legacy message of size {size} is invalid", where=where)
        pos += LOG_OVERHEAD + size
    return last


def _inner_entries(data: bytes, where: str) -> Iterator[Record]:
    """Inner messages of a decompressed wrapper, with their stored offsets and timestamps."""
    buf = memoryview(data)
    pos = 0
    while pos + LOG_OVERHEAD <= len(buf):
        offset, size = struct.unpack_from(">qi", buf, pos)
        end = pos + LOG_OVERHEAD + size
        if size < RECORD_OVERHEAD_V0 or end > len(buf):
            raise CorruptRecordError(f"inner legacy message of size {size} is invalid", where=where)
        magic = buf[pos + MAGIC_OFFSET]
        entry = buf[pos:end]
        ts = struct.unpack_from(">q", entry, TIMESTAMP_OFFSET_V1)[0] if magic == 1 else NO_TIMESTAMP
        key, value = _key_value(entry, magic, where)
        yield Record(offset, ts, key, value)
        pos = end
