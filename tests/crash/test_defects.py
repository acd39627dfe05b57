"""Five crash defects, each reproduced on real files (DUR/RCV/CRP/GAP rule IDs).

Each test builds the disk image the issue describes (through `RecordingFileSystem` or by editing
the files a dropped log left), loads it, and checks the crash-recovery properties of
`kafkalog.benchmarks.crash_checks` or the exact recovered offsets.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from kafkalog.benchmarks.crash_checks import TP, check_recovered
from kafkalog.benchmarks.crash_explore import CONFIG, Workload, record_workload
from kafkalog.conformance.broken.crash import patched
from kafkalog.conformance.crash.fault_fs import FaultModel, RecordingFileSystem
from kafkalog.impl.checkpoint.checkpoint_file import LeaderEpochCheckpointFile
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.load.log_dir import LogDir, read_root_checkpoints
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.time import MockTime
from kafkalog.impl.verify.verifier import verify_log_dir
from kafkalog.model.values import EpochEntry, Isolation, LogConfig, Record

NOW = 1_700_000_000_000


def batch(*values: bytes) -> MemoryRecords:
    return MemoryRecords.with_records([Record(None, v, 1_000) for v in values])


def open_dir(root: Path, config: LogConfig = CONFIG, fs: FileSystem | None = None) -> LogDir:
    return LogDir.open(fs or FileSystem(), root, config, MockTime(NOW))


def drop(log_dir: LogDir) -> None:
    """A crash of the process: handles closed, nothing flushed, no marker (FLT-1)."""
    for log in log_dir.logs.values():
        log.close_handlers()


def read_all(log_dir: LogDir) -> list[tuple[int, bytes]]:
    log, out = log_dir.log(TP), []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        batches = list(log.read(offset, 1 << 20, Isolation.LOG_END, True).records.batches())
        assert batches, f"hole at {offset} below LEO {log.log_end_offset}"
        for b in batches:
            b.ensure_valid()
            out += [(r.offset, r.value or b"") for r in b.records() if r.offset >= offset]
        offset = batches[-1].next_offset
    return out


def first_seed_keeping(fs: RecordingFileSystem, k: int, tmp: Path, name: str) -> Path:
    """The image after op k under power loss whose seed kept the directory entry `name`."""
    for seed in range(64):
        target = tmp / f"img-{seed}"
        fs.materialise(target, k, FaultModel.POWER_LOSS, seed)
        if (target / name).exists():
            return target
        import shutil

        shutil.rmtree(target)
    raise AssertionError(f"no seed keeps {name}")


def test_a_power_loss_right_after_a_roll_leaves_no_hole_before_the_new_segment(
        tmp_path: Path) -> None:
    """Defect 1 (GAP-5, DUR-19, CRP-6): the new segment's entry survives, the old data is not
    synced: recovery must end the log at the cut, never keep the later segment past a hole."""
    w = Workload("roll", tuple(("append", 2, 0) for _ in range(6)) + (("roll",),))
    rec = record_workload(w, tmp_path / "w")
    create = next(i for i, op in enumerate(rec.fs.journal())
                  if op.kind == "create" and op.path.endswith("00000000000000000012.log"))
    image = first_seed_keeping(rec.fs, create + 1, tmp_path, "t-0/00000000000000000012.log")
    assert check_recovered(image, CONFIG, rec.expectation_at(create + 1)) == []


def test_an_index_rebuild_that_cuts_a_tail_drops_the_later_segments(tmp_path: Path) -> None:
    """Defect 1 variant (GAP-5, RCV-5): a CRC flip past the recovery point plus a missing
    `.index`: the load-time rebuild cuts there, so the log must end there (LEO 4, not 12)."""
    root = tmp_path / "d"
    root.mkdir()
    with open_dir(root) as log_dir:
        log = log_dir.get_or_create_log(TP)
        for i in range(6):
            log.append_as_leader(batch(b"a%d" % i, b"b%d" % i), 0)
        log.roll()
        log.append_as_leader(batch(b"c", b"d"), 0)
    part = root / "t-0"
    (root / ".kafka_cleanshutdown").unlink()
    (root / "recovery-point-offset-checkpoint").write_text("0\n1\nt 0 0\n")
    first = part / "00000000000000000000.log"
    data = bytearray(first.read_bytes())
    sizes = [struct.unpack_from(">i", data, 8)[0] + 12]
    while sum(sizes) < len(data):
        sizes.append(struct.unpack_from(">i", data, sum(sizes) + 8)[0] + 12)
    flip = sum(sizes[:2]) + sizes[2] - 1  # last byte of the third batch (offsets 4-5)
    data[flip] ^= 0xFF
    first.write_bytes(bytes(data))
    (part / "00000000000000000000.index").unlink()
    log_dir = open_dir(root)
    try:
        assert log_dir.log(TP).log_end_offset == 4
        assert [o for o, _ in read_all(log_dir)] == [0, 1, 2, 3]
    finally:
        drop(log_dir)


def test_a_crash_after_truncation_and_new_appends_revalidates_from_the_cut(
        tmp_path: Path) -> None:
    """Defect 2 (DUR-26, CBUG-5): truncate_to(7) below a checkpointed recovery point 16 writes
    the recovery-point checkpoint, so a torn batch appended after the cut is cut by recovery."""
    root = tmp_path / "d"
    root.mkdir()
    config = LogConfig(segment_bytes=1 << 20, index_interval_bytes=90)
    log_dir = open_dir(root, config)
    log = log_dir.get_or_create_log(TP)
    for i in range(16):
        log.append_as_leader(batch(b"v%02d" % i), 0)
    log.flush()
    log_dir.checkpoint()
    log.truncate_to(7)
    assert read_root_checkpoints(FileSystem(), root).recovery_points[TP] == 7
    log.append_as_leader(batch(b"n07"), 1)
    log.append_as_leader(batch(b"n08"), 1)
    drop(log_dir)
    segment = root / "t-0" / "00000000000000000000.log"
    data = bytearray(segment.read_bytes())
    data[-3:] = b"\0\0\0"  # batch 8 torn by the power loss (FLT-3)
    segment.write_bytes(bytes(data))
    log_dir = open_dir(root, config)
    try:
        assert log_dir.log(TP).log_end_offset == 8
        assert read_all(log_dir)[-1] == (7, b"n07")
    finally:
        drop(log_dir)


def _power_loss_after(w: Workload, tmp: Path) -> list[str]:
    """Every problem of every seed's power-loss image right after the workload's last action."""
    rec = record_workload(w, tmp / "w")
    k = rec.fs.crash_points()
    problems = []
    for fault in (FaultModel.POWER_LOSS, FaultModel.POWER_LOSS_PREFIX,
                  FaultModel.POWER_LOSS_TORN):
        for seed in range(4):
            target = tmp / f"{fault.value}-{seed}"
            rec.fs.materialise(target, k, fault, seed)
            problems += check_recovered(target, CONFIG, rec.expectation_at(k))
    return problems


def test_a_returned_truncation_survives_power_loss(tmp_path: Path) -> None:
    """Defect 3 (GAP-1, CRP-15): once truncate_to returns, no power loss brings the cut batches
    back, in the active segment or in the later segments renamed `.deleted`."""
    w = Workload("t", tuple(("append", 2, 0) for _ in range(12))
                 + (("flush",), ("checkpoint",), ("truncate", 6)))
    assert _power_loss_after(w, tmp_path) == []


def test_segments_deleted_by_retention_stay_deleted_after_power_loss(tmp_path: Path) -> None:
    """Defect 3 (GAP-2, CRP-15): retention's `.deleted` renames are durable when it returns."""
    w = Workload("r", tuple(("append", 2, 0) for _ in range(12))
                 + (("flush",), ("hw",), ("delete_records", 16), ("retention",)))
    assert _power_loss_after(w, tmp_path) == []


def _loads(root: Path, times: int) -> list[tuple[int, int, tuple[EpochEntry, ...]]]:
    seen = []
    for _ in range(times):
        log_dir = open_dir(root)
        log = log_dir.log(TP)
        seen.append((log.log_start_offset, log.log_end_offset, log.state().epoch_entries))
        drop(log_dir)
    return seen


def test_recovery_is_idempotent_when_the_log_start_equals_the_log_end(tmp_path: Path) -> None:
    """Defect 4 (CRP-12, RCV-10): LSO = LEO = 10, checkpointed, crash: every reload agrees."""
    root = tmp_path / "d"
    root.mkdir()
    log_dir = open_dir(root)
    log = log_dir.get_or_create_log(TP)
    for i in range(5):
        log.append_as_leader(batch(b"a%d" % i, b"b%d" % i), 0)
    log.flush()
    log.update_high_watermark(10)
    log.maybe_increment_log_start_offset(10)
    log_dir.checkpoint()
    drop(log_dir)
    seen = _loads(root, 3)
    assert seen[0] == seen[1] == seen[2]


def test_recovery_is_idempotent_when_the_log_start_checkpoint_was_never_written(
        tmp_path: Path) -> None:
    """Defect 4 (CRP-12): a cache [(1, 10)] over epoch-0 data, no log-start checkpoint."""
    root = tmp_path / "d"
    root.mkdir()
    log_dir = open_dir(root)
    log = log_dir.get_or_create_log(TP)
    for i in range(5):
        log.append_as_leader(batch(b"a%d" % i, b"b%d" % i), 0)
    log.flush()
    drop(log_dir)
    LeaderEpochCheckpointFile(FileSystem(), root / "t-0" / "leader-epoch-checkpoint").write(
        [EpochEntry(1, 10)])
    seen = _loads(root, 3)
    assert seen[0] == seen[1] == seen[2]


def test_verify_accepts_an_empty_epoch_cache_when_every_batch_is_below_the_log_start(
        tmp_path: Path) -> None:
    """Defect 5 (EPO-7): no `epoch_missing` for batches wholly below the log start offset."""
    root = tmp_path / "d"
    root.mkdir()
    with open_dir(root) as log_dir:
        log = log_dir.get_or_create_log(TP)
        for i in range(5):
            log.append_as_leader(batch(b"a%d" % i, b"b%d" % i), 0)
        log.update_high_watermark(10)
        log.maybe_increment_log_start_offset(10)
    (root / "t-0" / "leader-epoch-checkpoint").write_text("0\n0\n")
    report = verify_log_dir(FileSystem(), root)
    assert [f.kind for p in report.partitions for f in p.findings
            if f.kind == "epoch_missing"] == []


def test_rolling_onto_the_empty_active_segment_never_leaves_the_log_without_it(
        tmp_path: Path) -> None:
    """Found by the crash checker (KL-CRASH, GAP-1): replacing the empty active segment at the
    same base (LL:494) must never expose a directory without its `.log`, or the loader restarts
    the log at the log-start checkpoint and offsets are reused (CRP-4, CRP-11)."""
    from kafkalog.benchmarks.crash_explore import WORKLOADS, run_exploration

    workload = next(w for w in WORKLOADS if w.name == "roll-empty-active")
    summary = run_exploration((workload,), seeds=(0, 1), stride=1)
    assert summary.examples == [] and summary.crash_points > 50


PUT_BACK = {
    "load_cut_keeps_later_segments":
        test_an_index_rebuild_that_cuts_a_tail_drops_the_later_segments,
    "no_checkpoint_after_truncation":
        test_a_crash_after_truncation_and_new_appends_revalidates_from_the_cut,
    "truncation_not_durable": test_a_returned_truncation_survives_power_loss,
    "verify_epoch_missing_below_log_start":
        test_verify_accepts_an_empty_epoch_cache_when_every_batch_is_below_the_log_start,
}


@pytest.mark.parametrize("name", sorted(PUT_BACK))
def test_each_defect_put_back_fails_its_own_test(name: str, tmp_path: Path) -> None:
    """Each of defects 1-5 reintroduced (conformance/broken/crash.py) breaks its test above."""
    with patched(name), pytest.raises(AssertionError):
        PUT_BACK[name](tmp_path)
