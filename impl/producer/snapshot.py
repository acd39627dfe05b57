"""Kafka's producer snapshot file `<offset>.snapshot` (PSF-1..PSF-7), byte for byte.

Layout (big-endian, PSF-2): int16 version (1), uint32 CRC-32C of bytes [6, end), int32 entry
count, then 46-byte entries: producerId int64, epoch int16, lastSequence int32, lastOffset int64,
offsetDelta int32, timestamp int64, coordinatorEpoch int32, currentTxnFirstOffset int64.

Kafka writes the entries in the iteration order of the `HashMap<Long, ProducerStateEntry>` that
holds them (PSF-4: "unspecified"); `java_hash_map_order` reproduces that order so a snapshot
rebuilt here has the broker's bytes when the producers were inserted in the same order.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from crc32c import crc32c
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.model.errors import CorruptSnapshotError

SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1
HEADER = struct.Struct(">hIi")  # version, crc, entry count: 10 bytes
ENTRY = struct.Struct(">qhiqiqiq")  # 46 bytes
assert HEADER.size == 10 and ENTRY.size == 46
#: Bytes checked at a time while reading a snapshot (read_snapshot).
_CHUNK = 1 << 20


@dataclass(frozen=True)
class SnapshotEntry:
    """One persisted producer (PSF-4): only its newest batch survives a snapshot."""

    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int


def snapshot_file(dir_path: Path, offset: int) -> Path:
    """PSF-1: the 20-digit zero-padded offset plus `.snapshot`."""
    return dir_path / f"{offset:020d}{SNAPSHOT_SUFFIX}"


def snapshot_offset(name: str) -> int | None:
    """The offset of a `.snapshot` file name (characters before the first '.'), else None."""
    if not name.endswith(SNAPSHOT_SUFFIX):
        return None
    head = name.split(".", 1)[0]
    return int(head) if head.isdigit() else None


def encode(entries: Sequence[SnapshotEntry]) -> bytes:
    """PSF-3 steps 1-2: serialise with CRC 0, then store CRC-32C of bytes [6, end)."""
    out = bytearray(HEADER.size + ENTRY.size * len(entries))
    HEADER.pack_into(out, 0, SNAPSHOT_VERSION, 0, len(entries))
    pos = HEADER.size
    for e in entries:
        ENTRY.pack_into(out, pos, e.producer_id, e.epoch, e.last_sequence, e.last_offset,
                        e.offset_delta, e.timestamp, e.coordinator_epoch,
                        e.current_txn_first_offset)
        pos += ENTRY.size
    struct.pack_into(">I", out, 2, crc32c(memoryview(out)[6:]))
    return bytes(out)


def decode(data: bytes, where: str) -> list[SnapshotEntry]:
    """PSF-5: version, then schema (count and size), then CRC; CorruptSnapshotError otherwise."""
    count, stored = _check_header(data[: HEADER.size], len(data), where)
    _check_crc(stored, crc32c(memoryview(data)[6:]), where)
    return _entries(data, count)


def _check_header(head: bytes, size: int, where: str) -> tuple[int, int]:
    """(entry count, stored CRC) of a file of `size` bytes starting with `head`, once its
    version and schema are valid (PSF-5); CorruptSnapshotError otherwise."""
    if size < HEADER.size or len(head) < HEADER.size:
        raise CorruptSnapshotError(
            f"Snapshot failed schema validation: {size} bytes is shorter than the header",
            where=where,
        )
    version, crc, count = HEADER.unpack_from(head, 0)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(
            f"Snapshot failed schema validation: Snapshot contained an unknown file version "
            f"{version}",
            where=where,
        )
    if count < 0 or size < HEADER.size + count * ENTRY.size:
        raise CorruptSnapshotError(
            f"Snapshot failed schema validation: {count} entries do not fit in {size} bytes",
            where=where,
        )
    return count, crc


def _check_crc(stored: int, computed: int, where: str) -> None:
    if computed != stored:
        raise CorruptSnapshotError(
            f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {stored}. Computed crc: "
            f"{computed}",
            where=where,
        )


def _entries(data: bytes, count: int) -> list[SnapshotEntry]:
    return [SnapshotEntry(*ENTRY.unpack_from(data, HEADER.size + i * ENTRY.size))
            for i in range(count)]


def write_snapshot(fs: FileSystem, path: Path, entries: Sequence[SnapshotEntry],
                   sync: bool) -> None:
    """PSF-3 steps 3-4: create + write (no truncation, as Kafka opens it), fsync iff `sync`."""
    handle = fs.open_file(path, create=True, writable=True)
    try:
        handle.pwrite(encode(entries), 0)
        if sync:
            handle.fsync()
    finally:
        handle.close()


def read_snapshot(fs: FileSystem, path: Path) -> list[SnapshotEntry]:
    """The entries of one snapshot file; CorruptSnapshotError for any PSF-5 failure.

    Kafka reads the whole file and checks its CRC over every byte after the version and CRC
    fields, entries and anything after them. The same check here reads the file in chunks and
    holds only the entries the header declares, once the CRC has passed: a damaged file grown
    to gigabytes (a sparse extension) costs time in proportion to its size, never memory.
    """
    where = str(path)
    handle = fs.open_file(path, writable=False)
    try:
        size = handle.size()
        count, stored = _check_header(handle.pread(0, HEADER.size), size, where)
        computed, at = 0, 6
        while at < size:
            chunk = handle.pread(at, min(_CHUNK, size - at))
            if not chunk:  # the file shrank under us: what is left decides
                break
            computed = crc32c(chunk, computed)
            at += len(chunk)
        _check_crc(stored, computed, where)
        return _entries(handle.pread(0, HEADER.size + count * ENTRY.size), count)
    finally:
        handle.close()


def _java_long_hash(value: int) -> int:
    """`HashMap.hash(Long.valueOf(value))`: (int)(v ^ v >>> 32), then h ^ (h >>> 16)."""
    v = value & 0xFFFFFFFFFFFFFFFF
    h = (v ^ (v >> 32)) & 0xFFFFFFFF
    return (h ^ (h >> 16)) & 0xFFFFFFFF


def java_hash_map_order(keys_in_insertion_order: Iterable[int], capacity: int) -> list[int]:
    """Iteration order of a Java HashMap<Long, _> of table size `capacity` (a power of two):
    by bucket, and within a bucket by insertion order (resizes keep relative order). Buckets
    deep enough to be turned into trees (8+) are not reproduced."""
    keys = list(keys_in_insertion_order)
    mask = capacity - 1
    return sorted(keys, key=lambda k: _java_long_hash(k) & mask)  # stable: insertion order kept


def java_hash_map_capacity(max_size: int) -> int:
    """The table size of a `new HashMap<>()` that once held `max_size` entries (16, doubling
    whenever size exceeds 0.75 * capacity; it never shrinks)."""
    capacity = 16
    while max_size > capacity * 3 // 4:
        capacity *= 2
    return capacity
