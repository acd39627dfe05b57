"""Checkpoint files: generic format, offset checkpoints, leader-epoch checkpoints, bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafkalog.impl.checkpoint.checkpoint_file import (
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
    read_offsets_or_empty,
)
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.model.errors import CorruptCheckpointError, KafkaStorageError
from kafkalog.model.values import EpochEntry

FS = FileSystem()


class CrashBeforeRename(FileSystem):
    """A file system whose rename fails, as if the process died between fsync and rename."""

    def rename(self, src, dst) -> None:  # type: ignore[no-untyped-def,override]
        raise KafkaStorageError("injected crash before rename", where=str(src))


def test_leader_epoch_checkpoint__kafka_example__four_lines(tmp_path: Path) -> None:
    """Spec: FMT-39 (entries (0, 1) and (1, 2) are stored as `0 / 2 / 0 1 / 1 2`)."""
    path = tmp_path / "leader-epoch-checkpoint"
    LeaderEpochCheckpointFile(FS, path).write([EpochEntry(0, 1), EpochEntry(1, 2)])
    assert path.read_text() == "0\n2\n0 1\n1 2\n"
    assert LeaderEpochCheckpointFile(FS, path).read() == [EpochEntry(0, 1), EpochEntry(1, 2)]


def test_constructor__missing_file__creates_empty_file_meaning_no_entries(tmp_path: Path) -> None:
    """Spec: FMT-36 (constructor creates the file), FMT-37 (empty means no entries)."""
    path = tmp_path / "leader-epoch-checkpoint"
    checkpoint = LeaderEpochCheckpointFile(FS, path)
    assert path.exists() and checkpoint.read() == []
    path.write_bytes(b"")
    assert checkpoint.read() == []


def test_offset_checkpoint__round_trip_and_whitespace_runs(tmp_path: Path) -> None:
    """Spec: FMT-40 (`<topic> <partition> <offset>`; reading splits on whitespace runs)."""
    path = tmp_path / "recovery-point-offset-checkpoint"
    OffsetCheckpointFile(FS, path).write({("orders", 1): 17, ("orders", 0): 42})
    assert path.read_text() == "0\n2\norders 0 42\norders 1 17\n"
    path.write_text("0\n1\nmy.topic-x   3\t99\n")
    assert OffsetCheckpointFile(FS, path).read() == {("my.topic-x", 3): 99}


def test_read_offsets_or_empty__absent_file__is_empty(tmp_path: Path) -> None:
    """Spec: FMT-41 (missing entries default; the caller applies 0)."""
    assert read_offsets_or_empty(FS, tmp_path / "nope") == {}
    assert not (tmp_path / "nope").exists()


def test_read__missing_count_line__is_empty(tmp_path: Path) -> None:
    """Spec: FMT-37 (a missing count line gives an empty list)."""
    path = tmp_path / "cp"
    path.write_text("0\n")
    assert OffsetCheckpointFile(FS, path).read() == {}


@pytest.mark.parametrize(
    ("content", "line"),
    [
        ("1\n0\n", 1),  # unrecognised version
        ("x\n0\n", 1),
        ("0\ntwo\n", 2),  # non-integer count
        ("0\n1\ntopic 0\n", 3),  # wrong token count
        ("0\n1\ntopic zero 5\n", 3),  # non-integer partition
        ("0\n2\ntopic 0 5\n", None),  # count mismatch
        ("0\n1\ntopic 0 5\nextra 1 2\n", None),
    ],
)
def test_read__malformed_offset_checkpoint__raises_corrupt_checkpoint_naming_file_and_line(
    tmp_path: Path, content: str, line: int | None
) -> None:
    """Spec: FMT-37, ERR-43."""
    path = tmp_path / "replication-offset-checkpoint"
    path.write_text(content)
    with pytest.raises(CorruptCheckpointError) as info:
        OffsetCheckpointFile(FS, path, create_if_missing=False).read()
    expected_where = f"{path}:{line}" if line is not None else str(path)
    assert info.value.where == expected_where


@pytest.mark.parametrize("content", ["0\n1\n1\n", "0\n1\n1 2 3\n", "0\n1\n2147483648 0\n",
                                     "0\n1\n1 -5\n", b"\xff\xfe".decode("latin-1")])
def test_read__malformed_epoch_checkpoint__raises_corrupt_checkpoint(
    tmp_path: Path, content: str
) -> None:
    """Spec: FMT-39 (exactly 2 tokens: int32 epoch, offset), ERR-43."""
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_bytes(content.encode("latin-1"))
    with pytest.raises(CorruptCheckpointError):
        LeaderEpochCheckpointFile(FS, path).read()


def test_write__crash_before_rename__keeps_old_content(tmp_path: Path) -> None:
    """Spec: FMT-36 (a reader sees the whole old or the whole new file)."""
    path = tmp_path / "leader-epoch-checkpoint"
    LeaderEpochCheckpointFile(FS, path).write([EpochEntry(1, 5)])
    with pytest.raises(KafkaStorageError):
        LeaderEpochCheckpointFile(CrashBeforeRename(), path).write([EpochEntry(2, 9)])
    assert LeaderEpochCheckpointFile(FS, path).read() == [EpochEntry(1, 5)]


def test_write_if_dir_exists__renamed_dir__writes_nothing(tmp_path: Path) -> None:
    """Spec: FMT-38, BUG-56 (no re-created directory after a rename for deletion)."""
    d = tmp_path / "t-0"
    d.mkdir()
    checkpoint = LeaderEpochCheckpointFile(FS, d / "leader-epoch-checkpoint")
    d.rename(tmp_path / "t-0.abc-delete")
    checkpoint.write_if_dir_exists([EpochEntry(1, 1)])
    assert not d.exists()
