"""Golden tests against real broker log directories (read-only; nothing is written to them).

Every `.log` parses with valid CRCs and reads back, record by record, exactly what kafka-python's
independent parser reads from the same bytes; every `.index`/`.timeindex` present opens read-only,
passes the sanity check, and each entry points at a real batch.
"""

from __future__ import annotations

import types
from pathlib import Path

import cramjam
import pytest
from kafka import codec as kafka_codec
from kafka.record.memory_records import MemoryRecords as KafkaMemoryRecords
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.index.offset_index import OffsetIndex
from kafkalog.impl.index.time_index import TimeIndex
from kafkalog.impl.records.compression import CompressionType
from kafkalog.impl.records.file_records import FileRecords
from kafkalog.impl.records.record_batch import RecordBatch

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # kafka-python internals

FOLDERS = ["k0.11-zk-clean", "k2.1-zk-clean-many-partitions", "k2.7-zk-unclean-compacted",
           "k2.8-zk-unclean-snappy", "k3.6-kraft-unclean-metadata", "k3.7-kraft-clean-txn",
           "k3.9-zk-unclean-gzip-epochs"]


@pytest.fixture(autouse=True)
def snappy_for_kafka_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """kafka-python lacks python-snappy here: give it raw blocks; it parses xerial itself."""
    shim = types.SimpleNamespace(
        decompress=lambda data: bytes(cramjam.snappy.decompress_raw(bytes(data))))
    monkeypatch.setattr(kafka_codec, "snappy", shim)


def log_files(root: Path, folder: str) -> list[Path]:
    return sorted((root / folder).glob("*/*.log"))


def read_batches(path: Path) -> list[RecordBatch]:
    records = FileRecords.open(FileSystem(), path, file_already_exists=True, writable=False)
    try:
        return list(records.batches())
    finally:
        records.close()


def deep_rows(batches: list[RecordBatch]) -> list[tuple[object, ...]]:
    return [(r.offset, r.timestamp, r.key, r.value, tuple((h.key, h.value) for h in r.headers))
            for b in batches for r in b.records()]


def kafka_python_rows(data: bytes) -> list[tuple[object, ...]]:
    parsed = KafkaMemoryRecords(data)
    rows = []
    while (batch := parsed.next_batch()) is not None:
        assert batch.validate_crc()
        rows.extend((r.offset, r.timestamp, r.key, r.value, tuple(r.headers or []))
                    for r in batch)
    return rows


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_log__parses_whole_with_valid_crcs_and_matches_kafka_python(
        kafka_fixtures: Path, folder: str) -> None:
    """Spec: FMT-45..52. Bytes covered by batches = file size; deep reads equal kafka-python's."""
    paths = log_files(kafka_fixtures, folder)
    assert paths, f"no .log files under {folder}"
    for path in paths:
        batches = read_batches(path)
        for batch in batches:
            batch.ensure_valid()
        assert sum(b.size_in_bytes for b in batches) == path.stat().st_size
        assert deep_rows(batches) == kafka_python_rows(path.read_bytes()), path
        offsets = [b.last_offset for b in batches]
        assert offsets == sorted(set(offsets)), f"{path}: last offsets not increasing"


def batches_where(root: Path, folder: str, predicate: object) -> list[RecordBatch]:
    return [b for p in log_files(root, folder) for b in read_batches(p)
            if predicate(b)]  # type: ignore[operator]


def test_k2_8__has_nine_xerial_snappy_batches_with_headers(kafka_fixtures: Path) -> None:
    snappy = batches_where(kafka_fixtures, "k2.8-zk-unclean-snappy",
                           lambda b: b.compression_type is CompressionType.SNAPPY)
    assert len(snappy) == 9
    assert all(bytes(b.buffer[61:69]) == b"\x82SNAPPY\x00" for b in snappy)
    assert any(r.headers for b in snappy for r in b.records())


def test_k3_9__has_two_gzip_batches_across_epochs(kafka_fixtures: Path) -> None:
    folder = "k3.9-zk-unclean-gzip-epochs"
    gzip = batches_where(kafka_fixtures, folder,
                         lambda b: b.compression_type is CompressionType.GZIP)
    assert len(gzip) == 2
    epochs = {b.partition_leader_epoch for b in batches_where(kafka_fixtures, folder,
                                                              lambda b: True)}
    assert {0, 1, 3, 5, 6} <= epochs


def test_k3_7__has_a_transaction_and_its_commit_marker(kafka_fixtures: Path) -> None:
    txn = batches_where(kafka_fixtures, "k3.7-kraft-clean-txn", lambda b: b.is_transactional)
    assert any(not b.is_control_batch for b in txn)
    markers = [b for b in txn if b.is_control_batch]
    assert markers and all(b.producer_id >= 0 for b in txn)
    (marker,) = markers[0].records()
    assert marker.key is not None and marker.key[:2] == b"\x00\x00"  # version 0
    assert marker.key[2:4] == b"\x00\x01"  # type 1 = COMMIT


def index_pairs(root: Path) -> list[tuple[Path, Path | None, Path]]:
    out = []
    for index in sorted(root.glob("*/*/*.index")):
        log = index.with_suffix(".log")
        time = index.with_suffix(".timeindex")
        out.append((index, time if time.exists() else None, log))
    return out


def test_real_indexes__pass_sanity_check_and_point_at_batch_starts(kafka_fixtures: Path) -> None:
    """Spec: FMT-10, FMT-12, FMT-18, FMT-19, FMT-25 (opened read-only, never trimmed)."""
    fs = FileSystem()
    pairs = index_pairs(kafka_fixtures)
    assert len(pairs) >= 60
    for index_path, time_path, log_path in pairs:
        base = int(index_path.name.split(".")[0])
        batches = read_batches(log_path)
        by_position = {b.position: b for b in batches}
        offset_index = OffsetIndex(fs, index_path, base, writable=False)
        offset_index.sanity_check()
        for n in range(offset_index.entries):
            entry = offset_index.entry(n)
            assert by_position[entry.position].last_offset == entry.offset, index_path
        offset_index.close()
        if time_path is None:
            continue
        # The largest timestamp up to and including each batch, keyed by its last offset.
        running, max_so_far = {}, -1
        for b in batches:
            max_so_far = max(max_so_far, b.max_timestamp)
            running[b.last_offset] = max_so_far
        time_index = TimeIndex(fs, time_path, base, writable=False)
        time_index.sanity_check()
        for n in range(time_index.entries):
            ts, offset = time_index.entry(n)
            assert running.get(offset) == ts, (time_path, n)
        time_index.close()
        assert index_path.stat().st_size == offset_index.entries * 8  # untouched


def test_consumer_offsets_28__index_lookups_lead_to_the_right_batch(kafka_fixtures: Path) -> None:
    """254 offset-index entries over 8,202 batches: lookup + scan finds each batch. FMT-13, 54."""
    fs = FileSystem()
    part = kafka_fixtures / "k2.1-zk-clean-many-partitions" / "__consumer_offsets-28"
    log = FileRecords.open(fs, part / "00000000000000000000.log", file_already_exists=True,
                           writable=False)
    index = OffsetIndex(fs, part / "00000000000000000000.index", 0, writable=False)
    batches = list(log.batches())
    assert (len(batches), index.entries) == (8202, 254)
    for batch in batches[::97] + batches[-3:]:
        start = index.lookup(batch.base_offset).position
        found = log.search_for_offset_with_size(batch.base_offset, start)
        assert found is not None and found.position == batch.position
    index.close()
    log.close()
