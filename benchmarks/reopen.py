"""Reopen figures: recovery after an unclean shutdown, clean open, and peak memory.

Recovery reopens a log whose handles were dropped without a flush (`close_handlers`, as in a
crash) with recovery point 0, so the loader CRC-checks every batch and rebuilds every index of
about `recovery_bytes` of segments (REC-8, SEG-15); the baseline reads and CRC-32Cs the same
files in 1 MiB chunks. Clean open times `Log.open` of a cleanly closed log of 1,000 segments at
two total sizes (it must not scan data, so the time stays flat). Memory runs a fresh interpreter
(`memory_probe`) that opens the largest of those logs and reads all of it, and reports its peak
RSS.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from crc32c import crc32c
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.log.log import Log, LogOffsets
from kafkalog.impl.time import MockTime
from kafkalog.model.errors import KafkaStorageError
from kafkalog.model.values import LogConfig

from .core import (
    MIB,
    START_MS,
    Figure,
    Sample,
    Scale,
    Stopwatch,
    bench_config,
    leader_batch,
    paired,
    solo,
)
from .read import BATCH_RECORDS, build_log

RECOVERY_SEGMENTS = 4


def _segment_logs(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.log"))


def read_crc_files(paths: list[Path]) -> Sample:
    """The recovery baseline: read every file in 1 MiB chunks and CRC-32C each; seconds."""
    watch = Stopwatch()
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            position = 0
            while chunk := os.pread(fd, MIB, position):
                crc32c(chunk)
                position += len(chunk)
        finally:
            os.close(fd)
    return watch.stop()


def recovery_figure(scale: Scale, root: Path) -> Figure:
    """Reopen after an unclean shutdown and recover `recovery_bytes` of unflushed segments."""
    directory = root / "recover-0"
    segment_bytes = max(MIB, scale.recovery_bytes // RECOVERY_SEGMENTS)
    log, _ = build_log(directory, scale.recovery_bytes, segment_bytes)
    leo = log.log_end_offset
    config = log.config
    log.close_handlers()  # a crash: nothing flushed, indexes left preallocated
    files = _segment_logs(directory)
    total = sum(p.stat().st_size for p in files)

    def impl() -> Sample:
        watch = Stopwatch()
        reopened = Log.open(FileSystem(), directory, config, MockTime(START_MS),
                            recovery_point=0, had_clean_shutdown=False)
        elapsed = watch.stop()
        end = reopened.log_end_offset
        reopened.close_handlers()  # leave it unclean again for the next repetition
        if end != leo:
            raise KafkaStorageError(f"recovery lost data: LEO {end}, expected {leo}",
                                    where=str(directory))
        return elapsed

    result = paired(scale.reps, impl, lambda: read_crc_files(files))
    ratio = result.rate_ratio()
    return Figure(
        key="recovery.unclean", figure="recovery",
        workload=f"reopen after unclean shutdown, recover {total / MIB:.0f} MiB in "
                 f"{len(files)} segments",
        unit="MiB/s", value=round(total / MIB / result.impl_s, 1),
        baseline_name="read + CRC-32C of the same files", baseline=round(total / MIB /
                                                                         result.base_s, 1),
        ratio=round(ratio, 3), goal=">= 0.5x", met=ratio >= 0.5,
        extra={"seconds": round(result.impl_s, 4), "bytes": total, "goal_ratio": 0.5,
               **result.extra()},
    )


def closed_log_segment_bytes(total_bytes: int, segments: int) -> tuple[int, int]:
    """(bytes per append call, segment.bytes) so that each call fills exactly one segment."""
    batch = len(leader_batch(BATCH_RECORDS, 100))
    call = max(1, total_bytes // segments // batch) * batch
    return call, call + 1  # a second call never fits, so every call after the first rolls


def build_closed_log(directory: Path, total_bytes: int, segments: int) -> LogOffsets:
    """A cleanly closed log of exactly `segments` segments holding about `total_bytes`."""
    call, segment_bytes = closed_log_segment_bytes(total_bytes, segments)
    log, _ = build_log(directory, call * segments, segment_bytes, chunk_bytes=call)
    return log.close()


def open_clean(directory: Path, offsets: LogOffsets, segment_bytes: int,
               config: LogConfig | None = None) -> Log:
    """`Log.open` after a clean shutdown, with the checkpointed offsets (REC-1); `config`
    defaults to the bench's with `segment_bytes`."""
    return Log.open(
        FileSystem(), directory, config or bench_config(segment_bytes=segment_bytes),
        MockTime(START_MS),
        log_start_offset=offsets.log_start_offset, recovery_point=offsets.recovery_point,
        high_watermark=offsets.high_watermark, had_clean_shutdown=True,
    )


def clean_open_figures(scale: Scale, root: Path) -> tuple[list[Figure], Path, LogOffsets, int]:
    """Clean open at both sizes; also returns the larger log (dir, offsets, segment size)."""
    times: list[tuple[int, float, tuple[float, ...], int, float]] = []
    last: tuple[Path, LogOffsets, int] | None = None
    for size in scale.open_sizes:
        directory = root / f"open{size // MIB}-0"
        offsets = build_closed_log(directory, size, scale.open_segments)
        segment_bytes = closed_log_segment_bytes(size, scale.open_segments)[1]
        count = len(_segment_logs(directory))

        def once(d: Path = directory, o: LogOffsets = offsets, s: int = segment_bytes) -> Sample:
            watch = Stopwatch()
            log = open_clean(d, o, s)
            elapsed = watch.stop()
            log.close()
            return elapsed

        median, runs, cpu = solo(scale.reps, once)
        times.append((size, median, runs, count, cpu))
        last = (directory, offsets, segment_bytes)
    assert last is not None
    small, large = times[0][1], times[-1][1]
    out = []
    for size, median, runs, count, cpu in times:
        flat = size == times[-1][0]
        out.append(Figure(
            key=f"open.clean.{size // MIB}mib", figure="clean open",
            workload=f"open {count} segments, {size / MIB:.0f} MiB total, after clean shutdown",
            unit="s", value=round(median, 4),
            baseline_name=f"clean open of {times[0][0] // MIB} MiB" if flat else None,
            baseline=round(small, 4) if flat else None,
            ratio=round(large / small, 3) if flat else None,
            goal="<= 0.5 s" + (", flat in size (<= 1.5x the small log)" if flat else ""),
            met=median <= 0.5 and (not flat or large <= 1.5 * small),
            extra={"segments": count, "runs_s": [round(r, 6) for r in runs],
                   "cpu_s": round(cpu, 6)},
        ))
    return out, last[0], last[1], last[2]


def memory_figure(directory: Path, offsets: LogOffsets, segment_bytes: int) -> Figure:
    """Peak RSS of a fresh interpreter that opens `directory` and reads all of it."""
    args = [sys.executable, "-m", "kafkalog.benchmarks.memory_probe", str(directory),
            json.dumps([offsets.log_start_offset, offsets.recovery_point,
                        offsets.high_watermark, segment_bytes])]
    done = subprocess.run(args, capture_output=True, text=True, timeout=900, check=False)
    if done.returncode != 0:
        raise KafkaStorageError(f"memory probe failed: {done.stderr.strip()[-500:]}",
                                where=str(directory))
    report = json.loads(done.stdout.strip().splitlines()[-1])
    peak = report["peak_rss_mib"]
    return Figure(
        key="memory.open_read", figure="memory",
        workload=f"peak RSS: open + read all {report['bytes_read'] / MIB:.0f} MiB "
                 f"({report['segments']} segments)",
        unit="MiB", value=round(peak, 1), baseline_name="interpreter after imports",
        baseline=round(report["start_rss_mib"], 1), ratio=None, goal="<= 150 MiB",
        met=peak <= 150, extra=report,
    )
