"""Offset lookups on both twins: the compiled floor search over the index mapping and
header walk (impl/records/_scan.c) give exactly the answers of the pure-Python paths, on good and
hostile bytes, and `translate_offset` answers what a batch-by-batch walk answers."""

from __future__ import annotations

import contextlib
import random
import struct
from pathlib import Path
from typing import Any

import pytest
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.index import offset_index
from kafkalog.impl.index.offset_index import OffsetIndex
from kafkalog.impl.records import batch_scan, file_records
from kafkalog.impl.records.file_records import LogOffsetPosition
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.segment.log_segment import LogSegment
from kafkalog.impl.time import MockTime
from kafkalog.model.errors import KafkalogError, KafkaStorageError
from kafkalog.model.values import LogConfig
from kafkalog.model.values import Record as ValueRecord

try:
    from kafkalog.impl.records import _scan  # type: ignore[attr-defined]
except ImportError:  # the optional extension is not built: the compiled path is not tested
    _scan = None

FS = FileSystem()
NEEDS_C = pytest.mark.skipif(_scan is None, reason="the C extension records._scan is not "
                             "built here (no compiler at install time): nothing to compare")
HEADER_WALKS: dict[str, Any] = {"python": batch_scan.py_find_batch_header}
if _scan is not None:
    HEADER_WALKS["c"] = _scan.find_batch_header
EXTREME_TARGETS = [-(2**70), -(2**63), -1, 0, 2**31, 2**63 - 1, 2**63, 2**70]


def _batch(rng: random.Random, offset: int) -> bytes:
    records = [ValueRecord(None, rng.randbytes(rng.randint(0, 200)), 1_000 + i)
               for i in range(rng.randint(1, 4))]
    return MemoryRecords.with_records(records, base_offset=offset).to_bytes()


def _segment(rng: random.Random, base: int, batches: int) -> bytearray:
    out, offset = bytearray(), base
    for _ in range(batches):
        data = _batch(rng, offset)
        out += data
        offset += struct.unpack_from(">i", data, 23)[0] + 1 + rng.choice([0, 0, 3])
    return out


def _damage(rng: random.Random, data: bytearray) -> bytearray:
    """A hostile header somewhere: the header walk reads nothing but headers."""
    at = rng.randrange(len(data)) if data else 0
    kind = rng.choice(["magic", "length", "offset-limit", "truncate", "garbage"])
    if kind == "magic" and at + 17 <= len(data):
        data[at + 16] = rng.choice([0, 1, 3, 255])
    elif kind == "length" and at + 12 <= len(data):
        struct.pack_into(">i", data, at + 8, rng.choice([-12, -1, 0, 48, 49, 2**31 - 1]))
    elif kind == "offset-limit" and at + 8 <= len(data):
        struct.pack_into(">q", data, at, 2**63 - 1 - rng.randint(0, 2))
    elif kind == "truncate":
        del data[at:]
    else:
        data[at:at + 40] = rng.randbytes(40)
    return data


# --- the header walk ---------------------------------------------------------------------------

@NEEDS_C
def test_compiled_header_walk__random_and_hostile_chunks__same_answer_as_python() -> None:
    """Found batch, torn tail, read-more position and slow-path position: identical values."""
    rng = random.Random(17)
    for _ in range(3_000):
        data = _segment(rng, rng.choice([0, 2**31, 2**63 - 200]), rng.randint(0, 6))
        if rng.random() < 0.5:
            data = _damage(rng, data)
        chunk = bytes(data[: rng.randint(0, len(data))]) if rng.random() < 0.3 else bytes(data)
        position = rng.choice([0, 4096, 2**40])
        stop = position + rng.choice([len(data), len(chunk), max(0, len(data) - 5), 2**62])
        target = rng.choice([*EXTREME_TARGETS, rng.randint(0, 40), 2**31 + rng.randint(0, 40)])
        args = (chunk, position, stop, target, LogOffsetPosition)
        expected = batch_scan.py_find_batch_header(*args)
        found = _scan.find_batch_header(*args)
        assert found == expected and type(found) is type(expected), args


@pytest.mark.parametrize("walk", sorted(HEADER_WALKS))
def test_header_walk__found_batch__is_a_log_offset_position(walk: str) -> None:
    """The answer is FMT-54's named tuple (callers read `.offset`, `.position`, `.size`)."""
    data = _segment(random.Random(3), 100, 3)
    found = HEADER_WALKS[walk](bytes(data), 0, len(data), 101, LogOffsetPosition)
    assert isinstance(found, LogOffsetPosition) and found.position == 0
    assert found.size == 12 + struct.unpack_from(">i", data, 8)[0]


@pytest.mark.parametrize("walk", sorted(HEADER_WALKS))
def test_header_walk__chunk_ends_inside_a_header__asks_for_more_from_that_batch(walk: str) -> None:
    data = _segment(random.Random(4), 0, 2)
    second = 12 + struct.unpack_from(">i", data, 8)[0]
    chunk = bytes(data[: second + 20])  # the second header is cut before lastOffsetDelta
    assert HEADER_WALKS[walk](chunk, 0, len(data), 10**9, LogOffsetPosition) == second


@pytest.mark.parametrize("walk", sorted(HEADER_WALKS))
def test_header_walk__legacy_magic__hands_that_batch_to_the_per_batch_path(walk: str) -> None:
    data = _segment(random.Random(5), 0, 2)
    second = 12 + struct.unpack_from(">i", data, 8)[0]
    data[second + 16] = 1
    assert HEADER_WALKS[walk](bytes(data), 0, len(data), 10**9, LogOffsetPosition) == ~second


# --- the floor search over the index -----------------------------------------------------------

def _random_index(rng: random.Random, path: Path, base: int) -> OffsetIndex:
    index = OffsetIndex(FS, path, base, 4096 * 8)
    offset, position = base, 0
    for _ in range(rng.choice([0, 1, 2, rng.randint(3, 4000)])):
        offset += rng.randint(1, 50)
        position += rng.randint(1, 5000)
        if offset - base > 2**31 - 1:
            break
        index.append(offset, position)
    return index


@NEEDS_C
def test_compiled_floor_span__random_indexes__same_span_as_the_keys_cache_bisect(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every target (before, inside, after the entries; beyond int32 and int64) gets the same
    (position, next position) from the C search over the mapping and from the Python bisect."""
    rng = random.Random(9)
    for case in range(60):
        base = rng.choice([0, 45, 2**40])
        index = _random_index(rng, tmp_path / f"{case:020d}.index", base)
        last = index.last_offset
        targets = [base + t for t in EXTREME_TARGETS] + [
            rng.randint(base - 5, last + 5) for _ in range(200)]
        compiled = [index.floor_span(t) for t in targets]
        monkeypatch.setattr(offset_index, "_COMPILED_FLOOR_SPAN", None)
        python = [index.floor_span(t) for t in targets]
        monkeypatch.undo()
        assert compiled == python
        index.close()


@pytest.mark.parametrize("compiled", [True, False])
def test_floor_span__closed_index__raises_storage_error_on_every_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compiled: bool) -> None:
    if compiled and _scan is None:
        pytest.skip("the C extension kafkalog.impl.records._scan is not built here")
    if not compiled:
        monkeypatch.setattr(offset_index, "_COMPILED_FLOOR_SPAN", None)
    index = OffsetIndex(FS, tmp_path / "00000000000000000000.index", 0, 64)
    assert index.floor_span(5) == (0, -1)
    index.append(3, 100)
    assert index.floor_span(2) == (0, 100) and index.floor_span(3) == (100, -1)
    index.close()
    with pytest.raises(KafkaStorageError):
        index.floor_span(3)


# --- translate_offset end to end ----------------------------------------------------------------

def _per_batch_answer(segment: LogSegment, target: int) -> Any:
    """The walk the fast paths replace: every batch from position 0, whole."""
    try:
        for batch in segment.log.batches(0):
            if batch.last_offset >= target:
                return (batch.last_offset, batch.position, batch.size_in_bytes)
        return None
    except KafkalogError as e:
        return type(e).__name__


@pytest.mark.parametrize("walk", sorted(HEADER_WALKS))
def test_translate_offset__random_damaged_segments__answers_like_the_per_batch_walk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, walk: str) -> None:
    """With each header walk, every lookup of a segment (valid, torn, legacy magic, bad sizes,
    an index entry every batch or one every 4 KiB) answers what a whole-batch walk answers."""
    monkeypatch.setattr(file_records, "find_batch_header", HEADER_WALKS[walk])
    rng = random.Random(23)
    for case in range(40):
        base = rng.choice([0, 1000])
        data = _segment(rng, base, rng.randint(1, 60))
        if rng.random() < 0.5:
            data = _damage(rng, data)
        directory = tmp_path / f"{walk}-{case}"
        directory.mkdir()
        (directory / f"{base:020d}.log").write_bytes(bytes(data))
        config = LogConfig(index_interval_bytes=rng.choice([1, 4096]))
        segment = LogSegment.open(FS, directory, base, config, MockTime(),
                                  file_already_exists=True)
        with contextlib.suppress(KafkalogError):  # a hostile file: the index keeps what
            segment.recover(None)                  # recovery vouched for
        for target in [base - 1, *range(base, base + 400, 7), 2**63 - 1]:
            expected = _per_batch_answer(segment, target)
            try:
                found: Any = segment.translate_offset(target)
            except KafkalogError as e:
                found = type(e).__name__
            if isinstance(found, LogOffsetPosition):
                found = tuple(found)
            assert found == expected, (case, target)
        segment.close()
