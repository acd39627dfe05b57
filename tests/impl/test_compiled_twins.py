"""Each C entry point of `kafkalog.impl.records._scan` returns what its Python reference does.

One generator of batch buffers feeds every twin: v2 batches with producer fields at their
edges (producer id -1, 0 and Long.MAX, producer epoch -1, 0 and Short.MAX, base sequence -1,
0 and Int.MAX), transactional and control batches, batches with no records, base offsets that
repeat, go back or sit at the int64 limit, partition leader epochs -1 to Int.MAX, and the
same buffers damaged, cut and given a garbage tail. Where a twin may decline (None: the
reference needs integers beyond int64), declining is allowed and the reference decides.
A bug in both a C unit and its reference is out of this test's reach: the conformance
machine's generators drive those values through the log instead (conformance/gen/producers.py).
"""

from __future__ import annotations

import os
import struct
import tempfile
from pathlib import Path
from typing import Any

import pytest
from crc32c import crc32c as py_crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.index import offset_index
from kafkalog.impl.index import time_index as time_module
from kafkalog.impl.index.offset_index import py_pack_entries
from kafkalog.impl.log.validator import py_stamp_headers
from kafkalog.impl.producer.rebuild import py_producer_rows
from kafkalog.impl.records import batch_scan
from kafkalog.impl.records.compression import CompressionType
from kafkalog.impl.records.facts_summary import FactsSummary, py_facts_summary
from kafkalog.impl.records.file_records import LogOffsetPosition
from kafkalog.impl.records.memory_records import build_batch, py_scan_headers
from kafkalog.impl.segment.indexing import py_index_decisions
from kafkalog.model.values import NO_TIMESTAMP, Record, TimestampType

_scan: Any = batch_scan._compiled
pytestmark = pytest.mark.skipif(_scan is None, reason="the C extension records._scan is not "
                                "built here (no compiler at install time): nothing to compare")

INT64_MAX, INT32_MAX = 2**63 - 1, 2**31 - 1
_TWINS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_PRODUCER = st.one_of(
    st.just((-1, -1, -1)),
    st.tuples(st.sampled_from((0, 1, 2**40 + 7, INT64_MAX)), st.sampled_from((-1, 0, 1, 32767)),
              st.sampled_from((-1, 0, 1, INT32_MAX - 1, INT32_MAX))),
)
_BASE = st.one_of(st.integers(0, 40), st.sampled_from((2**31 - 1, 2**31, INT64_MAX - 3)))
_BATCH = st.tuples(
    _BASE,
    st.integers(0, 3),  # records; 0 = an empty batch (a compacted-away body)
    st.sampled_from((-1, 0, 1, 7, INT32_MAX)),  # partition leader epoch
    _PRODUCER,
    st.sampled_from(("plain", "transactional", "control")),
    st.lists(st.integers(-1, 50), min_size=3, max_size=3),  # record timestamps
    st.booleans(),  # LogAppendTime
)
_BUFFER = st.tuples(
    st.lists(_BATCH, max_size=6),
    st.one_of(st.none(), st.integers(0, 10_000)),  # a byte to flip
    st.integers(0, 30),  # bytes cut off the end
    st.binary(max_size=40),  # a garbage tail
)

def _empty_batch(base: int, epoch: int, producer: tuple[int, int, int], attributes: int,
                 ts: int) -> bytes:
    """A v2 batch with no records, CRC included (what compaction can leave, FMT-45)."""
    body = struct.pack(">hiqqqhii", attributes, 0, ts, ts, producer[0], producer[1],
                       producer[2], 0)
    crc = py_crc32c(body)
    return struct.pack(">qiiBI", base, 4 + 1 + 4 + len(body), epoch, 2, crc) + body


def _one(spec: tuple[Any, ...]) -> bytes:
    base, count, epoch, producer, kind, stamps, append_time = spec
    if kind != "plain" and producer[0] < 0:
        producer = (0, producer[1], producer[2])
    if count == 0:
        attributes = {"plain": 0, "transactional": 16, "control": 48}[kind] | (8 * append_time)
        return _empty_batch(base, epoch, producer, attributes, stamps[0])
    if kind == "control":
        records = [Record(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00", stamps[0])]
    else:
        records = [Record(None, b"v%d" % i, stamps[i]) for i in range(count)]
    stamp_type = TimestampType.LOG_APPEND_TIME if append_time else TimestampType.CREATE_TIME
    try:
        return bytes(build_batch(records, base, epoch, stamp_type,
                                 stamps[0] if append_time else NO_TIMESTAMP, CompressionType.NONE,
                                 producer=producer, is_transactional=kind != "plain",
                                 is_control=kind == "control"))
    except Exception:  # noqa: BLE001 - an input the builder refuses: a batch without producer
        return bytes(build_batch(records, base, epoch, stamp_type, NO_TIMESTAMP,
                                 CompressionType.NONE))


def _buffer(specs: list[Any], flip: int | None, cut: int, tail: bytes) -> bytes:
    out = bytearray(b"".join(_one(s) for s in specs))
    if flip is not None and out:
        out[(flip * 7919) % len(out)] ^= 0x5A
    return bytes(out[: max(0, len(out) - cut)]) + tail


def _whole(specs: list[Any]) -> bytes:
    return _buffer(specs, None, 0, b"")


@_TWINS
@given(_BUFFER)
def test_scan_valid__any_buffer__compiled_twin_returns_the_reference(buf: Any) -> None:
    """`scan_valid` (checked reads) on valid, damaged, cut and garbage-tailed buffers."""
    data = _buffer(*buf)
    assert _scan.scan_valid(data) == batch_scan.py_scan_valid(data)


@_TWINS
@given(_BUFFER)
def test_scan_headers__any_buffer__compiled_twin_returns_the_reference(buf: Any) -> None:
    """`scan_headers` (the append path's header pass), producer and control batches included."""
    view = memoryview(_buffer(*buf))
    assert _scan.scan_headers(view) == py_scan_headers(view)


_RECOVERY_STATE = st.tuples(
    st.sampled_from((0, 4096, 10**6)),  # file position of the buffer (a segment is < 2 GiB)
    st.sampled_from((0, 5, 2**31 - 1)),  # segment base offset
    st.sampled_from((0, 1, 100, 4096)),  # index interval
    st.sampled_from((0, -5000)),  # position of the last index entry
    st.sampled_from((-1, 0, 1500)), st.sampled_from((-1, 0, 7)),  # max timestamp, its offset
    st.integers(0, 3), st.sampled_from((0, 3, 10**6)), st.sampled_from((0, 5, 2**31 + 3)),
    st.integers(0, 2), st.sampled_from((0, 3, 10**6)), st.sampled_from((-1, 999, 2000)),
    st.sampled_from((0, 5, 2**31 + 5)),
    st.booleans(), st.sampled_from((None, -1, 0, 1, 2, INT32_MAX)),
)


@_TWINS
@given(_BUFFER, _RECOVERY_STATE)
def test_scan_recovery__any_buffer_and_state__compiled_twin_returns_the_reference(
        buf: Any, state: tuple[Any, ...]) -> None:
    """`scan_recovery` (SEG-15's walk): cut, index entries, epochs and producer batches."""
    data = _buffer(*buf)
    assert _scan.scan_recovery(data, *state) == batch_scan.py_scan_recovery(data, *state)


@_TWINS
@given(_BUFFER, st.sampled_from((0, 100, 2**31)), st.integers(-2, 3),
       st.one_of(st.integers(-1, 45), st.sampled_from((INT64_MAX, -(2**63), 2**63))))
def test_find_batch_header__any_chunk__compiled_twin_returns_the_reference(
        buf: Any, position: int, stop_delta: int, target: int) -> None:
    """`find_batch_header` (offset lookups): torn tails, targets behind, at and past the end."""
    data = _buffer(*buf)
    stop = position + max(0, len(data) + stop_delta)
    want = batch_scan.py_find_batch_header(data, position, stop, target, LogOffsetPosition)
    try:
        got = _scan.find_batch_header(data, position, stop, target, LogOffsetPosition)
    except OverflowError:  # a target beyond int64: the C signature refuses what no read sends
        assert not -(2**63) <= target < 2**63
        return
    assert got == want


@_TWINS
@given(st.lists(_BATCH, max_size=6))
def test_producer_rows__any_batches__compiled_twin_picks_the_reference_rows(
        specs: list[Any]) -> None:
    """`producer_rows` (PST-6): producer id 0 and control batches read producer state, -1 not."""
    buf = _whole(specs)
    facts = py_scan_headers(memoryview(buf))
    if facts is None:
        return
    got = _scan.producer_rows(buf, facts)
    assert got is None or got == py_producer_rows(buf, facts)


@_TWINS
@given(st.lists(_BATCH, max_size=6),
       st.one_of(st.integers(0, 2**40), st.sampled_from((INT64_MAX - 5, INT64_MAX))),
       st.sampled_from((-1, 0, 1, INT32_MAX)))
def test_stamp_headers__producer_and_control_batches__compiled_twin_stamps_the_reference(
        specs: list[Any], first_offset: int, epoch: int) -> None:
    """`stamp_headers` over batches of every kind, or a decline where int64 ends."""
    facts = py_scan_headers(memoryview(_whole(specs)))
    if facts is None:
        return
    got = _scan.stamp_headers(facts, first_offset, epoch)
    try:
        want = py_stamp_headers(facts, first_offset, epoch)
    except (struct.error, OverflowError):
        assert got is None
        return
    assert got is None or got == want


@_TWINS
@given(st.lists(_BATCH, max_size=6), st.integers(0, 2000), st.sampled_from((0, 1, 100, 4096)),
       st.integers(0, 400), st.integers(-1, 60), st.integers(-1, 50))
def test_index_decisions__batches_of_every_kind__compiled_twin_decides_the_reference(
        specs: list[Any], position: int, interval: int, since: int, max_ts: int,
        max_off: int) -> None:
    """`index_decisions` with repeated and backward offsets and empty batches."""
    facts = py_scan_headers(memoryview(_whole(specs)))
    if facts is None:
        return
    got = _scan.index_decisions(facts, position, interval, since, max_ts, max_off)
    assert got is None or got == py_index_decisions(facts, position, interval, since, max_ts,
                                                    max_off)


@_TWINS
@given(st.lists(_BATCH, max_size=6))
def test_facts_summary__batches_of_every_kind__compiled_twin_summarises_the_reference(
        specs: list[Any]) -> None:
    """`facts_summary` over real scans: it always answers there."""
    facts = py_scan_headers(memoryview(_whole(specs)))
    if facts is None:
        return
    got = _scan.facts_summary(facts)
    want = py_facts_summary(facts)
    if got is None:  # no batches (the reference's None too), or a last offset past int64
        assert want is None or any(not -(2**63) <= f[2] + f[3] < 2**63 for f in facts)
        return
    assert FactsSummary._make(got) == want


@_TWINS
@given(st.lists(st.one_of(st.integers(-3, 50), st.sampled_from((INT32_MAX, 2**31, INT64_MAX))),
                max_size=8),
       st.lists(st.one_of(st.integers(-2, 5000), st.sampled_from((INT32_MAX, 2**31))),
                max_size=8),
       st.sampled_from((0, 1, 5, INT32_MAX)))
def test_pack_offset_entries__any_run__compiled_twin_packs_the_reference(
        offsets: list[int], positions: list[int], base: int) -> None:
    """`pack_offset_entries` (FMT-10): repeats, going back and int32 overflow decline alike."""
    assert _scan.pack_offset_entries(offsets, positions, base) == py_pack_entries(
        offsets, positions, base)


@_TWINS
@given(st.lists(_BATCH, min_size=1, max_size=5), st.integers(0, 2**40),
       st.sampled_from((-1, 0, INT32_MAX)))
def test_write_stamped__stamped_batches__compiled_twin_writes_the_reference_bytes(
        tmp_path_factory: Any, specs: list[Any], first_offset: int, epoch: int) -> None:
    """`write_stamped` writes the same file as `py_write_stamped` and returns the same count."""
    from kafkalog.impl.fs.file_system import py_write_stamped

    source = _whole(specs)
    facts = py_scan_headers(memoryview(source))
    if not facts:
        return
    stamped = py_stamp_headers(facts, first_offset, epoch)
    headers = stamped[0]
    directory: Path = tmp_path_factory.mktemp("twins")
    written = []
    for name, write in (("c", _scan.write_stamped), ("py", py_write_stamped)):
        fd = os.open(directory / name, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            count = write(fd, memoryview(source), headers, facts, 3)
        finally:
            os.close(fd)
        written.append((count, (directory / name).read_bytes()))
    if written[0][0] is None:  # declined: the caller writes with the reference
        return
    assert written[0] == written[1]


def _index_verdict(tmp: Path, data: bytes, time_index: bool, compiled: bool) -> str | None:
    """`_first_disorder` of an index file holding `data`, with or without the compiled twin."""
    module: Any = time_module if time_index else offset_index
    cls = module.TimeIndex if time_index else module.OffsetIndex
    path = tmp / ("00.timeindex" if time_index else "00.index")
    path.write_bytes(data)
    saved = module._COMPILED_DISORDER
    module._COMPILED_DISORDER = saved if compiled else None
    index = cls(FileSystem(), path, 0, writable=False)
    try:
        return index._first_disorder()  # type: ignore[no-any-return]
    finally:
        module._COMPILED_DISORDER = saved
        index.close_handler()


_KEY = st.integers(-3, 40)


@_TWINS
@given(st.booleans(), st.lists(st.tuples(_KEY, _KEY), max_size=80),
       st.integers(0, 3), st.booleans())
def test_index_first_disorder__any_entries__compiled_twin_agrees_with_the_reference(
        time_index: bool, pairs: list[tuple[int, int]], stride: int, ordered: bool) -> None:
    """The load's order scan of both indexes (FMT-14, FMT-22): in order exactly when the
    reference finds no culprit, on ordered runs (sorted, with repeats) and on arbitrary ones,
    across the small-index path and the chunked scan."""
    if ordered:
        pairs = sorted(pairs)
    fmt = ">qi" if time_index else ">ii"
    data = b"".join(struct.pack(fmt, a * (stride + 1), b) for a, b in pairs)
    with tempfile.TemporaryDirectory() as tmp:
        with_twin = _index_verdict(Path(tmp), data, time_index, compiled=True)
        reference = _index_verdict(Path(tmp), data, time_index, compiled=False)
    assert with_twin == reference
