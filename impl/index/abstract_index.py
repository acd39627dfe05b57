"""`AbstractIndex`: what the offset and time indexes share (FMT-17, FMT-26..29).

An index is a memory-mapped file of fixed-size big-endian entries sorted by key. A new file is
preallocated to `max_index_size` rounded down to the entry size (zero-filled); an existing file
reopens with every whole entry counted as live (FMT-27), which is why indexes are trimmed on roll
and close and rebuilt by recovery after an unclean shutdown.

Lookups binary-search the mapped bytes with `struct.unpack_from` (O(log n), no list of entries),
with Kafka's warm-section split (FMT-17) so that ties resolve exactly as Kafka's do. One lock
guards every operation, because `resize` unmaps and remaps (CHG-7): a reader must not touch a
mapping that is going away. Use after `close()` raises KafkaStorageError (BUG-9: fail loudly).

Crash policy: entries are written into the mapping; `flush()` msyncs. An index is derived data:
after a crash the loader rebuilds any index it cannot trust.
"""

from __future__ import annotations

import functools
import mmap
import operator
import struct
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ClassVar, NamedTuple

from kafkalog.impl.fs.file_system import FileHandle, FileSystem, PathLike
from kafkalog.model.errors import (
    IllegalArgumentError,
    IndexOffsetOverflowError,
    KafkaStorageError,
)
from kafkalog.model.values import INT32_MAX

WARM_SECTION_BYTES = 8192  # FMT-17: Kafka searches the last 8 KiB of entries first
# Entries per chunk of the O(n) sanity scans: memory stays O(chunk) for an index of any size.
CHECK_CHUNK_ENTRIES = 1 << 16
_FIRST_CHECK_CHUNK = 1 << 10


_ZERO_CHUNK = bytes(1 << 20)


def _zero_range(mapped: mmap.mmap, start: int, end: int) -> None:
    """Zero [start, end) of a mapping in 1 MiB chunks, skipping chunks already zero: memory
    stays O(1) and a sparse preallocated tail is not filled in (an index may map 2 GiB)."""
    for at in range(start, end, len(_ZERO_CHUNK)):
        stop = min(end, at + len(_ZERO_CHUNK))
        zeros = _ZERO_CHUNK if stop - at == len(_ZERO_CHUNK) else bytes(stop - at)
        if mapped[at:stop] != zeros:  # bytes against bytes: a memcmp
            mapped[at:stop] = zeros


class Column(NamedTuple):
    """One searchable column of an entry: its one-field struct and byte offset in the entry."""

    field: struct.Struct
    offset: int
    relative: bool  # stored as offset - base_offset


def check_chunks(entries: int) -> Iterator[tuple[int, int]]:
    """[start, end) slices of `entries` for the O(n) sanity scans: 1,024 entries first, then
    doubling up to CHECK_CHUNK_ENTRIES. A crashed segment's preallocated index (10 MiB of
    which all but the first entries are zeros) fails within the first small chunk instead of
    after converting 65,536 entries; a valid index still costs O(n) in a few C-speed passes."""
    start, size = 0, min(_FIRST_CHECK_CHUNK, CHECK_CHUNK_ENTRIES)
    while start < entries:
        end = min(entries, start + size)
        yield start, end
        start, size = end, min(2 * size, CHECK_CHUNK_ENTRIES)


# Indexes this small are order-checked in one unpack (conformance checks every index of every
# segment after every step; most hold a handful of entries).
SMALL_CHECK_ENTRIES = 64


@functools.lru_cache(maxsize=2 * SMALL_CHECK_ENTRIES)
def entries_struct(entry_format: str, n: int) -> struct.Struct:
    """A big-endian Struct of `n` entries of `entry_format` (FMT-10, FMT-19)."""
    return struct.Struct(">" + entry_format * n)


def round_down(value: int, factor: int) -> int:
    return factor * (value // factor)


def non_decreasing(values: list[int]) -> bool:
    """Whether `values` never decrease; C-speed (timsort finds one run in n comparisons)."""
    return values == sorted(values)


def strictly_increasing(values: list[int]) -> bool:
    """Whether `values` strictly increase: for integers, a[i+1] > a[i] iff a[i] - i is
    non-decreasing. Lets the O(n) index sanity scans run in C on every load."""
    return non_decreasing(list(map(operator.sub, values, range(len(values)))))


class AbstractIndex(ABC):
    """Base of `OffsetIndex` and `TimeIndex`; subclasses define the entry layout and checks."""

    ENTRY: ClassVar[struct.Struct]

    def __init__(self, fs: FileSystem, path: PathLike, base_offset: int,
                 max_index_size: int = -1, writable: bool = True) -> None:
        self.fs = fs
        self.path = str(path)
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self.writable = writable
        self._lock = threading.RLock()
        self._mmap: mmap.mmap | None = None
        # A crash-recording mapping (conformance/crash/fault_fs.py) journals stores made through
        # the buffer
        # protocol only when told: `pack_into` bypasses every Python-level hook (FLT-7).
        self._on_store: Callable[[int, int], None] | None = None
        self._closed = False
        self._length = 0
        self._entries = 0
        self._max_entries = 0
        self._create_and_assign_mmap()

    @classmethod
    def entry_size(cls) -> int:
        return cls.ENTRY.size

    # --- opening and mapping (FMT-26) ---

    def _create_and_assign_mmap(self) -> None:
        # A read-only index never creates its file: a missing one is a KafkaStorageError.
        newly_created = self.writable and not self.fs.exists(self.path)
        if newly_created and self.max_index_size < self.entry_size():
            raise IllegalArgumentError(f"invalid max index size: {self.max_index_size}",
                                       where=self.path)
        handle = self.fs.open_file(self.path, create=self.writable, writable=self.writable)
        try:
            if newly_created:
                handle.truncate(round_down(self.max_index_size, self.entry_size()))
            self._map(handle.size(), handle)
        finally:
            handle.close()
        position = 0 if newly_created else round_down(self._length, self.entry_size())
        self._entries = position // self.entry_size()
        self._after_entries_changed()

    def _map(self, length: int, handle: FileHandle) -> None:
        self._length = length
        # mmap cannot map an empty file; an empty index simply has no mapping.
        self._mmap = handle.mmap(length, self.writable) if length > 0 else None
        self._on_store = getattr(self._mmap, "record_store", None)
        self._max_entries = length // self.entry_size()

    @abstractmethod
    def _after_entries_changed(self) -> None:
        """Recompute the subclass's cached last entry after the entry count changed."""

    @abstractmethod
    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= `offset` (FMT-15, FMT-24)."""

    @abstractmethod
    def sanity_check(self) -> None:
        """CorruptIndexError unless the file is a valid index (FMT-18, FMT-25)."""

    @abstractmethod
    def check(self) -> None:
        """O(n) own invariants; AssertionError on violation."""

    # --- basic accessors ---

    @property
    def entries(self) -> int:
        return self._entries

    @property
    def max_entries(self) -> int:
        return self._max_entries

    def length(self) -> int:
        """The file (and mapping) length in bytes."""
        return self._length

    def size_in_bytes(self) -> int:
        return self.entry_size() * self._entries

    def is_full(self) -> bool:
        return self._entries >= self._max_entries

    def _buf(self) -> mmap.mmap:
        if self._closed:
            raise KafkaStorageError("index is closed", where=self.path)
        assert self._mmap is not None, "entries > 0 implies a mapping"
        return self._mmap

    def _parse(self, slot: int) -> tuple[int, ...]:
        """The raw fields of entry `slot` (no bounds check; callers stay below `entries`)."""
        return self.ENTRY.unpack_from(self._buf(), slot * self.ENTRY.size)

    def raw_entries(self) -> list[tuple[int, ...]]:
        """Every entry's raw fields (relative offsets as stored), in one unpack. O(n)."""
        with self._lock:
            if not self._entries:
                return []
            size = self.ENTRY.size
            return list(self.ENTRY.iter_unpack(self._buf()[: self._entries * size]))

    def _entry_or_raise(self, n: int) -> tuple[int, ...]:
        """ERR-6: IllegalArgumentError when n >= entries."""
        if n >= self._entries or n < 0:
            raise IllegalArgumentError(
                f"attempt to fetch the {n}th entry from index {self.path}, which has size "
                f"{self._entries}")
        return self._parse(n)

    # --- relative offsets (FMT-11) ---

    def _to_relative(self, offset: int) -> int | None:
        rel = offset - self.base_offset
        return rel if 0 <= rel <= INT32_MAX else None

    def relative_offset(self, offset: int) -> int:
        """offset - base_offset; IndexOffsetOverflowError (ERR-2) outside [0, Int.MAX]."""
        rel = self._to_relative(offset)
        if rel is None:
            raise IndexOffsetOverflowError(
                f"integer overflow for offset: {offset} ({self.path})", where=self.path)
        return rel

    def can_append_offset(self, offset: int) -> bool:
        return self._to_relative(offset) is not None

    # --- search (FMT-17) ---

    def _slot_range_for(self, target: int, column: Column, largest_lower_bound: bool) -> int:
        """Kafka's indexSlotRangeFor: floor (or ceiling) slot of `target` in `column`, or -1.

        O(log n) `unpack_from` calls on the mapping; relative columns compare in relative space.
        """
        n = self._entries
        if n == 0:
            return -1
        buf, size = self._buf(), self.entry_size()
        unpack, at = column.field.unpack_from, column.offset
        if column.relative:
            target -= self.base_offset
        warm = WARM_SECTION_BYTES // size
        first_hot = max(0, n - 1 - warm)
        if unpack(buf, first_hot * size + at)[0] < target:
            lo, hi = first_hot, n - 1
        elif unpack(buf, at)[0] > target:
            return -1 if largest_lower_bound else 0
        else:
            lo, hi = 0, first_hot
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            found = unpack(buf, mid * size + at)[0]
            if found > target:
                hi = mid - 1
            elif found < target:
                lo = mid
            else:
                return mid
        if largest_lower_bound:
            return lo
        return -1 if lo == n - 1 else lo + 1

    # --- truncation and sizing (FMT-15, FMT-28, FMT-29) ---

    @property
    def journals_stores(self) -> bool:
        """True on a recording file system, which journals every entry store (FLT-7)."""
        return self._on_store is not None

    def append_checked_entries(self, raw: bytes) -> None:
        """Recovery's bulk append: whole entries in file format, after the last entry.

        Only for entries already held to `append`'s rules (increasing keys, room without
        growing: `batch_scan.scan_recovery` checks both), so nothing is re-checked here. The
        bytes go through the file, not the mapping: the first store into each page of a freshly
        reset (sparse) mapping costs a page fault that allocates the block, ~0.1-10 ms apiece
        on ext4, where one `pwrite` of all the entries costs microseconds; the mapping shares
        the page cache, so it sees them at once. On a recording file system each entry is one
        store into the mapping, as `append` reports it (FLT-7).
        """
        size = self.entry_size()
        count = len(raw) // size
        if count == 0:
            return
        with self._lock:
            self._ensure_open()
            assert self._entries + count <= self._max_entries, "checked entries must fit"
            start = self._entries * size
            if self._on_store is None:
                handle = self.fs.open_file(self.path, create=False, writable=True)
                try:
                    handle.pwrite(raw, start)
                finally:
                    handle.close()
            else:
                self._buf()[start : start + len(raw)] = raw
                for i in range(count):
                    self._on_store(start + i * size, size)
            self._entries += count
            self._after_entries_changed()

    def _truncate_to_entries(self, n: int) -> None:
        with self._lock:
            # Zero the dropped entries so a live preallocated file reads
            # as "entries, then zeros" for read-only tools (verify) after a truncation; Kafka
            # leaves them stale, which only the entry count in memory distinguishes.
            old = self._entries
            if n < old and self._mmap is not None and self.writable:
                size = self.entry_size()
                _zero_range(self._mmap, n * size, old * size)
                if self._on_store is not None:
                    self._on_store(n * size, (old - n) * size)
            self._entries = n
            self._after_entries_changed()

    def truncate(self) -> None:
        """Remove every entry."""
        self._truncate_to_entries(0)

    def resize(self, new_size: int) -> bool:
        """Set the file length to new_size rounded down to the entry size; keep the entries.

        Spec: FMT-28, BUG-2 (the write position survives the remap). Returns False when the
        length is already right.
        """
        with self._lock:
            self._ensure_open()
            rounded = round_down(new_size, self.entry_size())
            if rounded == self._length:
                return False
            if rounded < self._entries * self.entry_size():
                raise IllegalArgumentError(
                    f"cannot resize index to {rounded} bytes below its {self._entries} entries",
                    where=self.path)
            self._unmap()
            handle = self.fs.open_file(self.path, writable=True)
            try:
                handle.truncate(rounded)
                self._map(rounded, handle)
            finally:
                handle.close()
            return True

    def trim_to_valid_size(self) -> bool:
        """Cut the file to exactly its entries (afterwards an offset index is full)."""
        return self.resize(self.entry_size() * self._entries)

    def reset(self) -> None:
        """Drop every entry and preallocate to max_index_size again.

        The file is cut to nothing first, so the dropped entries need no zeroing pass: a
        corrupt 2 GiB index is reset in O(1), and its preallocated tail is sparse again.
        """
        with self._lock:
            self._entries = 0
            self._after_entries_changed()
            self.resize(0)
            self.resize(self.max_index_size)

    # --- lifecycle ---

    def _ensure_open(self) -> None:
        if self._closed:
            raise KafkaStorageError("index is closed", where=self.path)

    def _unmap(self) -> None:
        if self._mmap is not None:
            self._mmap.close()
            self._mmap = None
            self._on_store = None

    def flush(self) -> None:
        """msync the mapping, then fsync the file.

        Strict (beyond Kafka's DUR-2): msync persists the stored entries but not necessarily a
        length change (a trim or resize, DUR-24), so the file is fsynced as well.
        """
        with self._lock:
            self._ensure_open()
            if not self.writable:
                return
            if self._mmap is not None:
                try:
                    self._mmap.flush()
                except OSError as e:
                    raise KafkaStorageError(f"index flush failed: {e}", where=self.path) from e
            self._fsync_file()

    def _fsync_file(self) -> None:
        handle = self.fs.open_file(self.path, writable=True)
        try:
            handle.fsync()
        finally:
            handle.close()

    def close(self) -> None:
        """Trim to the valid size (when writable), then unmap. Idempotent."""
        with self._lock:
            if self._closed:
                return
            # Strict (GAP-8): a trim made at close is durable before the clean-shutdown marker.
            if self.writable and self.trim_to_valid_size():
                self._fsync_file()
            self.close_handler()

    def close_handler(self) -> None:
        """Unmap without trimming; later use raises KafkaStorageError."""
        with self._lock:
            self._unmap()
            self._closed = True

    def delete_if_exists(self) -> bool:
        """Unmap, then delete the file; returns whether it existed."""
        self.close_handler()
        return self.fs.delete_if_exists(self.path)

    def rename_to(self, path: PathLike) -> None:
        """Atomically move the file; the mapping stays valid and the index now names `path`."""
        with self._lock:
            self.fs.rename(self.path, path)
            self.path = str(path)

    def update_parent_dir(self, parent_dir: PathLike) -> None:
        """Point at the same file name under a renamed directory (no file-system effect).

        Kafka's `AbstractIndex.updateParentDir`: `file = new File(parentDir, file.getName())`.
        """
        self.path = str(Path(parent_dir) / Path(self.path).name)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.path!r}, base={self.base_offset}, "
                f"entries={self._entries}/{self._max_entries})")
