"""FileRecords: Kafka's FileRecordsTest scenarios (values abcd/efgh/ijkl) plus FMT-53..56."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafkalog.impl.fs.file_system import FileHandle, FileSystem
from kafkalog.impl.index.time_index import TimestampOffset
from kafkalog.impl.records.file_records import FileRecords, LogOffsetPosition
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.model.errors import CorruptRecordError, IllegalArgumentError
from kafkalog.model.values import Record, TimestampAndOffset

VALUES = [b"abcd", b"efgh", b"ijkl"]


class CountingHandle(FileHandle):
    """Records every truncate call (testTruncateNotCalledIfSizeIsSameAsTargetSize)."""

    truncates: list[int] = []

    def truncate(self, size: int) -> None:
        CountingHandle.truncates.append(size)
        super().truncate(size)


class CountingFileSystem(FileSystem):
    handle_class = CountingHandle


def batch_of(value: bytes, offset: int, ts: int = 0, epoch: int = -1) -> MemoryRecords:
    return MemoryRecords.with_records([Record(None, value, ts)], base_offset=offset,
                                      partition_leader_epoch=epoch)


@pytest.fixture
def fs() -> FileSystem:
    return FileSystem()


@pytest.fixture
def file_records(tmp_path: Path, fs: FileSystem) -> FileRecords:
    """Kafka's createFileRecords(values): one batch per value, offsets 0, 1, 2."""
    records = FileRecords.open(fs, tmp_path / "00000000000000000000.log")
    for i, value in enumerate(VALUES):
        records.append(batch_of(value, i))
    return records


def values_of(records: FileRecords) -> list[bytes | None]:
    return [r.value for b in records.batches() for r in b.records()]


def test_size__tracks_the_file_length_on_every_append(file_records: FileRecords,
                                                      fs: FileSystem) -> None:
    """FileRecordsTest.testFileSize."""
    assert fs.file_size(file_records.path) == file_records.size_in_bytes
    for _ in range(20):
        assert file_records.append(batch_of(b"abcd", 0)) == 72
        assert fs.file_size(file_records.path) == file_records.size_in_bytes


@pytest.mark.parametrize("zeros", [0, 2, 4, 5, 6])
def test_iteration__over_a_partial_write__still_yields_every_batch(
        file_records: FileRecords, tmp_path: Path, fs: FileSystem, zeros: int) -> None:
    """FileRecordsTest.testIterationOverPartialAndTruncation: a torn tail is ignored. FMT-52."""
    file_records.close()
    with open(file_records.path, "ab") as f:
        f.write(bytes(zeros))
    reopened = FileRecords.open(fs, file_records.path, file_already_exists=True)
    assert values_of(reopened) == VALUES


def test_slice__reads_whole_batches_and_caps_at_the_end(file_records: FileRecords) -> None:
    """FileRecordsTest.testRead. Spec: FMT-53."""
    size = file_records.size_in_bytes
    whole = file_records.slice_records(0, size)
    assert whole.size_in_bytes == size
    items = list(whole.batches())
    first = items[0].size_in_bytes
    for length in (size - first, size, 2**31 - 1):
        read = file_records.slice_records(first, length)
        assert read.size_in_bytes == size - first
        assert [bytes(b.buffer) for b in read.batches()] == [bytes(b.buffer) for b in items[1:]]
    second = file_records.slice(first, items[1].size_in_bytes)
    assert bytes(second) == bytes(items[1].buffer)


def test_slice__bad_arguments__raise_illegal_argument(file_records: FileRecords) -> None:
    """ERR-16: negative position or size, or position past the end."""
    for position, size in [(-1, 10), (0, -1), (file_records.size_in_bytes + 1, 1)]:
        with pytest.raises(IllegalArgumentError):
            file_records.slice(position, size)
    assert len(file_records.slice(file_records.size_in_bytes, 10)) == 0


def test_search_for_offset_with_size__finds_first_batch_ending_at_or_after(
        file_records: FileRecords) -> None:
    """FileRecordsTest.testSearch. Spec: FMT-54."""
    file_records.append(batch_of(b"test", 50))
    sizes = [b.size_in_bytes for b in file_records.batches()]
    assert file_records.search_for_offset_with_size(0, 0) == LogOffsetPosition(0, 0, sizes[0])
    position = sizes[0]
    assert file_records.search_for_offset_with_size(1, 0) == LogOffsetPosition(
        1, position, sizes[1])
    assert file_records.search_for_offset_with_size(1, position) == LogOffsetPosition(
        1, position, sizes[1])
    position += sizes[1] + sizes[2]
    assert file_records.search_for_offset_with_size(3, position) == LogOffsetPosition(
        50, position, sizes[3])
    assert file_records.search_for_offset_with_size(50, position) == LogOffsetPosition(
        50, position, sizes[3])
    assert file_records.search_for_offset_with_size(51, 0) is None


def test_batches__obey_start_and_end_limits(file_records: FileRecords) -> None:
    """FileRecordsTest.testIteratorWithLimits: a region one byte short holds no batch."""
    start = file_records.search_for_offset_with_size(1, 0)
    assert start is not None
    inside = list(file_records.batches(start.position, start.position + start.size))
    assert [b.base_offset for b in inside] == [1]
    assert list(file_records.batches(start.position, start.position + start.size - 1)) == []


def test_truncate_to__drops_later_batches_and_reports_bytes_removed(
        file_records: FileRecords) -> None:
    """FileRecordsTest.testTruncate. Spec: FMT-53."""
    end = file_records.search_for_offset_with_size(1, 0)
    assert end is not None
    total = file_records.size_in_bytes
    assert file_records.truncate_to(end.position) == total - end.position
    assert values_of(file_records) == [b"abcd"]
    assert file_records.size_in_bytes == 72


def test_truncate_to__same_size__does_not_truncate_the_file(tmp_path: Path) -> None:
    """FileRecordsTest.testTruncateNotCalledIfSizeIsSameAsTargetSize (mtime must not change)."""
    records = FileRecords.open(CountingFileSystem(), tmp_path / "0.log")
    records.append(batch_of(b"abcd", 0))
    CountingHandle.truncates = []
    assert records.truncate_to(72) == 0
    assert CountingHandle.truncates == []
    records.truncate_to(0)
    assert CountingHandle.truncates == [0]


def test_truncate_to__beyond_size_or_negative__raises(file_records: FileRecords) -> None:
    """FileRecordsTest.testTruncateNotCalledIfSizeIsBiggerThanTargetSize. Spec: ERR-17."""
    with pytest.raises(IllegalArgumentError):
        file_records.truncate_to(file_records.size_in_bytes + 1)
    with pytest.raises(IllegalArgumentError):
        file_records.truncate_to(-1)


def test_preallocate__new_file_has_length_but_zero_size(tmp_path: Path, fs: FileSystem) -> None:
    """FileRecordsTest.testPreallocateTrue / testPreallocateFalse. Spec: FMT-53."""
    pre = FileRecords.open(fs, tmp_path / "a.log", init_file_size=512 * 1024 * 1024,
                           preallocate=True)
    assert pre.size_in_bytes == 0 and fs.file_size(pre.path) == 512 * 1024 * 1024
    plain = FileRecords.open(fs, tmp_path / "b.log", init_file_size=512 * 1024 * 1024)
    assert plain.size_in_bytes == 0 and fs.file_size(plain.path) == 0
    pre.close()
    plain.close()


def test_preallocate__clean_close__trims_to_the_valid_data(tmp_path: Path, fs: FileSystem) -> None:
    """FileRecordsTest.testPreallocateClearShutdown. Spec: FMT-53."""
    records = FileRecords.open(fs, tmp_path / "0.log", init_file_size=512 * 1024 * 1024,
                               preallocate=True)
    for i, value in enumerate(VALUES):
        records.append(batch_of(value, i))
    size = records.size_in_bytes
    records.close()
    reopened = FileRecords.open(fs, tmp_path / "0.log", file_already_exists=True,
                                init_file_size=512 * 1024 * 1024, preallocate=True)
    assert reopened.size_in_bytes == size == fs.file_size(tmp_path / "0.log")


def test_preallocated_tail_without_trim__raises_corrupt_record(tmp_path: Path,
                                                               fs: FileSystem) -> None:
    """A zero-filled tail has size field 0 < 14: CorruptRecordError naming file@position."""
    records = FileRecords.open(fs, tmp_path / "0.log", init_file_size=4096, preallocate=True)
    records.append(batch_of(b"abcd", 0))
    records.close_handlers()  # crash: no trim
    reopened = FileRecords.open(fs, tmp_path / "0.log", file_already_exists=True)
    batches = reopened.batches()
    assert next(batches).base_offset == 0
    with pytest.raises(CorruptRecordError) as err:
        next(batches)
    assert err.value.where == f"{tmp_path / '0.log'}@72"


def test_batches__across_many_chunks__reads_every_batch(tmp_path: Path, fs: FileSystem) -> None:
    """Chunked shallow reads handle batches larger than a chunk and chunk boundaries."""
    records = FileRecords.open(fs, tmp_path / "0.log")
    sizes = [10, 70_000, 5, 20_000, 3_000_000, 1]
    for i, n in enumerate(sizes):
        records.append(batch_of(bytes([i]) * n, i))
    batches = list(records.batches())
    assert [b.base_offset for b in batches] == list(range(len(sizes)))
    assert all(b.is_valid() for b in batches)
    assert [b.position for b in batches][1] == batches[0].size_in_bytes


def test_search_for_timestamp__first_record_at_or_after_target_and_start(
        tmp_path: Path, fs: FileSystem) -> None:
    """Spec: FMT-55 (the batch's epoch is reported when >= 0)."""
    records = FileRecords.open(fs, tmp_path / "0.log")
    records.append(MemoryRecords.with_records(
        [Record(None, b"a", 100), Record(None, b"b", 300), Record(None, b"c", 200)],
        base_offset=0, partition_leader_epoch=4))
    records.append(batch_of(b"d", 3, ts=250))
    assert records.search_for_timestamp(150, 0, 0) == TimestampAndOffset(300, 1, 4)
    assert records.search_for_timestamp(150, 0, 2) == TimestampAndOffset(200, 2, 4)
    assert records.search_for_timestamp(240, 0, 3) == TimestampAndOffset(250, 3, None)
    assert records.search_for_timestamp(301, 0, 0) is None


def test_largest_timestamp_after__max_batch_timestamp_with_its_last_offset(
        file_records: FileRecords) -> None:
    """Spec: FMT-56."""
    assert file_records.largest_timestamp_after(0) == TimestampOffset(0, 0)
    file_records.append(batch_of(b"x", 3, ts=500))
    file_records.append(batch_of(b"y", 4, ts=400))
    assert file_records.largest_timestamp_after(0) == TimestampOffset(500, 3)
    last = list(file_records.batches())[-1].position
    assert file_records.largest_timestamp_after(last) == TimestampOffset(400, 4)
    assert file_records.largest_timestamp_after(file_records.size_in_bytes) == (-1, -1)


def test_rename_delete_and_mtime__go_through_the_seam(file_records: FileRecords,
                                                      tmp_path: Path, fs: FileSystem) -> None:
    target = tmp_path / "00000000000000000000.log.deleted"
    file_records.rename_to(target)
    assert file_records.path == str(target) and values_of(file_records) == VALUES
    file_records.set_last_modified_ms(1_600_000_000_123)
    assert file_records.last_modified_ms() == 1_600_000_000_123
    assert file_records.delete_if_exists() is True
    assert not target.exists()


def test_read_bytes_and_read_into__are_bounded_by_the_logical_size(
        file_records: FileRecords) -> None:
    assert len(file_records.read_bytes(200, 100)) == 16
    buf = bytearray(20)
    assert file_records.read_into(buf, 210) == 6
    assert file_records.read_bytes(0, 72) == bytes(batch_of(b"abcd", 0).buffer)


def test_iteration__over_a_torn_batch_tail__stops_before_it(file_records: FileRecords,
                                                             fs: FileSystem) -> None:
    """A crash mid-append leaves part of a batch; scanning ends before it. Spec: FMT-52."""
    torn = bytes(batch_of(b"mnop", 3).buffer)[:40]
    file_records.close()
    with open(file_records.path, "ab") as f:
        f.write(torn)
    reopened = FileRecords.open(fs, file_records.path, file_already_exists=True)
    assert values_of(reopened) == VALUES
    assert reopened.size_in_bytes == 3 * 72 + 40


def test_concurrent_reader__sees_only_whole_published_batches(tmp_path: Path,
                                                              fs: FileSystem) -> None:
    """The size is published after the write, so a reader bounded by it never sees a torn batch."""
    import threading

    records = FileRecords.open(fs, tmp_path / "0.log")
    done = threading.Event()
    seen: list[int] = []
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            while not done.is_set():
                batches = list(records.batches())
                if not all(b.is_valid() for b in batches):
                    raise AssertionError("reader saw an invalid batch")
                seen.append(len(batches))
        except BaseException as e:  # surfaced by the assertion below
            errors.append(e)

    thread = threading.Thread(target=reader)
    thread.start()
    for i in range(100):
        records.append(batch_of(bytes([i]) * (i % 50), i))
    done.set()
    thread.join()
    assert errors == []
    assert len(list(records.batches())) == 100
    assert seen == sorted(seen)
