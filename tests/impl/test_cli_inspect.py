"""`kafkalog dump` and `kafkalog verify` via the real entry point: output, exit codes, errors."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest

from kafkalog.cli.main import main

K37 = "k3.7-kraft-clean-txn"
KSQL = f"{K37}/_confluent-ksql-default__command_topic-0"


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


def copy_fixture(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    for path in [dst, *dst.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return dst


# --- dump ---


def test_dump_log__deep__batches_records_and_commit_marker(
        kafka_fixtures: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A transactional batch and its COMMIT control batch, kafka-dump-log style."""
    path = kafka_fixtures / KSQL / "00000000000000000000.log"
    code, out, _ = run(["dump", str(path), "--deep"], monkeypatch, capsys)
    lines = out.splitlines()
    assert code == 0 and lines[1] == "Log starting offset: 0"
    assert lines[2].startswith("baseOffset: 0 lastOffset: 0 count: 1 baseSequence: 0")
    assert "isTransactional: true" in lines[2] and "isvalid: true" in lines[2]
    assert "size: 7525 magic: 2 compresscodec: none" in lines[2]
    assert lines[3].startswith("| offset: 0 CreateTime: 1728561475261 keySize: 37")
    assert "isControl: true position: 7525" in lines[4]
    assert "endTxnMarker: COMMIT coordinatorEpoch: 0" in lines[5]


def test_dump_log__json__one_document_with_every_batch(
        kafka_fixtures: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """--json: machine-readable batches; snappy records decoded with --deep."""
    path = kafka_fixtures / "k2.8-zk-unclean-snappy/some-topic-0/00000000000000000000.log"
    code, out, _ = run(["dump", str(path), "--json", "--deep"], monkeypatch, capsys)
    dumped = json.loads(out)
    assert code == 0 and dumped["type"] == "log" and len(dumped["batches"]) == 9
    assert {b["compression"] for b in dumped["batches"]} == {"snappy"}
    assert [r["header_keys"] for r in dumped["batches"][0]["records"]] == [["__Key_TypeId__"]]
    assert dumped["findings"] == []


def test_dump_index__entries_checked_against_log(
        kafka_fixtures: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Spec: FMT-10, FMT-12: offsets are absolute; no consistency finding on real data."""
    path = kafka_fixtures / "k3.7-kraft-clean-txn/__consumer_offsets-29/00000000000000000000.index"
    code, out, _ = run(["dump", str(path)], monkeypatch, capsys)
    assert code == 0
    assert out.splitlines()[1:] == ["offset: 12 position: 4395", "offset: 26 position: 8556"]


def test_dump_timeindex__json_entries(kafka_fixtures: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Spec: FMT-19"""
    path = kafka_fixtures / KSQL / "00000000000000000000.timeindex"
    code, out, _ = run(["dump", str(path), "--json"], monkeypatch, capsys)
    assert code == 0 and json.loads(out)["entries"] == [{"timestamp": 1728561475581, "offset": 1}]


def test_dump_checkpoints__epoch_and_offset_files(
        kafka_fixtures: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Spec: FMT-39, FMT-40"""
    epochs = kafka_fixtures / "k3.6-kraft-unclean-metadata/__cluster_metadata-0"
    code, out, _ = run(["dump", str(epochs / "leader-epoch-checkpoint")], monkeypatch, capsys)
    assert code == 0 and out.splitlines()[1:] == [
        "epoch: 1 startOffset: 0", "epoch: 2 startOffset: 298", "epoch: 3 startOffset: 354",
        "epoch: 5 startOffset: 711", "epoch: 6 startOffset: 712"]
    root = kafka_fixtures / "k0.11-zk-clean/recovery-point-offset-checkpoint"
    code, out, _ = run(["dump", str(root)], monkeypatch, capsys)
    assert code == 0 and "mac_test-0 offset: 78" in out.splitlines()


def test_dump_partition_dir__segments_epochs_and_missing_index_notes(
        kafka_fixtures: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A partition directory: segment summaries, epochs and the consistency findings."""
    path = kafka_fixtures / "k2.7-zk-unclean-compacted/__consumer_offsets-39"
    code, out, _ = run(["dump", str(path)], monkeypatch, capsys)
    lines = out.splitlines()
    assert code == 1  # it lists problems (the missing indexes), like verify
    assert "segment baseOffset: 18 size: 148 batches: 1 nextOffset: 20" in lines
    assert sum(line.startswith("problem: missing_index") for line in lines) == 2


def test_dump__missing_path__one_line_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A user's mistake is one line on stderr and exit status 2, never a traceback."""
    code, out, err = run(["dump", str(tmp_path / "nope.log")], monkeypatch, capsys)
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert err.startswith("kafkalog: LogDirError:") and "nope.log" in err


@pytest.mark.parametrize(("name", "content", "error"), [
    ("leader-epoch-checkpoint", "0\n2\n1 0\n", "CorruptCheckpointError"),
    ("12.log", "", "InvalidFileNameError"),
    ("notes.txt", "x", "LogDirError"),
])
def test_dump__bad_file__typed_one_line_exit_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        name: str, content: str, error: str) -> None:
    """Spec: ERR-43, ERR-48: malformed input names the error class and the file."""
    path = tmp_path / name
    path.write_text(content)
    code, _, err = run(["dump", str(path)], monkeypatch, capsys)
    assert code == 2 and len(err.splitlines()) == 1
    assert err.startswith(f"kafkalog: {error}:") and name in err


def test_dump_log__garbage_file__reported_not_crashed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Spec: FMT-52: random bytes are a finding with its position, exit 1 (a problem listed)."""
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(range(7, 250)))
    code, out, _ = run(["dump", str(path), "--json"], monkeypatch, capsys)
    dumped = json.loads(out)
    assert code == 1 and dumped["batches"] == []
    assert [f["kind"] for f in dumped["findings"]] in (["corrupt_batch_size"], ["torn_tail"])


# --- verify ---


def test_verify__clean_fixture__exit_0_with_summary(
        kafka_fixtures: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """verify exits 0 when there is no problem."""
    code, out, _ = run(["verify", str(kafka_fixtures / K37)], monkeypatch, capsys)
    assert code == 0 and out.splitlines()[-1].endswith("4 partitions, 4 segments, 0 problems, "
                                                       "1 notes")


def test_verify__unclean_fixture__exit_1_and_json_lists_problems(
        kafka_fixtures: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """verify exits 1 on problems; --json carries every finding."""
    path = kafka_fixtures / "k3.9-zk-unclean-gzip-epochs"
    code, out, _ = run(["verify", str(path), "--json"], monkeypatch, capsys)
    report = json.loads(out)
    assert code == 1 and report["problems"] == 2
    assert {f["kind"] for f in report["findings"]} == {"missing_index"}


def test_verify__corrupted_copy__crc_problem_named_with_position(
        kafka_fixtures: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Spec: FMT-46: a flipped byte in a real batch is found, with file and byte position."""
    copy = copy_fixture(kafka_fixtures / K37, tmp_path / K37)
    log = copy / "_schemas-0" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[70] ^= 0x01  # inside the first batch's record, past its 61-byte header
    log.write_bytes(bytes(data))
    code, out, _ = run(["verify", str(copy)], monkeypatch, capsys)
    problems = [line for line in out.splitlines() if line.startswith("problem:")]
    assert code == 1 and len(problems) == 1
    assert problems[0].startswith(f"problem: crc_mismatch: {log}@")


def test_verify__not_a_directory__one_line_exit_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """An unreadable or missing log dir is a typed one-line error."""
    code, out, err = run(["verify", str(tmp_path / "absent")], monkeypatch, capsys)
    assert code == 2 and out == "" and err.startswith("kafkalog: LogDirError:")


def test_dump_log_dir__one_line_per_partition(kafka_fixtures: Path,
                                              monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A whole log directory: the marker, then each partition's segments, LEO and epochs."""
    code, out, _ = run(["dump", str(kafka_fixtures / "k0.11-zk-clean")], monkeypatch, capsys)
    lines = out.splitlines()
    assert code == 0 and lines[1] == "clean shutdown marker: true"
    assert "mac_test-0: segments: 1 logEndOffset: 78 epochs: 0" in lines
    assert "test0-2: segments: 1 logEndOffset: 11 epochs: 1" in lines


def test_verify__deep_json__records_decoded_clean(kafka_fixtures: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """--deep also decodes every record (gzip batches here) and still finds nothing new."""
    path = kafka_fixtures / "k3.9-zk-unclean-gzip-epochs"
    code, out, _ = run(["verify", str(path), "--deep", "--json"], monkeypatch, capsys)
    report = json.loads(out)
    assert code == 1 and report["partitions"] == 1 and report["problems"] == 2
    assert not report["clean_shutdown"]


def test_dump__deleted_suffix_segment_and_deep_partition(
        kafka_fixtures: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Spec: FMT-6: a `.log.deleted` file dumps like a `.log`; --deep on a partition dumps its
    batches per segment."""
    source = kafka_fixtures / "k0.11-zk-clean/test0-2/00000000000000000000.log"
    deleted = tmp_path / "00000000000000000000.log.deleted"
    deleted.write_bytes(source.read_bytes())
    code, out, _ = run(["dump", str(deleted), "--json"], monkeypatch, capsys)
    assert code == 0 and len(json.loads(out)["batches"]) == 10
    code, out, _ = run(["dump", str(source.parent), "--deep", "--json"], monkeypatch, capsys)
    segment = json.loads(out)["segments"][0]
    assert code == 0 and sum(len(b["records"]) for b in segment["dump"]) == 11


def test_dump__log_dir_whose_name_looks_like_a_partition__dumped_as_log_dir(
        kafka_fixtures: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A log dir called `data-1` holds partition directories, so it is not a partition."""
    copy = copy_fixture(kafka_fixtures / "k3.9-zk-unclean-gzip-epochs", tmp_path / "data-1")
    code, out, _ = run(["dump", str(copy), "--json"], monkeypatch, capsys)
    assert code in (0, 1) and json.loads(out)["type"] == "log-dir"
