"""Read-only, bounded-memory views of `.index` / `.timeindex` files for `verify` and `dump`.

An index file may be far larger than its live entries: a live segment's index is preallocated to
`segment.index.bytes` (FMT-26; up to 2 GiB, sparse), and a hostile file can be any size. So
nothing here builds a list of every entry: `IndexEntries` is a lazy sequence that reads entries
in chunks of `CHUNK_BYTES` (iteration) or one at a time (indexing), and the zero-filled tail of
an untrimmed file is measured backwards in chunks, skipping holes of a sparse file. Memory is
O(CHUNK_BYTES) whatever the file's size; time is O(live entries) plus one pass over the
non-hole tail.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, overload

from kafkalog.impl.fs.file_system import FileSystem

CHUNK_BYTES = 1 << 20  # read at most this much at a time (rounded down to whole entries)

Reader = Callable[[int, int], bytes | memoryview]  # (position, size) -> bytes


class IndexEntries(Sequence[tuple[int, int]]):
    """The live entries of an index, read on demand through `read(position, size)`."""

    def __init__(self, read: Reader, entry: struct.Struct, count: int) -> None:
        self._read = read
        self._entry = entry
        self._count = count

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, n: int) -> tuple[int, int]: ...

    @overload
    def __getitem__(self, n: slice) -> Sequence[tuple[int, int]]: ...

    def __getitem__(self, n: int | slice) -> Any:
        if isinstance(n, slice):
            return [self[i] for i in range(*n.indices(self._count))]
        if n < 0:
            n += self._count
        if not 0 <= n < self._count:
            raise IndexError(n)
        size = self._entry.size
        return self._entry.unpack(bytes(self._read(n * size, size)))

    def __iter__(self) -> Iterator[tuple[int, int]]:
        size = self._entry.size
        step = (CHUNK_BYTES // size) * size
        end = self._count * size
        for start in range(0, end, step):
            chunk = bytes(self._read(start, min(step, end - start)))
            yield from self._entry.iter_unpack(chunk)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, IndexEntries | list | tuple):
            return len(self) == len(other) and all(a == tuple(b) for a, b in zip(self, other,
                                                                                  strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"IndexEntries({self._count} entries of {self._entry.size} bytes)"


def _zero_tail_entries(read: Reader, entry_size: int, count: int, data_end: int) -> int:
    """How many whole all-zero entries end the first `count` entries; reads backwards in chunks
    from `data_end` (bytes past it are holes, which read as zeros)."""
    end = count * entry_size
    last_nonzero = 0  # one past the last non-zero byte
    pos = min(end, data_end)
    while pos > 0:
        start = max(0, pos - CHUNK_BYTES)
        chunk = bytes(read(start, pos - start))
        kept = len(chunk.rstrip(b"\x00"))
        if kept:
            last_nonzero = start + kept
            break
        pos = start
    first_zero_entry = -(-last_nonzero // entry_size)  # ceiling
    return count - first_zero_entry


def parse_entries(read: Reader, size: int, entry: struct.Struct,
                  data_end: int | None = None) -> tuple[IndexEntries, int, int]:
    """(live entries, bytes left over, trailing all-zero entries) of an index of `size` bytes.

    A zero tail is a preallocated, untrimmed file (FMT-27); its entries are not returned. A file
    of exactly one all-zero entry is a trimmed index holding one real entry, (timestamp 0, base
    offset) or (base offset, position 0): preallocation (FMT-26) makes files of many entries.
    """
    count = size // entry.size
    zeros = _zero_tail_entries(read, entry.size, count, size if data_end is None else data_end)
    if zeros == count == 1 and size == entry.size:
        zeros = 0
    return IndexEntries(read, entry, count - zeros), size % entry.size, zeros


def parse_index(data: bytes | memoryview, entry: struct.Struct,
                ) -> tuple[IndexEntries, int, int]:
    """`parse_entries` over bytes already in memory."""
    view = memoryview(data)
    return parse_entries(lambda pos, n: view[pos : pos + n], len(view), entry)


@contextmanager
def open_index(fs: FileSystem, path: Path | str,
               entry: struct.Struct) -> Iterator[tuple[IndexEntries, int, int]]:
    """`parse_entries` over a file opened read-only; the entries are readable inside the block.

    Raises KafkaStorageError (naming the path) when the file cannot be opened, e.g. a symlink.
    """
    handle = fs.open_file(path, create=False, writable=False)
    try:
        size = handle.size()
        yield parse_entries(handle.pread, size, entry, handle.data_end())
    finally:
        handle.close()
