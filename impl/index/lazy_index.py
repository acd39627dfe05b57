"""`LazyIndex`: an offset or time index that is neither created nor mapped until first used.

Spec: FMT-31. A new segment has no `.index`/`.timeindex` on disk until `get()` is first called;
`rename_to` before loading tolerates a missing file. `get()` is thread-safe and creates exactly one
index object per file (BUG-8: two objects for one file overflowed appends).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Generic, TypeVar

from kafkalog.impl.fs.file_system import FileSystem, PathLike
from kafkalog.impl.index.abstract_index import AbstractIndex
from kafkalog.impl.index.offset_index import OffsetIndex
from kafkalog.impl.index.time_index import TimeIndex

I = TypeVar("I", bound=AbstractIndex)  # noqa: E741 (Kafka's own type-parameter name)


class LazyIndex(Generic[I]):
    """Holds the file name until `get()` opens the index (creating the file if needed)."""

    def __init__(self, fs: FileSystem, path: PathLike, base_offset: int, max_index_size: int,
                 index_class: type[I], writable: bool = True) -> None:
        self.fs = fs
        self._path = str(path)
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self._index_class = index_class
        self._writable = writable
        self._index: I | None = None
        self._lock = threading.Lock()

    @staticmethod
    def for_offset(fs: FileSystem, path: PathLike, base_offset: int, max_index_size: int = -1,
                   writable: bool = True) -> LazyIndex[OffsetIndex]:
        return LazyIndex(fs, path, base_offset, max_index_size, OffsetIndex, writable)

    @staticmethod
    def for_time(fs: FileSystem, path: PathLike, base_offset: int, max_index_size: int = -1,
                 writable: bool = True) -> LazyIndex[TimeIndex]:
        return LazyIndex(fs, path, base_offset, max_index_size, TimeIndex, writable)

    @property
    def path(self) -> str:
        index = self._index
        return index.path if index is not None else self._path

    def is_loaded(self) -> bool:
        return self._index is not None

    def get(self) -> I:
        """The index, opened (and the file created) on first call. KafkaStorageError on I/O."""
        index = self._index
        if index is not None:
            return index
        with self._lock:
            if self._index is None:
                self._index = self._index_class(self.fs, self._path, self.base_offset,
                                                self.max_index_size, self._writable)
            return self._index

    def rename_to(self, path: PathLike) -> None:
        """Rename the file; before loading, a missing file is fine (only the name changes)."""
        with self._lock:
            if self._index is not None:
                self._index.rename_to(path)
            elif self.fs.exists(self._path):
                self.fs.rename(self._path, path)
            self._path = str(path)

    def update_parent_dir(self, parent_dir: PathLike) -> None:
        """Follow a directory rename: the same file name under `parent_dir` (Kafka's
        `LazyIndex.IndexFile.updateParentDir`: `new File(parentDir, file.getName())`)."""
        with self._lock:
            if self._index is not None:
                self._index.update_parent_dir(parent_dir)
            self._path = str(Path(parent_dir) / Path(self._path).name)

    def delete_if_exists(self) -> bool:
        with self._lock:
            if self._index is not None:
                return self._index.delete_if_exists()
            return self.fs.delete_if_exists(self._path)

    def flush(self) -> None:
        """msync the index if it was loaded."""
        index = self._index
        if index is not None:
            index.flush()

    def check_if_loaded(self) -> None:
        """Run the index's O(n) `check()` if it was loaded (an unloaded index has no state)."""
        index = self._index
        if index is not None:
            index.check()

    def close(self) -> None:
        """Close (trim + unmap) the index if it was loaded; nothing to do otherwise."""
        with self._lock:
            if self._index is not None:
                self._index.close()

    def close_handler(self) -> None:
        with self._lock:
            if self._index is not None:
                self._index.close_handler()

    def __repr__(self) -> str:
        return f"LazyIndex({self._index_class.__name__}, {self.path!r}, loaded={self.is_loaded()})"
