"""Hostile files: symlinks are refused, memory does not grow with an
index's size or a batch's inflation, and the CLI answers with one line, never a traceback."""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import pytest
from kafkalog.conformance.fuzz.builders import (
    CONFIG,
    build_log_dir,
    legacy_gzip_bomb,
    legacy_message,
    sparse_file,
    v2_bomb,
)
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.load.log_dir import CLEAN_SHUTDOWN_FILE_NAME, LogDir
from kafkalog.impl.records.compression import MAX_INFLATED_BYTES, CompressionType, decompress
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.time import MockTime
from kafkalog.impl.verify.target import verify_path
from kafkalog.impl.verify.verifier import verify_log_dir
from kafkalog.model.errors import CorruptRecordError, KafkaStorageError, LogDirError
from kafkalog.model.values import Isolation

from kafkalog.cli.main import main


def run(argv: list[str], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run `kafkalog <argv>`; returns (exit status, stdout, stderr)."""
    monkeypatch.setattr("sys.argv", ["kafkalog", *argv])
    code = 0
    try:
        main()
    except SystemExit as done:
        code = int(done.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


FIRST = "00000000000000000000"


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    return build_log_dir(tmp_path / "logs")


# --- 1. symbolic links ---


def test_log_dir_open__segment_symlinked_outside__refused_and_target_untouched(
        logs: Path, tmp_path: Path) -> None:
    """A `.log` that links outside the directory is refused before recovery can truncate it."""
    target = tmp_path / "precious"
    target.write_bytes(b"x" * 1294)
    segment = logs / "t-0" / f"{FIRST}.log"
    segment.unlink()
    segment.symlink_to(target)
    (logs / CLEAN_SHUTDOWN_FILE_NAME).unlink()  # unclean: recovery would validate and truncate
    with pytest.raises(LogDirError) as raised:
        LogDir.open(FileSystem(), logs, CONFIG, MockTime(0))
    assert str(segment) in str(raised.value) and "symbolic link" in str(raised.value)
    assert target.read_bytes() == b"x" * 1294


def test_log_dir_open__partition_dir_symlinked__refused_and_nothing_rewritten(
        logs: Path, tmp_path: Path) -> None:
    """A partition directory that is a link is refused; its files keep their bytes."""
    elsewhere = tmp_path / "elsewhere"
    shutil.move(str(logs / "t-0"), elsewhere)
    (logs / "t-0").symlink_to(elsewhere, target_is_directory=True)
    before = {p.name: p.read_bytes() for p in elsewhere.iterdir()}
    with pytest.raises(LogDirError, match="symbolic link"):
        LogDir.open(FileSystem(), logs, CONFIG, MockTime(0))
    assert {p.name: p.read_bytes() for p in elsewhere.iterdir()} == before


def test_fs_open_file__symlink__typed_error_naming_the_link(tmp_path: Path) -> None:
    """The seam opens with O_NOFOLLOW: a link is a KafkaStorageError, never followed."""
    (tmp_path / "real").write_bytes(b"data")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    fs = FileSystem()
    with pytest.raises(KafkaStorageError, match="symbolic link"):
        fs.open_file(tmp_path / "link")
    with pytest.raises(KafkaStorageError, match="symbolic link"):
        fs.read_file(tmp_path / "link")


def test_verify__symlinks_inside__reported_as_problems_not_followed(
        logs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """verify names each link as a problem and reads nothing through it."""
    (tmp_path / "secret").write_bytes(b"0\n1\nt 0 5\n")
    (logs / "t-0" / "leader-epoch-checkpoint").unlink()
    (logs / "t-0" / "leader-epoch-checkpoint").symlink_to(tmp_path / "secret")
    (logs / "u-0").symlink_to(logs / "t-0", target_is_directory=True)
    code, out, _ = run(["verify", str(logs)], monkeypatch, capsys)
    assert code == 1 and out.count("symlink_refused") == 2


# --- 2. memory bounded in index size ---


def test_verify__gigabyte_sparse_index__no_entry_list_built(logs: Path) -> None:
    """A 1 GiB sparse `.index` is measured by its hole, not read into a list (RSS: README)."""
    index = logs / "t-0" / f"{FIRST}.index"
    head = index.read_bytes()
    sparse_file(index, 1 << 30, head)
    report = verify_log_dir(FileSystem(), logs)
    kinds = {f.kind for f in report.problems}
    assert kinds == {"index_not_trimmed"}


def test_log_dir_open__gigabyte_sparse_index__rebuilt_without_materialising(logs: Path) -> None:
    """LogDir.open's sanity scan stops at the first zero entry and the index is rebuilt."""
    index = logs / "t-0" / f"{FIRST}.index"
    sparse_file(index, 1 << 30, index.read_bytes())
    (logs / CLEAN_SHUTDOWN_FILE_NAME).unlink()
    log_dir = LogDir.open(FileSystem(), logs, CONFIG, MockTime(0))
    try:
        log = next(iter(log_dir.logs.values()))
        assert log.read(0, 10_000).records.size_in_bytes > 0
    finally:
        log_dir.close()
    assert index.stat().st_size < 1 << 20


def test_offset_index__lookup_above_key_cache_cap__same_answer_as_bisect(tmp_path: Path) -> None:
    """Above KEYS_CACHE_MAX_ENTRIES lookups search the mapping and agree with the cache."""
    from kafkalog.impl.index import offset_index as oi

    index = oi.OffsetIndex(FileSystem(), tmp_path / f"{FIRST}.index", 0, max_index_size=8 * 64)
    for n in range(40):
        index.append(3 * n + 1, 100 * n)
    cached = [index.lookup(t) for t in range(130)]
    old, oi.KEYS_CACHE_MAX_ENTRIES = oi.KEYS_CACHE_MAX_ENTRIES, 10
    try:
        index._keys = None
        assert [index.lookup(t) for t in range(130)] == cached
    finally:
        oi.KEYS_CACHE_MAX_ENTRIES = old
        index.close()


# --- 3. decompression bombs ---


@pytest.mark.parametrize("codec", [CompressionType.GZIP, CompressionType.ZSTD,
                                   CompressionType.LZ4])
def test_decompress__beyond_the_bound__corrupt_record_error(codec: CompressionType) -> None:
    """Inflation stops at MAX_INFLATED_BYTES with a typed error; under it the bytes come back."""
    import cramjam

    module = {CompressionType.GZIP: cramjam.gzip, CompressionType.ZSTD: cramjam.zstd,
              CompressionType.LZ4: cramjam.lz4}[codec]
    bomb = bytes(module.compress(bytes(MAX_INFLATED_BYTES + 1)))
    with pytest.raises(CorruptRecordError, match="inflates beyond"):
        decompress(codec, bomb, "x")
    assert decompress(codec, bytes(module.compress(b"a" * 300_000))) == b"a" * 300_000


def test_decompress__snappy_claiming_a_huge_length__refused_before_inflating() -> None:
    """A raw snappy block states its length up front: checked against the bound first."""
    import cramjam

    block = bytes(cramjam.snappy.compress_raw(bytes(MAX_INFLATED_BYTES + 1)))
    with pytest.raises(CorruptRecordError, match="inflates beyond"):
        decompress(CompressionType.SNAPPY, block)


def test_verify__legacy_gzip_bomb__problem_reported_with_bounded_inflation(
        logs: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A v1 gzip wrapper inflating to 256 MiB is a corrupt_batch finding, not 256 MiB of RAM."""
    segment = logs / "u-0" / f"{FIRST}.log"
    segment.parent.mkdir()
    segment.write_bytes(legacy_gzip_bomb(0, 256 << 20))
    code, out, err = run(["verify", str(logs)], monkeypatch, capsys)
    assert code == 1 and "inflates beyond" in out and err == ""


def test_log_read__legacy_bomb__typed_error_within_the_bound(tmp_path: Path) -> None:
    """Log.read at a bomb wrapper inflates at most MAX_INFLATED_BYTES, then CorruptRecordError."""
    from kafkalog.impl.log.log import Log

    part = tmp_path / "t-0"
    part.mkdir()
    (part / f"{FIRST}.log").write_bytes(legacy_gzip_bomb(5, 256 << 20))
    log = Log.open(FileSystem(), part, CONFIG, MockTime(0))
    try:
        with pytest.raises(CorruptRecordError):
            log.read(0, 1000, Isolation.LOG_END)
    finally:
        log.close()


def test_verify_deep__v2_zstd_bomb__corrupt_records_finding(
        logs: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A v2 batch inflating to 256 MiB: `verify --deep` reports it, bounded."""
    segment = logs / "u-0" / f"{FIRST}.log"
    segment.parent.mkdir()
    segment.write_bytes(v2_bomb(256 << 20))
    code, out, _ = run(["verify", "--deep", str(logs)], monkeypatch, capsys)
    assert code == 1 and "inflates beyond" in out


# --- 6. CLI one line, exit 2 or findings; no traceback ---


def test_verify__legacy_wrapper_inflating_to_no_message__finding_not_buffer_error(
        logs: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The wrapper's value inflates to nothing: corrupt_batch, no BufferError traceback."""
    import zlib

    segment = logs / "u-0" / f"{FIRST}.log"
    segment.parent.mkdir()
    empty_gzip = zlib.compress(b"", wbits=31)
    segment.write_bytes(legacy_message(0, empty_gzip, attributes=1))
    code, out, err = run(["verify", str(logs)], monkeypatch, capsys)
    assert code == 1 and "holds no message" in out and "Traceback" not in err


@pytest.mark.parametrize("size_field", [14, 30, 49])
def test_dump__v2_batch_smaller_than_its_header__finding_not_struct_error(
        tmp_path: Path, size_field: int, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A v2 size field below the 61-byte header is a typed finding in dump and verify."""
    from kafkalog.impl.records.memory_records import MemoryRecords as MR
    from kafkalog.model.values import Record

    data = bytearray(MR.with_records([Record(None, b"v", 0)]).to_bytes())
    struct.pack_into(">i", data, 8, size_field)
    segment = tmp_path / "t-0" / f"{FIRST}.log"
    segment.parent.mkdir()
    segment.write_bytes(bytes(data))
    for argv in (["dump", str(segment)], ["dump", "--deep", str(segment)],
                 ["verify", str(tmp_path)]):
        code, _, err = run(argv, monkeypatch, capsys)
        assert code == 1 and err == "", argv


@pytest.mark.parametrize("step", [
    '{"step":1,"action":"roll","args":null}',
    '{"step":1,"action":"roll","args":' + "[" * 100_000 + "]" * 100_000 + "}",
    '{"step":1,"action":"flush","args":{"offset":' + "9" * 5000 + "}}",
])
def test_replay__hostile_trace__one_line_exit_2_or_a_clean_run(
        tmp_path: Path, step: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """args null replays as no arguments; deep nesting and huge integers are one line, exit 2."""
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"kafkalog_trace":1,"config":{}}\n' + step + "\n")
    code, _, err = run(["replay", str(trace)], monkeypatch, capsys)
    if '"args":null' in step:
        assert code == 0 and err == ""
    else:
        assert code == 2 and len(err.splitlines()) == 1 and "TraceFormatError" in err


# --- 7. checkpoints as strict as Kafka's CheckpointReadBuffer ---


@pytest.mark.parametrize("text", [
    " 0\n1\n0 0\n",  # version line with leading whitespace
    "0_0\n1\n0 0\n",  # Python's int() accepts underscores; Integer.parseInt does not
    "0\n 1\n0 0\n",  # count with leading whitespace
    "0\n1\n 0 0\n",  # leading whitespace splits into an empty first field
    "0\x0b1\x0b0 0\x0b",  # \x0b is no line separator for BufferedReader
    "0\x0c1\x0c0 0\x0c",
    "0\n1\n0_0 5\n",
    "0\n1\n0 5_0\n",
    "0\n1\n\n",  # an empty entry line
    "0\n1\n0 0\n\n",  # a blank line is an entry line
])
def test_leader_epoch_checkpoint__lines_kafka_rejects__corrupt_checkpoint(
        tmp_path: Path, text: str) -> None:
    """Spec: FMT-35, ERR-43: parsing follows Kafka's CheckpointReadBuffer exactly."""
    from kafkalog.impl.checkpoint.checkpoint_file import LeaderEpochCheckpointFile
    from kafkalog.model.errors import CorruptCheckpointError

    path = tmp_path / "leader-epoch-checkpoint"
    path.write_text(text)
    with pytest.raises(CorruptCheckpointError):
        LeaderEpochCheckpointFile(FileSystem(), path, create_if_missing=False).read()


@pytest.mark.parametrize(("text", "entries"), [
    ("0\n1\n0 5\n", [(0, 5)]),
    ("0\r\n1\r\n0 5\r\n", [(0, 5)]),  # BufferedReader ends lines at \r\n and \r too
    ("0\n1\n0 5 \n", [(0, 5)]),  # trailing whitespace: Java's split drops trailing empties
    ("0\n1\n+0\t+5", [(0, 5)]),  # parseInt takes a sign; \t splits; no final newline needed
    ("0\n", []),
    ("", []),
])
def test_leader_epoch_checkpoint__lines_kafka_accepts__read(
        tmp_path: Path, text: str, entries: list[tuple[int, int]]) -> None:
    """Spec: FMT-35: what Kafka's reader accepts, kafkalog accepts with the same values."""
    from kafkalog.impl.checkpoint.checkpoint_file import LeaderEpochCheckpointFile

    path = tmp_path / "leader-epoch-checkpoint"
    path.write_text(text, newline="")
    read = LeaderEpochCheckpointFile(FileSystem(), path, create_if_missing=False).read()
    assert [(e.epoch, e.start_offset) for e in read] == entries


def test_verify__checkpoint_kafka_rejects__problem_not_exit_0(
        logs: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A version line " 0" makes verify report a corrupt checkpoint (exit 1)."""
    path = logs / "recovery-point-offset-checkpoint"
    path.write_text(" " + path.read_text())
    code, out, _ = run(["verify", str(logs)], monkeypatch, capsys)
    assert code == 1 and "corrupt_checkpoint" in out


# --- 8. the right answer for the target ---


def test_verify__partition_folder__verified_as_a_partition(
        logs: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """verify PARTITION_DIR checks that partition (here: a deleted index is a problem)."""
    (logs / "t-0" / f"{FIRST}.index").unlink()
    code, out, _ = run(["verify", str(logs / "t-0")], monkeypatch, capsys)
    assert code == 1 and "missing_index" in out and "1 partitions" in out
    assert "partition_dir_alone" in out
    assert verify_path(FileSystem(), logs / "t-0").partitions[0].segments


def test_verify__empty_directory__one_line_exit_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """An empty directory is no log directory: LogDirError, one line, exit 2."""
    (tmp_path / "empty").mkdir()
    code, out, err = run(["verify", str(tmp_path / "empty")], monkeypatch, capsys)
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and "LogDirError" in err


@pytest.mark.parametrize("name", [f"{FIRST}.log", f"{FIRST}.index", f"{FIRST}.timeindex"])
def test_dump__garbage_segment_files__exit_1_with_problems(
        tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """dump lists the problems of garbage and exits 1, like verify."""
    path = tmp_path / name
    path.write_bytes(os.urandom(97) + b"\xff" * 3)
    (tmp_path / f"{FIRST}.log").write_bytes(os.urandom(50)) if name != f"{FIRST}.log" else None
    code, out, err = run(["dump", str(path)], monkeypatch, capsys)
    assert code == 1 and "problem:" in out and err == ""


def test_memory_records__legacy_batch_read__header_fields_without_inflating() -> None:
    """A legacy wrapper's last offset and size come from its header, never its payload."""
    batch = next(MemoryRecords(legacy_gzip_bomb(41, 64 << 20)).batches())
    assert batch.last_offset == 41 and batch.size_in_bytes > 0


def test_verify__garbage_index_of_many_entries__stops_after_the_problem_budget(
        logs: Path) -> None:
    """A large garbage index yields at most MAX_INDEX_PROBLEMS problems and one stop note."""
    from kafkalog.impl.verify.verifier import MAX_INDEX_PROBLEMS

    (logs / "t-0" / f"{FIRST}.index").write_bytes(os.urandom(8 * 50_000))
    report = verify_log_dir(FileSystem(), logs)
    index_problems = [f for f in report.problems if f.path.endswith(f"{FIRST}.index")]
    assert MAX_INDEX_PROBLEMS <= len(index_problems) < MAX_INDEX_PROBLEMS + 4  # one entry: <= 4
    assert any(f.kind == "index_check_stopped" for f in report.all_findings())


def test_log_dir_open__segment_name_beyond_long_max__invalid_file_name(logs: Path) -> None:
    """Found by the fuzz suite: `99999999999999999999.log` is InvalidFileNameError, not a
    struct.error from packing its base offset."""
    from kafkalog.model.errors import InvalidFileNameError

    (logs / "t-0" / "99999999999999999999.log").write_bytes(b"\x93[\x8bj")
    with pytest.raises(InvalidFileNameError, match="99999999999999999999"):
        LogDir.open(FileSystem(), logs, CONFIG, MockTime(0))


def test_log_dir_open__sparse_time_index_of_1_5_gib__recovery_resets_it_in_constant_memory(
        logs: Path) -> None:
    """Found by the fuzz suite: resetting a huge corrupt index no longer zeroes it through one
    1.5 GiB bytes object; the file is cut and preallocated sparse again."""
    import tracemalloc

    index = logs / "t-0" / f"{FIRST}.timeindex"
    sparse_file(index, 3 << 29, b"\x01" * 12)
    (logs / CLEAN_SHUTDOWN_FILE_NAME).unlink()
    tracemalloc.start()
    try:
        LogDir.open(FileSystem(), logs, CONFIG, MockTime(0)).close()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20 and index.stat().st_size < 1 << 20
