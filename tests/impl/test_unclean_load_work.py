"""An unclean load does no work the recovery pass redoes, with the same result.

The loader skips the load-time index check and rebuild of a segment the recovery pass rebuilds
anyway (`LogLoader._rebuilt_by_recovery_pass`) and writes the epoch checkpoint once per unclean
load (`LeaderEpochCache.defer_writes`). These tests load the same damaged directory both ways
(the reference with both shortcuts turned off) and compare the loaded state and every file.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from kafkalog.impl.checkpoint.epoch_cache import LeaderEpochCache
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.load.log_loader import LogLoader
from kafkalog.impl.log.log import Log
from kafkalog.impl.producer.producer_state_manager import AppendOrigin
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.segment.log_segment import LogSegment
from kafkalog.impl.time import MockTime
from kafkalog.model.values import LogConfig, Record

CONFIG = LogConfig(segment_bytes=1000, index_interval_bytes=100)
START_MS = 1_000_000


def _crashed_log(directory: Path) -> list[int]:
    """Idempotent producers, an aborted transaction and three leader epochs over about eight
    segments, then a crash (handles dropped, nothing flushed); returns the segment bases."""
    log = Log.open(FileSystem(), directory, CONFIG, MockTime(START_MS))
    sequences = {1: 0, 2: 0, 3: 0}
    for i in range(90):
        epoch = i // 30
        if i == 40:
            log.append_as_leader(MemoryRecords.with_records(
                [Record(None, b"in-txn", START_MS)], producer=(9, 0, 0), is_transactional=True),
                epoch)
        if i == 47:
            log.append_as_leader(MemoryRecords.end_txn_marker(9, 0, False, 1, START_MS), epoch,
                                 origin=AppendOrigin.COORDINATOR)
        pid = 1 + i % 3
        records = [Record(None, f"value-{i:03d}".encode(), START_MS + i)]
        log.append_as_leader(MemoryRecords.with_records(
            records, producer=(pid, 0, sequences[pid])), epoch)
        sequences[pid] += 1
    bases = [s.base_offset for s in log.segments]
    log.close_handlers()
    return bases


def _zero(path: Path) -> None:
    path.write_bytes(bytes(path.stat().st_size))


def _flip_last_batch_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF  # inside the last batch's records: a CRC mismatch cuts there
    path.write_bytes(bytes(data))


def _name(base: int, suffix: str) -> str:
    return f"{base:020d}{suffix}"


Damage = Callable[[Path, list[int]], None]

DAMAGES: dict[str, Damage] = {
    "zeroed index and bad tail above the recovery point": lambda d, b: (
        _zero(d / _name(b[3], ".index")), _flip_last_batch_byte(d / _name(b[3], ".log"))),
    "missing index above the recovery point": lambda d, b: (
        (d / _name(b[4], ".index")).unlink()),
    "missing time index and txn index above the recovery point": lambda d, b: (
        (d / _name(b[3], ".timeindex")).unlink(),
        (d / _name(b[3], ".txnindex")).unlink(missing_ok=True)),
    "garbage in the active segment's indexes": lambda d, b: (
        (d / _name(b[-1], ".index")).write_bytes(b"\x07" * 64),
        (d / _name(b[-1], ".timeindex")).write_bytes(b"\x05" * 36)),
    "zeroed index, then a bad batch in a later segment": lambda d, b: (
        _zero(d / _name(b[3], ".index")), _flip_last_batch_byte(d / _name(b[5], ".log"))),
    "bad batch below a segment with a missing index": lambda d, b: (
        _flip_last_batch_byte(d / _name(b[2], ".log")), (d / _name(b[4], ".index")).unlink()),
    "zeroed index below the recovery point, missing one above": lambda d, b: (
        _zero(d / _name(b[0], ".index")), (d / _name(b[5], ".index")).unlink()),
}


def _load(directory: Path, recovery_point: int) -> tuple[object, dict[str, bytes]]:
    log = Log.open(FileSystem(), directory, CONFIG, MockTime(START_MS),
                   recovery_point=recovery_point, had_clean_shutdown=False)
    try:
        log.check()
        state = log.state()
    finally:
        log.close_handlers()
    files = {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}
    return state, files


@pytest.fixture(scope="module")
def crashed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[int]]:
    """One crashed log for the module (building it costs its rolls' fsyncs); tests copy it."""
    directory = tmp_path_factory.mktemp("crashed") / "t-0"
    return directory, _crashed_log(directory)


@pytest.mark.parametrize("damage", sorted(DAMAGES))
@pytest.mark.parametrize("recovery_segment", [0, 1])
def test_unclean_load__without_redundant_rebuilds__same_state_and_files_as_with_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, crashed: tuple[Path, list[int]],
    damage: str, recovery_segment: int
) -> None:
    """Spec: KL-CRASH-5, KL-CRASH-7, REC-6, REC-8 — skipping work the pass redoes changes
    neither the loaded state nor any file (segments, indexes, snapshots, checkpoints)."""
    fast, reference = tmp_path / "fast" / "t-0", tmp_path / "reference" / "t-0"
    template, bases = crashed
    assert len(bases) >= 7
    shutil.copytree(template, fast)
    shutil.copytree(template, reference)
    for directory in (fast, reference):
        DAMAGES[damage](directory, bases)
    recovery_point = bases[recovery_segment] + 2 * recovery_segment
    recoveries: list[int] = []
    recover = LogLoader._recover_segment

    def counted(self: LogLoader, segment: LogSegment, epochs: bool = True,
                before_cut: object = None) -> int:
        recoveries.append(segment.base_offset)
        return recover(self, segment, epochs, before_cut)  # type: ignore[arg-type]

    monkeypatch.setattr(LogLoader, "_recover_segment", counted)
    fast_result = _load(fast, recovery_point)
    fast_recoveries, recoveries[:] = len(recoveries), []
    with monkeypatch.context() as m:
        m.setattr(LogLoader, "_rebuilt_by_recovery_pass", lambda self, base: False)
        m.setattr(LeaderEpochCache, "defer_writes", lambda self, deferred: None)
        reference_result = _load(reference, recovery_point)
    assert fast_recoveries < len(recoveries), "the reference rebuilds some segments twice"
    assert fast_result[0] == reference_result[0]
    assert fast_result[1].keys() == reference_result[1].keys()
    for name, data in fast_result[1].items():
        assert data == reference_result[1][name], name


class _CountingFileSystem(FileSystem):
    """Counts renames onto the leader-epoch checkpoint (each is one atomic write)."""

    def __init__(self) -> None:
        super().__init__()
        self.epoch_writes = 0

    def rename(self, src: object, dst: object) -> None:  # type: ignore[override]
        if str(dst).endswith("leader-epoch-checkpoint"):
            self.epoch_writes += 1
        super().rename(src, dst)  # type: ignore[arg-type]


def test_unclean_load__writes_the_epoch_checkpoint_once(tmp_path: Path) -> None:
    """Spec: GAP-4, CRP-12 — an unclean load re-derives three epochs and writes them once."""
    directory = tmp_path / "t-0"
    _crashed_log(directory)
    fs = _CountingFileSystem()
    log = Log.open(fs, directory, CONFIG, MockTime(START_MS), recovery_point=0,
                   had_clean_shutdown=False)
    entries = log.state().epoch_entries
    log.close_handlers()
    assert [e.epoch for e in entries] == [0, 1, 2]
    assert fs.epoch_writes == 1
    lines = (directory / "leader-epoch-checkpoint").read_text().split()
    assert lines[:2] == ["0", "3"] and [int(x) for x in lines[2::2]] == [0, 1, 2]


def test_unclean_load__without_the_durability_step__writes_every_epoch_change_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spec: GAP-4, DUR-25 — Kafka's way (no `_make_recovery_durable`: the kafka_durability
    and recovery_not_durable variants) keeps one checkpoint write per change, so its crash
    images stay Kafka's, and the file ends holding the loaded entries."""
    directory = tmp_path / "t-0"
    _crashed_log(directory)
    monkeypatch.setattr(LogLoader, "_make_recovery_durable", lambda self: None)
    fs = _CountingFileSystem()
    log = Log.open(fs, directory, CONFIG, MockTime(START_MS), recovery_point=0,
                   had_clean_shutdown=False)
    log.close_handlers()
    # truncate_from_end(0) clears the three entries, recovery re-adds each one, and
    # truncate_from_start(0) rewrites the first unchanged (EPO-7)
    assert fs.epoch_writes == 5
    lines = (directory / "leader-epoch-checkpoint").read_text().split()
    assert lines[:2] == ["0", "3"] and [int(x) for x in lines[2::2]] == [0, 1, 2]
