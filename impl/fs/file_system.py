"""The file-system seam: the only module in `kafkalog.impl` that touches `os`, `open` or `mmap`.

Every effect the log has on disk (open, positional read/write, append, fsync, truncate, mmap,
rename, delete, directory fsync, mtime) goes through `FileSystem` and the `FileHandle`s it opens,
so a crash-testing subclass can intercept each one: override a `FileSystem` method, or set
`handle_class` to a `FileHandle` subclass. The real implementation is deliberately thin.

Every `OSError` becomes a `KafkaStorageError` naming the path (ERR-36), and so does an
`OverflowError`: a size or position past what the platform's `off_t` or address space can hold
fails like a full disk would, never as an untyped error. A missing or unreadable directory given
to a directory operation is a `LogDirError`.

Symbolic links: files are opened with `O_NOFOLLOW`, so a segment, index or checkpoint that is a
link is refused (a `KafkaStorageError` naming it) instead of being read, truncated or rewritten
wherever it points; `set_mtime_ms` stamps a link itself, never its target. Directory links are
refused one level up (`is_symlink`, used by `log_dir.inspect_log_dir`).

Spec: FMT-36 (write_atomically: tmp + fsync + rename + dir fsync).
"""

from __future__ import annotations

import errno
import mmap
import os
from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeAlias, TypeVar

from kafkalog.impl.records.batch_scan import compiled_write_stamped as _COMPILED_WRITE_STAMPED
from kafkalog.model.errors import IllegalArgumentError, KafkaStorageError, LogDirError

PathLike: TypeAlias = str | os.PathLike[str]
MapT = TypeVar("MapT", bound=mmap.mmap)


# Never follow a link at the last path component: a link planted in a log directory must not
# let the log read or write a file outside it.
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _open_error(action: str, path: PathLike, e: OSError) -> KafkaStorageError:
    if e.errno == errno.ELOOP:
        return KafkaStorageError(f"{action} refused: the file is a symbolic link", where=str(path))
    return KafkaStorageError(f"{action} failed: {e.strerror or e}", where=str(path))


def _why(e: OSError | OverflowError) -> object:
    """The reason to report: the OS's text, or an OverflowError's message (a position or size
    beyond the platform's off_t)."""
    return getattr(e, "strerror", None) or e


@contextmanager
def _storage_errors(action: str, path: PathLike) -> Iterator[None]:
    """Turn any OSError (or OverflowError) inside the block into a KafkaStorageError."""
    try:
        yield
    except (OSError, OverflowError) as e:
        raise KafkaStorageError(f"{action} failed: {_why(e)}", where=str(path)) from e


class FileHandle:
    """One open file: positional reads and writes, size, truncate, fsync, mmap.

    Writes never move a shared cursor (pread/pwrite), so readers on other threads can read
    concurrently with the single writer. `append` writes at the handle's tracked end.
    """

    def __init__(self, fs: FileSystem, path: PathLike, fd: int, writable: bool) -> None:
        self.fs = fs
        # Kept as given and made a Path only when asked (errors, renames): a load opens
        # ~100 short-lived handles, and building a Path for each was ~5% of its CPU (#17).
        self._path: PathLike = path
        self.writable = writable
        self._fd: int | None = fd

    @property
    def path(self) -> Path:
        path = self._path
        if not isinstance(path, Path):
            path = self._path = Path(path)
        return path

    @path.setter
    def path(self, value: PathLike) -> None:
        self._path = value

    @property
    def closed(self) -> bool:
        return self._fd is None

    def _require_fd(self) -> int:
        if self._fd is None:
            raise KafkaStorageError("file handle is closed", where=str(self.path))
        return self._fd

    def pread(self, position: int, n: int) -> bytes:
        """Up to `n` bytes at `position` (fewer only at end of file); usually one system call."""
        fd = self._fd  # `_require_fd`, inlined: every read and offset lookup comes through here
        if fd is None:
            raise KafkaStorageError("file handle is closed", where=str(self.path))
        try:
            data = os.pread(fd, n, position)
        except (OSError, OverflowError) as e:
            raise KafkaStorageError(f"read failed: {_why(e)}", where=str(self.path)) from e
        if len(data) == n or not data:
            return data
        with _storage_errors("read", self.path):
            # A short read before end of file is legal for pread; gather the rest.
            parts = [data]
            got = len(data)
            while got < n:
                more = os.pread(fd, n - got, position + got)
                if not more:
                    break
                parts.append(more)
                got += len(more)
            return b"".join(parts)

    def pread_into(self, buffer: bytearray | memoryview, position: int) -> int:
        """Fill `buffer` from `position` without a fresh allocation; returns the bytes read
        (fewer only at end of file). Scans that read a file chunk by chunk reuse one buffer."""
        fd = self._require_fd()
        view = memoryview(buffer)
        got = 0
        try:
            while got < len(view):
                n = os.preadv(fd, [view[got:]], position + got)
                if n == 0:
                    break
                got += n
        except (OSError, OverflowError) as e:
            raise KafkaStorageError(f"read failed: {_why(e)}", where=str(self.path)) from e
        return got

    def pwrite(self, data: bytes | bytearray | memoryview, position: int) -> int:
        """Write all of `data` at `position`; returns the number of bytes written."""
        fd = self._require_fd()
        # A plain try (not the context manager) keeps this hot path to one system call.
        try:
            written = os.pwrite(fd, data, position)
            # Regular files write everything at once; loop only for the rare short write.
            while written < len(data):
                written += os.pwrite(fd, memoryview(data)[written:], position + written)
        except (OSError, OverflowError) as e:
            raise KafkaStorageError(f"write failed: {_why(e)}", where=str(self.path)) from e
        return written

    def write_stamped(self, records: Any, position: int) -> int:
        """Write a leader's `StampedRecords` (impl/records/stamped_records.py) at `position`: each
        batch's stamped first 16 bytes and the rest of it from the caller's buffer, in one
        vectored write (no copy of the batches); returns the bytes written.

        A subclass that overrides `pwrite` (fault injection, crash recording) is handed the
        stamped bytes through one `pwrite` instead, so it sees this as the write it is.
        """
        if type(self).pwrite is not FileHandle.pwrite:
            return self.pwrite(records.buffer, position)
        fd = self._require_fd()
        args = (fd, records.source, records.headers, records.facts, position)
        try:
            written = None if _COMPILED_WRITE_STAMPED is None else _COMPILED_WRITE_STAMPED(*args)
            return py_write_stamped(*args) if written is None else written
        except (OSError, OverflowError) as e:
            raise KafkaStorageError(f"write failed: {_why(e)}", where=str(self.path)) from e

    def append(self, data: bytes | bytearray | memoryview, position: int | None = None) -> int:
        """Write `data` at `position` (default: the current file size); returns that position."""
        at = self.size() if position is None else position
        self.pwrite(data, at)
        return at

    def size(self) -> int:
        fd = self._require_fd()
        try:
            return os.fstat(fd).st_size
        except OSError as e:
            raise KafkaStorageError(f"stat failed: {e.strerror or e}", where=str(self.path)) from e

    def data_end(self) -> int:
        """Where the file's last data region ends: past it is a hole that reads as zeros (a
        sparse, preallocated index). The size when the file system cannot tell (no SEEK_HOLE).
        """
        fd = self._require_fd()
        size = self.size()
        seek_data, seek_hole = getattr(os, "SEEK_DATA", None), getattr(os, "SEEK_HOLE", None)
        if seek_data is None or seek_hole is None:
            return size
        end = pos = 0
        try:
            while pos < size:
                pos = os.lseek(fd, os.lseek(fd, pos, seek_data), seek_hole)
                end = pos
        except OSError as e:
            if e.errno != errno.ENXIO:  # ENXIO: no data after `pos`
                return size
        return min(end, size)

    def truncate(self, size: int) -> None:
        """Set the file's length to `size` (shrinks, or extends with zeros)."""
        fd = self._require_fd()
        with _storage_errors("truncate", self.path):
            os.ftruncate(fd, size)

    def fsync(self) -> None:
        fd = self._require_fd()
        with _storage_errors("fsync", self.path):
            os.fsync(fd)

    def mmap(self, length: int, writable: bool) -> mmap.mmap:
        """Map the first `length` bytes (length must be > 0); the map outlives this handle."""
        return self.new_mapping(mmap.mmap, length, writable)

    def new_mapping(self, kind: type[MapT], length: int, writable: bool) -> MapT:
        """A `kind` (mmap.mmap or a subclass) over the first `length` bytes. Raises
        KafkaStorageError when the mapping cannot be made: no address space left (ENOMEM under
        an address-space limit), a length past the platform's `ssize_t`, or a file shorter than
        `length`. Subclasses that map through their own mmap type go through here too."""
        fd = self._require_fd()
        access = mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ
        try:
            return kind(fd, length, access=access)
        except OSError as e:
            raise KafkaStorageError(f"mmap failed: {e.strerror or e}", where=str(self.path)) from e
        except (OverflowError, ValueError) as e:
            raise KafkaStorageError(f"mmap of {length} bytes failed: {e}",
                                    where=str(self.path)) from e

    def close(self) -> None:
        """Close the descriptor; idempotent."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.close(fd)
        except OSError as e:
            raise KafkaStorageError(f"close failed: {e.strerror or e}", where=str(self.path)) from e


_IOV_MAX = 1024  # POSIX's minimum is 16; Linux and the BSDs take 1,024 buffers a call


def py_write_stamped(fd: int, source: memoryview, headers: bytes, facts: list[Any],
                     position: int) -> int:
    """`pwritev` of each batch's 16 bytes of `headers`, then the rest of it from `source` (the
    batches of `facts`, in order, whole); returns the bytes written. The reference of the
    compiled `write_stamped` (impl/records/_scan_write.c), which declines (and lets this raise)
    where
    a fact does not fit the buffers. Raises OSError, IllegalArgumentError (nothing written)."""
    src, stamps = memoryview(source), memoryview(headers)
    if len(stamps) != 16 * len(facts):
        raise IllegalArgumentError(f"{len(stamps)} bytes of stamps for {len(facts)} batches")
    pieces: list[memoryview] = []
    for i, fact in enumerate(facts):
        at, size = fact[0], fact[1]
        if at < 0 or size < 16 or at + size > len(src):
            raise IllegalArgumentError(f"batch {i} ({size} bytes at {at}) is outside the "
                                       f"{len(src)} bytes to write")
        pieces += (stamps[16 * i : 16 * i + 16], src[at + 16 : at + size])
    written = 0
    for start in range(0, len(pieces), _IOV_MAX):
        chunk = pieces[start : start + _IOV_MAX]
        want = sum(map(len, chunk))
        done = os.pwritev(fd, chunk, position + written)
        if done < want:  # a short write (rare on regular files): the rest in plain writes
            rest = memoryview(b"".join(chunk))[done:]
            while rest:
                n = os.pwrite(fd, rest, position + written + want - len(rest))
                rest = rest[n:]
        written += want
    return written


def _entry_is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # follows symbolic links, like os.path.isdir
    except OSError:
        return False  # os.path.isdir's answer when stat fails


class FileSystem:
    """The real file system. Subclass it (or replace `handle_class`) to inject faults."""

    handle_class: type[FileHandle] = FileHandle

    def open_file(self, path: PathLike, create: bool = False, writable: bool = True) -> FileHandle:
        """Open `path` for positional I/O; `create` makes it if missing (needs `writable`)."""
        flags = os.O_RDWR if writable else os.O_RDONLY
        if create:
            flags |= os.O_CREAT
        # Plain try blocks (not `_storage_errors`) on the paths a log open takes per segment:
        # a generator context manager costs more than the system call here.
        try:
            fd = os.open(path, flags | _NOFOLLOW, 0o644)
        except OSError as e:
            raise _open_error("open", path, e) from e
        return self.handle_class(self, path, fd, writable)

    def exists(self, path: PathLike) -> bool:
        return os.path.exists(path)

    def is_dir(self, path: PathLike) -> bool:
        return os.path.isdir(path)

    def is_symlink(self, path: PathLike) -> bool:
        """Whether `path` itself is a symbolic link (never followed)."""
        return os.path.islink(path)

    def list_dir(self, path: PathLike) -> list[str]:
        """Entry names of a directory, sorted (LogDirError if missing or unreadable)."""
        try:
            return sorted(os.listdir(path))
        except OSError as e:
            raise LogDirError(f"cannot list directory: {e.strerror or e}", where=str(path)) from e

    def list_files(self, path: PathLike) -> list[str]:
        """Names of the entries of a directory that are not directories (symbolic links
        followed, as `is_dir`), sorted; LogDirError like `list_dir`. One `scandir` instead of
        a listing plus a `stat` per entry: a load lists its directory ~15 times (#17)."""
        try:
            with os.scandir(path) as entries:
                return sorted(e.name for e in entries if not _entry_is_dir(e))
        except OSError as e:
            raise LogDirError(f"cannot list directory: {e.strerror or e}", where=str(path)) from e

    def mkdir(self, path: PathLike, parents: bool = True) -> None:
        """Create a directory (and its parents); an existing directory is fine."""
        with _storage_errors("mkdir", path):
            if parents:
                os.makedirs(path, exist_ok=True)
            elif not os.path.isdir(path):
                os.mkdir(path)

    def rename(self, src: PathLike, dst: PathLike) -> None:
        """Atomically move `src` over `dst` (replacing it), like Utils.atomicMoveWithFallback."""
        with _storage_errors(f"rename to {dst}", src):
            os.replace(src, dst)

    def delete(self, path: PathLike) -> None:
        """Delete a file; a missing file is a KafkaStorageError."""
        with _storage_errors("delete", path):
            os.unlink(path)

    def delete_if_exists(self, path: PathLike) -> bool:
        """Delete a file if present; returns whether it existed."""
        try:
            os.unlink(path)
        except FileNotFoundError:
            return False
        except OSError as e:
            raise KafkaStorageError(f"delete failed: {e.strerror or e}", where=str(path)) from e
        return True

    def rmdir(self, path: PathLike) -> None:
        """Remove an empty directory."""
        with _storage_errors("rmdir", path):
            os.rmdir(path)

    def fsync_dir(self, path: PathLike) -> None:
        """fsync a directory so renames and creations inside it are durable."""
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError as e:
            raise LogDirError(f"cannot open directory: {e.strerror or e}", where=str(path)) from e
        try:
            os.fsync(fd)
        except OSError as e:
            # Some file systems refuse fsync on directories; Kafka ignores that too.
            if e.errno not in (errno.EINVAL, errno.EBADF):
                raise KafkaStorageError(f"fsync failed: {e.strerror or e}", where=str(path)) from e
        finally:
            os.close(fd)

    def set_mtime_ms(self, path: PathLike, ms: int) -> None:
        """Stamp a file's last-modified time (milliseconds since the epoch).

        A time the platform cannot represent (C's time_t overflows near 2**63 ns) is an
        IllegalArgumentError naming the file rather than an OverflowError.
        """
        try:
            os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000), follow_symlinks=False)
        except (OverflowError, ValueError) as e:
            raise IllegalArgumentError(f"cannot stamp modification time {ms} ms: {e}",
                                       where=str(path)) from e
        except OSError as e:
            raise KafkaStorageError(f"utime failed: {e.strerror or e}", where=str(path)) from e

    def mtime_ms(self, path: PathLike) -> int:
        with _storage_errors("stat", path):
            return os.stat(path).st_mtime_ns // 1_000_000

    def file_size(self, path: PathLike) -> int:
        with _storage_errors("stat", path):
            return os.stat(path).st_size

    def version_of(self, path: PathLike) -> Hashable | None:
        """A token that changes whenever `path`'s content, size, mtime or identity may have
        changed, or None when this file system cannot tell (callers then read the file again).
        The plain file system cannot: another process may write behind its back."""
        return None

    def generation(self) -> Hashable | None:
        """A token that changes whenever any answer of `version_of` may have changed (callers
        that ask about many files keep the answers while it holds), or None when this file
        system cannot tell."""
        return None

    def read_file(self, path: PathLike) -> bytes:
        """The whole content of a small file (checkpoints, markers); never used for `.log` data."""
        try:
            fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
        except OSError as e:
            raise _open_error("read", path, e) from e
        with _storage_errors("read", path), os.fdopen(fd, "rb") as f:
            return f.read()

    def write_atomically(self, path: PathLike, data: bytes) -> None:
        """Write `data` to `path` durably: `<path>.tmp`, fsync, rename over `path`, fsync dir.

        Spec: FMT-36. A crash leaves either the old or the new content, never a torn file.
        """
        target = Path(path)
        tmp = target.with_name(target.name + ".tmp")
        handle = self.open_file(tmp, create=True)
        try:
            handle.truncate(0)
            handle.pwrite(data, 0)
            handle.fsync()
        finally:
            handle.close()
        self.rename(tmp, target)
        self.fsync_dir(target.parent)
