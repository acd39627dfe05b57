"""Append figures: `append_as_leader` / `append_as_follower` against `os.write` of the same chunks.

Each repetition appends into a fresh partition directory with Kafka's default config (1 GiB
segments, so no roll inside a repetition) and a `MockTime` clock; the baseline writes the very
same chunks, one `os.write` per call, to a new file in the same directory. Writes stay in the page
cache (no fsync) except in the `flush` row, which calls `Log.flush()` after every 1 MiB call
against `os.write` + `os.fsync` of the same chunks.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.log.log import Log
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.time import MockTime

from .core import (
    KIB,
    MIB,
    START_MS,
    Figure,
    Paired,
    Sample,
    Scale,
    Stopwatch,
    bench_config,
    follower_chunks,
    fresh_dir,
    leader_batch,
    paired,
    records_for_batch_bytes,
    write_chunks,
)

VALUE_SIZE = 100
BATCH_16K = 16 * KIB


@dataclass(frozen=True)
class Workload:
    """What one append call carries: `batches_per_call` batches of `records_per_batch` records."""

    key: str
    label: str
    records_per_batch: int
    batches_per_call: int
    calls: int

    def chunk(self) -> bytes:
        """The bytes of one leader call (producer batches, base offset 0)."""
        return leader_batch(self.records_per_batch, VALUE_SIZE) * self.batches_per_call

    @property
    def records_per_call(self) -> int:
        return self.records_per_batch * self.batches_per_call


def workloads(scale: Scale) -> list[Workload]:
    """The issue's append shapes, sized so each repetition appends about `append_bytes`."""
    per_16k = records_for_batch_bytes(BATCH_16K, VALUE_SIZE)
    batch_16k = len(leader_batch(per_16k, VALUE_SIZE))
    per_mib = MIB // batch_16k
    batch_100 = len(leader_batch(100, VALUE_SIZE))
    return [
        Workload("1mib", f"1 MiB per call ({per_mib} x {batch_16k} B batches)", per_16k,
                 per_mib, max(1, scale.append_bytes // (per_mib * batch_16k))),
        Workload("16kib", f"one {batch_16k} B batch per call", per_16k, 1,
                 max(1, scale.append_bytes // batch_16k)),
        Workload("rec100x1", "100 B records, 1 per batch", 1, 1, scale.small_batch_calls),
        Workload("rec100x10", "100 B records, 10 per batch", 10, 1, scale.small_batch_calls),
        Workload("rec100x100", "100 B records, 100 per batch", 100, 1,
                 max(1, min(scale.append_bytes // batch_100, 4 * scale.small_batch_calls))),
    ]


def _open_log(directory: Path) -> Log:
    return Log.open(FileSystem(), directory, bench_config(), MockTime(START_MS),
                    had_clean_shutdown=True)


def _leader_run(root: Path, chunks: list[bytes], flush_each: bool) -> Sample:
    directory = fresh_dir(root, "bench-0")
    log = _open_log(directory)
    records = [MemoryRecords(c) for c in chunks]
    append, flush = log.append_as_leader, log.flush
    watch = Stopwatch()
    for r in records:
        append(r, 0)
        if flush_each:
            flush()
    elapsed = watch.stop()
    log.close_handlers()  # no final fsync: the next repetition deletes the files
    return elapsed


def _follower_run(root: Path, chunks: list[bytes]) -> Sample:
    directory = fresh_dir(root, "bench-0")
    log = _open_log(directory)
    records = [MemoryRecords(c) for c in chunks]
    append = log.append_as_follower
    watch = Stopwatch()
    for r in records:
        append(r)
    elapsed = watch.stop()
    log.close_handlers()
    return elapsed


def _baseline_run(root: Path, chunks: list[bytes], fsync_each: bool) -> Sample:
    directory = fresh_dir(root, "bench-0")
    return write_chunks(directory / "baseline.bin", chunks, fsync_each)


def _figure(key: str, figure: str, workload: str, result: Paired, total_bytes: int,
            records: int, goal: str | None, min_ratio: float | None,
            min_records_s: float | None = None, baseline: str = "os.write") -> Figure:
    mib_s = total_bytes / MIB / result.impl_s
    base_mib_s = total_bytes / MIB / result.base_s
    ratio = result.rate_ratio()
    records_s = records / result.impl_s
    met: bool | None = None
    if min_ratio is not None:
        met = ratio >= min_ratio
    if min_records_s is not None:
        met = (met is not False) and records_s >= min_records_s
    return Figure(
        key=key, figure=figure, workload=workload, unit="MiB/s", value=round(mib_s, 1),
        baseline_name=f"{baseline} of the same chunks", baseline=round(base_mib_s, 1),
        ratio=round(ratio, 3), goal=goal, met=met,
        extra={"records_per_s": round(records_s), "bytes": total_bytes, **result.extra(),
               **({} if min_ratio is None else {"goal_ratio": min_ratio})},
    )


_LEADER_GOALS: dict[str, tuple[str | None, float | None, float | None]] = {
    "1mib": (">= 0.5x", 0.5, None),
    "rec100x100": (">= 1,000,000 records/s", None, 1_000_000),
}


def leader_figures(scale: Scale, root: Path) -> list[Figure]:
    """`append_as_leader` for every workload shape, each beside `os.write`."""
    out = []
    for w in workloads(scale):
        chunks = [w.chunk()] * w.calls
        result = paired(scale.reps, functools.partial(_leader_run, root, chunks, False),
                        functools.partial(_baseline_run, root, chunks, False))
        goal, ratio, rec = _LEADER_GOALS.get(w.key, (None, None, None))
        out.append(_figure(f"append.leader.{w.key}", "append throughput", w.label, result,
                           len(chunks[0]) * w.calls, w.records_per_call * w.calls, goal, ratio,
                           rec))
    return out


def follower_figures(scale: Scale, root: Path) -> list[Figure]:
    """`append_as_follower` of the same batches (offsets and epoch pre-stamped by a leader)."""
    out = []
    for w in workloads(scale):
        batch = leader_batch(w.records_per_batch, VALUE_SIZE)
        chunks = follower_chunks(batch, w.batches_per_call, w.calls)
        result = paired(scale.reps, functools.partial(_follower_run, root, chunks),
                        functools.partial(_baseline_run, root, chunks, False))
        goal, ratio = (">= 0.5x", 0.5) if w.key == "1mib" else (None, None)
        out.append(_figure(f"append.follower.{w.key}", "follower append", w.label, result,
                           sum(map(len, chunks)), w.records_per_call * w.calls, goal, ratio))
        del chunks
    return out


def flush_figure(scale: Scale, root: Path) -> Figure:
    """1 MiB leader calls with `Log.flush()` after each, against `os.write` + `os.fsync`."""
    w = workloads(scale)[0]
    calls = max(1, w.calls // 4)  # an fsync per MiB: a quarter of the data keeps it short
    chunks = [w.chunk()] * calls
    result = paired(scale.reps, lambda: _leader_run(root, chunks, True),
                    lambda: _baseline_run(root, chunks, True))
    return _figure("append.leader.1mib_flush", "append throughput", f"{w.label} + flush() each",
                   result, len(chunks[0]) * calls, w.records_per_call * calls, None, None,
                   baseline="os.write + os.fsync")
