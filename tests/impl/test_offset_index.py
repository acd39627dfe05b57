"""OffsetIndex: Kafka's OffsetIndexTest scenarios (base offset 45, 30 entries), FMT-14..30."""

from __future__ import annotations

import random
import struct
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.index.offset_index import OffsetIndex, OffsetPosition
from kafkalog.model.errors import (
    CorruptIndexError,
    IllegalArgumentError,
    IndexOffsetOverflowError,
    InvalidOffsetError,
    KafkaStorageError,
)

BASE_OFFSET = 45


@pytest.fixture
def fs() -> FileSystem:
    return FileSystem()


@pytest.fixture
def index(tmp_path: Path, fs: FileSystem) -> OffsetIndex:
    """Kafka's setup: a new index at base offset 45 with room for 30 entries."""
    return OffsetIndex(fs, tmp_path / "00000000000000000045.index", BASE_OFFSET, 30 * 8)


def monotonic_seq(rng: random.Random, base: int, n: int) -> list[int]:
    out, last = [], base
    for _ in range(n):
        last += rng.randint(1, 15)
        out.append(last)
    return out


def test_random_lookup__answers_like_a_sorted_map_floor(index: OffsetIndex) -> None:
    """OffsetIndexTest.randomLookupTest. Spec: FMT-13."""
    assert index.lookup(92) == OffsetPosition(BASE_OFFSET, 0)
    rng = random.Random(45)
    offsets = monotonic_seq(rng, BASE_OFFSET + 1, index.max_entries)
    positions = monotonic_seq(rng, 0, index.max_entries)
    for o, p in zip(offsets, positions, strict=True):
        index.append(o, p)
    for o, p in zip(offsets, positions, strict=True):
        assert index.lookup(o) == OffsetPosition(o, p)
    for target in rng.sample(range(BASE_OFFSET, offsets[-1]), 30):
        floor = [i for i, o in enumerate(offsets) if o <= target]
        expected = (OffsetPosition(offsets[floor[-1]], positions[floor[-1]]) if floor
                    else OffsetPosition(BASE_OFFSET, 0))
        assert index.lookup(target) == expected


def test_lookup__extreme_cases_of_empty_first_and_last(index: OffsetIndex) -> None:
    """OffsetIndexTest.lookupExtremeCases. Spec: FMT-13."""
    assert index.lookup(BASE_OFFSET) == OffsetPosition(BASE_OFFSET, 0)
    for i in range(index.max_entries):
        index.append(BASE_OFFSET + i + 1, i)
    assert index.lookup(BASE_OFFSET) == OffsetPosition(BASE_OFFSET, 0)
    assert index.lookup(BASE_OFFSET + index.max_entries) == OffsetPosition(
        BASE_OFFSET + index.max_entries, index.max_entries - 1)


def test_entry__returns_each_appended_pair(index: OffsetIndex) -> None:
    """OffsetIndexTest.testEntry (the first entry may equal the base offset). Spec: FMT-14."""
    for i in range(index.max_entries):
        index.append(BASE_OFFSET + i, i)
    for i in range(index.max_entries):
        assert index.entry(i) == OffsetPosition(BASE_OFFSET + i, i)


def test_entry__beyond_entries__raises_illegal_argument(index: OffsetIndex) -> None:
    """OffsetIndexTest.testEntryOverflow. Spec: ERR-6."""
    with pytest.raises(IllegalArgumentError):
        index.entry(0)


def test_append__on_full_index__raises_illegal_argument(index: OffsetIndex) -> None:
    """OffsetIndexTest.appendTooMany. Spec: FMT-14, ERR-3."""
    for i in range(index.max_entries):
        index.append(BASE_OFFSET + i + 1, i)
    assert index.is_full()
    with pytest.raises(IllegalArgumentError):
        index.append(BASE_OFFSET + index.max_entries + 1, 1)


def test_append__out_of_order__raises_invalid_offset(index: OffsetIndex) -> None:
    """OffsetIndexTest.appendOutOfOrder. Spec: FMT-14, ERR-4."""
    index.append(51, 0)
    with pytest.raises(InvalidOffsetError):
        index.append(50, 1)
    with pytest.raises(InvalidOffsetError):
        index.append(51, 1)


def test_fetch_upper_bound_offset__finds_smallest_position_at_or_past_the_bound(
        index: OffsetIndex) -> None:
    """OffsetIndexTest.testFetchUpperBoundOffset. Spec: FMT-16, FMT-17."""
    first = OffsetPosition(BASE_OFFSET, 0)
    second = OffsetPosition(BASE_OFFSET + 1, 10)
    third = OffsetPosition(BASE_OFFSET + 2, 23)
    fourth = OffsetPosition(BASE_OFFSET + 3, 37)
    assert index.fetch_upper_bound_offset(first, 5) is None
    for e in (first, second, third, fourth):
        index.append(e.offset, e.position)
    assert index.fetch_upper_bound_offset(first, 5) == second
    assert index.fetch_upper_bound_offset(first, 10) == second
    assert index.fetch_upper_bound_offset(first, 23) == third
    assert index.fetch_upper_bound_offset(first, 22) == third
    assert index.fetch_upper_bound_offset(second, 24) == fourth
    assert index.fetch_upper_bound_offset(fourth, 1) is None
    assert index.fetch_upper_bound_offset(first, 200) is None
    assert index.fetch_upper_bound_offset(second, 200) is None


def test_reopen__after_close__keeps_entries_and_is_full(index: OffsetIndex, fs: FileSystem) -> None:
    """OffsetIndexTest.testReopen: close trims, so the reopened index is full. Spec: FMT-26, 29."""
    index.append(51, 0)
    index.append(52, 1)
    index.close()
    reopened = OffsetIndex(fs, index.path, BASE_OFFSET)
    assert reopened.lookup(51) == OffsetPosition(51, 0)
    assert reopened.lookup(52) == OffsetPosition(52, 1)
    assert reopened.last_offset == 52
    assert reopened.entries == 2
    with pytest.raises(IllegalArgumentError):
        reopened.append(53, 1)


def test_truncate_to__follows_the_three_cases(tmp_path: Path, fs: FileSystem) -> None:
    """OffsetIndexTest.truncate; an entry exactly at the target goes too. Spec: FMT-15, BUG-1."""
    idx = OffsetIndex(fs, tmp_path / "0.index", 0, 10 * 8)
    idx.truncate()
    for i in range(1, 10):
        idx.append(i, i)
    idx.truncate_to(12)
    assert idx.lookup(10) == OffsetPosition(9, 9)
    assert idx.last_offset == 9
    idx.append(10, 10)
    idx.truncate_to(10)
    assert idx.lookup(10) == OffsetPosition(9, 9)
    assert idx.last_offset == 9
    idx.append(10, 10)
    idx.truncate_to(9)
    assert idx.lookup(10) == OffsetPosition(8, 8)
    assert idx.last_offset == 8
    idx.append(9, 9)
    idx.truncate_to(5)
    assert idx.lookup(10) == OffsetPosition(4, 4)
    assert idx.last_offset == 4
    idx.append(5, 5)
    idx.truncate()
    assert idx.entries == 0
    idx.append(0, 0)
    idx.check()
    idx.close()


def test_use_after_close__raises_storage_error(tmp_path: Path, fs: FileSystem) -> None:
    """OffsetIndexTest.forceUnmapTest: after unmapping, use fails loudly. Spec: BUG-9."""
    idx = OffsetIndex(fs, tmp_path / "0.index", 0, 10 * 8)
    idx.append(1, 0)
    idx.close_handler()
    with pytest.raises(KafkaStorageError):
        idx.lookup(1)
    idx.close()


def test_sanity_check__last_offset_equal_to_base_offset__passes(tmp_path: Path,
                                                                fs: FileSystem) -> None:
    """OffsetIndexTest.testSanityLastOffsetEqualToBaseOffset. Spec: FMT-18, BUG-4."""
    idx = OffsetIndex(fs, tmp_path / "20.index", 20, 10 * 8)
    idx.append(20, 0)
    idx.sanity_check()
    idx.close()


def test_new_index__is_preallocated_to_max_size_rounded_down(tmp_path: Path,
                                                             fs: FileSystem) -> None:
    """A new file is zero-filled to max_index_size rounded to 8. Spec: FMT-26."""
    idx = OffsetIndex(fs, tmp_path / "0.index", 0, 30 * 8 + 5)
    assert fs.file_size(idx.path) == 240
    assert (idx.entries, idx.max_entries) == (0, 30)
    idx.close()
    assert fs.file_size(idx.path) == 0


def test_new_index__smaller_than_one_entry__raises_illegal_argument(tmp_path: Path,
                                                                    fs: FileSystem) -> None:
    """Spec: FMT-26, ERR-1."""
    with pytest.raises(IllegalArgumentError):
        OffsetIndex(fs, tmp_path / "0.index", 0, 7)


def test_untrimmed_file__reopens_full_of_zero_entries(tmp_path: Path, fs: FileSystem) -> None:
    """Every whole entry of an existing file counts (FMT-27); zeros fail the sanity check."""
    idx = OffsetIndex(fs, tmp_path / "0.index", 0, 10 * 8)
    idx.append(1, 0)
    idx.flush()
    idx.close_handler()  # an unclean stop: no trim
    reopened = OffsetIndex(fs, tmp_path / "0.index", 0, 10 * 8)
    assert reopened.entries == 10
    with pytest.raises(CorruptIndexError):
        reopened.sanity_check()


def test_resize__keeps_the_write_position(index: OffsetIndex) -> None:
    """A remap must not reset the position, or entry 0 is overwritten. Spec: FMT-28, BUG-2."""
    index.append(50, 0)
    index.append(60, 100)
    assert index.resize(100 * 8) is True
    assert index.resize(100 * 8 + 3) is False
    assert (index.entries, index.max_entries) == (2, 100)
    index.append(70, 200)
    assert [index.entry(i) for i in range(3)] == [(50, 0), (60, 100), (70, 200)]
    assert index.trim_to_valid_size() is True
    assert index.is_full()
    index.reset()
    assert (index.entries, index.max_entries) == (0, 30)


def test_append__offset_beyond_int32_of_base__raises_overflow(index: OffsetIndex) -> None:
    """Spec: FMT-11, ERR-2."""
    assert index.can_append_offset(BASE_OFFSET + 2**31 - 1)
    assert not index.can_append_offset(BASE_OFFSET + 2**31)
    assert not index.can_append_offset(BASE_OFFSET - 1)
    with pytest.raises(IndexOffsetOverflowError):
        index.append(BASE_OFFSET + 2**31, 0)


@pytest.mark.parametrize("content, reason", [
    (b"\x00" * 13, "length not a multiple of 8"),
    (struct.pack(">ii", 5, 0) + struct.pack(">ii", -3, 9), "last offset below the base"),
    (struct.pack(">ii", 5, 10) + struct.pack(">ii", 4, 20), "keys not increasing"),
    (bytes(range(256)) * 4, "garbage"),
])
def test_sanity_check__on_bad_file__raises_corrupt_index(tmp_path: Path, fs: FileSystem,
                                                        content: bytes, reason: str) -> None:
    """Garbage, wrong-length and disordered files are corrupt (the loader rebuilds). FMT-18."""
    path = tmp_path / "00000000000000000100.index"
    path.write_bytes(content)
    idx = OffsetIndex(fs, path, 100, 1024)
    with pytest.raises(CorruptIndexError):
        idx.sanity_check()
    idx.close_handler()


def test_lookup__with_duplicates_free_warm_and_cold_sections__matches_floor(
        tmp_path: Path, fs: FileSystem) -> None:
    """Lookups across Kafka's warm-section split (1024 entries) equal a plain floor. FMT-17."""
    idx = OffsetIndex(fs, tmp_path / "0.index", 0, 3000 * 8)
    keys = list(range(1, 3 * 3000, 3))[:3000]
    for k in keys:
        idx.append(k, k * 10)
    for target in [0, 1, 2, 4, 5000, 6000, keys[-1], keys[-1] + 5, keys[1500], keys[2500] + 1]:
        floor = [k for k in keys if k <= target]
        expected = OffsetPosition(floor[-1], floor[-1] * 10) if floor else OffsetPosition(0, 0)
        assert idx.lookup(target) == expected
    idx.check()
    idx.close()


def test_rename_and_delete__move_and_remove_the_file(index: OffsetIndex, tmp_path: Path,
                                                     fs: FileSystem) -> None:
    """renameTo moves atomically; deleteIfExists unmaps then deletes. Spec: FMT-29."""
    index.append(46, 0)
    target = tmp_path / "00000000000000000045.index.deleted"
    index.rename_to(target)
    assert index.path == str(target) and fs.exists(target)
    assert index.lookup(46) == (46, 0)
    assert index.delete_if_exists() is True
    assert not fs.exists(target)


def test_truncate_to__entry_at_target_with_nonzero_base__is_removed(index: OffsetIndex) -> None:
    """The target is compared in relative space (KAFKA-588). Spec: FMT-15, BUG-1."""
    for offset, position in [(50, 0), (60, 100), (70, 200)]:
        index.append(offset, position)
    index.truncate_to(60)
    assert (index.entries, index.last_offset) == (1, 50)
    index.truncate_to(BASE_OFFSET)
    assert (index.entries, index.last_offset) == (0, BASE_OFFSET)


def test_read_only_open_of_missing_file__raises_storage_error(tmp_path: Path,
                                                              fs: FileSystem) -> None:
    """A read-only index (verify, dump) never creates a file. Spec: ERR-36."""
    with pytest.raises(KafkaStorageError):
        OffsetIndex(fs, tmp_path / "00000000000000000000.index", 0, writable=False)
    assert not (tmp_path / "00000000000000000000.index").exists()


OPS = st.lists(st.tuples(st.sampled_from(["append", "truncate_to", "lookup", "resize", "reopen"]),
                         st.integers(0, 60)), max_size=60)


@given(OPS)
def test_random_operations__agree_with_a_sorted_list_model(ops: list[tuple[str, int]]) -> None:
    """Appends, truncations, resizes and reopenings against a plain list. FMT-13..15, 26..28."""
    with tempfile.TemporaryDirectory() as tmp:
        fs, path = FileSystem(), Path(tmp) / "00000000000000000010.index"
        idx = OffsetIndex(fs, path, 10, 40 * 8)
        model: list[tuple[int, int]] = []
        for op, arg in ops:
            if op == "append" and len(model) < idx.max_entries:
                offset = (model[-1][0] if model else 10) + arg % 5 + (1 if model else 0)
                idx.append(offset, offset * 7)
                model.append((offset, offset * 7))
            elif op == "truncate_to":
                # Half the time exactly at an entry: the case KAFKA-588 got wrong.
                target = model[arg % len(model)][0] if model and arg % 2 == 0 else 10 + arg
                idx.truncate_to(target)
                model = [e for e in model if e[0] < target]
            elif op == "resize":
                idx.resize(max(len(model), arg) * 8)
            elif op == "reopen":
                idx.close()
                idx = OffsetIndex(fs, path, 10, 40 * 8)
                idx.resize(40 * 8)
            floor = [e for e in model if e[0] <= 10 + arg]
            assert idx.lookup(10 + arg) == (floor[-1] if floor else (10, 0))
            assert idx.entries == len(model)
            idx.check()
        idx.close()
