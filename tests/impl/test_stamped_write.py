"""A leader's stamped batches reach the file without a copy (impl/records/stamped_records.py, issue
#17):
the vectored write, its compiled twin, and the append-path twins beside it (producer rows, packed
index entries) hold to their Python references; watched file handles still see one plain write.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafkalog.impl.fs import file_system as fs_module
from kafkalog.impl.fs.file_system import FileHandle, FileSystem, py_write_stamped
from kafkalog.impl.index.offset_index import py_pack_entries
from kafkalog.impl.log.validator import assign_offsets, assign_offsets_scanned
from kafkalog.impl.producer.rebuild import py_producer_rows
from kafkalog.impl.records.batch_scan import (
    compiled_pack_offset_entries,
    compiled_producer_rows,
    compiled_write_stamped,
)
from kafkalog.impl.records.compression import CompressionType
from kafkalog.impl.records.memory_records import MemoryRecords, build_batch, scan_headers
from kafkalog.impl.records.stamped_records import StampedRecords, stamped_bytes
from kafkalog.model.values import NO_TIMESTAMP, Record, TimestampType

NEEDS_C = pytest.mark.skipif(compiled_write_stamped is None, reason="the C extension "
                             "kafkalog.impl.records._scan is not built here: nothing to compare")

# (records, producer id, control): a control batch carries one end-transaction marker.
_SPEC = st.tuples(st.integers(1, 3), st.sampled_from([-1, -1, 0, 7, 2**62]), st.booleans())


def _client_batches(specs: list[tuple[int, int, bool]], seed: int = 0) -> bytes:
    rng = random.Random(seed)
    out = bytearray()
    for count, pid, control in specs:
        at = len(out)
        if control and pid < 0:  # no valid control batch lacks a producer id: flip the flag
            out += build_batch([Record(None, b"x", 10)], 0, -1, TimestampType.CREATE_TIME,
                               NO_TIMESTAMP, CompressionType.NONE)
            out[at + 22] |= 0x20
            continue
        if control:
            records = [Record(b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x05", 10)]
        else:
            records = [Record(None, rng.randbytes(rng.randrange(0, 40)), 10 + i)
                       for i in range(count)]
        producer = (pid, 0, 0) if pid >= 0 else (-1, -1, -1)
        out += build_batch(records, 0, -1, TimestampType.CREATE_TIME, NO_TIMESTAMP,
                           CompressionType.NONE, producer, control, control)
    return bytes(out)


def _plain(specs: list[tuple[int, int, bool]]) -> list[tuple[int, int, bool]]:
    """Specs whose batches are valid client batches (a flipped control flag is not)."""
    return [(count, pid, control and pid >= 0) for count, pid, control in specs]


def _stamped(raw: bytes, first_offset: int = 40, epoch: int = 3) -> StampedRecords:
    facts = scan_headers(memoryview(raw))
    assert facts is not None
    records, _ = assign_offsets_scanned(memoryview(raw), facts, first_offset, epoch,
                                        TimestampType.CREATE_TIME, 99)
    assert isinstance(records, StampedRecords)
    return records


@settings(max_examples=80, deadline=None)
@given(st.lists(_SPEC, min_size=1, max_size=6), st.integers(0, 2**40), st.integers(0, 9))
def test_stamped_records__buffer__equals_stamping_a_copy_in_place(
    specs: list[Any], first_offset: int, epoch: int,
) -> None:
    """The lazily built stamped bytes are what the batch-object path stamps into a copy, and the
    caller's bytes stay as they were."""
    raw = _client_batches(_plain(specs))
    stamped = _stamped(raw, first_offset, epoch)
    slow = MemoryRecords(bytearray(raw))
    assign_offsets(slow, first_offset, epoch, TimestampType.CREATE_TIME, 99)
    assert stamped.to_bytes() == slow.to_bytes()
    assert len(stamped) == stamped.size_in_bytes == len(raw)
    assert bytes(stamped.after_stamps) == raw


def _write_with(writer: Any, path: Path, records: StampedRecords, at: int) -> tuple[Any, bytes]:
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_TRUNC)
    try:
        os.pwrite(fd, b"\xee" * at, 0)
        got = writer(fd, records.source, records.headers, records.facts, at)
    finally:
        os.close(fd)
    return got, path.read_bytes()


@settings(max_examples=60, deadline=None)
@given(st.lists(_SPEC, min_size=1, max_size=6), st.integers(0, 5000))
def test_write_stamped__python_reference__writes_the_stamped_bytes(
    tmp_path_factory: pytest.TempPathFactory, specs: list[Any], at: int,
) -> None:
    path = tmp_path_factory.mktemp("w") / "00.log"
    records = _stamped(_client_batches(_plain(specs)))
    written, data = _write_with(py_write_stamped, path, records, at)
    assert written == len(records)
    assert data == b"\xee" * at + bytes(records.buffer)


@NEEDS_C
@settings(max_examples=60, deadline=None)
@given(st.lists(_SPEC, min_size=1, max_size=6), st.integers(0, 5000))
def test_write_stamped__compiled_twin__writes_what_python_does(
    tmp_path_factory: pytest.TempPathFactory, specs: list[Any], at: int,
) -> None:
    root = tmp_path_factory.mktemp("w")
    records = _stamped(_client_batches(_plain(specs)))
    assert _write_with(compiled_write_stamped, root / "c.log", records, at) == _write_with(
        py_write_stamped, root / "py.log", records, at)


@pytest.mark.parametrize("writer", [py_write_stamped, compiled_write_stamped],
                         ids=["python", "compiled"])
def test_write_stamped__more_batches_than_one_pwritev_takes__writes_them_all(
    tmp_path: Path, writer: Any,
) -> None:
    """2,500 batches need 5,000 buffers: the writes go in IOV_MAX-sized calls, in order."""
    if writer is None:
        pytest.skip("the C extension kafkalog.impl.records._scan is not built here")
    records = _stamped(_client_batches([(1, -1, False)] * 2500, seed=3))
    written, data = _write_with(writer, tmp_path / "00.log", records, 7)
    assert written == len(records)
    assert data[7:] == bytes(records.buffer)


@NEEDS_C
def test_write_stamped__facts_outside_the_buffers__declines_and_writes_nothing(
    tmp_path: Path,
) -> None:
    records = _stamped(_client_batches([(2, -1, False)] * 3))
    fd = os.open(tmp_path / "x", os.O_CREAT | os.O_RDWR)
    try:
        bad = [(f[0], f[1] + 1, *f[2:]) for f in records.facts]  # the last runs past the end
        assert compiled_write_stamped(fd, records.source, records.headers, bad, 0) is None
        assert compiled_write_stamped(fd, records.source, records.headers[:-1],
                                      records.facts, 0) is None
        with pytest.raises(OSError):
            compiled_write_stamped(fd + 1000, records.source, records.headers, records.facts, 0)
    finally:
        os.close(fd)
    assert (tmp_path / "x").read_bytes() == b""


class _WatchingHandle(FileHandle):
    writes: list[tuple[bytes, int]] = []

    def pwrite(self, data: bytes | bytearray | memoryview, position: int) -> int:
        _WatchingHandle.writes.append((bytes(data), position))
        return super().pwrite(data, position)


class _WatchingFileSystem(FileSystem):
    handle_class = _WatchingHandle


def test_write_stamped__handle_overriding_pwrite__sees_one_pwrite_of_the_stamped_bytes(
    tmp_path: Path,
) -> None:
    """Crash recording and fault injection override `pwrite`: they keep seeing every write."""
    records = _stamped(_client_batches([(2, 5, False), (1, -1, False)]))
    _WatchingHandle.writes = []
    handle = _WatchingFileSystem().open_file(tmp_path / "00.log", create=True)
    try:
        assert handle.write_stamped(records, 0) == len(records)
    finally:
        handle.close()
    assert _WatchingHandle.writes == [(bytes(records.buffer), 0)]
    assert (tmp_path / "00.log").read_bytes() == bytes(records.buffer)


def test_write_stamped__closed_handle__raises_a_storage_error(tmp_path: Path) -> None:
    from kafkalog.model.errors import KafkaStorageError
    records = _stamped(_client_batches([(1, -1, False)]))
    handle = FileSystem().open_file(tmp_path / "00.log", create=True)
    handle.close()
    with pytest.raises(KafkaStorageError):
        handle.write_stamped(records, 0)


@settings(max_examples=100, deadline=None)
@given(st.lists(_SPEC, max_size=6))
def test_producer_rows__compiled_twin__picks_what_python_does(specs: list[Any]) -> None:
    """Rows with a producer id or a control batch: the only ones producer state reads."""
    raw = _client_batches(specs)
    facts = scan_headers(memoryview(raw)) or []
    want = py_producer_rows(raw, facts)
    assert want == [i for i, (_, pid, control) in enumerate(specs) if pid >= 0 or control]
    if compiled_producer_rows is not None:
        assert compiled_producer_rows(raw, facts) == want


_OFFSETS = st.lists(st.integers(-5, 2**31 + 5), max_size=6)


@settings(max_examples=300, deadline=None)
@given(_OFFSETS, st.lists(st.integers(-(2**31) - 2, 2**31 + 2), max_size=6),
       st.sampled_from([0, 3, 2**31]))
def test_pack_offset_entries__compiled_twin__packs_or_declines_as_python_does(
    offsets: list[int], positions: list[int], base: int,
) -> None:
    if len(positions) > len(offsets):
        positions = positions[: len(offsets)]
    want = py_pack_entries(offsets, positions, base)
    if compiled_pack_offset_entries is not None:
        assert compiled_pack_offset_entries(offsets, positions, base) == want


def test_pack_offset_entries__reference__is_the_file_layout() -> None:
    """FMT-10: big-endian relative offset then position, 8 bytes an entry."""
    assert py_pack_entries([10, 12], [0, 4096], 10) == (
        b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x10\x00")
    assert py_pack_entries([12, 12], [0, 1], 10) is None  # not strictly increasing
    assert py_pack_entries([9], [0], 10) is None  # below the base
    assert py_pack_entries([10], [2**31], 10) is None  # a position beyond int32


def test_stamped_bytes__replaces_only_each_batchs_first_16_bytes() -> None:
    raw = _client_batches([(1, -1, False), (2, -1, False)])
    facts = scan_headers(memoryview(raw))
    assert facts is not None
    out = stamped_bytes(memoryview(raw), b"\xab" * 32, facts)
    for pos, size, *_ in facts:
        assert out[pos : pos + 16] == b"\xab" * 16
        assert out[pos + 16 : pos + size] == raw[pos + 16 : pos + size]
    assert fs_module.py_write_stamped is py_write_stamped


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
def test_write_stamped__failing_write__raises_a_storage_error_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compiled: bool,
) -> None:
    """ERR-36: an OSError of the vectored write (here EBADF: a read-only handle) is a
    KafkaStorageError naming the path, on either implementation."""
    from kafkalog.model.errors import KafkaStorageError
    if compiled and compiled_write_stamped is None:
        pytest.skip("the C extension kafkalog.impl.records._scan is not built here")
    if not compiled:
        monkeypatch.setattr(fs_module, "_COMPILED_WRITE_STAMPED", None)
    path = tmp_path / "00.log"
    path.write_bytes(b"")
    records = _stamped(_client_batches([(2, -1, False)] * 3))
    handle = FileSystem().open_file(path, writable=False)
    try:
        with pytest.raises(KafkaStorageError, match="write failed") as raised:
            handle.write_stamped(records, 0)
        assert "00.log" in str(raised.value)
    finally:
        handle.close()
    assert path.read_bytes() == b""


def test_write_stamped__facts_outside_the_buffers__python_raises_a_typed_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the compiled twin declines, the reference refuses with IllegalArgumentError and
    writes nothing, rather than writing slices cut short."""
    from kafkalog.model.errors import IllegalArgumentError
    good = _stamped(_client_batches([(2, -1, False)] * 3))
    bad = StampedRecords(good.source, good.headers,
                         [(f[0], f[1] + 1, *f[2:]) for f in good.facts])
    handle = FileSystem().open_file(tmp_path / "00.log", create=True)
    try:
        with pytest.raises(IllegalArgumentError, match="outside"):
            handle.write_stamped(bad, 0)
        short = StampedRecords(good.source, good.headers[:-1], good.facts)
        with pytest.raises(IllegalArgumentError, match="stamps for 3 batches"):
            handle.write_stamped(short, 0)
    finally:
        handle.close()
    assert (tmp_path / "00.log").read_bytes() == b""
