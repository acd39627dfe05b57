"""Checks that skip unchanged segments still see an old segment rewritten in place: the
recording file system's `version_of` changes with every journalled write, so `Log.check`, the
checker's verify and its snapshot observation run again on exactly the files that changed."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafkalog.conformance.check.observe import (
    IndexMemo,
    SnapshotMemo,
    with_indexes,
    with_snapshot_tables,
)
from kafkalog.conformance.crash.fault_fs import RecordingFileSystem
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.load.log_dir import LogDir, TopicPartition
from kafkalog.impl.log.log import Log
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.time import MockTime
from kafkalog.impl.verify.memo import SegmentMemo
from kafkalog.impl.verify.verifier import verify_log_dir
from kafkalog.model.values import LogConfig, Record

PARTITION = TopicPartition("t", 0)


def rolled_log(root: Path) -> tuple[RecordingFileSystem, LogDir, Log]:
    root.mkdir()
    fs = RecordingFileSystem(root)
    config = LogConfig(segment_bytes=400, index_interval_bytes=50, segment_index_bytes=4096)
    log_dir = LogDir.open(fs, root, config, MockTime(1_700_000_000_000))
    log = log_dir.get_or_create_log(PARTITION)
    for i in range(20):
        log.append_as_leader(MemoryRecords.with_records([Record(None, b"v%d" % i, 1000 + i)]), 0)
    assert len(log.local_log.segments.values()) > 2
    return fs, log_dir, log


def rewrite_first_segment_in_place(fs: FileSystem, log: Log) -> None:
    """Move the oldest segment's first batch to offset 10**6 (the base offset field, outside the
    CRC): same size, same name, offsets now out of order."""
    first = log.local_log.segments.values()[0]
    handle = fs.open_file(first.log.path, writable=True)
    try:
        handle.pwrite((10**6).to_bytes(8, "big"), 0)
    finally:
        handle.close()


def test_version_of__a_journalled_write__changes_the_version(tmp_path: Path) -> None:
    fs, log_dir, log = rolled_log(tmp_path / "root")
    path = log.local_log.segments.values()[0].log.path
    before = fs.version_of(path)
    rewrite_first_segment_in_place(fs, log)
    assert fs.version_of(path) != before
    assert fs.version_of(tmp_path / "root" / "absent") == (0, -1)
    assert fs.version_of(tmp_path / "elsewhere") is None
    assert FileSystem().version_of(path) is None
    log_dir.close()


def test_log_check__old_segment_rewritten_in_place__is_checked_again(tmp_path: Path) -> None:
    fs, log_dir, log = rolled_log(tmp_path / "root")
    log.check()
    log.check()  # every segment unchanged: skipped
    rewrite_first_segment_in_place(fs, log)
    with pytest.raises(AssertionError):
        log.check()
    log_dir.close()


def test_verify_memo__old_segment_rewritten_in_place__reports_it(tmp_path: Path) -> None:
    fs, log_dir, log = rolled_log(tmp_path / "root")
    memo = SegmentMemo()
    clean = verify_log_dir(fs, tmp_path / "root", memo=memo).problems
    assert verify_log_dir(fs, tmp_path / "root", memo=memo).problems == clean
    rewrite_first_segment_in_place(fs, log)
    after = verify_log_dir(fs, tmp_path / "root", memo=memo).problems
    assert after != clean
    assert after == verify_log_dir(fs, tmp_path / "root").problems  # same as without a memo
    log_dir.close()


def test_snapshot_memo__snapshot_rewritten_in_place__is_read_again(tmp_path: Path) -> None:
    fs, log_dir, log = rolled_log(tmp_path / "root")
    memo: SnapshotMemo = {}
    paths = log.producer_state.snapshots
    assert paths, "rolls write producer snapshots"
    first = with_snapshot_tables(log.state(), log, fs, memo).producer_snapshot_tables
    handle = fs.open_file(paths[min(paths)], writable=True)
    try:
        handle.pwrite(b"\xff" * 4, 0)  # a damaged header: the table becomes unreadable
    finally:
        handle.close()
    again = with_snapshot_tables(log.state(), log, fs, memo).producer_snapshot_tables
    assert again != first
    log_dir.close()


def test_index_memo__old_index_rewritten_in_place__is_read_again(tmp_path: Path) -> None:
    fs, log_dir, log = rolled_log(tmp_path / "root")
    memo: IndexMemo = {}
    first = with_indexes(log.state(), log, fs, memo).segments[0].offset_index
    assert with_indexes(log.state(), log, fs, memo).segments[0].offset_index == first
    index = log.local_log.segments.values()[0]._offset_index
    handle = fs.open_file(index.path, writable=True)
    try:
        handle.pwrite((7).to_bytes(4, "big") + (9).to_bytes(4, "big"), 0)
    finally:
        handle.close()
    again = with_indexes(log.state(), log, fs, memo).segments[0].offset_index
    assert again != first
    assert again == with_indexes(log.state(), log, fs).segments[0].offset_index
    log_dir.close()


def test_version_of__same_generation__answers_alike_until_the_next_operation(
        tmp_path: Path) -> None:
    """Answers are kept per generation: renames and deletes (namespace operations) still show."""
    root = tmp_path / "root"
    root.mkdir()
    fs = RecordingFileSystem(root)
    path = str(root / "file")
    fs.open_file(path, create=True).close()
    generation, version = fs.generation(), fs.version_of(path)
    assert fs.version_of(path) == version != (0, -1)
    assert fs.generation() == generation
    fs.rename(path, path + ".moved")
    assert fs.generation() > generation
    assert fs.version_of(path) == (0, -1)
    assert fs.version_of(path + ".moved") == version
    fs.delete(path + ".moved")
    assert fs.version_of(path + ".moved") == (0, -1)
    assert FileSystem().generation() is None


def test_log_state__old_segment_rewritten_after_check__shows_the_new_next_offset(
        tmp_path: Path) -> None:
    """The file versions a check read are reused only under the same generation: the next
    offset `state()` reports for an old segment follows a rewrite of its last batch."""
    fs, log_dir, log = rolled_log(tmp_path / "root")
    log.check()
    first = log.local_log.segments.values()[0]
    before = log.state().segments[0].next_offset
    last_position = sum(b.size_in_bytes for b in list(first.log.batches(0))[:-1])
    handle = fs.open_file(first.log.path, writable=True)
    try:
        handle.pwrite((10**6).to_bytes(8, "big"), last_position)  # the last batch's base
    finally:
        handle.close()
    after = log.state().segments[0].next_offset
    assert after != before
    assert after == first.read_next_offset()
    log_dir.close()


def test_verify_memo__snapshot_rewritten_in_place__reports_it(tmp_path: Path) -> None:
    """verify parses a producer snapshot once per version: a damaged one is read again."""
    fs, log_dir, log = rolled_log(tmp_path / "root")
    memo = SegmentMemo()
    clean = verify_log_dir(fs, tmp_path / "root", memo=memo).problems
    assert verify_log_dir(fs, tmp_path / "root", memo=memo).problems == clean
    paths = log.producer_state.snapshots
    handle = fs.open_file(paths[min(paths)], writable=True)
    try:
        handle.pwrite(b"\xff" * 4, 0)  # a damaged header: PSF-5
    finally:
        handle.close()
    after = verify_log_dir(fs, tmp_path / "root", memo=memo).problems
    assert any(f.kind == "corrupt_snapshot" for f in after)
    assert after == verify_log_dir(fs, tmp_path / "root").problems  # same as without a memo
    assert verify_log_dir(fs, tmp_path / "root", memo=memo).problems == after  # not remembered
    log_dir.close()
