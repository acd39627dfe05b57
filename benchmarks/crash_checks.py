"""Crash-recovery properties checked on one recovered log directory (CRP of specs/sources.md).

`check_recovered(target, expect)` opens a materialised crash image twice (CRP-12: load twice =
load once) and returns the violated properties, each tagged with its CRP rule:

- CRP-4  persistence: every record below the durable frontier F is back, unchanged.
- CRP-5  nothing torn or invented: every batch read passes its CRC, and lies where it was written.
- CRP-6  valid prefix: the recovered records are a batch-aligned prefix of a version the log had
         (strict: the version before or after the action in progress, CRP-15 no resurrection).
- CRP-7/11 bounds: LSO <= HW <= LEO, recovery point <= LEO, LSO >= the durable LSO checkpoint.
- CRP-9  epoch cache: strictly increasing, starts below LEO, and (strict) each batch carries
         the epoch of the cache entry covering its base offset.
- CRP-10 layout: no `.swap`/`.cleaned` left, no overlapping segments, index entries point at
         the batch they name, time-index entries inside their segment.
- CRP-12 idempotence: a second load sees the same state and the same records.

Only the implementation's public surface is used (LogDir.open, Log.read, Log.state, segments'
indexes), so a broken implementation patched in by `conformance/broken/crash.py` is judged by
the same rules. An exception escaping the load is itself a violation (RCV-15: a crash image must
always load).
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kafkalog.conformance.crash.fault_fs import FaultModel, RecordingFileSystem
from kafkalog.impl.fs.file_system import FileHandle, FileSystem, PathLike
from kafkalog.impl.load.log_dir import LogDir, TopicPartition
from kafkalog.impl.log.log import Log
from kafkalog.impl.time import MockTime
from kafkalog.model.values import Isolation, LogConfig

TP = TopicPartition("t", 0)
Rec = tuple[int, bytes, int]  # (offset, value, leader epoch)


class _ScratchHandle(FileHandle):
    def fsync(self) -> None:
        """Checked images are scratch copies: their own durability is not under test."""


class ScratchFileSystem(FileSystem):
    """The real file system minus fsyncs, for loading throw-away crash images quickly."""

    handle_class = _ScratchHandle

    def fsync_dir(self, path: PathLike) -> None:
        return None


@dataclass(frozen=True)
class Version:
    """The log's content after one action: every record ever appended and still in the log."""

    records: tuple[Rec, ...]
    batch_ends: frozenset[int]  # next offsets at batch boundaries (CRP-6: cuts fall there)
    start: int = 0  # where an empty log starts (truncate_fully_and_start_at)

    @property
    def leo(self) -> int:
        return self.records[-1][0] + 1 if self.records else self.start


@dataclass(frozen=True)
class Expectation:
    """What a crash inside action i may recover to (the versions and durable frontier)."""

    versions: tuple[Version, ...]  # before (and, inside an action, after) it
    durable: int  # F: offsets below it must survive (CRP-4)
    durable_lso: int  # the last completed log-start checkpoint (CRP-11)


@dataclass(frozen=True)
class Observed:
    state: tuple[object, ...]
    records: tuple[Rec, ...]


def read_records(log: Log) -> tuple[list[Rec], list[str]]:
    """Every record from the LSO to the LEO through `Log.read`, checking CRCs (CRP-5)."""
    out: list[Rec] = []
    problems: list[str] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        info = log.read(offset, 1 << 20, Isolation.LOG_END, True)
        batches = list(info.records.batches())
        if not batches:
            problems.append(f"CRP-5: read({offset}) below LEO {log.log_end_offset} is empty")
            break
        for batch in batches:
            try:
                batch.ensure_valid()
            except Exception as error:  # a torn batch served by read
                problems.append(f"CRP-5: read({offset}) returned a torn batch: {error}")
                return out, problems
            if batch.last_offset < offset:
                problems.append(f"CRP-5: read({offset}) returned batch ending {batch.last_offset}")
                return out, problems
            for r in batch.records():
                if offset <= r.offset < log.log_end_offset:
                    out.append((r.offset, r.value or b"", batch.partition_leader_epoch))
        offset = max(offset, batches[-1].next_offset)
    return out, problems


def leftover_problems(partition_dir: Path) -> list[str]:
    """CRP-10, RCV-3, RCV-5: no `.swap`/`.cleaned` file and no index without its `.log`."""
    names = {p.name for p in partition_dir.iterdir()}
    leftovers = sorted(n for n in names if n.endswith((".swap", ".cleaned")))
    orphans = sorted(n for n in names if n.endswith((".index", ".timeindex", ".txnindex"))
                     and n.rsplit(".", 1)[0] + ".log" not in names)
    problems = []
    if leftovers:
        problems.append(f"CRP-10: leftovers after load {leftovers}")
    if orphans:
        problems.append(f"CRP-10: orphan index files kept by the load {orphans}")
    return problems


def _layout_problems(log: Log) -> list[str]:
    """CRP-10 and CRP-9 on the implementation's own structures."""
    problems: list[str] = []
    problems += leftover_problems(log.dir)
    previous_end = None
    for segment in log.segments:
        end = segment.read_next_offset()
        if previous_end is not None and segment.base_offset < previous_end:
            problems.append(f"CRP-10: segment {segment.base_offset} overlaps data up to "
                            f"{previous_end}")
        previous_end = max(end, previous_end or 0)
        try:
            segment.check()
        except AssertionError as error:
            problems.append(f"CRP-10: segment {segment.base_offset}: {error}")
        problems += _index_problems(segment, end)
    try:
        log.check()
    except AssertionError as error:
        problems.append(f"CRP-11: {error}")
    return problems


def _index_problems(segment: object, end: int) -> list[str]:
    """Each offset-index entry names the last offset of the batch at its position (FMT-14)."""
    problems: list[str] = []
    oi = segment.offset_index  # type: ignore[attr-defined]
    base = segment.base_offset  # type: ignore[attr-defined]
    for n in range(oi.entries):
        entry = oi.entry(n)
        batches = list(segment.log.batches(entry.position))[:1]  # type: ignore[attr-defined]
        if not batches or batches[0].last_offset != entry.offset:
            problems.append(f"CRP-10: segment {base} index entry {entry} names no batch there")
            break
    ti = segment.time_index  # type: ignore[attr-defined]
    for n in range(ti.entries):
        entry = ti.entry(n)
        if not base <= entry.offset < max(end, base + 1):
            problems.append(f"CRP-10: segment {base} time-index entry {entry} outside [{base}, "
                            f"{end})")
            break
    return problems


def _epoch_problems(log: Log, records: Sequence[Rec]) -> list[str]:
    """CRP-9: starts below LEO; every record's epoch is the cache's epoch at its offset.

    Records below the first entry are not judged: the epoch checkpoint's front trim (EPO-7) is
    durable at once while the log-start checkpoint lags it by design (DUR-16, GAP-12), so after
    a crash the log start may fall back below the first entry. An empty cache with records
    carrying epochs is judged (the epochs were lost).
    """
    problems: list[str] = []
    entries = log.state().epoch_entries
    leo = log.log_end_offset
    if any(e.start_offset >= leo for e in entries) and leo > log.log_start_offset:
        problems.append(f"CRP-9: epoch entry at or above LEO {leo}: {entries}")
    cache = log.leader_epoch_cache
    first = entries[0].start_offset if entries else None
    for offset, _, epoch in records:
        if epoch < 0 or (first is not None and offset < first):
            continue
        if cache.epoch_for_offset(offset) != epoch:
            problems.append(f"CRP-9: offset {offset} written in epoch {epoch}, cache says "
                            f"{cache.epoch_for_offset(offset)} ({entries})")
            break
    return problems


def _history_problems(log: Log, records: Sequence[Rec], expect: Expectation) -> list[str]:
    """CRP-4, CRP-6, CRP-15: a batch-aligned prefix of an allowed version, at least F long."""
    leo, lso = log.log_end_offset, log.log_start_offset
    reasons: list[str] = []
    for version in expect.versions:
        want = [r for r in version.records if lso <= r[0] < leo]
        if leo > version.leo:
            reasons.append(f"LEO {leo} beyond the version's {version.leo}")
        elif list(records) != want:
            diff = next((i for i, (a, b) in enumerate(zip(records, want, strict=False))
                         if a != b), min(len(records), len(want)))
            reasons.append(f"records differ at #{diff}: "
                           f"{records[diff] if diff < len(records) else None} vs "
                           f"{want[diff] if diff < len(want) else None}")
        elif leo != lso and leo not in version.batch_ends and leo != version.leo:
            reasons.append(f"LEO {leo} inside a batch")
        else:
            break
    else:
        return [f"CRP-6: not a prefix of any allowed version ({'; '.join(reasons)})"]
    problems = []
    if leo < expect.durable:
        problems.append(f"CRP-4: LEO {leo} below the durable frontier {expect.durable}")
    if lso < expect.durable_lso:
        problems.append(f"CRP-11: LSO {lso} below the durable log-start checkpoint "
                        f"{expect.durable_lso}")
    return problems


def _open_and_observe(root: Path, config: LogConfig, expect: Expectation | None,
                      full: bool = True, fs: FileSystem | None = None,
                      ) -> tuple[Observed | None, list[str]]:
    """Load the directory (unclean unless the marker survived), check it, drop it uncleanly."""
    try:
        log_dir = LogDir.open(fs or ScratchFileSystem(), root, config,
                              MockTime(1_700_000_000_000))
    except Exception as error:  # RCV-15: a crash image must always load
        return None, [f"RCV: load raised {type(error).__name__}: {error}"]
    try:
        log = log_dir.logs.get(TP)
        if log is None:
            lost = expect is not None and expect.durable > 0
            return Observed((), ()), [f"CRP-4: partition lost with durable frontier "
                                      f"{expect.durable}"] if lost and expect else []
        records, problems = read_records(log)
        if not full:  # a planted image: only the load, its leftovers and idempotence count
            problems = leftover_problems(log.dir)
        else:
            problems += _layout_problems(log) + _epoch_problems(log, records)
        if expect is not None and full:
            problems += _history_problems(log, records, expect)
        state = log.state()
        observed = Observed((state.log_start_offset, state.log_end_offset, state.segments,
                             state.epoch_entries, log.recovery_point <= state.log_end_offset),
                            tuple(records))
        return observed, problems
    except Exception as error:
        return None, [f"RCV: checking the recovered log raised {type(error).__name__}: {error}"]
    finally:
        for log in log_dir.logs.values():
            log.close_handlers()  # a crash right after loading: nothing more is written


def check_recovered(root: Path, config: LogConfig, expect: Expectation,
                    full: bool = True, recovery_crash_seed: int | None = None) -> list[str]:
    """Every violated property of the crash image at `root` (empty when it recovers well).

    The second load (CRP-12) reloads the same directory; with `recovery_crash_seed` the first
    load runs on a RecordingFileSystem and the second loads the image a crash at a seed-chosen
    point of the first load's own operations leaves, under a seed-chosen fault model: CRP-12's
    "a crash during recovery changes nothing" (strict: recovery's cuts are durable, GAP-4).
    `full=False` is for images with something planted that no crash makes (FLT-8 corruption):
    then only RCV (the load never raises), CRP-10 leftovers and CRP-12 idempotence apply.
    """
    recording = RecordingFileSystem(root) if recovery_crash_seed is not None else None
    first, problems = _open_and_observe(root, config, expect, full, recording)
    if first is None:
        return problems
    again_root, where = root, "second load"
    if recording is not None and recovery_crash_seed is not None:
        rng = random.Random(recovery_crash_seed)
        n = recording.crash_points()
        k = n if rng.random() < 0.5 else rng.randint(0, n)
        fault = rng.choice(list(FaultModel))
        again_root = root.with_name(root.name + "-rc")
        recording.materialise(again_root, k, fault, recovery_crash_seed)
        where = f"load after a {fault.value} crash at op {k}/{n} of recovery"
    try:
        second, again = _open_and_observe(again_root, config, None, full)
    finally:
        if again_root != root:
            shutil.rmtree(again_root, ignore_errors=True)
    if second is None:
        return problems + [f"CRP-12: {where}: {p}" for p in again]
    if second != first:
        problems.append(f"CRP-12: {where} differs: {first.state} then {second.state}")
    return problems


def phantom_problems(volatile: Path, durable: Path, config: LogConfig, fault: FaultModel,
                     seed: int) -> list[str]:
    """GAP-4, CRP-13 (strict): recover from a process crash's image `volatile` while the disk
    durably holds only `durable`, then lose power right after the load: every record the load
    served, and its epochs, must come back (recovery makes what it accepts durable)."""
    recording = RecordingFileSystem(volatile, durable_image=durable)
    first, problems = _open_and_observe(volatile, config, None, True, recording)
    if first is None or not first.state:
        return problems
    after = volatile.with_name(volatile.name + "-pl")
    recording.materialise(after, recording.crash_points(), fault, seed)
    try:
        second, again = _open_and_observe(after, config, None, True)
    finally:
        shutil.rmtree(after, ignore_errors=True)
    where = f"GAP-4: power loss ({fault.value}) after recovering a process crash"
    if second is None or not second.state:
        return problems + [f"{where}: {p}" for p in again] + [f"{where}: partition lost"]
    # Records and LEO: the data recovery served. Not the log start or the epochs' front: root
    # checkpoints regress to their last durable write by design (GAP-12, DUR-16).
    lso = first.state[0]
    served = [r for r in second.records if r[0] >= lso]
    if (served, second.state[1]) != (list(first.records), first.state[1]):
        problems.append(f"{where}: served {first.state} then {second.state}")
    return problems
