"""The benchmark harness's shared parts: figures, scales, paired timing, scratch dirs, batches.

Every figure is measured against its baseline *in the same run*, on the same files and bytes,
and the two are interleaved repetition by repetition (impl, baseline, impl, baseline, ...) after
a warm-up, so a noisy neighbour slows both sides alike; the figure is the median of each side.
Nothing here touches the repository: scratch data lives under a temporary directory in /tmp.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalog.impl.fs.file_system import FileHandle, FileSystem, PathLike
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.model.errors import IllegalArgumentError
from kafkalog.model.values import LogConfig, Record

MIB = 1024 * 1024
KIB = 1024
#: The clock every benchmark log starts at (and the record timestamps): a realistic epoch.
START_MS = 1_700_000_000_000


@dataclass(frozen=True)
class Scale:
    """How much data each figure uses; `quick` is the smoke-test size, `full` the real one."""

    name: str
    reps: int  # measured repetitions per figure (after one warm-up)
    append_bytes: int  # bytes appended per repetition by the byte-sized append workloads
    small_batch_calls: int  # calls per repetition for 1- and 10-record batches
    read_log_bytes: int  # size of the log consumed by the sequential-read figure
    index_bytes: int  # size of the full offset index of the lookup figure
    lookups: int  # translate_offset calls per repetition
    recovery_bytes: int  # unflushed bytes recovered per repetition
    open_sizes: tuple[int, int]  # total log sizes of the clean-open figure
    open_segments: int  # segments of the clean-open logs
    conformance_steps: int  # steps per conformance run
    conformance_seeds: int  # runs per repetition


QUICK = Scale(
    name="quick", reps=3, append_bytes=4 * MIB, small_batch_calls=2_000,
    read_log_bytes=8 * MIB, index_bytes=256 * KIB, lookups=2_000, recovery_bytes=8 * MIB,
    open_sizes=(4 * MIB, 16 * MIB), open_segments=50,
    conformance_steps=30, conformance_seeds=2,
)
FULL = Scale(
    name="full", reps=5, append_bytes=256 * MIB, small_batch_calls=50_000,
    read_log_bytes=512 * MIB, index_bytes=10 * MIB, lookups=50_000, recovery_bytes=256 * MIB,
    open_sizes=(100 * MIB, 2048 * MIB), open_segments=1_000,
    conformance_steps=200, conformance_seeds=5,
)
SCALES = {"quick": QUICK, "full": FULL}


@dataclass
class Figure:
    """One row of the results table: the implementation's number beside its baseline's.

    `value` and `baseline` are in `unit` (bigger is better for rates, smaller for seconds and
    MiB); `ratio` is value/baseline for rates and is stated per figure otherwise; `met` is None
    when the figure has no goal ("report the others").
    """

    key: str  # stable identifier, e.g. "append.leader.1mib"
    figure: str  # the figure name
    workload: str
    unit: str
    value: float
    baseline_name: str | None = None
    baseline: float | None = None
    ratio: float | None = None
    goal: str | None = None
    met: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. records/s, runs, notes

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key, "figure": self.figure, "workload": self.workload,
            "unit": self.unit, "value": self.value, "baseline_name": self.baseline_name,
            "baseline": self.baseline, "ratio": self.ratio, "goal": self.goal, "met": self.met,
            "extra": self.extra,
        }


@dataclass(frozen=True)
class Sample:
    """Seconds of one measured section: wall clock and this process's CPU (user + system).

    Wall time is the figure; CPU time is kept beside it because on a shared machine a
    descheduled process loses wall time that says nothing about the code.
    """

    wall: float
    cpu: float


class Stopwatch:
    """Started on construction; `stop()` returns the Sample since then."""

    __slots__ = ("_cpu", "_wall")

    def __init__(self) -> None:
        self._wall = time.perf_counter()
        self._cpu = time.process_time()

    def stop(self) -> Sample:
        return Sample(time.perf_counter() - self._wall, time.process_time() - self._cpu)


@dataclass(frozen=True)
class Paired:
    """Median seconds of the implementation and of the baseline, with every run kept."""

    impl_s: float
    base_s: float
    impl_runs: tuple[float, ...]
    base_runs: tuple[float, ...]
    impl_cpu_s: float
    base_cpu_s: float

    def rate_ratio(self) -> float:
        """Throughput of the implementation over the baseline's (same work on both sides)."""
        return self.base_s / self.impl_s

    def cpu_ratio(self) -> float:
        """The same ratio from CPU seconds (robust to being descheduled on a busy machine)."""
        return self.base_cpu_s / self.impl_cpu_s if self.impl_cpu_s > 0 else float("nan")

    def extra(self) -> dict[str, Any]:
        """Every run and the CPU-time view, for the JSON."""
        return {"impl_runs_s": [round(r, 6) for r in self.impl_runs],
                "base_runs_s": [round(r, 6) for r in self.base_runs],
                "impl_cpu_s": round(self.impl_cpu_s, 6), "base_cpu_s": round(self.base_cpu_s, 6),
                "cpu_ratio": round(self.cpu_ratio(), 3)}


def paired(reps: int, impl: Callable[[], Sample], base: Callable[[], Sample]) -> Paired:
    """One warm-up of each side, then `reps` interleaved repetitions; medians of each side.

    `impl` and `base` return the Sample of their measured part (set-up stays untimed).
    """
    if reps < 1:
        raise IllegalArgumentError(f"benchmark repetitions must be >= 1, got {reps}")
    impl()
    base()
    impl_runs, base_runs = [], []
    for _ in range(reps):
        impl_runs.append(impl())
        base_runs.append(base())
    return Paired(
        statistics.median(r.wall for r in impl_runs), statistics.median(r.wall for r in base_runs),
        tuple(r.wall for r in impl_runs), tuple(r.wall for r in base_runs),
        statistics.median(r.cpu for r in impl_runs), statistics.median(r.cpu for r in base_runs),
    )


def solo(reps: int, fn: Callable[[], Sample]) -> tuple[float, tuple[float, ...], float]:
    """One warm-up then `reps` runs of a figure without a baseline: (median wall, runs, cpu)."""
    fn()
    runs = [fn() for _ in range(reps)]
    return (statistics.median(r.wall for r in runs), tuple(r.wall for r in runs),
            statistics.median(r.cpu for r in runs))


@contextmanager
def scratch_dir(prefix: str) -> Iterator[Path]:
    """A fresh directory under the system temp dir (never the repo), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix=f"kafkalog-bench-{prefix}-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def fresh_dir(parent: Path, name: str) -> Path:
    """`parent/name`, emptied first: every repetition writes into a new partition dir."""
    path = parent / name
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def bench_config(**changes: Any) -> LogConfig:
    """Kafka's default log config (1 GiB segments, 10 MiB indexes) with `changes`."""
    return LogConfig(**changes)


def value_records(count: int, value_size: int, timestamp: int = START_MS) -> tuple[Record, ...]:
    """`count` records with a `value_size`-byte value, no key, no headers, one timestamp."""
    value = bytes(range(256)) * (value_size // 256 + 1)
    return tuple(Record(None, value[:value_size], timestamp) for _ in range(count))


def leader_batch(records_per_batch: int, value_size: int) -> bytes:
    """One producer v2 batch (base offset 0, epoch -1), as a client sends it."""
    return MemoryRecords.with_records(value_records(records_per_batch, value_size)).to_bytes()


def records_for_batch_bytes(batch_bytes: int, value_size: int) -> int:
    """How many `value_size`-byte records make a batch of at most `batch_bytes`."""
    one = len(leader_batch(1, value_size))
    per_record = len(leader_batch(2, value_size)) - one
    return max(1, 1 + (batch_bytes - one) // per_record)


def follower_chunks(batch: bytes, batches_per_call: int, calls: int,
                    epoch: int = 0) -> list[bytes]:
    """`calls` chunks of `batches_per_call` copies of `batch` with consecutive offsets from 0.

    Base offset and partition leader epoch are outside the CRC (FMT-47), so stamping them in a
    copy keeps every batch valid: these are the bytes a follower fetches from its leader.
    """
    from kafkalog.impl.records.record_batch import RecordBatch

    records = RecordBatch(batch).record_count
    chunk = bytearray(batch * batches_per_call)
    size = len(batch)
    out, next_offset = [], 0
    for _ in range(calls):
        for i in range(batches_per_call):
            view = RecordBatch(memoryview(chunk)[i * size:(i + 1) * size])
            view.set_base_offset(next_offset)
            view.set_partition_leader_epoch(epoch)
            next_offset += records
        out.append(bytes(chunk))
    return out


def write_chunks(path: Path, chunks: list[bytes], fsync_each: bool = False) -> Sample:
    """The write baseline: `os.write` of each chunk to a new file (optionally `os.fsync`)."""
    fd = os.open(path, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o644)
    try:
        write, fsync = os.write, os.fsync
        watch = Stopwatch()
        for chunk in chunks:
            write(fd, chunk)
            if fsync_each:
                fsync(fd)
        return watch.stop()
    finally:
        os.close(fd)


class _NoSyncHandle(FileHandle):
    def fsync(self) -> None:
        self._require_fd()  # still fails on a closed handle, like the real one


class NoSyncFileSystem(FileSystem):
    """The real file system without fsync: only for *building* benchmark fixtures faster.

    A fixture log of 1,000 segments rolls 1,000 times and every roll flushes synchronously
    (docs/design.md "Async work"); durability of scratch data is worthless, its bytes are the
    same. Never used inside a measured section.
    """

    handle_class = _NoSyncHandle

    def fsync_dir(self, path: PathLike) -> None:
        return None
