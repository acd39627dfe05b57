"""A file's bytes as the crash recorder keeps them: written prefix plus an implicit zero tail.

Index files are preallocated by extending them to `segment_index_bytes` (up to 2 GiB, mostly a
hole). A dense bytearray per image made the recorder's memory follow the preallocated size (a
14 GiB process for `segment_index_bytes=Int.MAX`); here only the bytes ever written are held and
the rest of `size` reads as zeros, as a sparse file does. No I/O: `conformance/crash/fault_fs.py`
does that.
"""

from __future__ import annotations


class SparseImage:
    """`data` is a prefix of the file (never longer than `size`); bytes past it are zero."""

    __slots__ = ("data", "size")

    def __init__(self, data: bytes | bytearray = b"", size: int | None = None) -> None:
        self.data = bytearray(data)
        self.size = len(self.data) if size is None else size
        assert len(self.data) <= self.size

    @classmethod
    def of(cls, data: bytes | bytearray) -> SparseImage:
        """An image of `data`, its trailing zeros kept as a hole."""
        return cls(bytes(data).rstrip(b"\0"), len(data))

    def copy(self) -> SparseImage:
        return SparseImage(self.data, self.size)

    def truncate(self, size: int) -> None:
        """Cut to `size` or extend with zeros (the extension costs no memory)."""
        if size < len(self.data):
            del self.data[size:]
        self.size = size

    def write(self, offset: int, chunk: bytes) -> None:
        """Write `chunk` at `offset`, extending the file as a pwrite does."""
        end = offset + len(chunk)
        if end > len(self.data):
            self.data.extend(bytes(end - len(self.data)))
        self.data[offset:end] = chunk
        self.size = max(self.size, end)

    def page(self, start: int, end: int) -> bytes:
        """Bytes [start, end) of the file (end <= size), zeros past the written prefix."""
        return bytes(self.data[start:end]).ljust(end - start, b"\0")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SparseImage):
            return NotImplemented
        return self.size == other.size and self.data.rstrip(b"\0") == other.data.rstrip(b"\0")

    def __hash__(self) -> int:  # mutable: never a dict key
        raise TypeError("SparseImage is mutable")
