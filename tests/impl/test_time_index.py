"""TimeIndex: Kafka's TimeIndexTest scenarios (base 45, 30 entries), FMT-19..25, LazyIndex."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.index.lazy_index import LazyIndex
from kafkalog.impl.index.offset_index import OffsetIndex
from kafkalog.impl.index.time_index import TimeIndex, TimestampOffset
from kafkalog.model.errors import (
    CorruptIndexError,
    IllegalArgumentError,
    IllegalStateError,
    InvalidOffsetError,
)

MAX_ENTRIES = 30
BASE_OFFSET = 45


@pytest.fixture
def fs() -> FileSystem:
    return FileSystem()


@pytest.fixture
def idx(tmp_path: Path, fs: FileSystem) -> TimeIndex:
    return TimeIndex(fs, tmp_path / "00000000000000000045.timeindex", BASE_OFFSET,
                     MAX_ENTRIES * 12)


def append_entries(idx: TimeIndex, n: int) -> None:
    """Kafka's appendEntries: (i * 10, i * 10 + base offset) for i in 1..n."""
    for i in range(1, n + 1):
        idx.maybe_append(i * 10, i * 10 + BASE_OFFSET)


def test_lookup__floor_by_timestamp_or_no_timestamp(idx: TimeIndex) -> None:
    """TimeIndexTest.testLookUp. Spec: FMT-23."""
    assert idx.lookup(100) == TimestampOffset(-1, BASE_OFFSET)
    append_entries(idx, MAX_ENTRIES - 1)
    assert idx.lookup(9) == TimestampOffset(-1, BASE_OFFSET)
    assert idx.lookup(25) == TimestampOffset(20, 65)
    assert idx.lookup(30) == TimestampOffset(30, 75)


def test_entry__returns_appended_pairs(idx: TimeIndex) -> None:
    """TimeIndexTest.testEntry."""
    append_entries(idx, MAX_ENTRIES - 1)
    assert idx.entry(0) == TimestampOffset(10, 55)
    assert idx.entry(1) == TimestampOffset(20, 65)
    assert idx.entry(2) == TimestampOffset(30, 75)
    assert idx.entry(3) == TimestampOffset(40, 85)


def test_entry__beyond_entries__raises_illegal_argument(idx: TimeIndex) -> None:
    """TimeIndexTest.testEntryOverflow. Spec: ERR-6."""
    with pytest.raises(IllegalArgumentError):
        idx.entry(0)


def test_truncate__and_truncate_to_first_offset__empty_the_index(idx: TimeIndex) -> None:
    """TimeIndexTest.testTruncate. Spec: FMT-24."""
    append_entries(idx, MAX_ENTRIES - 1)
    idx.truncate()
    assert idx.entries == 0
    append_entries(idx, MAX_ENTRIES - 1)
    idx.truncate_to(10 + BASE_OFFSET)
    assert idx.entries == 0


def test_truncate_to__between_and_at_entries__keeps_the_earlier_ones(idx: TimeIndex) -> None:
    """Three cases on the offset column; the last entry is re-read. Spec: FMT-24."""
    append_entries(idx, 5)  # offsets 55, 65, 75, 85, 95
    idx.truncate_to(80)
    assert idx.entries == 3 and idx.last_entry == TimestampOffset(30, 75)
    idx.truncate_to(75)
    assert idx.entries == 2 and idx.last_entry == TimestampOffset(20, 65)
    idx.truncate_to(1000)
    assert idx.entries == 2
    idx.check()


def test_append__full_index_then_reserved_slot(idx: TimeIndex) -> None:
    """TimeIndexTest.testAppend: the last slot only takes skip_full_check. FMT-21, FMT-22."""
    append_entries(idx, MAX_ENTRIES - 1)
    with pytest.raises(IllegalArgumentError):
        idx.maybe_append(10000, 1000)
    with pytest.raises(InvalidOffsetError):
        idx.maybe_append(10000, (MAX_ENTRIES - 2) * 10, True)
    idx.maybe_append(10000, 1000, True)
    assert idx.entries == MAX_ENTRIES
    assert idx.last_entry == TimestampOffset(10000, 1000)


def test_maybe_append__equal_timestamp_is_ignored_and_smaller_raises(idx: TimeIndex) -> None:
    """Only strictly larger timestamps append; a smaller one is IllegalState. FMT-22, ERR-9."""
    idx.maybe_append(100, 50)
    idx.maybe_append(100, 51)
    assert idx.entries == 1
    with pytest.raises(IllegalStateError):
        idx.maybe_append(99, 52)
    idx.maybe_append(101, 51)  # an equal offset is allowed
    assert idx.entries == 2


def test_maybe_append__no_timestamp_never_creates_entries(idx: TimeIndex) -> None:
    """v0 data (NO_TIMESTAMP) compares against -1 and is ignored. Spec: FMT-22."""
    idx.maybe_append(-1, 50)
    assert idx.entries == 0


def test_sanity_check__detects_bad_offset_timestamp_and_length(tmp_path: Path,
                                                              fs: FileSystem) -> None:
    """TimeIndexTest.testSanityCheck, with the corruptions written into real files. FMT-25."""
    good = struct.pack(">qi", 10, 10) + struct.pack(">qi", 20, 20)
    cases = {
        "offset": struct.pack(">qi", 10, 10) + struct.pack(">qi", 20, -1),
        "timestamp": struct.pack(">qi", 10, 10) + struct.pack(">qi", 9, 20),
        "length": good + b"\x00",
    }
    path = tmp_path / "good.timeindex"
    path.write_bytes(good)
    TimeIndex(fs, path, BASE_OFFSET).sanity_check()
    for name, content in cases.items():
        path = tmp_path / f"{name}.timeindex"
        path.write_bytes(content)
        index = TimeIndex(fs, path, BASE_OFFSET)
        with pytest.raises(CorruptIndexError):
            index.sanity_check()


def test_sanity_check__fresh_and_appended_index__passes(idx: TimeIndex, fs: FileSystem) -> None:
    """TimeIndexTest.testSanityCheck (the passing half), then a trimmed reopen."""
    idx.sanity_check()
    append_entries(idx, 5)
    idx.sanity_check()
    idx.close()
    reopened = TimeIndex(fs, idx.path, BASE_OFFSET, MAX_ENTRIES * 12)
    reopened.sanity_check()
    assert reopened.entries == 5 and reopened.last_entry == TimestampOffset(50, 95)


def test_is_full__one_slot_before_the_end(idx: TimeIndex) -> None:
    """TimeIndexTest.testIsFull. Spec: FMT-21."""
    assert not idx.is_full()
    append_entries(idx, MAX_ENTRIES - 1)
    assert idx.is_full()


def test_last_entry__empty_then_appended(idx: TimeIndex) -> None:
    """TimeIndexTest.testLastEntry. Spec: FMT-20."""
    assert idx.last_entry == TimestampOffset(-1, BASE_OFFSET)
    idx.maybe_append(1, 1 + BASE_OFFSET)
    assert idx.last_entry == TimestampOffset(1, BASE_OFFSET + 1)


def test_resize__reports_whether_the_length_changed(idx: TimeIndex) -> None:
    """TimeIndexTest.testResize. Spec: FMT-28."""
    assert idx.resize(MAX_ENTRIES * 12) is False
    assert idx.resize(MAX_ENTRIES // 2 * 12) is True
    assert idx.resize(MAX_ENTRIES * 2 * 12) is True


def test_entry_size_and_parse__twelve_big_endian_bytes(idx: TimeIndex, fs: FileSystem) -> None:
    """TimeIndexTest.testEntrySize and testParseEntry: int64 timestamp, int32 rel offset."""
    assert TimeIndex.entry_size() == 12
    idx.maybe_append(1, 1 + BASE_OFFSET)
    idx.flush()
    raw = fs.read_file(idx.path)[:12]
    assert raw == bytes.fromhex("0000000000000001 00000001")
    assert idx.entry(0) == TimestampOffset(1, BASE_OFFSET + 1)


def test_lazy_index__creates_no_file_until_get(tmp_path: Path, fs: FileSystem) -> None:
    """A new segment has no index files until first use. Spec: FMT-31."""
    path = tmp_path / "00000000000000000000.index"
    lazy = LazyIndex.for_offset(fs, path, 0, 1024)
    assert not lazy.is_loaded() and not path.exists()
    index = lazy.get()
    assert isinstance(index, OffsetIndex) and path.exists()
    assert lazy.get() is index
    lazy.close()


def test_lazy_index__rename_before_load__tolerates_missing_file(tmp_path: Path,
                                                                fs: FileSystem) -> None:
    """renameTo before the index is loaded and without a file only changes the name. FMT-31."""
    lazy = LazyIndex.for_time(fs, tmp_path / "0.timeindex", 0, 1200)
    lazy.rename_to(tmp_path / "0.timeindex.deleted")
    assert lazy.path == str(tmp_path / "0.timeindex.deleted")
    assert not (tmp_path / "0.timeindex.deleted").exists()
    assert isinstance(lazy.get(), TimeIndex)
    assert (tmp_path / "0.timeindex.deleted").exists()
    assert lazy.delete_if_exists() is True


def test_lazy_index__rename_of_existing_unloaded_file__moves_it(tmp_path: Path,
                                                                fs: FileSystem) -> None:
    """An existing file is moved even when the index was never loaded. FMT-31."""
    (tmp_path / "0.index").write_bytes(struct.pack(">ii", 3, 0))
    lazy = LazyIndex.for_offset(fs, tmp_path / "0.index", 0, 1024)
    lazy.rename_to(tmp_path / "0.index.swap")
    assert (tmp_path / "0.index.swap").exists() and not (tmp_path / "0.index").exists()
    assert lazy.get().entry(0) == (3, 0)
    lazy.close()
