"""Unit tests of the read-only checks behind `kafkalog verify` (kafkalog.impl.verify.verifier)."""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

import pytest
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.load.log_dir import (
    RootCheckpoints,
    SegmentFileName,
    TopicPartition,
    classify_partition_file,
)
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.verify.verifier import (
    OFFSET_INDEX_ENTRY,
    TIME_INDEX_ENTRY,
    BatchFacts,
    SegmentScan,
    Severity,
    check_epochs,
    check_offset_index,
    check_partition_offsets,
    check_time_index,
    parse_index,
    scan_bytes,
    verify_log_dir,
)
from kafkalog.model.errors import InvalidFileNameError
from kafkalog.model.values import EpochEntry, Record

TP = TopicPartition("t", 0)


def batch_bytes(base: int, count: int = 1, epoch: int = 0, ts: int = 1000) -> bytes:
    records = [Record(None, b"value", ts + i) for i in range(count)]
    return MemoryRecords.with_records(records, base_offset=base,
                                      partition_leader_epoch=epoch).to_bytes()


def kinds(findings: list) -> list[str]:
    return [f.kind for f in findings]


def facts(*spec: tuple[int, int, int, int, int]) -> SegmentScan:
    """A scan from (position, size, base, last, max_ts) tuples; epoch 0, magic 2."""
    batches = tuple(BatchFacts(p, s, b, last, 2, 0, ts) for p, s, b, last, ts in spec)
    return SegmentScan("00.log", 0, sum(s for _, s, *_ in spec), batches, ())


# --- scanning ---


def test_scan_bytes__valid_batches__no_findings_and_facts_per_batch() -> None:
    """Spec: FMT-52"""
    data = batch_bytes(0, 2) + batch_bytes(2, 3)
    scan = scan_bytes(data, 0, "x.log")
    assert scan.findings == ()
    assert [(b.base_offset, b.last_offset) for b in scan.batches] == [(0, 1), (2, 4)]
    assert scan.next_offset == 5 and scan.valid_bytes == len(data)


def test_scan_bytes__flipped_record_byte__crc_mismatch_at_that_batch() -> None:
    """Spec: FMT-46"""
    first, second = batch_bytes(0), bytearray(batch_bytes(1))
    second[-1] ^= 0xFF
    scan = scan_bytes(first + bytes(second), 0, "x.log")
    assert kinds(list(scan.findings)) == ["crc_mismatch"]
    assert scan.findings[0].position == len(first)


def test_scan_bytes__partial_last_batch__torn_tail_reported_with_position() -> None:
    """Spec: FMT-52"""
    whole = batch_bytes(0)
    scan = scan_bytes(whole + batch_bytes(1)[:30], 0, "x.log")
    assert kinds(list(scan.findings)) == ["torn_tail"]
    assert scan.findings[0].position == len(whole) and len(scan.batches) == 1


def test_scan_bytes__zero_filled_tail__corrupt_batch_size() -> None:
    """Spec: FMT-52, ERR-19"""
    whole = batch_bytes(0)
    scan = scan_bytes(whole + bytes(100), 0, "x.log")
    assert kinds(list(scan.findings)) == ["corrupt_batch_size"]
    assert scan.findings[0].severity is Severity.PROBLEM


def test_scan_bytes__repeated_offsets__offsets_not_increasing() -> None:
    """Spec: LOG-2"""
    scan = scan_bytes(batch_bytes(0, 2) + batch_bytes(1), 0, "x.log")
    assert kinds(list(scan.findings)) == ["offsets_not_increasing"]


def test_scan_bytes__batch_below_segment_base__offset_outside_segment() -> None:
    """Spec: SEG-2"""
    scan = scan_bytes(batch_bytes(5), 10, "x.log")
    assert kinds(list(scan.findings)) == ["offset_outside_segment"]


def test_scan_bytes__deep_with_corrupt_records_but_valid_crc__corrupt_records() -> None:
    """Spec: FMT-49"""
    raw = bytearray(batch_bytes(0))
    struct.pack_into(">i", raw, 57, 3)  # claims 3 records but holds 1; fix the CRC after
    from crc32c import crc32c

    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    assert scan_bytes(bytes(raw), 0, "x.log").findings == ()
    assert kinds(list(scan_bytes(bytes(raw), 0, "x.log", deep=True).findings)) == [
        "corrupt_records"]


def legacy_message(offset: int, attributes: int, value: bytes) -> bytes:
    """One v1 message (FMT-51): CRC-32 over magic..end, null key."""
    body = struct.pack(">bbqi", 1, attributes, 1_000, -1) + struct.pack(">i", len(value)) + value
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(message)) + message


def test_scan_bytes__legacy_v1_messages__scanned_without_epoch_checks() -> None:
    """Spec: FMT-51: a one-message v1 set with value "hello" is 39 bytes and scans cleanly."""
    data = legacy_message(0, 0, b"hello") + legacy_message(1, 0, b"x")
    assert len(legacy_message(0, 0, b"hello")) == 39
    scan = scan_bytes(data, 0, "x.log", deep=True)
    assert scan.findings == () and [b.partition_leader_epoch for b in scan.batches] == [-1, -1]
    assert check_epochs([], [scan], 2, "c", clean=True) == []


def test_scan_bytes__undecodable_legacy_wrapper__corrupt_batch_then_continues() -> None:
    """Spec: FMT-51: the wrapper is reported at its position and the scan goes on."""
    first = legacy_message(0, 0, b"hello")
    data = first + legacy_message(1, 1, b"not gzip at all") + legacy_message(2, 0, b"x")
    scan = scan_bytes(data, 0, "x.log")
    assert [(f.kind, f.position) for f in scan.findings] == [("corrupt_batch", len(first))]
    assert [b.base_offset for b in scan.batches] == [0, 2]


# --- indexes ---


def test_parse_index__zero_tail_and_odd_length__reported_not_returned() -> None:
    """Spec: FMT-27, FMT-18"""
    data = OFFSET_INDEX_ENTRY.pack(3, 100) + bytes(16) + b"\x01\x02"
    entries, left_over, zeros = parse_index(data, OFFSET_INDEX_ENTRY)
    assert entries == [(3, 100)] and left_over == 2 and zeros == 2


def test_check_offset_index__entries_at_batch_starts_keyed_by_last_offset__clean() -> None:
    """Spec: FMT-12"""
    scan = facts((0, 100, 0, 4, 10), (100, 100, 5, 9, 20), (200, 100, 10, 14, 30))
    assert check_offset_index([(9, 100), (14, 200)], scan, "i") == []


def test_check_offset_index__position_inside_a_batch__not_batch_start() -> None:
    """Spec: FMT-12"""
    scan = facts((0, 100, 0, 4, 10), (100, 100, 5, 9, 20))
    assert kinds(check_offset_index([(9, 150)], scan, "i")) == ["index_entry_not_batch_start"]


def test_check_offset_index__key_below_batch_at_position__bug26_problem() -> None:
    """Spec: BUG-26"""
    scan = facts((0, 100, 0, 4, 10), (100, 100, 5, 9, 20))
    found = check_offset_index([(3, 100)], scan, "i")
    assert kinds(found) == ["index_key_outside_batch"] and found[0].rule == "BUG-26"


def test_check_offset_index__anchor_per_append_key__note_only() -> None:
    """Spec: SEG-4"""
    scan = facts((0, 100, 0, 4, 10), (100, 100, 5, 9, 20), (200, 100, 10, 14, 30))
    found = check_offset_index([(14, 100)], scan, "i")
    assert kinds(found) == ["index_key_not_batch_last_offset"]
    assert found[0].severity is Severity.NOTE


def test_check_offset_index__non_increasing_keys__problem_with_entry_position() -> None:
    """Spec: FMT-14"""
    scan = facts((0, 100, 0, 4, 10), (100, 100, 5, 9, 20), (200, 100, 10, 14, 30))
    found = check_offset_index([(14, 200), (9, 100)], scan, "i")
    assert "index_not_increasing" in kinds(found)
    assert next(f for f in found if f.kind == "index_not_increasing").position == 8


def test_check_time_index__running_max_entries__clean() -> None:
    """Spec: FMT-19"""
    scan = facts((0, 100, 0, 4, 50), (100, 100, 5, 9, 20), (200, 100, 10, 14, 70))
    assert check_time_index([(50, 4), (70, 14)], scan, "t") == []


def test_check_time_index__timestamp_not_the_running_max__mismatch() -> None:
    """Spec: FMT-19"""
    scan = facts((0, 100, 0, 4, 50), (100, 100, 5, 9, 20))
    assert kinds(check_time_index([(30, 9)], scan, "t")) == ["time_index_timestamp_mismatch"]


def test_check_time_index__entries_that_forgot_a_prefix_of_batches__one_note() -> None:
    """Spec: SEG-13: Kafka's lazily loaded max timestamp, forgotten by a truncation that emptied
    the time index after a reload, leaves entries that only know the batches after the cut."""
    scan = facts((0, 100, 0, 4, 50), (100, 100, 5, 9, 20))
    findings = check_time_index([(20, 9)], scan, "t", expect_final_entry=True)
    assert kinds(findings) == ["time_index_forgot_prefix"]
    assert all(f.severity.value == "note" for f in findings)


def test_check_time_index__equal_timestamps__not_increasing() -> None:
    """Spec: FMT-22"""
    scan = facts((0, 100, 0, 4, 50), (100, 100, 5, 9, 50))
    assert "time_index_not_increasing" in kinds(check_time_index([(50, 4), (50, 9)], scan, "t"))


def test_check_time_index__offset_past_segment_end__outside_segment() -> None:
    """Spec: FMT-25"""
    scan = facts((0, 100, 0, 4, 50))
    assert kinds(check_time_index([(40, 7)], scan, "t")) == ["time_index_entry_outside_segment"]
    assert kinds(check_time_index([(60, 7), (70, 3)], scan, "t")) == [
        "time_index_entry_outside_segment", "time_index_not_increasing",
        "time_index_entry_past_truncation"]
    assert kinds(check_time_index([(30, 3), (50, 4)], scan, "t")) == [
        "time_index_timestamp_mismatch"]


def test_check_time_index__trailing_entries_past_a_truncation__one_note() -> None:
    """Spec: KL-TRUNC-3: per-append indexing (before 3.9.2) pairs the max timestamp with its own
    record's offset and LogSegment.truncateTo cuts the time index at the target, not at the
    removed batch, so entries between the segment's new end and the target may stay."""
    scan = facts((0, 100, 0, 4, 50))
    findings = check_time_index([(50, 2), (60, 6), (70, 7)], scan, "t")
    assert kinds(findings) == ["time_index_entry_past_truncation"]
    assert findings[0].severity.value == "note"
    emptied = facts()
    assert kinds(check_time_index([(50, 0)], emptied, "t")) == ["time_index_entry_past_truncation"]
    # Later appends reached the remnant's offset: its timestamp stays above theirs, and it is
    # the segment's max so far, so a roll keeps it as the final entry.
    refilled = facts((0, 100, 0, 4, 40))
    assert kinds(check_time_index([(50, 2)], refilled, "t", expect_final_entry=True)) == [
        "time_index_entry_past_truncation", "time_index_entry_past_truncation"]


def test_check_time_index__remnant_in_a_hole_below_later_entries__a_note() -> None:
    """Spec: KL-TRUNC-3: a truncation to 9 removed the batch 8..9 the remnant (50, 8) points
    into and the log went on at 9; later appends added an entry above it, so the remnant is no
    longer the last entry, and it points into the hole between the kept data and the target.
    An entry pointing inside a batch with a wrong timestamp stays a problem."""
    scan = facts((0, 100, 9, 10, 60), (100, 100, 11, 12, 70))
    findings = check_time_index([(50, 8), (70, 12)], scan, "t")
    assert kinds(findings) == ["time_index_entry_past_truncation"]
    assert findings[0].severity.value == "note"
    assert kinds(check_time_index([(50, 10), (70, 12)], scan, "t")) == [
        "time_index_timestamp_mismatch"]


def test_check_time_index__rolled_segment_without_final_entry__problem() -> None:
    """Spec: SEG-16, SEG-17"""
    scan = facts((0, 100, 0, 4, 50), (100, 100, 5, 9, 70))
    assert check_time_index([(50, 4)], scan, "t") == []
    assert kinds(check_time_index([(50, 4)], scan, "t", expect_final_entry=True)) == [
        "time_index_missing_final_entry"]
    assert check_time_index([(50, 4), (70, 9)], scan, "t", expect_final_entry=True) == []


# --- epochs ---


def test_check_epochs__checkpoint_matches_batches__clean() -> None:
    """Spec: EPO-1"""
    scan = SegmentScan("l", 0, 300, (BatchFacts(0, 100, 0, 4, 2, 1, 0),
                                     BatchFacts(100, 100, 5, 9, 2, 3, 0)), ())
    entries = [EpochEntry(1, 0), EpochEntry(3, 5), EpochEntry(4, 10)]
    assert check_epochs(entries, [scan], 10, "c", clean=True) == []


def test_check_epochs__batch_epoch_differs__mismatch_names_the_batch() -> None:
    """Spec: EPO-1, SEG-15"""
    scan = SegmentScan("l", 0, 200, (BatchFacts(0, 100, 0, 4, 2, 1, 0),
                                     BatchFacts(100, 100, 5, 9, 2, 2, 0)), ())
    found = check_epochs([EpochEntry(1, 0)], [scan], 10, "c", clean=True)
    assert kinds(found) == ["epoch_mismatch"] and found[0].position == 100


def test_check_epochs__entry_beyond_leo__a_note_even_after_a_clean_close() -> None:
    """A leader's (epoch, LEO) may sit above the data after a mid-batch cut; load trims it.

    Found by a campaign (tests/regressions/KL-EPOCH-6-*). Spec: REC-13, KL-TRUNC-2
    """
    scan = SegmentScan("l", 0, 100, (BatchFacts(0, 100, 0, 4, 2, 1, 0),), ())
    entries = [EpochEntry(1, 0), EpochEntry(2, 9)]
    for clean in (True, False):
        finding = check_epochs(entries, [scan], 5, "c", clean=clean)[0]
        assert (finding.kind, finding.severity) == ("epoch_beyond_log_end", Severity.NOTE)


def test_check_epochs__decreasing_entries__not_increasing() -> None:
    """Spec: EPO-1"""
    assert "epochs_not_increasing" in kinds(
        check_epochs([EpochEntry(3, 0), EpochEntry(2, 5)], [], 10, "c", clean=True))


def test_check_epochs__batches_with_epochs_and_empty_checkpoint__epoch_missing() -> None:
    """Spec: SEG-15"""
    scan = SegmentScan("l", 0, 100, (BatchFacts(0, 100, 0, 4, 2, 0, 0),), ())
    assert kinds(check_epochs([], [scan], 5, "c", clean=True)) == ["epoch_missing"]


def test_check_epochs__batch_below_first_entry__skipped_as_truncated_from_start() -> None:
    """Spec: EPO-7"""
    scan = SegmentScan("l", 0, 200, (BatchFacts(0, 100, 0, 4, 2, 0, 0),
                                     BatchFacts(100, 100, 5, 9, 2, 1, 0)), ())
    assert check_epochs([EpochEntry(1, 5)], [scan], 10, "c", clean=True) == []


# --- checkpoints vs partitions ---


def test_check_partition_offsets__clean_recovery_point_behind_leo__problem() -> None:
    """Spec: REC-19"""
    cps = RootCheckpoints({TP: 5}, {}, {TP: 10})
    assert kinds(check_partition_offsets(TP, cps, 0, 10, "r", clean=True)) == [
        "recovery_point_mismatch"]


def test_check_partition_offsets__unclean_recovery_point_behind_leo__no_finding() -> None:
    """Spec: REC-10"""
    cps = RootCheckpoints({TP: 5}, {}, {TP: 10})
    assert check_partition_offsets(TP, cps, 0, 10, "r", clean=False) == []


def test_check_partition_offsets__hw_beyond_leo__problem_clean_note_unclean() -> None:
    """Spec: LOG-2, LOG-5"""
    cps = RootCheckpoints({TP: 10}, {}, {TP: 12})
    assert [f.severity for f in check_partition_offsets(TP, cps, 0, 10, "r", True)] == [
        Severity.PROBLEM]
    assert [f.severity for f in check_partition_offsets(TP, cps, 0, 10, "r", False)] == [
        Severity.NOTE]


def test_check_partition_offsets__missing_entries__notes_about_defaults() -> None:
    """Spec: FMT-41"""
    found = check_partition_offsets(TP, RootCheckpoints({}, {}, {}), 0, 10, "r", clean=True)
    assert kinds(found) == ["no_recovery_point", "no_high_watermark"]
    assert {f.severity for f in found} == {Severity.NOTE}


# --- file names ---


@pytest.mark.parametrize(("name", "expected"), [
    ("00000000000000000042.log", SegmentFileName(42, ".log", "")),
    ("00000000000000000042.timeindex.deleted", SegmentFileName(42, ".timeindex", ".deleted")),
    ("00000000000000000007.snapshot", SegmentFileName(7, ".snapshot", "")),
    ("leader-epoch-checkpoint", "known"),
    ("00000000000000000712-0000000006.checkpoint", "known"),
    ("notes.txt", "unknown"),
])
def test_classify_partition_file__kafka_names__classified(name: str, expected: object) -> None:
    """Spec: FMT-4, FMT-6, FMT-8"""
    assert classify_partition_file(name) == expected


@pytest.mark.parametrize("name", ["42.log", "foo.index", "0000000000000000004x.timeindex"])
def test_classify_partition_file__segment_suffix_without_20_digits__typed_error(
        name: str) -> None:
    """Spec: FMT-5, ERR-48"""
    result = classify_partition_file(name)
    assert isinstance(result, InvalidFileNameError) and result.where == name


# --- a whole directory on disk ---


def write_partition(root: Path, *, with_indexes: bool = True) -> Path:
    """A clean single-segment partition `t-0` of 3 batches, epochs checkpointed, root files."""
    part = root / "t-0"
    part.mkdir(parents=True)
    log = batch_bytes(0, 2, epoch=1, ts=100) + batch_bytes(2, 2, epoch=1, ts=300)
    (part / "00000000000000000000.log").write_bytes(log)
    if with_indexes:
        (part / "00000000000000000000.index").write_bytes(b"")
        (part / "00000000000000000000.timeindex").write_bytes(TIME_INDEX_ENTRY.pack(301, 3))
    (part / "leader-epoch-checkpoint").write_text("0\n1\n1 0\n")
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        (root / name).write_text("0\n1\nt 0 4\n")
    (root / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":1}')
    return part


def tree_state(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


def test_verify_log_dir__consistent_hand_written_dir__no_findings(tmp_path: Path) -> None:
    """A directory written to Kafka's rules verifies without any finding."""
    write_partition(tmp_path)
    report = verify_log_dir(FileSystem(), tmp_path, deep=True)
    assert report.all_findings() == [] and report.clean_shutdown


def test_verify_log_dir__corruptions__each_reported_as_problem_naming_file(
        tmp_path: Path) -> None:
    """Spec: FMT-46, FMT-12, FMT-5, REC-6"""
    part = write_partition(tmp_path)
    log = part / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[-1] ^= 0x55
    log.write_bytes(bytes(data))
    (part / "00000000000000000000.index").write_bytes(OFFSET_INDEX_ENTRY.pack(3, 7))
    (part / "123.log").write_bytes(b"")
    problems = verify_log_dir(FileSystem(), tmp_path).problems
    assert sorted(kinds(problems)) == ["crc_mismatch", "index_entry_not_batch_start",
                                       "invalid_file_name"]
    assert {Path(p.path).name for p in problems} == {
        "00000000000000000000.log", "00000000000000000000.index", "123.log"}


def test_verify_log_dir__missing_indexes__one_problem_per_missing_file(tmp_path: Path) -> None:
    """Spec: REC-6"""
    write_partition(tmp_path, with_indexes=False)
    problems = verify_log_dir(FileSystem(), tmp_path).problems
    assert sorted(Path(p.path).name for p in problems) == [
        "00000000000000000000.index", "00000000000000000000.timeindex"]


def test_verify_log_dir__corrupt_hw_checkpoint__reported_rest_still_checked(
        tmp_path: Path) -> None:
    """Spec: FMT-37"""
    write_partition(tmp_path)
    (tmp_path / "replication-offset-checkpoint").write_text("0\n2\nt 0 4\n")
    report = verify_log_dir(FileSystem(), tmp_path)
    assert kinds(report.problems) == ["corrupt_checkpoint"]
    assert len(report.partitions) == 1


def test_verify_log_dir__never_writes__tree_unchanged(tmp_path: Path) -> None:
    """verify opens nothing for writing: sizes and mtimes are identical afterwards."""
    write_partition(tmp_path)
    (tmp_path / "00000000000000000000.log.deleted").write_bytes(b"x")
    os.utime(tmp_path / "t-0" / "00000000000000000000.log", ns=(10**18, 10**18))
    before = tree_state(tmp_path)
    verify_log_dir(FileSystem(), tmp_path, deep=True)
    assert tree_state(tmp_path) == before


def test_check_partition_offsets__recovery_point_above_the_data_after_a_truncation__only_a_note(
) -> None:
    """Spec: REC-19"""
    # truncate_to(1) cut a batch holding offsets 0-1, so the LEO (and the clean close's
    # checkpoint) is 1 while the data ends at 0 (KL-TRUNC-2); load resets it to the LEO.
    cps = RootCheckpoints({TP: 1}, {}, {TP: 1})
    findings = check_partition_offsets(TP, cps, 0, 0, "r", clean=True)
    assert [f.kind for f in findings] == ["recovery_point_above_data", "high_watermark_above_data"]
    assert all(f.severity.value == "note" for f in findings)


def test_check_time_index__rolled_segment_with_no_entry_at_all__only_a_note() -> None:
    """Spec: SEG-13"""
    scan = facts((0, 100, 0, 4, 50))
    findings = check_time_index([], scan, "t", expect_final_entry=True)
    assert kinds(findings) == ["time_index_empty"]
    assert all(f.severity.value == "note" for f in findings)



def test_parse_index__one_entry_file_of_zeros__is_a_real_entry_not_zero_fill() -> None:
    """Spec: FMT-22, FMT-26"""
    entries, left_over, zeros = parse_index(bytes(TIME_INDEX_ENTRY.size), TIME_INDEX_ENTRY)
    assert (entries, left_over, zeros) == ([(0, 0)], 0, 0)
    entries, _, zeros = parse_index(bytes(3 * TIME_INDEX_ENTRY.size), TIME_INDEX_ENTRY)
    assert (entries, zeros) == ([], 3)


def test_check_partition_offsets__log_start_above_data_but_reached_by_the_leo__only_a_note(
) -> None:
    """Spec: REC-9, KL-RELOAD-3"""
    # LSO 2, then truncate_to(3) cut the batch 0-4: the data ends at 0, the clean close's LEO
    # (recovery point) is 3 >= the LSO; the load drops the data and starts empty at 2.
    cps = RootCheckpoints({TP: 3}, {TP: 2}, {TP: 3})
    found = [f for f in check_partition_offsets(TP, cps, 2, 0, "r", clean=True)
             if f.kind == "log_start_beyond_log_end"]
    assert [f.severity for f in found] == [Severity.NOTE]


def test_check_partition_offsets__log_start_above_the_checkpointed_leo__problem() -> None:
    """Spec: REC-9, LOG-2"""
    cps = RootCheckpoints({TP: 1}, {TP: 2}, {TP: 1})
    found = [f for f in check_partition_offsets(TP, cps, 2, 0, "r", clean=True)
             if f.kind == "log_start_beyond_log_end"]
    assert [f.severity for f in found] == [Severity.PROBLEM]
