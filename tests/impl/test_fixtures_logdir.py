"""Proof against reality: real broker log directories open, recover and read back with `LogDir`.

Each fixture is copied to tmp_path first (loading may rebuild indexes and write checkpoints); the
originals are only read, by kafka-python's independent parser, as the expected records.
"""

from __future__ import annotations

import shutil
import stat
import types
import warnings
from pathlib import Path

import cramjam
import pytest

with warnings.catch_warnings():  # kafka-python's import-time DeprecationWarnings are not ours
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import codec as kafka_codec
    from kafka.record.memory_records import MemoryRecords as KafkaMemoryRecords

from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.load.log_dir import CLEAN_SHUTDOWN_FILE_NAME, LogDir, TopicPartition
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.time import MockTime
from kafkalog.impl.verify.verifier import verify_log_dir
from kafkalog.model.values import Isolation, LogConfig

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # kafka-python internals

FOLDERS = ["k0.11-zk-clean", "k2.1-zk-clean-many-partitions", "k3.7-kraft-clean-txn",
           "k2.7-zk-unclean-compacted", "k2.8-zk-unclean-snappy", "k3.6-kraft-unclean-metadata",
           "k3.9-zk-unclean-gzip-epochs"]
CLEAN = FOLDERS[:3]
NOW = 1_750_000_000_000
# CFG-4/5 defaults: index.interval.bytes 4096 built every real index in these folders.
CONFIG = LogConfig()

RecordTuple = tuple[int, int, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]


@pytest.fixture(autouse=True)
def snappy_for_kafka_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """kafka-python needs python-snappy for raw blocks; give it cramjam's (its xerial framing
    parser is still kafka-python's own)."""
    shim = types.SimpleNamespace(
        decompress=lambda data: bytes(cramjam.snappy.decompress_raw(bytes(data))),
        compress=lambda data: bytes(cramjam.snappy.compress_raw(bytes(data))))
    monkeypatch.setattr(kafka_codec, "snappy", shim)


def copy_fixture(src: Path, dst: Path) -> Path:
    """A writable copy (the originals are read-only)."""
    shutil.copytree(src, dst)
    for path in [dst, *dst.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return dst


def kafka_python_records(partition_dir: Path) -> list[RecordTuple]:
    """Every record of every segment, in offset order, as kafka-python parses the original bytes."""
    out: list[RecordTuple] = []
    for log_file in sorted(partition_dir.glob("*.log")):
        parsed = KafkaMemoryRecords(log_file.read_bytes())
        while (batch := parsed.next_batch()) is not None:
            assert batch.validate_crc()
            out += [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers or ()))
                    for r in batch]
    return out


def log_records(log_dir: LogDir, tp: TopicPartition) -> list[RecordTuple]:
    """Every record read back through Log.read, from the log start offset to the LEO."""
    log, out = log_dir.log(tp), []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        fetched = log.read(offset, 1 << 20, Isolation.LOG_END, True).records
        batches = list(MemoryRecords(fetched.to_bytes()).batches())
        assert batches, f"no progress reading {tp} at {offset}"
        for batch in batches:
            batch.ensure_valid()
            out += [(r.offset, r.timestamp, r.key, r.value,
                     tuple((h.key, h.value) for h in r.headers))
                    for r in batch.records() if r.offset >= offset]
        offset = batches[-1].next_offset
    return out


def open_copy(kafka_fixtures: Path, name: str, tmp_path: Path) -> tuple[Path, LogDir]:
    copy = copy_fixture(kafka_fixtures / name, tmp_path / name)
    return copy, LogDir.open(FileSystem(), copy, CONFIG, MockTime(NOW))


@pytest.mark.parametrize("name", FOLDERS)
def test_logdir__real_directory__every_record_equals_kafka_python(
        kafka_fixtures: Path, tmp_path: Path, name: str) -> None:
    """Spec: REC-1..19: load (recovering the unclean ones) and read back every record."""
    copy, log_dir = open_copy(kafka_fixtures, name, tmp_path)
    assert log_dir.had_clean_shutdown is (name in CLEAN)
    assert log_dir.recovery_reports == () and log_dir.checkpoint_problems == ()
    total = 0
    for tp in log_dir.logs:
        expected = kafka_python_records(kafka_fixtures / name / str(tp))
        assert log_records(log_dir, tp) == expected, tp
        assert log_dir.log(tp).log_end_offset == (expected[-1][0] + 1 if expected
                                                   else log_dir.log(tp).segments[0].base_offset)
        total += len(expected)
    assert total > 0
    log_dir.close()


@pytest.mark.parametrize("name", FOLDERS)
def test_logdir__after_recovery_and_close__verify_clean_and_reopen_clean(
        kafka_fixtures: Path, tmp_path: Path, name: str) -> None:
    """Spec: FMT-44, REC-19: the closed copy has its indexes rebuilt, checkpoints and marker."""
    copy, log_dir = open_copy(kafka_fixtures, name, tmp_path)
    ends = {tp: log.log_end_offset for tp, log in log_dir.logs.items()}
    log_dir.close()
    assert (copy / CLEAN_SHUTDOWN_FILE_NAME).exists()
    report = verify_log_dir(FileSystem(), copy, deep=True)
    assert [str(f) for f in report.problems] == []
    reopened = LogDir.open(FileSystem(), copy, CONFIG, MockTime(NOW))
    assert reopened.had_clean_shutdown
    assert {tp: log.log_end_offset for tp, log in reopened.logs.items()} == ends
    assert all(log.recovery_point == ends[tp] for tp, log in reopened.logs.items())
    reopened.close()


def restart_offsets(partition_dir: Path) -> set[int]:
    """Offsets where the broker restarted: each clean start writes a producer snapshot there."""
    return {int(p.name[:20]) for p in partition_dir.glob("*.snapshot")}


def single_session_segments(kafka_fixtures: Path) -> list[Path]:
    """Clean, non-empty segments written in one broker session (no restart inside them)."""
    found = []
    for name in CLEAN:
        for log_file in sorted((kafka_fixtures / name).glob("*/*.log")):
            batches = list(MemoryRecords(log_file.read_bytes()).batches())
            if not batches:
                continue
            base, end = int(log_file.name[:20]), batches[-1].next_offset
            if not [s for s in restart_offsets(log_file.parent) if base < s < end]:
                found.append(log_file)
    return found


@pytest.mark.parametrize("how", ["garbage_indexes_clean_shutdown", "unclean_from_offset_0"])
def test_recovery__single_session_clean_segments__rebuild_indexes_byte_for_byte(
        kafka_fixtures: Path, tmp_path: Path, how: str) -> None:
    """Spec: SEG-15, REC-6, REC-8: recovering a segment the broker wrote in one session, one batch
    per append, rebuilds .index and .timeindex exactly: whether the indexes were garbage, or the
    shutdown was unclean with recovery point 0 so every segment is re-validated."""
    segments = single_session_segments(kafka_fixtures)
    assert len(segments) >= 4  # k0.11 test0-0/1/2 and k3.7's ksql command topic
    for n, original in enumerate(segments):
        copy = copy_fixture(original.parent, tmp_path / str(n) / original.parent.name)
        if how == "garbage_indexes_clean_shutdown":
            (copy.parent / CLEAN_SHUTDOWN_FILE_NAME).write_text("{}")
            for suffix in (".index", ".timeindex"):
                copy.joinpath(original.name).with_suffix(suffix).write_bytes(b"garbage!" * 3)
        log_dir = LogDir.open(FileSystem(), copy.parent, CONFIG, MockTime(NOW))
        assert log_dir.log(log_dir_tp(copy)).recovery_point == (
            0 if how == "unclean_from_offset_0" else log_dir.log(log_dir_tp(copy)).log_end_offset)
        log_dir.close()
        for suffix in (".index", ".timeindex"):
            rebuilt = copy.joinpath(original.name).with_suffix(suffix).read_bytes()
            assert rebuilt == original.with_suffix(suffix).read_bytes(), (original, suffix)


def log_dir_tp(partition_dir: Path) -> TopicPartition:
    topic, _, partition = partition_dir.name.rpartition("-")
    return TopicPartition(topic, int(partition))


def test_replay__every_clean_segment__log_and_indexes_byte_for_byte(
        kafka_fixtures: Path, tmp_path: Path) -> None:
    """Spec: SEG-3, SEG-17, FMT-12, FMT-19: replaying the real batches as a follower, with a clean
    close and reopen wherever the broker restarted, writes the broker's exact .log, .index and
    .timeindex bytes (index.interval.bytes 4096; a restart resets the byte counter and the close
    adds the final time-index entry, which is why multi-session segments differ after recovery)."""
    replayed = 0
    for name in CLEAN:
        for original in sorted((kafka_fixtures / name).glob("*/*.log")):
            data = original.read_bytes()
            if not data:
                continue
            restarts = restart_offsets(original.parent)
            target = tmp_path / name
            target.mkdir(exist_ok=True)
            tp = log_dir_tp(original.parent)
            log_dir = LogDir.open(FileSystem(), target, CONFIG, MockTime(NOW))
            log = log_dir.get_or_create_log(tp)
            for batch in MemoryRecords(data).batches():
                if batch.base_offset in restarts and log.log_end_offset > 0:
                    log_dir.close()
                    log_dir = LogDir.open(FileSystem(), target, CONFIG, MockTime(NOW))
                    log = log_dir.log(tp)
                log.append_as_follower(MemoryRecords(bytes(batch.buffer)))
            log_dir.close()
            for suffix in (".log", ".index", ".timeindex"):
                ours = (target / str(tp) / original.name).with_suffix(suffix).read_bytes()
                assert ours == original.with_suffix(suffix).read_bytes(), (original, suffix)
            replayed += 1
    assert replayed == 9
