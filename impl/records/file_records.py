"""`FileRecords`: the `.log` file of a segment, a sequence of whole record batches (FMT-53..56).

The file is `<20-digit base offset>.log` holding batches back to back, exactly the bytes Kafka
writes. `size_in_bytes` is the logical size: appends publish it only after the write, so a reader
that bounds itself by it never sees a half-written batch. With `preallocate` the file is longer
than the logical size; `close()`/`trim()` cut it back.

Crash policy: an append is one positional write; nothing is durable until `flush()` (fsync).
After a crash the tail may be torn or zero-filled; scanning stops at a torn tail and raises
CorruptRecordError for a size field below 14 (FMT-52), and recovery truncates there.

All I/O goes through the `FileSystem` seam. Reads use pread of exactly the requested range;
shallow iteration reads growing chunks and yields batch views into them (no decompression).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from kafkalog.impl.fs.file_system import FileHandle, FileSystem, PathLike
from kafkalog.impl.index.time_index import TimestampOffset
from kafkalog.impl.records.batch_scan import find_batch_header
from kafkalog.impl.records.memory_records import (
    V2_MIN_SIZE_FIELD,
    MemoryRecords,
    batch_of,
    next_batch_size,
)
from kafkalog.impl.records.record_batch import (
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    RECORD_OVERHEAD_V0,
    RecordBatch,
)
from kafkalog.impl.records.stamped_records import StampedRecords
from kafkalog.model.errors import IllegalArgumentError, KafkaStorageError
from kafkalog.model.values import INT32_MAX, NO_TIMESTAMP, TimestampAndOffset

_FIRST_CHUNK = 16 * 1024
# 1 MiB, not more: a fresh buffer per chunk above ~1 MiB costs page faults on every read
# (measured: a recovery walk took 180 us/MiB with 4 MiB chunks, 78 us/MiB with 1 MiB).
_MAX_CHUNK = 1024 * 1024
_HEADER_CHUNK = 4 * 1024  # header scans: about one index interval (CFG-5 default)
_V2_LAST_OFFSET_END = 27  # a v2 header up to and including lastOffsetDelta (FMT-45)
_OFFSET_AND_SIZE = struct.Struct(">qi").unpack_from


class LogOffsetPosition(NamedTuple):
    """FMT-54's answer: a batch's last offset, its start position and its size in bytes."""

    offset: int
    position: int
    size: int


class FileRecords:
    """The records of one `.log` file. Not thread-safe for writers; readers may run alongside."""

    def __init__(self, fs: FileSystem, path: PathLike, handle: FileHandle, size: int) -> None:
        self.fs = fs
        self.path = str(path)
        self._handle = handle
        self._size = size

    @classmethod
    def open(cls, fs: FileSystem, path: PathLike, file_already_exists: bool = False,
             init_file_size: int = 0, preallocate: bool = False,
             writable: bool = True) -> FileRecords:
        """Open (or create) a `.log` file. FMT-53: a new preallocated file starts at size 0."""
        handle = fs.open_file(path, create=not file_already_exists and writable,
                              writable=writable)
        if not file_already_exists and preallocate:
            handle.truncate(init_file_size)
            return cls(fs, path, handle, 0)
        return cls(fs, path, handle, handle.size())

    # --- size and writes ---

    @property
    def size_in_bytes(self) -> int:
        return self._size

    def append(self, records: bytes | bytearray | memoryview | MemoryRecords) -> int:
        """Write `records` at the end in one write; returns the bytes written (FMT-53, ERR-18)."""
        stamped = isinstance(records, StampedRecords)
        data = records if stamped else (
            records.buffer if isinstance(records, MemoryRecords) else records)
        size = len(data)
        if size > INT32_MAX - self._size:
            raise IllegalArgumentError(
                f"append of {size} bytes is too large for segment with current file "
                f"position at {self._size}", where=self.path)
        if stamped:  # a leader's batches beside their stamps: one vectored write, no copy
            self._handle.write_stamped(records, self._size)
        else:
            self._handle.pwrite(data, self._size)
        self._size += size
        return size

    def truncate_to(self, target_size: int) -> int:
        """Cut the file to `target_size`; returns the bytes removed (ERR-17 if out of range)."""
        original = self._size
        if target_size > original or target_size < 0:
            raise IllegalArgumentError(
                f"attempt to truncate log segment to {target_size} bytes failed, size of this "
                f"log segment is {original} bytes", where=self.path)
        if target_size < self._handle.size():
            self._handle.truncate(target_size)
        self._size = target_size
        return original - target_size

    def flush(self) -> None:
        """fsync data and metadata."""
        self._handle.fsync()

    def trim(self) -> None:
        """Cut a preallocated file back to the logical size."""
        if self._handle.size() != self._size:
            self._handle.truncate(self._size)

    def close(self) -> None:
        """Trim to the logical size, flush, close (FMT-53). Idempotent.

        Kafka fsyncs before the trim (DUR-1), leaving the trim unsynced; kafkalog trims first so
        the clean-shutdown marker never outlives an unsynced trim (GAP-8, strict).
        """
        if self._handle.closed:
            return
        if self._handle.writable:
            self.trim()
            self.flush()
        self._handle.close()

    def close_handlers(self) -> None:
        """Close the descriptor without flushing (a log dir going offline)."""
        self._handle.close()

    def delete_if_exists(self) -> bool:
        self._handle.close()
        return self.fs.delete_if_exists(self.path)

    def rename_to(self, path: PathLike) -> None:
        """Atomically rename the file; the open descriptor keeps working."""
        self.fs.rename(self.path, path)
        self.path = str(path)
        self._handle.path = Path(path)

    def last_modified_ms(self) -> int:
        return self.fs.mtime_ms(self.path)

    def set_last_modified_ms(self, ms: int) -> None:
        self.fs.set_mtime_ms(self.path, ms)

    # --- reads ---

    def read_bytes(self, position: int, size: int) -> bytes:
        """Exactly the bytes [position, min(position + size, size_in_bytes))."""
        end = min(position + size, self._size)
        if position < 0 or size < 0:
            raise IllegalArgumentError(f"invalid read of {size} bytes at {position}",
                                       where=self.path)
        return self._handle.pread(position, end - position) if end > position else b""

    def read_into(self, buffer: bytearray | memoryview, position: int) -> int:
        """Fill `buffer` from `position` (bounded by the logical size); returns bytes copied."""
        if position < 0:
            raise IllegalArgumentError(f"invalid read of {len(buffer)} bytes at {position}",
                                       where=self.path)
        n = max(0, min(len(buffer), self._size - position))
        return self._handle.pread_into(memoryview(buffer)[:n], position) if n else 0

    def slice(self, position: int, size: int) -> memoryview:
        """The bytes [position, position + size) capped at the end (ERR-16 on bad arguments).

        One pread of exactly that range, never the whole file.
        """
        if position < 0:
            raise IllegalArgumentError(f"invalid position: {position} in read from {self.path}")
        if position > self._size:
            raise IllegalArgumentError(
                f"slice from position {position} exceeds end position of {self.path}")
        if size < 0:
            raise IllegalArgumentError(f"invalid size: {size} in read from {self.path}")
        return memoryview(self.read_bytes(position, size))

    def slice_records(self, position: int, size: int) -> MemoryRecords:
        """`slice` wrapped as MemoryRecords (its batches, possibly ending in a partial one)."""
        return MemoryRecords(self.slice(position, size))

    def batches(self, start: int = 0, end: int | None = None) -> Iterator[RecordBatch]:
        """Whole batches in [start, end) (FMT-52), each with its `position`; no decompression.

        Reads growing chunks (16 KiB up to 1 MiB, or one whole larger batch) and yields views
        into them. Raises CorruptRecordError with file and position at a size field below 14.
        """
        stop = self._size if end is None else min(end, self._size)
        pos, chunk_start, chunk = start, start, memoryview(b"")
        want = _FIRST_CHUNK
        path = self.path
        while True:
            rel = pos - chunk_start
            # Whole batches inside the chunk, with `next_batch_size` and `batch_of` inlined
            # (recovery and verification walk every batch of a segment through here).
            n = len(chunk)
            while rel + HEADER_SIZE_UP_TO_MAGIC < n:
                size = _OFFSET_AND_SIZE(chunk, rel)[1]
                if size < V2_MIN_SIZE_FIELD and (size < RECORD_OVERHEAD_V0
                                                 or chunk[rel + MAGIC_OFFSET] >= 2):
                    next_batch_size(chunk, rel, n, chunk_start, path)  # raises the error
                size += LOG_OVERHEAD
                if rel + size > n:
                    break
                view = chunk[rel : rel + size]
                if view[MAGIC_OFFSET] in (0, 1):
                    yield batch_of(view, pos, path)
                else:
                    yield RecordBatch(view, pos, path)
                pos += size
                rel += size
            need = _needed(chunk, rel)
            if chunk_start + len(chunk) >= stop or pos + need > stop:
                return  # end of region, or a torn tail: FMT-52 stops without error
            n = min(max(want, need), stop - pos)
            chunk_start, chunk = pos, memoryview(self._handle.pread(pos, n))
            if len(chunk) < n:
                raise KafkaStorageError("file shrank while being read", where=self.path)
            want = min(want * 2, _MAX_CHUNK)

    # --- searches ---

    def search_for_offset_with_size(self, target_offset: int, starting_position: int,
                                    expected_position: int = -1) -> LogOffsetPosition | None:
        """The first batch from `starting_position` whose last offset >= target (FMT-54).

        Reads batch headers only, like Kafka's FileLogInputStream, so a lookup costs one small
        pread instead of reading whole batches. Fast path for v2 batches: preads of at most
        4 KiB, reading only the first 27 header bytes of each batch. `expected_position` is
        where the offset index says the answer starts at the latest (the next entry's
        position); it only shortens the reads (a small pread costs about half a 4 KiB one),
        never the search: past it, reads are 4 KiB again. Anything unusual (legacy magic, a
        size field below the v2 header, a short chunk) continues with `batches` from that
        position, which decides exactly as before (its errors, and the silent stop at a torn
        tail).
        """
        stop, pos = self._size, starting_position
        pread = self._handle.pread
        while True:
            if pos + HEADER_SIZE_UP_TO_MAGIC >= stop:
                return None  # fewer than 18 bytes left: a torn tail (FMT-52)
            n = stop - pos
            if n > _HEADER_CHUNK:
                n = _HEADER_CHUNK
            if pos <= expected_position < pos + n - _V2_LAST_OFFSET_END:
                n = expected_position - pos + _V2_LAST_OFFSET_END  # up to the hint's header
            chunk = pread(pos, n)
            if len(chunk) < n:
                raise KafkaStorageError("file shrank while being read", where=self.path)
            if n < _V2_LAST_OFFSET_END:
                break
            found = find_batch_header(chunk, pos, stop, target_offset, LogOffsetPosition)
            if found.__class__ is not int:
                return found  # type: ignore[no-any-return]  # the batch, or None at a torn tail
            if found < 0:
                pos = ~found  # a batch only the per-batch path decides
                break
            pos = found
        for batch in self.batches(pos):
            if batch.last_offset >= target_offset:
                return LogOffsetPosition(batch.last_offset, batch.position, batch.size_in_bytes)
        return None

    def search_for_timestamp(self, target_timestamp: int, starting_position: int,
                             starting_offset: int) -> TimestampAndOffset | None:
        """The first record with timestamp >= target and offset >= starting_offset (FMT-55)."""
        for batch in self.batches(starting_position):
            if batch.max_timestamp < target_timestamp:
                continue
            for record in batch.records():
                if record.timestamp >= target_timestamp and record.offset >= starting_offset:
                    epoch = batch.partition_leader_epoch
                    return TimestampAndOffset(record.timestamp, record.offset,
                                              epoch if epoch >= 0 else None)
        return None

    def largest_timestamp_after(self, starting_position: int) -> TimestampOffset:
        """Max `max_timestamp` of the batches from the position, with that batch's last offset.

        Spec: FMT-56. (NO_TIMESTAMP, -1) when there is no batch with a timestamp.
        """
        max_ts, offset = NO_TIMESTAMP, -1
        for batch in self.batches(starting_position):
            ts = batch.max_timestamp
            if ts > max_ts:
                max_ts, offset = ts, batch.last_offset
        return TimestampOffset(max_ts, offset)

    def __repr__(self) -> str:
        return f"FileRecords({self.path!r}, size={self._size})"


def _needed(chunk: memoryview, rel: int) -> int:
    """Bytes to read from `rel` to hold the next batch whole (its size field if readable)."""
    if len(chunk) - rel > HEADER_SIZE_UP_TO_MAGIC:
        size = int.from_bytes(chunk[rel + 8 : rel + 12], "big", signed=True)
        return LOG_OVERHEAD + max(size, 0)
    return HEADER_SIZE_UP_TO_MAGIC + 1
