"""The cleaner's record walk: both twins return the same values, vouch only for what
`RecordBatch.records()` decodes, and a cleaning pass writes the same bytes with or without it.

The walk (impl/records/record_walk.py, impl/records/_scan_walk.c) replaces the cleaner's
per-record decode. Three things hold it to that: the compiled and the pure-Python walk agree on
built batches (keys, null keys, tombstones, headers, every codec after decompression) and on
damaged, cut and garbage sections, declining (None) exactly where `records()` raises or an
offset leaves int64; the filter's bulk retention and rebuilt batches equal `_retain_record`'s
and `rebuilt_batch`'s, non-canonical record encodings included; and whole passes over generated
logs (transactions, aborts, markers, tombstones, codecs, LogAppendTime, hand-made encodings) and
over the real Kafka fixtures leave byte-identical directories with the compiled walk, the
Python walk and no walk at all (the per-record path the cleaner used before).
"""

from __future__ import annotations

import shutil
import stat
import struct
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafkalog.impl.cleaner import filter as cleaner_filter
from kafkalog.impl.cleaner import log_cleaner
from kafkalog.impl.cleaner.checkpoint import CLEANER_CHECKPOINT_FILENAME
from kafkalog.impl.cleaner.filter import OffsetMap, PassFacts
from kafkalog.impl.cleaner.log_cleaner import LogCleaner
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.load.log_dir import LogDir
from kafkalog.impl.log.log import Log
from kafkalog.impl.producer.append import AppendOrigin
from kafkalog.impl.records import batch_scan, record_walk
from kafkalog.impl.records.compression import CompressionType, decompress
from kafkalog.impl.records.memory_records import MemoryRecords, build_batch, encode_record
from kafkalog.impl.records.record_batch import RecordBatch, _read_record
from kafkalog.impl.records.record_walk import py_record_walk, walk_batch
from kafkalog.impl.records.varint import encode_varint, encode_varlong
from kafkalog.impl.time import MockTime
from kafkalog.model.errors import CorruptRecordError, KafkalogError
from kafkalog.model.values import NO_TIMESTAMP, Header, LogConfig, Record, TimestampType

_scan: Any = batch_scan._compiled
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
NOW = 1_750_000_000_000
_WALKS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_PASSES = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_CODECS = (CompressionType.NONE, CompressionType.GZIP, CompressionType.SNAPPY,
           CompressionType.LZ4, CompressionType.ZSTD)
_HEADER = st.builds(Header, st.text(max_size=4), st.one_of(st.none(), st.binary(max_size=8)))
_KEY = st.one_of(st.none(), st.binary(max_size=3), st.binary(min_size=60, max_size=70))
_VALUE = st.one_of(st.none(), st.binary(max_size=4), st.binary(min_size=60, max_size=200))
_RECORD = st.builds(Record, _KEY, _VALUE, st.sampled_from((0, 1, 5, 999, 2**40, NO_TIMESTAMP)),
                    st.lists(_HEADER, max_size=2).map(tuple))
_BATCH = st.tuples(
    st.lists(_RECORD, min_size=1, max_size=12),
    st.sampled_from((0, 7, 2**31, INT64_MAX - 20)),  # base offset
    st.sampled_from(_CODECS),
    st.booleans(),  # LogAppendTime
)


def _build(spec: tuple[Any, ...]) -> RecordBatch:
    records, base, codec, append_time = spec
    stamp_type = TimestampType.LOG_APPEND_TIME if append_time else TimestampType.CREATE_TIME
    return RecordBatch(build_batch(records, base, 0, stamp_type,
                                   123_456 if append_time else NO_TIMESTAMP, codec))


def _section(batch: RecordBatch) -> bytes:
    body = batch.buffer[61 : batch.size_in_bytes]
    codec = batch.compression_type
    return bytes(body) if codec is CompressionType.NONE else decompress(codec, body)


def _walks(data: bytes, count: int, base: int) -> Any:
    """Both twins' walk of one section; they must agree."""
    want = py_record_walk(data, count, base)
    if _scan is not None:
        assert _scan.record_walk(data, count, base) == want
    return want


def _decoded(data: bytes, count: int, base: int) -> list[Any] | None:
    """`records()`' decode of a section (base timestamp 0): its records, None where it raises."""
    out, pos = [], 0
    try:
        for _ in range(count):
            record, pos = _read_record(data, pos, base, 0, None, "test")
            out.append(record)
    except CorruptRecordError:
        return None
    return out if pos == len(data) else None


def _agrees_with_records(data: bytes, count: int, base: int) -> None:
    """The walk declines exactly where `records()` raises or an offset leaves int64, and
    otherwise reports what it decodes."""
    walk, decoded = _walks(data, count, base), _decoded(data, count, base)
    if (decoded is None or not INT64_MIN <= base <= INT64_MAX
            or any(not INT64_MIN <= r.offset <= INT64_MAX for r in decoded)):
        assert walk is None
        return
    assert walk is not None
    offsets, stamps, keys, nulls, tails, ends, _ = walk
    assert offsets == [r.offset for r in decoded]
    assert stamps == [r.timestamp for r in decoded]
    assert keys == [r.key for r in decoded]
    assert list(nulls) == [r.value is None for r in decoded]
    assert ends[-1:] == ([len(data)] if decoded else [])
    assert all(s < t <= e for s, t, e in zip([0, *ends], tails, ends, strict=False))


@_WALKS
@given(_BATCH)
def test_record_walk__built_batches__twins_agree_and_report_what_records_decodes(
        spec: tuple[Any, ...]) -> None:
    """Keys, null keys, tombstones, headers and every codec (walked after decompression)."""
    batch = _build(spec)
    data = _section(batch)
    walk = _walks(data, batch.record_count, batch.base_offset)
    records = list(batch.records())
    offsets, stamps, keys, nulls, tails, ends, canonical = walk
    assert canonical is True  # the builder writes what encode_record writes
    assert offsets == [r.offset for r in records] and keys == [r.key for r in records]
    assert list(nulls) == [r.value is None for r in records]
    for i, r in enumerate(records):
        start = ends[i - 1] if i else 0
        encoded = encode_record(spec[0][i], i, stamps[i])
        assert data[start:ends[i]] == encoded
        assert encoded.endswith(data[tails[i]:ends[i]])
        if batch.timestamp_type is TimestampType.CREATE_TIME:
            assert batch.base_timestamp + stamps[i] == r.timestamp
    walked = walk_batch(batch)
    assert walked is not None and tuple(walked)[1:] == walk


_DAMAGE = st.tuples(
    st.one_of(st.none(), st.tuples(st.integers(0, 10_000), st.integers(1, 255))),  # flip
    st.integers(0, 12),  # bytes cut off the end
    st.binary(max_size=12),  # a garbage tail
    st.sampled_from((0, 0, 1, -1, 2**31 - 1, -(2**31), 10**12)),  # count error
    st.sampled_from((0, 0, INT64_MAX - 3, -(2**63), 2**63)),  # base offset
)


@_WALKS
@given(_BATCH, _DAMAGE)
def test_record_walk__damaged_sections__twins_decline_exactly_where_records_raises(
        spec: tuple[Any, ...], damage: tuple[Any, ...]) -> None:
    """Flipped bytes, cut sections, garbage tails, wrong counts and offsets beyond int64."""
    batch = _build(spec)
    data = bytearray(_section(batch))
    flip, cut, tail, count_error, base = damage
    if flip is not None and data:
        data[flip[0] % len(data)] ^= flip[1]
    section = bytes(data[: max(0, len(data) - cut)]) + tail
    _agrees_with_records(section, batch.record_count + count_error, base)


@_WALKS
@given(st.binary(max_size=64), st.integers(-2, 12))
def test_record_walk__garbage__twins_agree_without_raising(data: bytes, count: int) -> None:
    _agrees_with_records(data, count, 0)


# --- hand-made encodings records() accepts but encode_record never writes ----------------------

def _varint_padded(value: int, groups: int) -> bytes:
    """`value`'s zig-zag varint in `groups` bytes (non-minimal when more than needed)."""
    raw = (value << 1) ^ (value >> 31)
    out = bytearray()
    for i in range(groups):
        out.append((raw & 0x7F) | (0x80 if i < groups - 1 else 0))
        raw >>= 7
    return bytes(out)


def _field(data: bytes | None, length: bytes | None = None) -> bytes:
    if data is None:
        return length or encode_varint(-1)
    return (length or encode_varint(len(data))) + data


# Each: (attributes, timestamp delta, key field, value field, headers), the fields raw.
_ODD_RECORDS = {
    "padded key length": (0, encode_varlong(3), _field(b"k0", _varint_padded(2, 3)),
                          _field(b"v"), b"\x00"),
    "null value as -2": (0, encode_varlong(0), _field(b"k1"), encode_varint(-2), b"\x00"),
    "value length with dropped bits": (0, encode_varlong(0), _field(b"k2"),
                                       bytes([0x86, 0x80, 0x80, 0x80, 0x10]) + b"abc", b"\x00"),
    "padded header count": (0, encode_varlong(0), _field(b"k3"), _field(b"v"), b"\x80\x00"),
    "header value as -3": (0, encode_varlong(0), _field(b"k0"), _field(b"v"),
                           encode_varint(1) + _field(b"h") + encode_varint(-3)),
    "attributes set": (5, encode_varlong(1), _field(b"k1"), _field(b"v"), b"\x00"),
    "padded timestamp delta": (0, b"\x82\x80\x00", _field(b"k2"), _field(None), b"\x00"),
    "plain": (0, encode_varlong(2), _field(b"k3"), _field(b"w"),
              encode_varint(1) + _field("é".encode()) + _field(None)),
}


def _odd_section(names: list[str]) -> bytes:
    out = b""
    for delta, name in enumerate(names):
        attributes, ts, key, value, headers = _ODD_RECORDS[name]
        body = bytes([attributes]) + ts + encode_varint(delta) + key + value + headers
        out += encode_varint(len(body)) + body
    return out


def _raw_batch(base: int, section: bytes, count: int, base_ts: int = 1000,
               attributes: int = 0) -> bytes:
    """A v2 batch around a hand-made records section, CRC included."""
    after = struct.pack(">hiqqqhii", attributes, count - 1, base_ts, base_ts + 5, -1, -1, -1,
                        count) + section
    return struct.pack(">qiibI", base, 9 + len(after), 0, 2, crc32c(after)) + after


_ODD_NAMES = st.lists(st.sampled_from(sorted(_ODD_RECORDS)), min_size=1, max_size=6)


@_WALKS
@given(_ODD_NAMES)
def test_record_walk__non_canonical_encodings__decoded_alike_and_flagged(names: list[str]) -> None:
    """Padded varints, nulls other than -1 and dropped bits decode as records() decodes them;
    `canonical` says a rebuild must not copy their tails (attributes and deltas are rewritten
    anyway, so those do not count)."""
    data = _odd_section(names)
    _agrees_with_records(data, len(names), 10)
    walk = _walks(data, len(names), 10)
    assert walk[-1] is all(n in ("attributes set", "padded timestamp delta", "plain")
                           for n in names)


# --- the filter's bulk forms against the per-record ones -----------------------------------------

def _facts(keys: list[bytes | None], newest: int, latest: int, now: int) -> PassFacts:
    offsets = {k: newest + i for i, k in enumerate(keys) if k is not None}
    return PassFacts(OffsetMap(None, offsets, latest), now, 50, {}, latest + 1, True)


@_WALKS
@given(_BATCH, st.integers(-3, 15), st.integers(-1, 20), st.sampled_from((None, 0, 10**6)),
       st.sampled_from((0, 10**6 + 1)), st.data())
def test_filter__bulk_retention_and_rebuild__equal_the_per_record_ones(
        spec: tuple[Any, ...], newest: int, latest: int, horizon: int | None, now: int,
        data: st.DataObject) -> None:
    """`_retained_walked` keeps what `_retain_record` keeps (stored horizons included), and
    `rebuilt_walked` writes `rebuilt_batch`'s bytes for any kept subset and horizon."""
    records, base, codec, append_time = spec
    spec = (records, 0 if base > 2**40 else base, codec, append_time)
    batch = _build(spec)
    if horizon is not None:  # a batch a pass already rebuilt: it carries a delete horizon
        batch = RecordBatch(cleaner_filter.rebuilt_batch(batch, list(batch.records()), horizon))
    decoded = list(batch.records())
    walk = walk_batch(batch)
    assert walk is not None
    facts = _facts([r.key for r in decoded], batch.base_offset + newest,
                   batch.base_offset + latest, now)
    assert cleaner_filter._retained_walked(batch, walk, facts) == [
        i for i, r in enumerate(decoded) if cleaner_filter._retain_record(batch, r, facts)]
    kept = sorted(data.draw(st.sets(st.integers(0, len(decoded) - 1), min_size=1)))
    new_horizon = data.draw(st.sampled_from((None, 77, NOW)))
    assert cleaner_filter.rebuilt_walked(batch, walk, kept, new_horizon) == \
        cleaner_filter.rebuilt_batch(batch, [decoded[i] for i in kept], new_horizon)


# --- whole passes: the same bytes with the compiled walk, the Python walk and no walk ------------

@contextmanager
def _walk_mode(mode: str) -> Iterator[None]:
    """"compiled" (if built), "python" (the twin) or "records" (no walk: per-record decode)."""
    with pytest.MonkeyPatch.context() as patch:
        if mode == "python":
            patch.setattr(record_walk, "record_walk", py_record_walk)
        elif mode == "records":
            patch.setattr(cleaner_filter, "walk_batch", lambda batch: None)
            patch.setattr(log_cleaner, "walk_batch", lambda batch: None)
        yield


MODES = ("records", "python") + (("compiled",) if _scan is not None else ())


def _files(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def _same_in_every_mode(run: Callable[[Path], list[object]]) -> None:
    """`run` in a fresh directory per walk mode: the same results and the same files."""
    seen: dict[str, tuple[list[object], dict[str, bytes]]] = {}
    for mode in MODES:
        with tempfile.TemporaryDirectory() as scratch, _walk_mode(mode):
            root = Path(scratch)
            results = run(root)
            seen[mode] = (results, _files(root))
    want = seen["records"]
    assert want[1], "the scenario wrote no files"
    for mode, got in seen.items():
        assert got[0] == want[0], mode
        assert got[1].keys() == want[1].keys(), mode
        for name in want[1]:
            assert got[1][name] == want[1][name], (mode, name)


_CONFIG = LogConfig(cleanup_policy="compact", min_cleanable_dirty_ratio=0.0,
                    delete_retention_ms=500, segment_bytes=1500, index_interval_bytes=200)
_STEP = st.one_of(
    st.tuples(st.just("put"), st.lists(st.tuples(st.integers(0, 4), _VALUE,
                                                 st.lists(_HEADER, max_size=1)),
                                       min_size=1, max_size=4),
              st.sampled_from(_CODECS), st.sampled_from((-1, 1, 2))),
    st.tuples(st.just("txn"), st.integers(0, 4), st.sampled_from(_CODECS), st.integers(3, 4)),
    st.tuples(st.just("marker"), st.integers(3, 4), st.booleans()),
    st.tuples(st.just("odd"), _ODD_NAMES),
    st.just(("clean",)),
    st.tuples(st.just("clock"), st.sampled_from((1, 300, 600))),
    st.just(("clean",)),
)


class _Scenario:
    """Steps on one log; each step's outcome (its result or error type) in `results`."""

    def __init__(self, log: Log, time: MockTime) -> None:
        self.log, self.time = log, time
        self.seqs: dict[int, int] = {}
        self.results: list[object] = []

    def step(self, step: tuple[Any, ...]) -> None:
        try:
            self.results.append(getattr(self, "_" + step[0])(*step[1:]))
        except KafkalogError as error:
            self.results.append(type(error).__name__)

    def _append(self, batch: MemoryRecords) -> object:
        return self.log.append_as_leader(batch, 0).last_offset

    def _producer(self, pid: int, count: int) -> tuple[int, int, int]:
        if pid < 0:
            return -1, -1, -1
        seq = self.seqs.get(pid, 0)
        self.seqs[pid] = seq + count
        return pid, 0, seq

    def _put(self, rows: list[Any], codec: CompressionType, pid: int) -> object:
        records = tuple(Record(b"k%d" % k, v, self.time.milliseconds(), tuple(h))
                        for k, v, h in rows)
        return self._append(MemoryRecords.with_records(
            records, compression=codec, producer=self._producer(pid, len(records))))

    def _txn(self, key: int, codec: CompressionType, pid: int) -> object:
        records = (Record(b"k%d" % key, b"t", self.time.milliseconds()),)
        return self._append(MemoryRecords.with_records(
            records, compression=codec, producer=self._producer(pid, 1), is_transactional=True))

    def _marker(self, pid: int, commit: bool) -> object:
        batch = MemoryRecords.end_txn_marker(pid, 0, commit, 0, self.time.milliseconds())
        return self.log.append_as_leader(batch, 0, AppendOrigin.COORDINATOR).last_offset

    def _odd(self, names: list[str]) -> object:
        base = self.log.log_end_offset
        raw = _raw_batch(base, _odd_section(names), len(names), self.time.milliseconds())
        return self.log.append_as_follower(MemoryRecords(raw), 0).last_offset

    def _clean(self) -> object:
        self.log.roll()
        self.log.update_high_watermark(self.log.log_end_offset)
        return LogCleaner(self.log).clean()

    def _clock(self, ms: int) -> object:
        self.time.sleep(ms)
        return None


def _run_steps(steps: list[tuple[Any, ...]], config: LogConfig) -> Callable[[Path], list[object]]:
    def run(root: Path) -> list[object]:
        time = MockTime(NOW)
        log = Log.open(FileSystem(), root / "topic-0", config, time, had_clean_shutdown=True)
        scenario = _Scenario(log, time)
        try:
            for step in steps:
                scenario.step(step)
            scenario.step(("clean",))
        finally:
            log.close()
        return scenario.results
    return run


@_PASSES
@given(st.lists(_STEP, min_size=4, max_size=40), st.booleans())
def test_clean__generated_logs__same_bytes_with_and_without_the_walk(
        steps: list[tuple[Any, ...]], append_time: bool) -> None:
    """Keyed puts, tombstones, headers, codecs, idempotent and transactional producers, commits
    and aborts, hand-made encodings, clock steps past the delete horizon, LogAppendTime."""
    stamp = TimestampType.LOG_APPEND_TIME if append_time else TimestampType.CREATE_TIME
    _same_in_every_mode(_run_steps(steps, replace(_CONFIG, message_timestamp_type=stamp)))


def test_clean__benchmark_shaped_log__same_bytes_with_and_without_the_walk() -> None:
    """Many batches of 100 keyed records over few keys, cleaned twice (the second pass reads
    batches the first rebuilt) and once more after tombstones pass their horizon."""
    steps: list[tuple[Any, ...]] = []
    for n in range(40):
        steps.append(("put", [(i % 5, None if (n + i) % 17 == 0 else b"x" * (n + i), [])
                              for i in range(4)], _CODECS[n % 5], -1))
        if n % 13 == 12:
            steps += [("clean",), ("clock", 300)]
    # Each key's newest record a tombstone, past its horizon by the last pass (CLN-33).
    steps += [("put", [(k, None, []) for k in range(5)], CompressionType.NONE, -1), ("clean",),
              ("clock", 600), ("put", [(9, b"z", [])], CompressionType.NONE, -1)]
    _same_in_every_mode(_run_steps(steps, _CONFIG))


# --- real Kafka log directories ---------------------------------------------------------------

def _copy_fixture(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst)
    for path in [dst, *dst.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


def _clean_fixture(fixture: Path) -> Callable[[Path], list[object]]:
    def run(root: Path) -> list[object]:
        copy = root / fixture.name
        _copy_fixture(fixture, copy)
        (copy / CLEANER_CHECKPOINT_FILENAME).unlink(missing_ok=True)
        config = LogConfig(cleanup_policy="compact", min_cleanable_dirty_ratio=0.0)
        log_dir = LogDir.open(FileSystem(), copy, config, MockTime(NOW))
        results: list[object] = []
        try:
            for tp in sorted(log_dir.logs, key=str):
                log = log_dir.log(tp)
                try:
                    log.roll()
                    log.update_high_watermark(log.log_end_offset)
                    results.append((str(tp), LogCleaner(log).clean()))
                except KafkalogError as error:
                    results.append((str(tp), type(error).__name__))
        finally:
            log_dir.close()
        return results
    return run


def test_clean__real_kafka_log_dirs__same_bytes_with_and_without_the_walk(
        kafka_fixtures: Path) -> None:
    """Every partition of every fixture (gzip, snappy, transactions, metadata) cleaned from
    its log start."""
    folders = sorted(p for p in kafka_fixtures.iterdir() if p.is_dir())
    assert folders
    for folder in folders:
        _same_in_every_mode(_clean_fixture(folder))


def test_active__names_the_walk_in_use() -> None:
    assert ("pure Python" if _scan is None else "C extension") == record_walk.ACTIVE
