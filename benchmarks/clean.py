"""Cleaner throughput: one cleaning pass over a dirty compacted log, against reading the same
bytes with CRC checks (KL-CLEAN-2..11, `kafkalog bench`'s "cleaning" group).

The log holds keyed 100-byte records over a small key space (every key rewritten many times, as
a compacted topic's updates are), in 1 MiB segments, all but the active one dirty. Each
repetition copies that closed log (untimed), opens it, and times `LogCleaner.clean` on the real
file system (fsyncs included); the baseline reads and CRC-32Cs the dirty segments' files, the
least any pass must do. The figure is MiB of dirty log cleaned per second.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from kafkalog.impl.cleaner.log_cleaner import LogCleaner
from kafkalog.impl.log.log import Log, LogOffsets
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.time import MockTime
from kafkalog.model.errors import KafkaStorageError
from kafkalog.model.values import LogConfig, Record

from .core import (
    MIB,
    START_MS,
    Figure,
    NoSyncFileSystem,
    Sample,
    Scale,
    Stopwatch,
    bench_config,
    paired,
)
from .reopen import open_clean, read_crc_files

KEYS = 1_000  # distinct keys: each written about total_bytes / (KEYS * ~120 B) times
RECORDS_PER_BATCH = 100
SEGMENT_BYTES = MIB
MAX_BYTES = 64 * MIB  # a pass rewrites every dirty byte: the full scale keeps it to this


def compact_config() -> LogConfig:
    return bench_config(segment_bytes=SEGMENT_BYTES, cleanup_policy="compact",
                        min_cleanable_dirty_ratio=0.0)


def keyed_batches(total_bytes: int) -> list[bytes]:
    """Batches of keyed records cycling over KEYS keys, about `total_bytes` in all."""
    value = bytes(range(100))
    batches, written, n = [], 0, 0
    while written < total_bytes:
        records = tuple(Record(b"key-%05d" % ((n + i) % KEYS), value, START_MS)
                        for i in range(RECORDS_PER_BATCH))
        n += RECORDS_PER_BATCH
        batch = MemoryRecords.with_records(records).to_bytes()
        batches.append(batch)
        written += len(batch)
    return batches


def build_dirty_log(directory: Path, total_bytes: int) -> LogOffsets:
    """A closed compacted log of about `total_bytes` of keyed batches, never cleaned."""
    log = Log.open(NoSyncFileSystem(), directory, compact_config(), MockTime(START_MS),
                   had_clean_shutdown=True)
    for batch in keyed_batches(total_bytes):
        log.append_as_leader(MemoryRecords(batch), 0)
    log.update_high_watermark(log.log_end_offset)
    return log.close()


def _copy_open(source: Path, target: Path, offsets: LogOffsets) -> Log:
    """A fresh copy of the dirty log at `target`, opened as after a clean shutdown."""
    if target.parent.exists():
        shutil.rmtree(target.parent)
    target.parent.mkdir(parents=True)
    shutil.copytree(source, target)
    return open_clean(target, offsets, SEGMENT_BYTES, compact_config())


def cleaning_figure(scale: Scale, root: Path) -> Figure:
    """One pass over about `recovery_bytes` (at most MAX_BYTES) of dirty keyed log."""
    total = min(scale.recovery_bytes, MAX_BYTES)
    source = root / "dirty" / "compact-0"
    offsets = build_dirty_log(source, total)
    dirty_files = sorted(source.glob("*.log"))[:-1]  # the active segment is never cleaned
    dirty = sum(p.stat().st_size for p in dirty_files)
    target = root / "pass" / "compact-0"
    kept: list[int] = []

    def impl() -> Sample:
        log = _copy_open(source, target, offsets)
        watch = Stopwatch()
        result = LogCleaner(log).clean()
        elapsed = watch.stop()
        size = sum(s.size() for s in log.local_log.segments.values())
        log.close()
        if result is None or size >= dirty:
            raise KafkaStorageError(f"the pass cleaned nothing (result {result}, size {size})",
                                    where=str(target))
        kept.append(size)
        return elapsed

    result = paired(scale.reps, impl, lambda: read_crc_files(dirty_files))
    ratio = result.rate_ratio()
    return Figure(
        key="clean.pass", figure="cleaning pass",
        workload=f"one pass over {dirty / MIB:.0f} MiB of dirty keyed log ({KEYS:,} keys, "
                 f"{len(dirty_files)} segments) to {kept[-1] / MIB:.1f} MiB",
        unit="MiB/s", value=round(dirty / MIB / result.impl_s, 1),
        baseline_name="read + CRC-32C of the dirty segments",
        baseline=round(dirty / MIB / result.base_s, 1), ratio=round(ratio, 3), goal=None,
        met=None, extra={"seconds": round(result.impl_s, 4), "bytes": dirty,
                         "kept_bytes": kept[-1], **result.extra()})
