"""The benchmark-driven fast paths in `kafkalog.impl` answer exactly as the code they replaced.

Each fast path (found by profiling `kafkalog bench`) keeps its slow twin as the reference: the
header-only offset search against a walk over whole batches, the cached-key index lookup against
the binary search over the mapping, the C-speed index order checks against the entry loops.
"""

from __future__ import annotations

import random
import struct
from itertools import pairwise
from pathlib import Path

import pytest
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.index.offset_index import OffsetIndex, OffsetPosition
from kafkalog.impl.index.time_index import TimeIndex
from kafkalog.impl.records.file_records import FileRecords, LogOffsetPosition
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.records.record_batch import RecordBatch
from kafkalog.model.errors import KafkalogError, KafkaStorageError
from kafkalog.model.values import Record


def _walk_search(records: FileRecords, target: int, start: int) -> LogOffsetPosition | None:
    for batch in records.batches(start):
        if batch.last_offset >= target:
            return LogOffsetPosition(batch.last_offset, batch.position, batch.size_in_bytes)
    return None


def _outcome(fn: object, *args: int) -> object:
    try:
        return fn(*args)  # type: ignore[operator]
    except KafkalogError as error:
        return type(error).__name__


@pytest.mark.parametrize("seed", range(12))
def test_search_for_offset_with_size__header_scan__matches_a_walk_over_whole_batches(
        tmp_path: Path, seed: int) -> None:
    """Same answer or same error for every target and start, torn or garbage tails included.

    Spec: FMT-52, FMT-54."""
    rng = random.Random(seed)
    records = FileRecords.open(FileSystem(), tmp_path / "00000000000000000000.log")
    offset = 0
    for _ in range(rng.randint(1, 25)):
        count = rng.randint(1, 30)
        batch = [Record(None, bytes(rng.randint(0, 700)), 1_000) for _ in range(count)]
        records.append(MemoryRecords.with_records(batch, base_offset=offset))
        offset += count + rng.randint(0, 3)
    starts = [b.position for b in records.batches(0)]
    if seed % 3 == 1:
        records.append(bytes(rng.randint(1, 80)))  # zero-filled tail
    elif seed % 3 == 2:
        records.append(bytes(rng.randrange(256) for _ in range(rng.randint(1, 80))))
    for target in range(-1, offset + 2):
        for start in rng.sample(starts, min(3, len(starts))):
            expected = _outcome(_walk_search, records, target, start)
            assert _outcome(records.search_for_offset_with_size, target, start) == expected
            # The index's read-size hint, right or wrong, never changes the answer.
            for hint in (-1, start, rng.choice(starts), rng.randint(0, records.size_in_bytes)):
                assert _outcome(records.search_for_offset_with_size, target, start,
                                hint) == expected, (target, start, hint)
    records.close()


@pytest.mark.parametrize("seed", range(8))
def test_offset_index_lookup__cached_keys__match_the_binary_search_after_appends_and_truncations(
        tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """lookup() and floor_span() equal the floor slot of `_slot_range_for` at every step.

    Odd seeds run without the key cache (an index above its cap). Spec: FMT-13, FMT-15."""
    if seed % 2:
        monkeypatch.setattr("kafkalog.impl.index.offset_index.KEYS_CACHE_MAX_ENTRIES", 0)
    rng = random.Random(seed)
    base = rng.randint(0, 10**6)
    index = OffsetIndex(FileSystem(), tmp_path / "i.index", base, 8 * 120)
    last, position = base, 0
    for _ in range(100):
        if index.is_full():
            break
        if index.entries and rng.random() < 0.1:
            index.truncate_to(rng.randint(base, last))
            last, position = index.last_offset, index.last_entry.position
        else:
            last, position = last + rng.randint(1, 5), position + rng.randint(0, 90)
            index.append(last, position)
        for target in range(base - 2, last + 3):
            slot = index._slot_range_for(target, index._OFFSETS, True)
            expected = OffsetPosition(base, 0) if slot == -1 else index._entry(slot)
            assert index.lookup(target) == expected
            following = index._entry(slot + 1).position if slot + 1 < index.entries else -1
            assert index.floor_span(target) == (expected.position, following)
    index.close()


def test_offset_index_floor_span__closed_index__raises_storage_error(tmp_path: Path) -> None:
    """floor_span() on a closed index raises KafkaStorageError, empty or not (BUG-9)."""
    for entries in (0, 3):
        index = OffsetIndex(FileSystem(), tmp_path / f"{entries}.index", 0, 80)
        for n in range(entries):
            index.append(n + 1, 10 * n)
        index.close_handler()
        with pytest.raises(KafkaStorageError):
            index.floor_span(2)


@pytest.mark.parametrize("seed", range(6))
def test_index_order_checks__fast_path__agree_with_the_entry_loops(tmp_path: Path,
                                                                   seed: int) -> None:
    """Sorted, shuffled and duplicate-laden indexes are judged as the loops judge them.

    Spec: FMT-18, FMT-25."""
    rng = random.Random(seed)
    fs = FileSystem()
    for trial in range(40):
        n = rng.randint(1, 30)
        pairs = [(rng.randint(-2, 60), rng.randint(-2, 60)) for _ in range(n)]
        if trial % 2:
            pairs = sorted({p[0]: p for p in pairs}.values())  # mostly well-ordered
        path = tmp_path / f"{trial}.index"
        path.write_bytes(b"".join(struct.pack(">ii", *p) for p in pairs))
        oi = OffsetIndex(fs, path, 0, 8 * n, writable=False)
        ordered = all(b[0] > a[0] and b[1] >= a[1] for a, b in pairwise(pairs))
        ordered = ordered and pairs[0][0] >= 0 and min(p[1] for p in pairs) >= 0
        assert (oi._first_disorder() is None) == ordered, pairs
        oi.close()
        tpath = tmp_path / f"{trial}.timeindex"
        tpath.write_bytes(b"".join(struct.pack(">qi", max(a, 0), b) for a, b in pairs))
        ti = TimeIndex(fs, tpath, 0, 12 * n, writable=False)
        stamps = [max(a, 0) for a, _ in pairs]
        rels = [b for _, b in pairs]
        ok = (all(y > x for x, y in pairwise(stamps)) and rels[0] >= 0
              and all(y >= x for x, y in pairwise(rels)))
        assert (ti._first_disorder() is None) == ok, pairs
        ti.close()


def test_record_batch_is_valid__short_or_corrupt_buffers__are_invalid_not_errors() -> None:
    """is_valid() is False (never a struct error) for truncated, resized or flipped batches.

    Spec: FMT-46."""
    good = MemoryRecords.with_records([Record(None, b"test", 0)]).to_bytes()
    assert RecordBatch(good).is_valid()
    assert not RecordBatch(good[:5]).is_valid()
    assert not RecordBatch(good[:-1]).is_valid()
    flipped = bytearray(good)
    flipped[-1] ^= 1
    assert not RecordBatch(flipped).is_valid()
    assert RecordBatch(good).last_offset == RecordBatch(good).base_offset + 0


def _append_outcome(index: OffsetIndex, offsets: list[int], positions: list[int]) -> object:
    """Per-entry appends until the first error: the error's type name, else None."""
    try:
        for offset, position in zip(offsets, positions, strict=True):
            index.append(offset, position)
    except (KafkalogError, struct.error) as error:
        return type(error).__name__
    return None


@pytest.mark.parametrize("seed", range(10))
def test_offset_index_append_entries__bulk__equals_per_entry_appends_or_changes_nothing(
        tmp_path: Path, seed: int) -> None:
    """A bulk store leaves the file and lookups as per-entry appends do; a run that one of those
    appends would refuse (full, not increasing, out of range, bad position) changes nothing.

    Spec: FMT-14."""
    rng = random.Random(seed)
    fs = FileSystem()
    base = rng.choice([0, 1000, 2**31])
    bulk = OffsetIndex(fs, tmp_path / "bulk.index", base, 8 * 40)
    single = OffsetIndex(fs, tmp_path / "single.index", base, 8 * 40)
    bulk.lookup(base)  # builds the key cache, which the bulk store must keep in step
    last, position = base - 1, 0
    for _ in range(30):
        n = rng.randint(1, 6)
        offsets, positions = [], []
        for _ in range(n):
            last, position = last + rng.randint(1, 4), position + rng.randint(0, 50)
            offsets.append(last)
            positions.append(position)
        flaw = rng.random()
        if flaw < 0.1:
            offsets[-1] = offsets[0]  # not increasing
        elif flaw < 0.15:
            offsets[0] = base - 1  # below the base offset
        elif flaw < 0.2:
            positions[-1] = 2**31  # not an int32
        elif flaw < 0.25:
            offsets[-1] = base + 2**31  # relative offset overflows
        before = (tmp_path / "bulk.index").read_bytes(), bulk.entries, bulk.last_offset
        refused = _append_outcome(single, offsets, positions)
        stored = bulk.append_entries(offsets, positions)
        if refused is None:
            assert stored
        else:
            assert not stored, (refused, offsets, positions)
            assert ((tmp_path / "bulk.index").read_bytes(), bulk.entries,
                    bulk.last_offset) == before
            assert _append_outcome(bulk, offsets, positions) == refused  # the twins re-sync
        last = max(last, single.last_offset)
        assert (tmp_path / "bulk.index").read_bytes() == (tmp_path / "single.index").read_bytes()
        for target in range(base - 1, last + 2, max(1, (last - base) // 20)):
            assert bulk.lookup(target) == single.lookup(target)
    bulk.check()
    bulk.close()
    single.close()
    closed = OffsetIndex(fs, tmp_path / "closed.index", 0, 80)
    closed.close_handler()
    assert not closed.append_entries([1], [0])


@pytest.mark.parametrize("seed", range(4))
def test_time_index_accepts__dry_run__matches_whether_maybe_append_raises(
        tmp_path: Path, seed: int) -> None:
    """accepts(entries) is True exactly when maybe_append takes them all without an error, and
    it changes nothing; append_accepted then stores what maybe_append does. Spec: FMT-21, FMT-22."""
    rng = random.Random(seed)
    fs = FileSystem()
    for trial in range(40):
        base = rng.choice([0, 50])
        probe = TimeIndex(fs, tmp_path / f"{trial}.p.timeindex", base, 12 * rng.randint(2, 6))
        real = TimeIndex(fs, tmp_path / f"{trial}.r.timeindex", base, 12 * probe.max_entries)
        ts, off = 100, base
        for _ in range(rng.randint(0, 3)):
            ts, off = ts + rng.randint(1, 5), off + rng.randint(0, 3)
            if probe.is_full():
                break
            probe.maybe_append(ts, off)
            real.maybe_append(ts, off)
        entries = [(ts + rng.randint(-2, 6), off + rng.randint(-2, 6))
                   for _ in range(rng.randint(1, 4))]
        if rng.random() < 0.1:
            entries.append((ts + 10, base + 2**31))
        state = (probe.entries, probe.last_entry)
        verdict = probe.accepts(entries)
        assert (probe.entries, probe.last_entry) == state
        try:
            for entry in entries:
                real.maybe_append(*entry)
            raised = False
        except KafkalogError:
            raised = True
        assert verdict == (not raised), entries
        if verdict:  # the bulk store of approved entries writes what maybe_append wrote
            probe.append_accepted(entries)
            assert (probe.entries, probe.last_entry) == (real.entries, real.last_entry)
            assert [probe.entry(n) for n in range(probe.entries)] == [
                real.entry(n) for n in range(real.entries)]
        probe.close_handler()  # no trim + fsync: scratch files
        real.close_handler()


@pytest.mark.parametrize("seed", range(6))
def test_segment_append__bulk_index_store__writes_what_the_per_batch_loop_writes(
        tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both indexes and the segment's index state match the per-batch twin after every append,
    timestamps going up, down and flat. Spec: SEG-3, FMT-14, FMT-22."""
    from kafkalog.impl.segment.log_segment import LogSegment
    from kafkalog.impl.time import MockTime
    from kafkalog.model.values import LogConfig

    rng = random.Random(seed)
    config = LogConfig(index_interval_bytes=rng.choice([1, 100, 300]), segment_index_bytes=4096)
    segments = []
    for name in ("bulk", "loop"):
        (tmp_path / name).mkdir()
        segments.append(LogSegment.open(FileSystem(), tmp_path / name, 7, config, MockTime(0)))
    offset = 7
    for _ in range(25):
        batches = []
        for _ in range(rng.randint(1, 5)):
            count = rng.randint(1, 4)
            ts = rng.randint(0, 50)
            batches.append(MemoryRecords.with_records(
                [Record(None, bytes(rng.randint(0, 90)), ts) for _ in range(count)],
                base_offset=offset).to_bytes())
            offset += count
        records = MemoryRecords(b"".join(batches))
        segments[0].append(offset - 1, records)
        with monkeypatch.context() as m:
            m.setattr(OffsetIndex, "append_entries", lambda *_: False)
            segments[1].append(offset - 1, records)
        bulk, loop = segments
        assert bulk.offset_index.entries == loop.offset_index.entries
        assert bulk.time_index.entries == loop.time_index.entries
        assert (bulk.bytes_since_last_index_entry, bulk.max_timestamp_and_offset_so_far) == (
            loop.bytes_since_last_index_entry, loop.max_timestamp_and_offset_so_far)
        for name in ("00000000000000000007.index", "00000000000000000007.timeindex"):
            files = [(tmp_path / side / name).read_bytes() for side in ("bulk", "loop")]
            assert files[0] == files[1], name
    assert segments[0].offset_index.entries > 3
    for segment in segments:
        segment.check()
        segment.close()


def _reference_record(record: Record, offset_delta: int, timestamp_delta: int) -> bytes:
    """FMT-49 written out field by field with the byte-loop varints (the builder's slow twin)."""
    from kafkalog.impl.records.varint import encode_varint, encode_varlong

    def sized(data: bytes | None) -> bytes:
        return encode_varint(-1) if data is None else encode_varint(len(data)) + data

    body = (b"\x00" + encode_varlong(timestamp_delta) + encode_varint(offset_delta)
            + sized(record.key) + sized(record.value) + encode_varint(len(record.headers))
            + b"".join(sized(h.key.encode("utf-8")) + sized(h.value) for h in record.headers))
    return encode_varint(len(body)) + body


@pytest.mark.parametrize("seed", range(4))
def test_encode_record__table_varints__match_the_byte_loop_encoding(seed: int) -> None:
    """Records with null, short and long (> 2 KiB) fields, headers and deltas of both signs
    encode to the reference bytes; varint_bytes/varlong_bytes equal the loop (and its errors).

    Spec: FMT-48, FMT-49."""
    from kafkalog.impl.records.memory_records import encode_record
    from kafkalog.impl.records.varint import (
        encode_varint,
        encode_varlong,
        varint_bytes,
        varlong_bytes,
    )
    from kafkalog.model.values import Header

    rng = random.Random(seed)
    for value in [*range(-2100, 2100), 2**31 - 1, -(2**31), 2**31, 2**63 - 1, -(2**63), 2**63]:
        assert _outcome(varint_bytes, value) == _outcome(encode_varint, value)
        assert _outcome(varlong_bytes, value) == _outcome(encode_varlong, value)

    def field() -> bytes | None:
        return rng.choice([None, b"", bytes(rng.randint(1, 40)), bytes(rng.randint(2040, 5000))])

    for _ in range(200):
        headers = tuple(Header(rng.choice(["", "h", "ключ" * 600]), field())
                        for _ in range(rng.randint(0, 3)))
        record = Record(field(), field(), 0, headers)
        offset_delta = rng.choice([0, 5, 2047, 2048, 70_000])
        ts_delta = rng.choice([0, -1, 2047, -2049, 10**12])
        assert encode_record(record, offset_delta, ts_delta) == _reference_record(
            record, offset_delta, ts_delta)
