"""The file-system seam: typed errors naming the path, atomic writes, mmap, subclassing."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafkalog.impl.fs.file_system import FileHandle, FileSystem
from kafkalog.model.errors import KafkaStorageError, LogDirError


@pytest.fixture
def fs() -> FileSystem:
    return FileSystem()


def test_open_missing_file_without_create__raises_storage_error_naming_path(
        tmp_path: Path, fs: FileSystem) -> None:
    """Every OSError becomes KafkaStorageError with the path in `where`. Spec: ERR-36."""
    with pytest.raises(KafkaStorageError) as err:
        fs.open_file(tmp_path / "missing.log")
    assert err.value.where == str(tmp_path / "missing.log")


def test_positional_io__appends_and_reads_without_a_cursor(tmp_path: Path,
                                                           fs: FileSystem) -> None:
    handle = fs.open_file(tmp_path / "a.log", create=True)
    assert handle.append(b"hello") == 0
    assert handle.append(b" world") == 5
    assert handle.pwrite(b"J", 0) == 1
    assert handle.pread(0, 100) == b"Jello world"
    assert handle.size() == 11
    handle.truncate(5)
    handle.fsync()
    assert handle.pread(0, 100) == b"Jello"
    handle.close()
    handle.close()  # idempotent
    with pytest.raises(KafkaStorageError):
        handle.pread(0, 1)


def test_read_only_handle__rejects_writes_with_storage_error(tmp_path: Path,
                                                             fs: FileSystem) -> None:
    (tmp_path / "ro.log").write_bytes(b"abc")
    handle = fs.open_file(tmp_path / "ro.log", writable=False)
    with pytest.raises(KafkaStorageError):
        handle.pwrite(b"x", 0)
    handle.close()


def test_mmap__writes_reach_the_file_and_outlive_the_handle(tmp_path: Path,
                                                            fs: FileSystem) -> None:
    handle = fs.open_file(tmp_path / "i.index", create=True)
    handle.truncate(16)
    mapping = handle.mmap(16, writable=True)
    handle.close()
    mapping[0:4] = b"\x00\x00\x00\x07"
    mapping.flush()
    mapping.close()
    assert (tmp_path / "i.index").read_bytes()[:4] == b"\x00\x00\x00\x07"


def test_write_atomically__replaces_content_and_leaves_no_tmp(tmp_path: Path,
                                                              fs: FileSystem) -> None:
    """tmp + fsync + rename + directory fsync. Spec: FMT-36."""
    target = tmp_path / "recovery-point-offset-checkpoint"
    fs.write_atomically(target, b"0\n0\n")
    fs.write_atomically(target, b"0\n1\ntopic 0 42\n")
    assert target.read_bytes() == b"0\n1\ntopic 0 42\n"
    assert fs.list_dir(tmp_path) == ["recovery-point-offset-checkpoint"]


def test_directory_operations__and_their_errors(tmp_path: Path, fs: FileSystem) -> None:
    fs.mkdir(tmp_path / "a" / "b")
    fs.mkdir(tmp_path / "a" / "b")  # existing is fine
    assert fs.is_dir(tmp_path / "a" / "b")
    (tmp_path / "a" / "f").write_bytes(b"x")
    fs.rename(tmp_path / "a" / "f", tmp_path / "a" / "g")
    assert fs.list_dir(tmp_path / "a") == ["b", "g"]
    assert fs.delete_if_exists(tmp_path / "a" / "g") is True
    assert fs.delete_if_exists(tmp_path / "a" / "g") is False
    with pytest.raises(KafkaStorageError):
        fs.delete(tmp_path / "a" / "g")
    with pytest.raises(LogDirError):
        fs.list_dir(tmp_path / "nope")
    with pytest.raises(LogDirError):
        fs.fsync_dir(tmp_path / "nope")
    fs.fsync_dir(tmp_path / "a")
    fs.rmdir(tmp_path / "a" / "b")
    assert not fs.exists(tmp_path / "a" / "b")


def test_mtime__set_and_read_in_milliseconds(tmp_path: Path, fs: FileSystem) -> None:
    (tmp_path / "s.log").write_bytes(b"")
    fs.set_mtime_ms(tmp_path / "s.log", 1_700_000_000_123)
    assert fs.mtime_ms(tmp_path / "s.log") == 1_700_000_000_123
    assert fs.file_size(tmp_path / "s.log") == 0
    with pytest.raises(KafkaStorageError):
        fs.mtime_ms(tmp_path / "missing")


def test_subclass_handle__intercepts_every_write(tmp_path: Path) -> None:
    """A fault-injecting file system only swaps `handle_class` or overrides a method."""

    class FailingHandle(FileHandle):
        def pwrite(self, data: bytes | bytearray | memoryview, position: int) -> int:
            raise KafkaStorageError("injected crash", where=str(self.path))

    class FaultyFileSystem(FileSystem):
        handle_class = FailingHandle

    handle = FaultyFileSystem().open_file(tmp_path / "x.log", create=True)
    with pytest.raises(KafkaStorageError, match="injected"):
        handle.append(b"data")
    handle.close()


def test_list_files__names_what_is_not_a_directory__as_list_dir_and_is_dir_do(
        tmp_path: Path, fs: FileSystem) -> None:
    """`list_files` (one scandir) equals list_dir filtered by is_dir, links included."""
    (tmp_path / "sub").mkdir()
    for name in ("b.log", "a.index", "c.snapshot"):
        (tmp_path / name).write_bytes(b"x")
    (tmp_path / "to-dir").symlink_to(tmp_path / "sub")
    (tmp_path / "to-file").symlink_to(tmp_path / "b.log")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    expected = [n for n in fs.list_dir(tmp_path) if not fs.is_dir(tmp_path / n)]
    assert fs.list_files(tmp_path) == expected
    assert expected == ["a.index", "b.log", "c.snapshot", "dangling", "to-file"]
    with pytest.raises(LogDirError) as err:
        fs.list_files(tmp_path / "nope")
    assert err.value.where == str(tmp_path / "nope")
