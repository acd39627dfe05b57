"""`TransactionIndex`: a segment's `<base>.txnindex`, Kafka's aborted-transaction index.

Byte format (PSF-8, `AbortedTxn.java`): a headerless sequence of 34-byte entries, big-endian:
version int16 (written 0), producerId int64, firstOffset int64, lastOffset int64 (the ABORT
marker's offset), lastStableOffset int64 (TXN-10). No checksum, no preallocation.

Behaviour (PSF-9, PSF-10, `TransactionIndex.java`): the file is created by the first append; a
trailing partial entry is ignored; the version is read back as one byte (the int16's high byte)
and a value > 0 is an error; `append` requires a marker offset strictly above the last one
appended through this object (not read back from disk); `truncate_to(o)` cuts at the first entry
whose lastOffset >= o; `reset` empties it; `sanity_check` rejects entries below the segment's
base. Writes are write-fully (KAFKA-17181); `flush` forces the file. Every effect goes through
the `FileSystem` seam; the file's path follows the segment's suffix renames (`path_of`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.model.errors import CorruptIndexError, IllegalArgumentError
from kafkalog.model.values import AbortedTxnEntry

ENTRY_SIZE = 34  # PSF-8, PST-27
CURRENT_VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
assert _ENTRY.size == ENTRY_SIZE


def encode_entry(entry: AbortedTxnEntry) -> bytes:
    """PSF-8: one 34-byte entry."""
    return _ENTRY.pack(CURRENT_VERSION, entry.producer_id, entry.first_offset, entry.last_offset,
                       entry.last_stable_offset)


def decode_entries(data: bytes, where: str) -> list[AbortedTxnEntry]:
    """PSF-9: every whole entry, a trailing partial one ignored; raises CorruptIndexError for a
    version byte > 0 (Kafka's KafkaException "Unexpected aborted transaction version")."""
    out = []
    for position in range(0, len(data) - ENTRY_SIZE + 1, ENTRY_SIZE):
        version = data[position]  # AT:65-67 reads one byte
        if version > CURRENT_VERSION:
            raise CorruptIndexError(
                f"Unexpected aborted transaction version {version} at position {position}",
                where=where,
            )
        _, pid, first, last, lso = _ENTRY.unpack_from(data, position)
        out.append(AbortedTxnEntry(pid, first, last, lso))
    return out


class TransactionIndex:
    """One segment's `.txnindex`; entries are cached after the first read."""

    def __init__(self, fs: FileSystem, path_of: Callable[[], Path], base_offset: int) -> None:
        self.fs = fs
        self._path_of = path_of
        self.base_offset = base_offset
        self._entries: list[AbortedTxnEntry] | None = None
        self._last_offset: int | None = None  # PSF-9: only what this object appended

    @property
    def path(self) -> Path:
        return self._path_of()

    def entries(self) -> list[AbortedTxnEntry]:
        """All entries in file order (PSF-9 iteration)."""
        if self._entries is None:
            path = self.path
            data = self.fs.read_file(path) if self.fs.exists(path) else b""
            self._entries = decode_entries(data, str(path))
        return self._entries

    def append(self, entry: AbortedTxnEntry) -> None:
        """PSF-9 append: creates the file on first use; raises IllegalArgumentError unless the
        marker offset is above the last one appended through this object."""
        if self._last_offset is not None and entry.last_offset <= self._last_offset:
            raise IllegalArgumentError(
                f"The last offset of appended transactions must increase sequentially, but "
                f"{entry.last_offset} is not greater than current last offset "
                f"{self._last_offset} of index {self.path}"
            )
        entries = self.entries()
        handle = self.fs.open_file(self.path, create=True, writable=True)
        try:
            handle.pwrite(encode_entry(entry), len(entries) * ENTRY_SIZE)
        finally:
            handle.close()
        entries.append(entry)
        self._last_offset = entry.last_offset

    def flush(self) -> None:
        """Force the file if it exists."""
        path = self.path
        if self.fs.exists(path):
            handle = self.fs.open_file(path, writable=True)
            try:
                handle.fsync()
            finally:
                handle.close()

    def _truncate_entries(self, keep: int) -> None:
        entries = self.entries()
        path = self.path
        if self.fs.exists(path):
            handle = self.fs.open_file(path, writable=True)
            try:
                handle.truncate(keep * ENTRY_SIZE)
            finally:
                handle.close()
        del entries[keep:]
        self._last_offset = entries[-1].last_offset if entries else None

    def truncate_to(self, offset: int) -> None:
        """PSF-10: cut at the first entry whose marker offset >= `offset`."""
        entries = self.entries()
        keep = next((i for i, e in enumerate(entries) if e.last_offset >= offset), len(entries))
        if keep < len(entries) or self.fs.exists(self.path):
            self._truncate_entries(keep)

    def reset(self) -> None:
        """PSF-10 reset: empty the file (segment recovery rebuilds it)."""
        self._truncate_entries(0)
        self._last_offset = None

    def forget(self) -> None:
        """Drop the cache (after the file was renamed, deleted or replaced on disk)."""
        self._entries = None
        self._last_offset = None

    def sanity_check(self) -> None:
        """PSF-10 / PSE-9: no entry may end below the segment's base offset."""
        for entry in self.entries():
            if entry.last_offset < self.base_offset:
                raise CorruptIndexError(
                    f"Last offset of aborted transaction {entry} in index is less than start "
                    f"offset {self.base_offset}",
                    where=str(self.path),
                )

    def collect_aborted(self, fetch_offset: int,
                        upper_bound_offset: int) -> tuple[list[AbortedTxnEntry], bool]:
        """TXN-16 collectAbortedTxns: entries with lastOffset >= fetch offset and firstOffset
        < upper; complete once an entry's lastStableOffset >= upper."""
        found = []
        for entry in self.entries():
            if entry.last_offset >= fetch_offset and entry.first_offset < upper_bound_offset:
                found.append(entry)
            if entry.last_stable_offset >= upper_bound_offset:
                return found, True
        return found, False
