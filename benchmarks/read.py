"""Read figures: sequential consumption and offset lookup, each beside its raw baseline.

Sequential read consumes the whole log from offset 0 in 1 MiB `Log.read` calls at
`high_watermark` isolation and checks every batch's CRC-32C, the way a follower or consumer
would; the baseline `os.pread`s exactly the file ranges those reads returned and computes one
CRC-32C over each. Offset lookup calls `LogSegment.translate_offset` for random offsets in a
segment whose 10 MiB offset index is full; the baseline is `bisect` over a Python list of the
same keys.
"""

from __future__ import annotations

import array
import bisect
import os
import random
import struct
import sys
from pathlib import Path

from crc32c import crc32c
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.log.log import Log
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.segment.log_segment import LogSegment, segment_file
from kafkalog.impl.time import MockTime
from kafkalog.model.errors import CorruptRecordError
from kafkalog.model.values import Isolation

from .core import (
    KIB,
    MIB,
    START_MS,
    Figure,
    NoSyncFileSystem,
    Sample,
    Scale,
    Stopwatch,
    bench_config,
    leader_batch,
    paired,
    records_for_batch_bytes,
    solo,
)

Range = tuple[str, int, int]  # (segment file, position, size)


#: 100-byte records per producer batch: a 16 KiB batch, Kafka's default `batch.size`.
BATCH_RECORDS = records_for_batch_bytes(16 * KIB, 100)


def build_log(directory: Path, total_bytes: int, segment_bytes: int, chunk_bytes: int = MIB,
              batch_records: int = BATCH_RECORDS, value_size: int = 100) -> tuple[Log, int]:
    """A log of about `total_bytes` appended as a leader in calls of about `chunk_bytes`.

    Built through the real append path on a file system without fsync (a fixture, not a
    measurement). Returns the open log (HW moved to the LEO) and the number of bytes appended.
    """
    batch = leader_batch(batch_records, value_size)
    per_call = max(1, min(chunk_bytes, segment_bytes) // len(batch))
    chunk = MemoryRecords(batch * per_call)
    log = Log.open(NoSyncFileSystem(), directory, bench_config(segment_bytes=segment_bytes),
                   MockTime(START_MS), had_clean_shutdown=True)
    written = 0
    while written < total_bytes:
        log.append_as_leader(chunk, 0)
        written += len(chunk)
    log.update_high_watermark(log.log_end_offset)
    return log, written


def consume(log: Log, ranges: list[Range] | None = None) -> int:
    """Read from offset 0 to the HW in 1 MiB reads, CRC-checking every batch; bytes read.

    A consumer checks a fetched buffer with `MemoryRecords.ensure_valid_batches` (one pass over
    its batches, as Kafka's consumer checks CRCs batch by batch) rather than a Python loop.

    When `ranges` is given, the (segment file, position, size) of each read is appended to it.
    """
    offset, end, total = 0, log.high_watermark, 0
    read, directory = log.read, log.dir
    while offset < end:
        info = read(offset, MIB, Isolation.HIGH_WATERMARK, False)
        # Every whole batch's CRC (and size and magic) in one pass; raises CorruptRecordError.
        count, next_offset = info.records.ensure_valid_batches()
        if count == 0:
            raise CorruptRecordError(f"read at offset {offset} returned no whole batch",
                                     where=str(directory))
        offset = next_offset
        total += len(info.records)
        if ranges is not None:
            md = info.fetch_offset_metadata
            path = segment_file(directory, md.segment_base_offset, ".log")
            ranges.append((str(path), md.relative_position_in_segment, len(info.records)))
    return total


def pread_crc(ranges: list[Range]) -> Sample:
    """The read baseline: `os.pread` of each range and one CRC-32C over it; seconds."""
    fds: dict[str, int] = {}
    try:
        for path, _, _ in ranges:
            if path not in fds:
                fds[path] = os.open(path, os.O_RDONLY)
        pread = os.pread
        watch = Stopwatch()
        for path, position, size in ranges:
            crc32c(pread(fds[path], size, position))
        return watch.stop()
    finally:
        for fd in fds.values():
            os.close(fd)


def sequential_read_figure(scale: Scale, root: Path) -> Figure:
    """Consume the whole log through `Log.read` against pread + CRC of the same ranges."""
    directory = root / "read-0"
    log, _ = build_log(directory, scale.read_log_bytes, max(MIB, scale.read_log_bytes // 4))
    ranges: list[Range] = []
    total = consume(log, ranges)

    def impl() -> Sample:
        watch = Stopwatch()
        consume(log)
        return watch.stop()

    result = paired(scale.reps, impl, lambda: pread_crc(ranges))
    log.close()
    ratio = result.rate_ratio()
    return Figure(
        key="read.sequential", figure="sequential read",
        workload=f"{total / MIB:.0f} MiB from offset 0, 1 MiB reads, HW isolation, CRC per batch",
        unit="MiB/s", value=round(total / MIB / result.impl_s, 1),
        baseline_name="os.pread of the same ranges + CRC-32C",
        baseline=round(total / MIB / result.base_s, 1), ratio=round(ratio, 3), goal=">= 0.7x",
        met=ratio >= 0.7,
        extra={"reads": len(ranges), "bytes": total, "goal_ratio": 0.7, **result.extra()},
    )


def write_full_index_segment(directory: Path, index_bytes: int) -> int:
    """A segment of one-record batches whose offset index holds an entry for every batch.

    The `.log` and `.index` are written directly in Kafka's format (the index is exactly
    `index_bytes` long, so it is full); base offsets sit outside the CRC (FMT-47), so one valid
    template batch is stamped at every offset. Returns the number of indexed batches.
    """
    template = leader_batch(1, 4)
    size = len(template)
    entries = index_bytes // 8
    count = entries + 1  # batch 0 sits at position 0 and, as in Kafka, is not indexed
    data = bytearray(template * count)
    pack = struct.Struct(">q").pack_into  # the base offset field of each batch (FMT-45)
    for i in range(1, count):
        pack(data, i * size, i)
    directory.mkdir(parents=True, exist_ok=True)
    segment_file(directory, 0, ".log").write_bytes(data)
    index = array.array("i", bytes(8 * entries))
    index[0::2] = array.array("i", range(1, count))
    index[1::2] = array.array("i", range(size, count * size, size))
    if sys.byteorder == "little":
        index.byteswap()  # Kafka's index entries are big-endian
    segment_file(directory, 0, ".index").write_bytes(index.tobytes())
    return entries


def time_lookups(segment: LogSegment, targets: list[int]) -> Sample:
    """Seconds for `translate_offset` of every target (kafkalog's side of the lookup figures)."""
    translate = segment.translate_offset
    watch = Stopwatch()
    for t in targets:
        translate(t)
    return watch.stop()


def offset_lookup_figure(scale: Scale, root: Path) -> Figure:
    """`translate_offset` on a full index against `bisect` over a list of the same keys."""
    directory = root / "lookup-0"
    entries = write_full_index_segment(directory, scale.index_bytes)
    config = bench_config(segment_index_bytes=scale.index_bytes)
    segment = LogSegment.open(FileSystem(), directory, 0, config, MockTime(START_MS),
                              file_already_exists=True)
    index = segment.offset_index
    assert index.is_full() and index.entries == entries, "the lookup index must be full"
    raw = segment_file(directory, 0, ".index").read_bytes()
    keys = [rel for rel, _ in struct.iter_unpack(">ii", raw)]  # the same keys (base offset 0)
    rng = random.Random(6)
    targets = [rng.randint(0, entries) for _ in range(scale.lookups)]

    def impl() -> Sample:
        return time_lookups(segment, targets)

    def base() -> Sample:
        search = bisect.bisect_right
        watch = Stopwatch()
        for t in targets:
            search(keys, t)
        return watch.stop()

    def index_only() -> Sample:
        lookup = index.lookup
        watch = Stopwatch()
        for t in targets:
            lookup(t)
        return watch.stop()

    _check_lookups(segment, targets[:100])
    result = paired(scale.reps, impl, base)
    lookup_s, _, _ = solo(scale.reps, index_only)
    segment.close()
    n = len(targets)
    ratio = result.rate_ratio()
    return Figure(
        key="lookup.translate_offset", figure="offset lookup",
        workload=f"translate_offset, random offsets, full {scale.index_bytes // 1024} KiB index "
                 f"({entries} entries)",
        unit="lookups/s", value=round(n / result.impl_s), baseline_name="bisect over a list",
        baseline=round(n / result.base_s), ratio=round(ratio, 3),
        goal="within 3x (ratio >= 0.333)", met=ratio >= 1 / 3,
        extra={"index_lookup_per_s": round(n / lookup_s), "goal_ratio": round(1 / 3, 3),
               "index_lookup_ratio": round(result.base_s / lookup_s, 3), **result.extra()},
    )


def _check_lookups(segment: LogSegment, targets: list[int]) -> None:
    """The benchmark must time correct answers: every target lands in its own batch."""
    for t in targets:
        found = segment.translate_offset(t)
        if found is None or found.offset != t:
            raise CorruptRecordError(f"translate_offset({t}) returned {found}",
                                     where=str(segment.log.path))
