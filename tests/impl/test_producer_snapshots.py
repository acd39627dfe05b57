"""`.snapshot` files byte for byte (PSF-1..PSF-7) and the real brokers' snapshots.

The fixtures' snapshots were written by Kafka 0.11-3.7 brokers. Each must load into the producer
state it describes, and rebuilding producer state from the fixture's own log up to a snapshot's
offset must write the broker's bytes (PSR-5, PSR-6). k3.9 has 13 idempotent producers and no
snapshot: its rebuilt state is checked against kafka-python's independent batch parser.
Spec: KL-PROD-10, KL-PROD-12.
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.log.log import Log
from kafkalog.impl.producer.producer_state_manager import ProducerStateManager
from kafkalog.impl.producer.rebuild import rebuild_producer_state
from kafkalog.impl.producer.snapshot import (
    SnapshotEntry,
    decode,
    encode,
    java_hash_map_order,
    read_snapshot,
    snapshot_offset,
)
from kafkalog.impl.time import MockTime
from kafkalog.model.errors import CorruptSnapshotError
from kafkalog.model.values import LogConfig

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record.memory_records import MemoryRecords as KafkaMemoryRecords

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

# The longest expiration Kafka accepts (an INT, KL-STATE-2): the fixtures' producers are kept
# by loading them on a clock at their own newest timestamp (PST-22 applies at load).
CONFIG = LogConfig(producer_id_expiration_ms=2**31 - 1)
NOW = 1_750_000_000_000


def test_snapshot_without_producers__is_kafkas_ten_bytes() -> None:
    """PSF-6 vector."""
    assert encode([]) == bytes.fromhex("0001 48674BC7 00000000")


def test_snapshot_with_one_producer__matches_the_reference_vector() -> None:
    """PSF-6 vector (pid 1, epoch 2, lastSeq 1, lastOffset 2, delta 3, ts -1, coord 3, txn 100)."""
    entry = SnapshotEntry(1, 2, 1, 2, 3, -1, 3, 100)
    data = encode([entry])
    assert data == bytes.fromhex(
        "0001 5B83E057 00000001 0000000000000001 0002 00000001 0000000000000002 00000003 "
        "FFFFFFFFFFFFFFFF 00000003 0000000000000064")
    assert decode(data, "x") == [entry]


@pytest.mark.parametrize("data", [
    b"", b"\x00\x01\x00", encode([]) + b"\x00", b"\x00\x02" + encode([])[2:],
    encode([SnapshotEntry(1, 2, 1, 2, 3, -1, 3, 100)])[:-1],
    encode([]).replace(b"\x48\x67", b"\x48\x68"),
], ids=["empty", "short", "trailing", "version", "truncated", "crc"])
def test_corrupt_snapshot__raises_corrupt_snapshot_error(data: bytes) -> None:
    """PSF-5: version, schema and CRC failures are CorruptSnapshotError (PSE-8)."""
    with pytest.raises(CorruptSnapshotError):
        decode(data, "x")


def test_java_hash_map_order__buckets_then_insertion() -> None:
    """Long keys hash as Java's HashMap does: (int)(v ^ v>>>32) spread by h ^ h>>>16."""
    # 2**32 + 1 hashes to (int)(2**32) = 0: bucket 0; 17 and 1 share bucket 1 in insertion order
    assert java_hash_map_order([17, 1, 2**32 + 1], 16) == [2**32 + 1, 17, 1]
    assert java_hash_map_order([17, 1], 32) == [1, 17]  # a larger table splits them
    assert java_hash_map_order([3, 1], 16) == [1, 3]


def _partitions_with_snapshots(root: Path) -> list[Path]:
    return sorted({p.parent for p in root.rglob("*.snapshot")})


def _open(tmp: Path, part: Path, clean: bool) -> Log:
    target = tmp / part.parent.name / part.name
    shutil.copytree(part, target)
    for f in target.iterdir():
        f.chmod(0o644)
    return Log.open(FileSystem(), target, CONFIG, MockTime(_newest_timestamp(part)),
                    had_clean_shutdown=clean)


def _newest_timestamp(part: Path) -> int:
    """The partition's newest producer timestamp, in its snapshots or its v2 batches."""
    stamps = [e.timestamp for snap in part.glob("*.snapshot")
              for e in read_snapshot(FileSystem(), snap)]
    for segment in part.glob("*.log"):
        records = KafkaMemoryRecords(segment.read_bytes())
        while records.has_next():
            stamps.append(getattr(records.next_batch(), "max_timestamp", -1))
    return max(stamps, default=NOW)


def test_fixture_snapshots__load_into_the_producer_state_they_describe(
        kafka_fixtures: Path, tmp_path: Path) -> None:
    """A clean load takes the broker's newest snapshot at or below the LEO as its state."""
    checked = 0
    for part in _partitions_with_snapshots(kafka_fixtures):
        log = _open(tmp_path, part, clean=True)
        try:
            offsets = [o for o in (snapshot_offset(p.name) for p in part.iterdir())
                       if o is not None and o <= log.log_end_offset]
            if not offsets:
                continue
            newest = part / f"{max(offsets):020d}.snapshot"
            expected = read_snapshot(FileSystem(), newest)
            assert sorted(log.producer_state.snapshot_entries(), key=lambda e: e.producer_id) == \
                sorted(expected, key=lambda e: e.producer_id), part
            checked += 1
        finally:
            log.close()
    assert checked >= 10


def test_fixture_snapshots__rebuilt_from_the_log__are_the_brokers_bytes(
        kafka_fixtures: Path, tmp_path: Path) -> None:
    """For every broker snapshot at offset X: replaying the fixture's log up to X writes
    exactly the broker's file (PSR-5, PSR-6, PSF-3, PSF-4)."""
    compared = []
    for part in _partitions_with_snapshots(kafka_fixtures):
        log = _open(tmp_path, part, clean=True)
        try:
            for snap in sorted(part.glob("*.snapshot")):
                offset = snapshot_offset(snap.name)
                assert offset is not None
                if offset > log.log_end_offset:
                    continue
                scratch = tmp_path / "rebuild" / part.name / str(offset)
                scratch.mkdir(parents=True)
                psm = ProducerStateManager(FileSystem(), scratch, MockTime(NOW), 10**15, 0)
                rebuild_producer_state(psm, log.local_log.segments.values(), 0, offset, NOW,
                                       clean_shutdown=False)
                written = scratch / snap.name
                assert written.read_bytes() == snap.read_bytes(), snap
                compared.append(snap)
        finally:
            log.close()
    assert len(compared) >= 15
    assert any(p.stat().st_size > 10 for p in compared)  # the ksql producer's 56-byte snapshot


def test_fixture_without_snapshots__rebuilds_the_producers_kafka_python_sees(
        kafka_fixtures: Path, tmp_path: Path) -> None:
    """k3.9 (unclean, 13 idempotent producers): the state rebuilt from the log has, per
    producer, the epoch, last sequence and last offset of its newest batch as parsed by
    kafka-python's independent reader (PSR-6)."""
    part = kafka_fixtures / "k3.9-zk-unclean-gzip-epochs" / "lsx1-0"
    expected: dict[int, tuple[int, int, int]] = {}
    records = KafkaMemoryRecords((part / "00000000000000000000.log").read_bytes())
    while records.has_next():
        batch = records.next_batch()
        if batch.producer_id >= 0:
            last_offset = batch.base_offset + batch.last_offset_delta
            last_seq = batch.base_sequence + batch.last_offset_delta
            expected[batch.producer_id] = (batch.producer_epoch, last_seq, last_offset)
    assert len(expected) == 13
    log = _open(tmp_path, part, clean=False)
    try:
        got = {e.producer_id: (e.epoch, e.last_sequence, e.last_offset)
               for e in log.producer_state.snapshot_entries()}
        assert got == expected
        assert (log.dir / f"{log.log_end_offset:020d}.snapshot").exists()
    finally:
        log.close()


def test_dump_and_verify__read_snapshot_files(kafka_fixtures: Path, tmp_path: Path) -> None:
    """`kafkalog dump` prints a snapshot's entries; `verify` reports a corrupt snapshot and one
    holding data at or beyond its own offset as problems (PSF-5, KAFKA-6683)."""
    from click.testing import CliRunner

    from kafkalog.cli.inspect_cmds import dump, verify

    part = kafka_fixtures / "k3.7-kraft-clean-txn" / "_confluent-ksql-default__command_topic-0"
    result = CliRunner().invoke(dump, [str(part / "00000000000000000002.snapshot")])
    assert result.exit_code == 0 and "producerId: 0 producerEpoch: 0" in result.output
    root = tmp_path / "logs"
    shutil.copytree(kafka_fixtures / "k3.7-kraft-clean-txn", root)
    for f in root.rglob("*"):
        f.chmod(0o755 if f.is_dir() else 0o644)
    copy = root / part.name
    (copy / "00000000000000000001.snapshot").write_bytes(
        encode([SnapshotEntry(9, 0, 0, 1, 0, 0, -1, -1)]))  # data at offset 1 in snapshot 1
    (copy / "00000000000000000002.snapshot").write_bytes(b"\x00\x01broken")
    result = CliRunner().invoke(verify, [str(root)])
    assert result.exit_code == 1
    assert "corrupt_snapshot" in result.output and "snapshot_beyond_offset" in result.output
    result = CliRunner().invoke(dump, [str(copy / "00000000000000000002.snapshot")])
    assert isinstance(result.exception, CorruptSnapshotError)  # main() prints it, exits 2


def _psm_with_snapshots(tmp: Path, offsets: list[int]) -> ProducerStateManager:
    for offset in offsets:
        (tmp / f"{offset:020d}.snapshot").write_bytes(encode([]))
    return ProducerStateManager(FileSystem(), tmp, MockTime(0), 10**15, 0)


@pytest.mark.parametrize(("bases", "kept"), [([5], (5, 42)), ([42], (42,))])
def test_remove_stray_snapshots__keeps_the_clean_shutdown_snapshot(
        tmp_path: Path, bases: list[int], kept: tuple[int, ...]) -> None:
    """PSR-3 vectors (PSMT.testRemoveStraySnapshotsKeepCleanShutdownSnapshot). KL-PROD-12"""
    psm = _psm_with_snapshots(tmp_path, [2, 5, 42])
    psm.remove_stray_snapshots(bases)
    assert psm.snapshot_offsets() == kept
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{o:020d}.snapshot" for o in kept]


def test_truncate_and_reload__drops_snapshots_outside_the_range(tmp_path: Path) -> None:
    """PSR-4 vector: snapshots 1..5 with range (1, 3] leave 2 and 3. KL-PROD-12"""
    psm = _psm_with_snapshots(tmp_path, [1, 2, 3, 4, 5])
    psm.truncate_and_reload(1, 3, 0)
    assert psm.snapshot_offsets() == (2, 3)
    assert (psm.last_map_offset, psm.last_snap_offset) == (3, 3)


def test_load__skips_a_corrupt_newest_snapshot_for_an_older_one(tmp_path: Path) -> None:
    """PSR-4: a corrupt snapshot is deleted and the next older one is loaded (PSE-8)."""
    psm = _psm_with_snapshots(tmp_path, [2])
    (tmp_path / f"{4:020d}.snapshot").write_bytes(b"\x00\x01")
    (tmp_path / f"{2:020d}.snapshot").write_bytes(
        encode([SnapshotEntry(7, 1, 4, 1, 0, NOW, -1, -1)]))
    psm = ProducerStateManager(FileSystem(), tmp_path, MockTime(NOW), 10**15, 0)
    psm.truncate_and_reload(0, 5, NOW)
    assert psm.snapshot_offsets() == (2,) and list(psm.producers) == [7]
    assert psm.producers[7].last_seq == 4


def test_unclean_load__snapshots_every_recovered_segment_and_the_leo(tmp_path: Path) -> None:
    """PSR-7 (LLT.testProducerSnapshotsRecoveryAfterUncleanShutdown): with the recovery point
    inside the fourth-to-last segment and no snapshot left, an unclean load writes snapshots at
    the last four segment bases and the LEO, and ends with the producer's newest batch."""
    from kafkalog.impl.records.memory_records import MemoryRecords
    from kafkalog.model.values import Record

    config = LogConfig(segment_bytes=150, producer_id_expiration_ms=2**31 - 1)
    time = MockTime(NOW)
    log = Log.open(FileSystem(), tmp_path / "p-0", config, time, had_clean_shutdown=True)
    for seq in range(12):
        batch = MemoryRecords.with_records((Record(None, b"test", NOW),), producer=(1, 0, seq))
        log.append_as_leader(batch, 0)
    assert [s.base_offset for s in log.segments] == [0, 2, 4, 6, 8, 10]
    log.close_handlers()  # a crash: no close snapshot, no clean-shutdown marker
    for snap in (tmp_path / "p-0").glob("*.snapshot"):
        snap.unlink()
    log = Log.open(FileSystem(), tmp_path / "p-0", config, time, recovery_point=5,
                   had_clean_shutdown=False)
    try:
        assert log.producer_state.snapshot_offsets() == (4, 6, 8, 10, 12)
        assert sorted(p.name for p in (tmp_path / "p-0").glob("*.snapshot")) == [
            f"{o:020d}.snapshot" for o in (4, 6, 8, 10, 12)]
        assert [b.last_seq for b in log.producer_state.producers[1].batches] == [11]
    finally:
        log.close()
