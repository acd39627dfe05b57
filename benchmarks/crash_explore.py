"""The power-loss explorer: every crash point of a workload x every fault model x seeds.

A workload (appends, rolls, flushes, truncations, DeleteRecords, retention, checkpoints, deferred
deletions, clean close and reopen) runs once on a `RecordingFileSystem`. After each action the
explorer records what the log held (a `Version`), the durable frontier F (DUR-10: raised by a
completed flush or roll flush or clean close, lowered by a truncation, strict: CRP-15) and the
last durable log-start checkpoint. Then, for every crash point k and fault model and seed, it
materialises the crash image (FLT-1..FLT-7), opens it and checks the CRP properties of
`crash_checks` against the versions allowed at k: the one after the last completed action, or,
for a crash inside an action, the one after it too. Each image is also reloaded after a seeded
crash of its own recovery (CRP-12), and each process-crash image is recovered and then hit by a
power loss (GAP-4: what recovery served must survive).

`run_exploration(workloads, seeds)` returns a summary (crash points, states checked, violations
per fault model and per rule, idempotence failures, crash points per minute per core, measured
in CPU time of this single-threaded process); it is what
`python -m kafkalog.benchmarks.crash_explore [--stride N --seeds 0,1,2 --broken NAME]` prints and
what a CLI command can call. The full default run (~900 crash points, ~10,000 states) takes about
35 CPU-seconds; tests/crash/test_explorer.py runs a slice. A broken implementation
(conformance/broken/crash.py) is explored by passing `patch=`, a context manager installing it.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalog.conformance.crash.fault_fs import FaultModel, RecordingFileSystem
from kafkalog.impl.load.log_dir import LogDir
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.time import MockTime
from kafkalog.model.values import LogConfig, Record

from .crash_checks import TP, Expectation, Version, check_recovered, phantom_problems

CONFIG = LogConfig(segment_bytes=420, index_interval_bytes=90, segment_index_bytes=1024,
                   file_delete_delay_ms=1_000, retention_ms=-1)

Action = tuple[Any, ...]  # ("append", n_records, epoch) | ("roll",) | ("flush",) | ...


@dataclass(frozen=True)
class Workload:
    name: str
    actions: tuple[Action, ...]


def _appends(n: int, epoch: int, size: int = 2) -> tuple[Action, ...]:
    return tuple(("append", size, epoch) for _ in range(n))


# Small workloads, each aimed at one family of crash windows (FLT-11: bounded workloads).
WORKLOADS: tuple[Workload, ...] = (
    Workload("roll-and-flush", _appends(6, 0) + (("flush",),) + _appends(5, 0) + (("roll",),)
             + _appends(3, 1)),
    Workload("truncate-after-flush", _appends(9, 0) + (("flush",), ("checkpoint",),
             ("truncate", 7)) + _appends(2, 1) + (("flush",),) + _appends(2, 1)),
    Workload("truncate-across-segments", _appends(12, 0) + (("flush",), ("truncate", 5),
             ("checkpoint",)) + _appends(4, 2)),
    Workload("retention", _appends(12, 0) + (("flush",), ("hw",), ("delete_records", 10),
             ("retention",), ("checkpoint",), ("tick", 2_000)) + _appends(2, 1)),
    Workload("close-reopen", _appends(5, 0) + (("close_reopen",),) + _appends(4, 1)
             + (("truncate", 11),) + _appends(2, 2) + (("close_reopen",),)),
    Workload("empty-at-log-start", _appends(5, 0) + (("flush",), ("hw",), ("delete_records", 10),
             ("retention",), ("checkpoint",), ("close_reopen",)) + _appends(1, 1)),
    Workload("truncate-fully", _appends(8, 0) + (("flush",), ("checkpoint",),
             ("truncate_fully", 30)) + _appends(3, 1) + (("roll",),) + _appends(2, 1)),
    Workload("leader-epochs", _appends(3, 0) + (("assign_epoch", 3),) + _appends(4, 3)
             + (("roll",), ("truncate", 9), ("assign_epoch", 5)) + _appends(3, 5)
             + (("flush",),) + _appends(2, 5)),
    # A roll onto the empty active segment replaces it at the same base (LL:494).
    # Retention leaves only the empty active segment; the roll then replaces it (LL:494).
    Workload("roll-empty-active", _appends(2, 0) + (("flush",), ("hw",), ("delete_records", 4),
             ("roll",), ("retention",), ("roll",), ("tick", 2_000)) + _appends(2, 1)),
)


@dataclass
class _Recorder:
    """Runs a workload and notes, after each action, the journal mark and what is durable."""

    root: Path
    config: LogConfig
    fs: RecordingFileSystem = field(init=False)
    clock: MockTime = field(default_factory=lambda: MockTime(1_700_000_000_000))
    records: list[tuple[int, bytes, int]] = field(default_factory=list)
    batch_ends: set[int] = field(default_factory=set)
    durable: int = 0
    durable_lso: int = 0
    marks: list[int] = field(default_factory=list)
    expectations: list[tuple[Version, int, int, int]] = field(default_factory=list)
    counter: int = 0
    start: int = 0
    floor_during: int | None = None  # durable floor inside the action, when not its result's

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.fs = RecordingFileSystem(self.root)
        self._note()  # crash points inside the set-up expect the empty log
        self.log_dir = LogDir.open(self.fs, self.root, self.config, self.clock)
        self.log = self.log_dir.get_or_create_log(TP)
        self._note()

    def _version(self) -> Version:
        return Version(tuple(self.records), frozenset(self.batch_ends), self.start)

    def _note(self) -> None:
        self.marks.append(self.fs.mark())
        during = self.durable if self.floor_during is None else self.floor_during
        self.floor_during = None
        self.expectations.append((self._version(), self.durable, self.durable_lso, during))

    def run(self, action: Action) -> None:
        getattr(self, "_do_" + action[0])(*action[1:])
        self._note()

    def _do_append(self, n: int, epoch: int) -> None:
        base = self.log.log_end_offset
        values = [b"r%05d" % (self.counter + i) for i in range(n)]
        self.counter += n
        batch = MemoryRecords.with_records([Record(None, v, 1_000 + base + i)
                                            for i, v in enumerate(values)])
        self.log.append_as_leader(batch, epoch)
        self.records += [(base + i, v, epoch) for i, v in enumerate(values)]
        self.batch_ends.add(base + n)

    def _do_roll(self) -> None:
        self.log.roll()
        self.durable = max(self.durable, self.log.recovery_point)

    def _do_flush(self) -> None:
        self.log.flush()
        self.durable = self.log.log_end_offset

    def _do_truncate(self, target: int) -> None:
        """A cut inside a batch removes the whole batch (SEG-13); the LEO is still `target`."""
        self.log.truncate_to(target)
        kept_ends = {e for e in self.batch_ends if e <= target}
        data_end = max(kept_ends, default=0)
        self.records = [r for r in self.records if r[0] < data_end]
        self.batch_ends = kept_ends
        self.durable = min(self.durable, data_end)

    def _do_truncate_fully(self, offset: int) -> None:
        """LOG-41: everything goes, the log restarts empty at `offset` (strict: durably)."""
        self.log.truncate_fully_and_start_at(offset)
        self.records, self.batch_ends, self.start = [], set(), offset
        self.durable = offset
        self.durable_lso = offset
        self.floor_during = 0  # a crash inside may keep any prefix of the data being discarded

    def _do_assign_epoch(self, epoch: int) -> None:
        """LOG-50: a new leader epoch starts at the LEO (written synchronously, DUR-15)."""
        self.log.maybe_assign_epoch_start_offset(epoch, self.log.log_end_offset)

    def _do_hw(self) -> None:
        self.log.update_high_watermark(self.log.log_end_offset)

    def _do_delete_records(self, offset: int) -> None:
        self.log.maybe_increment_log_start_offset(offset)

    def _do_retention(self) -> None:
        """Strict: deleted segments stay deleted (CRP-15), so the first base is a floor."""
        self.log.delete_old_segments()
        self.durable_lso = max(self.durable_lso, self.log.segments[0].base_offset)

    def _do_checkpoint(self) -> None:
        self.log_dir.checkpoint()
        self.durable_lso = self.log.log_start_offset

    def _do_tick(self, ms: int) -> None:
        self.clock.sleep(ms)

    def _do_close_reopen(self) -> None:
        self.log_dir.close()
        self.durable = self.log.log_end_offset
        self.durable_lso = self.log.log_start_offset
        self.log_dir = LogDir.open(self.fs, self.root, self.config, self.clock)
        self.log = self.log_dir.get_or_create_log(TP)

    def expectation_at(self, k: int) -> Expectation:
        """The versions a crash after op k may show: the last completed action's, and the next
        one's when k falls strictly inside an action (CRP-6, CRP-15)."""
        i = max(j for j, m in enumerate(self.marks) if m <= k)
        version, durable, durable_lso, _ = self.expectations[i]
        if k == self.marks[i] or i + 1 >= len(self.marks):
            return Expectation((version,), durable, durable_lso)
        after, _, lso_after, during = self.expectations[i + 1]
        return Expectation((version, after), min(durable, during), min(durable_lso, lso_after))

    def close_quietly(self) -> None:
        for log in self.log_dir.logs.values():
            log.close_handlers()


@dataclass
class Summary:
    """What an exploration measured; `as_dict` is the JSON form the CLI prints."""

    workloads: int = 0
    crash_points: int = 0
    states: int = 0
    states_by_fault: dict[str, int] = field(default_factory=dict)
    violations_by_fault: dict[str, int] = field(default_factory=dict)
    violations_by_rule: dict[str, int] = field(default_factory=dict)  # states breaking each rule
    idempotence_failures: int = 0
    examples: list[str] = field(default_factory=list)
    seconds: float = 0.0
    cpu_seconds: float = 0.0

    @property
    def violations(self) -> int:
        return sum(self.violations_by_fault.values())

    @property
    def crash_points_per_minute_per_core(self) -> float:
        """Per core = per CPU-second of this process (the explorer is single-threaded)."""
        return 60.0 * self.crash_points / self.cpu_seconds if self.cpu_seconds else 0.0

    @property
    def states_per_minute_per_core(self) -> float:
        return 60.0 * self.states / self.cpu_seconds if self.cpu_seconds else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "workloads": self.workloads, "crash_points": self.crash_points,
            "states": self.states, "states_by_fault": self.states_by_fault,
            "violations": self.violations, "violations_by_fault": self.violations_by_fault,
            "violations_by_rule": dict(sorted(self.violations_by_rule.items())),
            "idempotence_failures": self.idempotence_failures,
            "seconds": round(self.seconds, 2), "cpu_seconds": round(self.cpu_seconds, 2),
            "crash_points_per_minute_per_core": round(self.crash_points_per_minute_per_core),
            "states_per_minute_per_core": round(self.states_per_minute_per_core),
            "examples": self.examples,
        }


def record_workload(workload: Workload, root: Path, config: LogConfig = CONFIG) -> _Recorder:
    """Run `workload` on a RecordingFileSystem under `root`; the recorder holds the journal."""
    recorder = _Recorder(root, config)
    try:
        for action in workload.actions:
            recorder.run(action)
    finally:
        recorder.close_quietly()
    return recorder


def plant_replayed_tail(root: Path) -> None:
    """FLT-8 / GAP-6: the active segment's batches appear again after themselves (a stale,
    CRC-valid tail such as a misdirected write leaves): recovery meets offsets that go back and
    its offset-index append raises InvalidOffsetError, which the loader must handle (RCV-6).
    Only unclean images are planted: a clean start validates nothing (GAP-7, RCV-14)."""
    if (root / ".kafka_cleanshutdown").exists():
        return
    for partition in sorted(p for p in root.iterdir() if p.is_dir()):
        logs = sorted(partition.glob("*.log"))
        if logs:
            data = logs[-1].read_bytes()
            logs[-1].write_bytes(data * 4)


PLANTS: dict[str, Callable[[Path], None]] = {"replayed_tail": plant_replayed_tail}


def explore_points(recorder: _Recorder, points: Sequence[int], faults: Sequence[FaultModel],
                   seeds: Sequence[int], scratch: Path, summary: Summary,
                   label: str = "", plant: Callable[[Path], None] | None = None,
                   crash_recovery: bool = True) -> None:
    """Materialise, recover and check every (point, fault, seed); add the counts to `summary`."""
    n = 0
    for k in points:
        summary.crash_points += 1
        expect = recorder.expectation_at(k)
        for fault in faults:
            for seed in seeds if fault is not FaultModel.PROCESS_CRASH else seeds[:1]:
                n += 1
                target = scratch / f"s{n}"
                recorder.fs.materialise(target, k, fault, seed)
                if plant is not None:
                    plant(target)
                problems = check_recovered(target, recorder.config, expect, full=plant is None,
                                           recovery_crash_seed=n if crash_recovery else None)
                summary.states += 1
                summary.states_by_fault[fault.value] = summary.states_by_fault.get(
                    fault.value, 0) + 1
                if fault is FaultModel.PROCESS_CRASH and crash_recovery and plant is None:
                    problems += _phantom(recorder, target, k, seed + n)
                    summary.states += 1
                shutil.rmtree(target, ignore_errors=True)
                if problems:
                    summary.violations_by_fault[fault.value] = summary.violations_by_fault.get(
                        fault.value, 0) + 1
                    if any(p.startswith("CRP-12") for p in problems):
                        summary.idempotence_failures += 1
                    for rule in {p.split(":", 1)[0] for p in problems}:
                        summary.violations_by_rule[rule] = summary.violations_by_rule.get(
                            rule, 0) + 1
                    shown = sum(1 for e in summary.examples if f" {fault.value} " in e)
                    if shown < 4:  # a few per fault model, so every model's failures show
                        summary.examples.append(
                            f"{label} k={k} {fault.value} seed={seed}: {'; '.join(problems)}")


_POWER = (FaultModel.POWER_LOSS, FaultModel.POWER_LOSS_PREFIX, FaultModel.POWER_LOSS_TORN)


def _phantom(recorder: _Recorder, target: Path, k: int, seed: int) -> list[str]:
    """A process crash at k, recovery, then a power loss (GAP-4): a fresh volatile image
    beside a seeded durable one, checked by `phantom_problems`."""
    volatile, durable = target.with_name(target.name + "-v"), target.with_name(target.name + "-d")
    try:
        recorder.fs.materialise(volatile, k, FaultModel.PROCESS_CRASH, seed)
        recorder.fs.materialise(durable, k, _POWER[seed % 3], seed)
        return phantom_problems(volatile, durable, recorder.config, _POWER[(seed // 3) % 3], seed)
    finally:
        shutil.rmtree(volatile, ignore_errors=True)
        shutil.rmtree(durable, ignore_errors=True)


def run_exploration(workloads: Sequence[Workload] = WORKLOADS, seeds: Sequence[int] = (0, 1, 2),
                    *, faults: Sequence[FaultModel] = tuple(FaultModel), stride: int = 1,
                    config: LogConfig = CONFIG,
                    patch: Callable[[], contextlib.AbstractContextManager[Any]] | None = None,
                    plant: str | None = None, crash_recovery: bool = True) -> Summary:
    """Explore every `stride`-th crash point of each workload under `faults` x `seeds`.

    A process crash is explored with the first seed only (it makes no seeded choice). `plant`
    names an entry of PLANTS applied to every image (then only RCV/CRP-10/CRP-12 are checked).
    `crash_recovery` makes the idempotence check reload after a seeded crash of the first load.
    """
    planter = PLANTS[plant] if plant is not None else None
    summary = Summary()
    logging.getLogger("kafkalog.impl.load.log_dir").setLevel(logging.ERROR)  # recovery reports
    start, cpu = time.perf_counter(), time.process_time()
    with patch() if patch is not None else contextlib.nullcontext(), _scratch() as scratch:
        for w, workload in enumerate(workloads):
            recorder = record_workload(workload, scratch / f"w{w}", config)
            points = range(0, recorder.fs.crash_points() + 1, stride)
            explore_points(recorder, points, faults, seeds, scratch, summary, workload.name,
                           planter, crash_recovery)
            summary.workloads += 1
    summary.seconds = time.perf_counter() - start
    summary.cpu_seconds = time.process_time() - cpu
    return summary


@contextlib.contextmanager
def _scratch() -> Iterator[Path]:
    shm = Path("/dev/shm")
    path = Path(tempfile.mkdtemp(prefix="kafkalog-crash-", dir=shm if shm.is_dir() else None))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> None:
    """Print one exploration's summary as JSON.

    python -m kafkalog.benchmarks.crash_explore [--stride N] [--seeds 0,1,2] [--broken NAME]
    [--plant replayed_tail] [--no-crash-recovery]; --broken names an entry of
    conformance/broken/crash.py (the explorer must then report violations).
    """
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="crash_explore", description=main.__doc__)
    parser.add_argument("--stride", type=int, default=1)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--broken", default=None)
    parser.add_argument("--plant", default=None, choices=sorted(PLANTS))
    parser.add_argument("--no-crash-recovery", action="store_true")
    args = parser.parse_args(argv)
    patch = None
    if args.broken is not None:
        from kafkalog.conformance.broken.crash import patched

        name = args.broken

        def patch() -> contextlib.AbstractContextManager[Any]:
            return patched(name)

    seeds = tuple(int(x) for x in args.seeds.split(","))
    summary = run_exploration(stride=args.stride, seeds=seeds, patch=patch, plant=args.plant,
                              crash_recovery=not args.no_crash_recovery)
    print(json.dumps(summary.as_dict(), indent=2))


if __name__ == "__main__":
    main()
