"""`LogDir`: a `log.dirs` directory with many partitions, its root checkpoints and the marker."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.load.log_dir import (
    CLEAN_SHUTDOWN_FILE_NAME,
    DirKind,
    LogDir,
    TopicPartition,
    inspect_log_dir,
    parse_partition_dir_name,
)
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.time import MockTime
from kafkalog.model.errors import (
    CorruptCheckpointError,
    InvalidLogDirNameError,
    KafkaStorageError,
    LogDirError,
)
from kafkalog.model.values import Isolation, LogConfig, Record

A0, A1, B0 = TopicPartition("orders", 0), TopicPartition("orders", 1), TopicPartition("b-x", 0)
CONFIG = LogConfig(segment_bytes=1024, index_interval_bytes=100)


def records(n: int, start_ts: int = 1_000) -> MemoryRecords:
    return MemoryRecords.with_records([Record(None, f"v{i}".encode(), start_ts + i)
                                       for i in range(n)])


def open_dir(path: Path, **kwargs: object) -> LogDir:
    return LogDir.open(FileSystem(), path, CONFIG, MockTime(1_700_000_000_000), **kwargs)


def values_of(log_dir: LogDir, tp: TopicPartition) -> list[bytes | None]:
    """Every record value from the log start to the LEO (a read stays within one segment)."""
    log, out = log_dir.log(tp), []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        batches = list(log.read(offset, 10**9, Isolation.LOG_END, True).records.batches())
        out += [r.value for b in batches for r in b.records() if r.offset >= offset]
        offset = batches[-1].next_offset
    return out


def populated(path: Path) -> None:
    """Three partitions, A0 spanning several segments, then a clean close."""
    with open_dir(path) as log_dir:
        for tp, count in ((A0, 40), (A1, 3), (B0, 0)):
            log = log_dir.get_or_create_log(tp)
            for _ in range(count // 2 if count > 3 else 1 if count else 0):
                log.append_as_leader(records(2 if count > 3 else count), leader_epoch=4)
            log.update_high_watermark(log.log_end_offset)


def checkpoint_lines(path: Path, name: str) -> list[str]:
    return (path / name).read_text().splitlines()


# --- directory names (FMT-1..3) ---


@pytest.mark.parametrize(("name", "topic", "partition", "kind"), [
    ("orders-0", "orders", 0, DirKind.LIVE),
    ("a-b-c-12", "a-b-c", 12, DirKind.LIVE),
    ("t-+5", "t", 5, DirKind.LIVE),
    ("foo.bar-testtopic-42.0123456789abcdef0123456789abcdef-delete", "foo.bar-testtopic", 42,
     DirKind.DELETE),
    ("t-3.0123456789abcdef0123456789abcdef-future", "t", 3, DirKind.FUTURE),
    ("t-3.0123456789abcdef0123456789abcdef-stray", "t", 3, DirKind.STRAY),
])
def test_parse_partition_dir_name__kafka_forms__topic_partition_and_kind(
        name: str, topic: str, partition: int, kind: DirKind) -> None:
    """Spec: FMT-1, FMT-2, FMT-3 (KAFKA-5232: the topic is everything before the last '-')."""
    parsed = parse_partition_dir_name(name)
    assert parsed.topic_partition == TopicPartition(topic, partition) and parsed.kind is kind


def test_parse_partition_dir_name__255_char_delete_name__topic_and_partition() -> None:
    """Spec: FMT-2 (LocalLogTest.testLogDeleteDirName's capped name)."""
    name = "n" + "o" * 212 + "-5." + "a" * 32 + "-delete"
    assert len(name) == 255
    parsed = parse_partition_dir_name(name)
    assert parsed.topic_partition == TopicPartition("n" + "o" * 212, 5)


@pytest.mark.parametrize("name", ["", "   ", "orders", "orders-", "-1", "orders-x", "t-1_0",
                                  "t- 1", "t-2147483648", "topic.abc-delete", "t-1.-delete"])
def test_parse_partition_dir_name__malformed__invalid_log_dir_name_error(name: str) -> None:
    """Spec: FMT-3, ERR-42"""
    with pytest.raises(InvalidLogDirNameError) as raised:
        parse_partition_dir_name(name, where=f"/logs/{name}")
    assert raised.value.where == f"/logs/{name}"


# --- opening ---


def test_open__missing_directory__log_dir_error_naming_it(tmp_path: Path) -> None:
    """An absent log dir is a typed error, not a traceback."""
    with pytest.raises(LogDirError) as raised:
        open_dir(tmp_path / "absent")
    assert raised.value.where == str(tmp_path / "absent")


def test_open__path_is_a_file__log_dir_error(tmp_path: Path) -> None:
    """A regular file where a directory should be is a typed error."""
    (tmp_path / "f").write_text("x")
    with pytest.raises(LogDirError):
        open_dir(tmp_path / "f")


def test_open__subdirectory_not_a_partition__invalid_log_dir_name_error(tmp_path: Path) -> None:
    """Spec: FMT-3, ERR-42"""
    (tmp_path / "lost+found").mkdir()
    with pytest.raises(InvalidLogDirNameError) as raised:
        open_dir(tmp_path)
    assert raised.value.where == str(tmp_path / "lost+found")


def test_open__empty_directory__no_logs_and_unclean(tmp_path: Path) -> None:
    """Spec: FMT-43 (no marker means unclean)."""
    log_dir = open_dir(tmp_path)
    assert log_dir.logs == {} and not log_dir.had_clean_shutdown


def test_open__delete_and_future_dirs__skipped_not_opened(tmp_path: Path) -> None:
    """Spec: FMT-2, REC-7"""
    (tmp_path / "t-0.0123456789abcdef0123456789abcdef-delete").mkdir()
    (tmp_path / "t-1").mkdir()
    log_dir = open_dir(tmp_path)
    assert list(log_dir.logs) == [TopicPartition("t", 1)]
    assert [name.kind for name, _ in log_dir.skipped_dirs] == [DirKind.DELETE]


# --- close and reopen (FMT-43, FMT-44) ---


def test_close__writes_three_root_checkpoints_and_marker(tmp_path: Path) -> None:
    """Spec: FMT-44, FMT-40, FMT-42"""
    populated(tmp_path)
    assert json.loads((tmp_path / CLEAN_SHUTDOWN_FILE_NAME).read_text()) == {
        "version": 0, "brokerEpoch": -1}
    expected = ["0", "3", "b-x 0 0", "orders 0 40", "orders 1 3"]
    assert checkpoint_lines(tmp_path, "recovery-point-offset-checkpoint") == expected
    assert checkpoint_lines(tmp_path, "replication-offset-checkpoint") == expected
    assert checkpoint_lines(tmp_path, "log-start-offset-checkpoint") == ["0", "0"]


def test_reopen_after_close__clean_and_every_record_back(tmp_path: Path) -> None:
    """Spec: FMT-43, REC-19"""
    populated(tmp_path)
    log_dir = open_dir(tmp_path)
    assert log_dir.had_clean_shutdown
    assert len(log_dir.log(A0).segments) > 1
    assert values_of(log_dir, A0) == [f"v{i % 2}".encode() for i in range(40)]
    assert values_of(log_dir, A1) == [b"v0", b"v1", b"v2"]
    assert log_dir.log(A0).recovery_point == 40 and log_dir.log(A0).high_watermark == 40
    assert log_dir.recovery_reports == ()
    log_dir.close()


def test_open__marker_deleted_before_any_partition_loads(tmp_path: Path) -> None:
    """Spec: FMT-43, BUG-59: a failed load leaves no marker, so the next start recovers."""
    populated(tmp_path)
    (tmp_path / "orders-1" / "leader-epoch-checkpoint").write_text("0\n1\nnot a line\n")
    with pytest.raises(CorruptCheckpointError):
        open_dir(tmp_path)
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE_NAME).exists()


def test_open__marker_consumed_while_open_and_rewritten_on_close(tmp_path: Path) -> None:
    """Spec: FMT-43, FMT-44"""
    populated(tmp_path)
    log_dir = open_dir(tmp_path)
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE_NAME).exists()
    log_dir.close(broker_epoch=7)
    assert json.loads((tmp_path / CLEAN_SHUTDOWN_FILE_NAME).read_text())["brokerEpoch"] == 7


def test_close__idempotent_and_later_use_is_typed_error(tmp_path: Path) -> None:
    """Closing twice is harmless; creating a log afterwards is a LogDirError."""
    log_dir = open_dir(tmp_path)
    log_dir.close()
    log_dir.close()
    with pytest.raises(LogDirError):
        log_dir.get_or_create_log(A0)


def test_reopen__log_start_offset_checkpointed_when_above_first_base(tmp_path: Path) -> None:
    """Spec: FMT-40, FMT-41"""
    populated(tmp_path)
    with open_dir(tmp_path) as log_dir:
        assert log_dir.log(A0).maybe_increment_log_start_offset(5)
    assert checkpoint_lines(tmp_path, "log-start-offset-checkpoint") == ["0", "1", "orders 0 5"]
    with open_dir(tmp_path) as log_dir:
        assert log_dir.log(A0).log_start_offset == 5
        assert log_dir.log(A1).log_start_offset == 0


def test_reopen__high_watermark_restored_from_checkpoint(tmp_path: Path) -> None:
    """Spec: REC-17, LOG-4"""
    populated(tmp_path)
    with open_dir(tmp_path) as log_dir:
        log_dir.log(A0).update_high_watermark(17)
    with open_dir(tmp_path) as log_dir:
        assert log_dir.log(A0).high_watermark == 17


def test_checkpoint__while_open__writes_current_offsets(tmp_path: Path) -> None:
    """Spec: FMT-40 (LogManager's periodic checkpoint)."""
    with open_dir(tmp_path) as log_dir:
        log = log_dir.get_or_create_log(A0)
        log.append_as_leader(records(3), leader_epoch=0)
        log.update_high_watermark(2)
        log_dir.checkpoint()
        assert checkpoint_lines(tmp_path, "replication-offset-checkpoint") == [
            "0", "1", "orders 0 2"]


def test_open__topic_config_applies_to_that_topic_only(tmp_path: Path) -> None:
    """Per-topic configuration reaches the right logs."""
    small = LogConfig(segment_bytes=200)
    log_dir = open_dir(tmp_path, topic_configs={"b-x": small})
    assert log_dir.get_or_create_log(B0).config == small
    assert log_dir.get_or_create_log(A0).config == CONFIG
    log_dir.close()


# --- root checkpoints (FMT-41) ---


def test_open__corrupt_recovery_checkpoint__reported_and_treated_as_empty(tmp_path: Path) -> None:
    """Spec: FMT-41: everything recovers from offset 0 and no record is lost."""
    populated(tmp_path)
    (tmp_path / "recovery-point-offset-checkpoint").write_text("0\nnot-a-count\n")
    (tmp_path / CLEAN_SHUTDOWN_FILE_NAME).unlink()
    log_dir = open_dir(tmp_path)
    assert [e.where for e in log_dir.checkpoint_problems] == [
        f"{tmp_path / 'recovery-point-offset-checkpoint'}:2"]
    assert values_of(log_dir, A0) == [f"v{i % 2}".encode() for i in range(40)]
    assert log_dir.log(A0).recovery_point == 0
    log_dir.close()


def test_open__corrupt_log_start_checkpoint__reported_and_treated_as_empty(tmp_path: Path) -> None:
    """Spec: FMT-41"""
    populated(tmp_path)
    (tmp_path / "log-start-offset-checkpoint").write_text("7\n0\n")
    log_dir = open_dir(tmp_path)
    assert len(log_dir.checkpoint_problems) == 1
    assert log_dir.log(A0).log_start_offset == 0
    log_dir.close()


def test_open__corrupt_hw_checkpoint__typed_error_naming_the_file(tmp_path: Path) -> None:
    """Spec: ERR-43"""
    populated(tmp_path)
    (tmp_path / "replication-offset-checkpoint").write_text("0\n1\norders zero 3\n")
    with pytest.raises(CorruptCheckpointError) as raised:
        open_dir(tmp_path)
    assert str(tmp_path / "replication-offset-checkpoint") in str(raised.value.where)


def test_open__partitions_missing_from_checkpoints__defaults_and_clamped_hw(
        tmp_path: Path) -> None:
    """Spec: FMT-41, LOG-5: missing recovery point and LSO mean 0; HW 0 is clamped."""
    populated(tmp_path)
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        (tmp_path / name).write_text("0\n0\n")
    log_dir = open_dir(tmp_path)
    assert log_dir.log(A0).high_watermark == 0 and log_dir.log(A0).log_start_offset == 0
    assert log_dir.log(A0).log_end_offset == 40  # clean: no recovery needed, data intact
    log_dir.close()


# --- inspection never writes ---


def test_inspect_log_dir__classifies_without_touching_the_marker(tmp_path: Path) -> None:
    """The read-only inspection reports the marker and leaves it in place."""
    populated(tmp_path)
    (tmp_path / "junk dir").mkdir()
    layout = inspect_log_dir(FileSystem(), tmp_path)
    assert layout.clean_shutdown_marker and (tmp_path / CLEAN_SHUTDOWN_FILE_NAME).exists()
    assert sorted(layout.partitions) == [B0, A0, A1]
    assert [e.where for e in layout.invalid_dirs] == [str(tmp_path / "junk dir")]


# --- crash safety of close and odd markers ---


class FailingCheckpointFs(FileSystem):
    """Refuses to write one file, as a full disk or an I/O error would."""

    def __init__(self, refuse: str) -> None:
        self.refuse = refuse

    def write_atomically(self, path: str | os.PathLike[str], data: bytes) -> None:
        if Path(path).name == self.refuse:
            raise KafkaStorageError("write failed: No space left on device", where=str(path))
        super().write_atomically(path, data)


def test_close__checkpoint_write_fails__no_marker_so_next_open_recovers(tmp_path: Path) -> None:
    """Spec: FMT-44: the marker is the last thing written; a failure before it means unclean."""
    populated(tmp_path)
    log_dir = LogDir.open(FailingCheckpointFs("replication-offset-checkpoint"), tmp_path, CONFIG,
                          MockTime(1_700_000_000_000))
    with pytest.raises(KafkaStorageError):
        log_dir.close()
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE_NAME).exists()
    reopened = open_dir(tmp_path)
    assert not reopened.had_clean_shutdown
    assert values_of(reopened, A0) == [f"v{i % 2}".encode() for i in range(40)]
    reopened.close()


def test_open__marker_with_any_content__counts_as_clean(tmp_path: Path) -> None:
    """Spec: FMT-42: only the marker's existence matters (Kafka 0.11 wrote it empty)."""
    populated(tmp_path)
    (tmp_path / CLEAN_SHUTDOWN_FILE_NAME).write_bytes(b"\x00not json")
    with open_dir(tmp_path) as log_dir:
        assert log_dir.had_clean_shutdown


def test_open__log_start_checkpoint_beyond_data__empty_log_at_lso_and_reported(
        tmp_path: Path) -> None:
    """Spec: REC-9, BUG-39 (KAFKA-8306): LSO = LEO = the checkpointed 500; the deleted
    segments appear in the recovery report."""
    populated(tmp_path)
    (tmp_path / "log-start-offset-checkpoint").write_text("0\n1\norders 1 500\n")
    with open_dir(tmp_path) as log_dir:
        log = log_dir.log(A1)
        assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (500, 500, 500)
        assert [r.removed_segments for r in log_dir.recovery_reports] == [
            ("00000000000000000000.log",)]
        assert log_dir.recovery_reports[0].topic_partition == A1
    assert "orders 1 500" in checkpoint_lines(tmp_path, "recovery-point-offset-checkpoint")
