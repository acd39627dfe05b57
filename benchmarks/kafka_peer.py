"""Kafka-peer figures: kafkalog beside Apache Kafka's own log on the workloads of its own rows.

Each row runs one of kafkalog's goal workloads through kafkalog and through Kafka's `UnifiedLog`
(in a child JVM, `kafka_harness`) in the same run, interleaved repetition by repetition
(`core.paired`), kafkalog timed as the implementation and Kafka as the baseline, so the ratio is
kafkalog's throughput over Kafka's (above 1: kafkalog is faster):

- leader append: `append.leader.16kib`'s workload, one 16 KiB producer batch per call
  (`appendAsLeader`, origin CLIENT, epoch 0, a fresh log with Kafka's default config each
  repetition, no flush), and `append.leader.1mib`'s bytes: kafkalog's 1 MiB calls of 63
  batches against Kafka's one-batch calls, because Kafka's leader refuses more than one v2
  batch per append;
- follower append: the 1 MiB-call workload of `append.follower.1mib` (`appendAsFollower`);
- sequential read: `read.sequential`'s log, consumed in 1 MiB reads at HW isolation with every
  batch CRC-checked (Kafka reads a copy of the very files kafkalog wrote);
- offset lookup: `lookup.translate_offset` (`LogSegment.translateOffset` on the same full-index
  segment files, the same random offsets);
- recovery: `recovery.unclean` (load after an unclean shutdown with recovery point 0, on a copy
  of the same crashed log);
- cleaning: `clean.pass`'s dirty keyed log, one pass of kafkalog's `LogCleaner` against one of
  Kafka's own cleaner (`LogCleanerManager` selection, `Cleaner.doClean`, the checkpoint, as the
  adapter's `clean` action runs it), each on a fresh copy of the same files (copy and load
  untimed, fsyncs included). Both offset maps hold 314,572 entries (the adapter's 8 MiB map),
  far more than the 1,000 keys, so either pass is one pass over the whole dirty range.

Both sides are warmed up by the same rule before measuring (`kafka_harness.warm_up`: until three
consecutive runs agree within 10%), and the warm-up runs are reported in `extra["warmup"]`.
Every Kafka answer is checked (end offsets, bytes read, the positions found; for the cleaning
pass its end offset, log end offset and the records and bytes the log keeps, against kafkalog's
untimed reference pass over the same input) before it counts.
Without java/mvn, or when the adapter does not build, each row keeps kafkalog's number alone and
says "skipped: <reason>". `KAFKALOG_BENCH_KAFKA` picks another release (default 4.4, i.e. 4.4.0).
`kafka_runs` runs these rows alone, several times back to back.
"""

from __future__ import annotations

import functools
import os
import random
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafkalog.impl.cleaner.log_cleaner import LogCleaner
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.log.log import Log, LogOffsets
from kafkalog.impl.records.record_batch import RecordBatch
from kafkalog.impl.segment.log_segment import LogSegment
from kafkalog.impl.time import MockTime
from kafkalog.model.errors import KafkaStorageError

from . import append, clean, read
from .core import (
    MIB,
    START_MS,
    Figure,
    Sample,
    Scale,
    Stopwatch,
    bench_config,
    follower_chunks,
    leader_batch,
    paired,
    solo,
)
from .kafka_harness import (
    DEFAULT_KAFKA,
    HarnessUnavailable,
    KafkaHarness,
    KafkaHarnessError,
    warm_up,
)

KEYS: tuple[str, ...] = ("kafka.append.leader.1mib", "kafka.append.leader.16kib",
                         "kafka.append.follower.1mib", "kafka.read.sequential",
                         "kafka.lookup.translate_offset", "kafka.recovery.unclean",
                         "kafka.clean.pass")
#: The adapter's offset map (CleanerSettings: 8 MiB of 24-byte MD5 slots at load factor 0.9),
#: given to kafkalog's cleaner too so both passes run with the same capacity.
KAFKA_OFFSET_MAP_ENTRIES = 314_572
Peer = KafkaHarness | str  # the running harness, or the reason its rows are skipped
Check = Callable[[dict[str, Any]], None]


def _kafka_side(peer: Peer, op: str, check: Check, **args: Any) -> Callable[[], Sample] | None:
    """One Kafka repetition per call, every answer checked; None when the rows are skipped."""
    if isinstance(peer, str):
        return None
    run = peer.repetition(op, **args)

    def checked() -> Sample:
        sample, answer = run()
        check(answer)
        return sample
    return checked


def _expect(name: str, want: int) -> Check:
    def check(answer: dict[str, Any]) -> None:
        if answer[name] != want:
            raise KafkaHarnessError(f"Kafka answered {name} {answer[name]}, expected {want}",
                                    where=name)
    return check


def _figure(scale: Scale, key: str, workload: str, unit: str, amount: float,
            impl: Callable[[], Sample], base: Callable[[], Sample] | None, peer: Peer) -> Figure:
    """kafkalog's rate (`amount` per second) beside Kafka's, or kafkalog's alone if skipped."""
    theirs = None if base is None else warm_up(base)  # first: Kafka copies pristine images
    own = warm_up(impl)
    warmup = {"kafkalog": own.to_dict(), **({} if theirs is None else {"kafka": theirs.to_dict()})}
    digits = 1 if unit == "MiB/s" else None
    if base is None or isinstance(peer, str):
        wall, runs, cpu = solo(scale.reps, impl)
        return Figure(key=key, figure="Kafka peer", workload=f"{workload}; {peer}", unit=unit,
                      value=round(amount / wall, digits),
                      extra={"skipped": peer, "impl_runs_s": [round(r, 6) for r in runs],
                             "cpu_s": round(cpu, 6), "warmup": warmup})
    result = paired(scale.reps, impl, base)
    return Figure(
        key=key, figure="Kafka peer", workload=workload, unit=unit,
        value=round(amount / result.impl_s, digits), baseline_name=peer.label,
        baseline=round(amount / result.base_s, digits), ratio=round(result.rate_ratio(), 3),
        extra={"kafka": peer.release, "warmup": warmup, **result.extra()})


def _leader_side(peer: Peer, root: Path, batch: bytes, calls: int) -> Callable[[], Sample] | None:
    """Kafka's appendAsLeader of `calls` calls of one `batch` each (records checked)."""
    path = root / "kafka-leader-batch.bin"
    path.write_bytes(batch)
    records = RecordBatch(batch).record_count * calls
    return _kafka_side(peer, "leader", _expect("log_end_offset", records), chunk=str(path),
                       calls=calls, config={})


def leader_figure(scale: Scale, root: Path, peer: Peer) -> Figure:
    """`append.leader.1mib`'s bytes: kafkalog's 1 MiB calls against Kafka's one-batch calls.

    Kafka's leader takes one v2 batch per append (LogValidator: "Compressed outer record has
    more than one batch", for every origin), so the same bytes reach it as the 16 KiB producer
    batches they are made of, one call each: the most a produce request can carry per
    partition. `leader_16k_figure` is the like-for-like row.
    """
    w = append.workloads(scale)[0]
    chunk = w.chunk()
    batch = leader_batch(w.records_per_batch, append.VALUE_SIZE)
    base = _leader_side(peer, root, batch, w.calls * w.batches_per_call)
    impl = functools.partial(append._leader_run, root, [chunk] * w.calls, False)
    return _figure(scale, KEYS[0], f"leader append: {w.label}, {len(chunk) * w.calls / MIB:.0f} "
                   f"MiB (Kafka: the same bytes, one {len(batch)} B batch per call)", "MiB/s",
                   len(chunk) * w.calls / MIB, impl, base, peer)


def leader_16k_figure(scale: Scale, root: Path, peer: Peer) -> Figure:
    """`append.leader.16kib`'s workload on both sides: one 16 KiB producer batch per call."""
    w = append.workloads(scale)[1]
    batch = w.chunk()
    base = _leader_side(peer, root, batch, w.calls)
    impl = functools.partial(append._leader_run, root, [batch] * w.calls, False)
    return _figure(scale, KEYS[1], f"leader append: {w.label}, {len(batch) * w.calls / MIB:.0f} "
                   "MiB", "MiB/s", len(batch) * w.calls / MIB, impl, base, peer)


def follower_figure(scale: Scale, root: Path, peer: Peer) -> Figure:
    """`append.follower.1mib`'s workload: the same batches with offsets stamped by a leader."""
    w = append.workloads(scale)[0]
    chunks = follower_chunks(leader_batch(w.records_per_batch, append.VALUE_SIZE),
                             w.batches_per_call, w.calls)
    path = root / "kafka-follower-chunks.bin"
    path.write_bytes(b"".join(chunks))
    total = sum(map(len, chunks))
    base = _kafka_side(peer, "follower", _expect("log_end_offset", w.records_per_call * w.calls),
                       chunks=str(path), chunk_bytes=len(chunks[0]), config={})
    impl = functools.partial(append._follower_run, root, chunks)
    return _figure(scale, KEYS[2], f"follower append: {w.label}, {total / MIB:.0f} MiB",
                   "MiB/s", total / MIB, impl, base, peer)


def read_figure(scale: Scale, root: Path, peer: Peer) -> Figure:
    """`read.sequential`'s log and reads; Kafka consumes a copy of the same files."""
    directory = root / "kafka-read-0"
    segment_bytes = max(MIB, scale.read_log_bytes // 4)
    log, _ = read.build_log(directory, scale.read_log_bytes, segment_bytes)
    try:
        total = read.consume(log)
        base = _kafka_side(peer, "read", _expect("bytes", total), image=str(directory),
                           config={"segment_bytes": segment_bytes},
                           high_watermark=log.high_watermark, max_bytes=MIB)

        def impl() -> Sample:
            watch = Stopwatch()
            read.consume(log)
            return watch.stop()

        return _figure(scale, KEYS[3], f"sequential read: {total / MIB:.0f} MiB from offset 0, "
                       "1 MiB reads, HW isolation, CRC per batch", "MiB/s", total / MIB, impl,
                       base, peer)
    finally:
        log.close()


def lookup_figure(scale: Scale, root: Path, peer: Peer) -> Figure:
    """`lookup.translate_offset`'s segment and offsets, through each side's translateOffset."""
    directory = root / "kafka-lookup-0"
    entries = read.write_full_index_segment(directory, scale.index_bytes)
    rng = random.Random(6)  # read.offset_lookup_figure's seed: the same offsets
    targets = [rng.randint(0, entries) for _ in range(scale.lookups)]
    path = root / "kafka-lookup-targets.bin"
    path.write_bytes(struct.pack(f">{len(targets)}q", *targets))
    batch_size = len(leader_batch(1, 4))  # batch t sits at position t * batch_size
    base = _kafka_side(peer, "lookup", _expect("position_sum", batch_size * sum(targets)),
                       dir=str(directory), targets=str(path),
                       config={"segment_index_bytes": scale.index_bytes})
    segment = LogSegment.open(FileSystem(), directory, 0,
                              bench_config(segment_index_bytes=scale.index_bytes),
                              MockTime(START_MS), file_already_exists=True)
    try:
        def impl() -> Sample:
            return read.time_lookups(segment, targets)

        return _figure(scale, KEYS[4], f"offset lookup: translateOffset, {len(targets)} random "
                       f"offsets, full {scale.index_bytes // 1024} KiB index ({entries} "
                       "entries)", "lookups/s", len(targets), impl, base, peer)
    finally:
        segment.close()


def recovery_figure(scale: Scale, root: Path, peer: Peer) -> Figure:
    """`recovery.unclean`'s crashed log, recovered from offset 0 by each side."""
    directory = root / "kafka-recover-0"
    segment_bytes = max(MIB, scale.recovery_bytes // 4)
    log, _ = read.build_log(directory, scale.recovery_bytes, segment_bytes)
    leo, config = log.log_end_offset, log.config
    log.close_handlers()  # a crash: nothing flushed, indexes left preallocated
    files = sorted(directory.glob("*.log"))
    total = sum(p.stat().st_size for p in files)
    base = _kafka_side(peer, "recover", _expect("log_end_offset", leo), image=str(directory),
                       config={"segment_bytes": segment_bytes})

    def impl() -> Sample:
        watch = Stopwatch()
        reopened = Log.open(FileSystem(), directory, config, MockTime(START_MS),
                            recovery_point=0, had_clean_shutdown=False)
        elapsed = watch.stop()
        end = reopened.log_end_offset
        reopened.close_handlers()  # unclean again for the next repetition
        _expect("log_end_offset", leo)({"log_end_offset": end})
        return elapsed

    return _figure(scale, KEYS[5], f"recovery: unclean load, {total / MIB:.0f} MiB in "
                   f"{len(files)} segments from offset 0", "MiB/s", total / MIB, impl, base, peer)


def _cleaned(log: Log, end_offset: int) -> dict[str, int]:
    """What a pass left, in the fields Kafka's answer has: the pass's end offset, the log end
    offset, and the records and bytes of every segment afterwards."""
    segments = list(log.local_log.segments.values())
    records = sum(b.record_count for s in segments for b in s.log.batches())
    return {"end_offset": end_offset, "log_end_offset": log.log_end_offset, "records": records,
            "bytes": sum(s.size() for s in segments)}


def _clean_once(source: Path, target: Path, offsets: LogOffsets) -> tuple[Sample, dict[str, int]]:
    """kafkalog's pass over a fresh copy of `source` (copy and open untimed) and what it left."""
    log = clean._copy_open(source, target, offsets)
    try:
        watch = Stopwatch()
        result = LogCleaner(log, KAFKA_OFFSET_MAP_ENTRIES).clean()
        elapsed = watch.stop()
        if result is None:
            raise KafkaStorageError("kafkalog's cleaner selected nothing", where=str(target))
        return elapsed, _cleaned(log, result.end_offset)
    finally:
        log.close()


def _expect_all(want: dict[str, int]) -> Check:
    def check(answer: dict[str, Any]) -> None:
        for name, value in want.items():
            _expect(name, value)(answer)
    return check


def clean_figure(scale: Scale, root: Path, peer: Peer) -> Figure:
    """`clean.pass`'s dirty log, cleaned once per repetition by each side from the same files.

    An untimed kafkalog pass first gives the answer both sides must give on every repetition:
    Kafka's warm-up runs before kafkalog's, and an unchecked Kafka run must never count.
    """
    total = min(scale.recovery_bytes, clean.MAX_BYTES)
    source = root / "kafka-clean-dirty" / "compact-0"
    offsets = clean.build_dirty_log(source, total)
    dirty_files = sorted(source.glob("*.log"))[:-1]  # the active segment is never cleaned
    dirty = sum(p.stat().st_size for p in dirty_files)
    target = root / "kafka-clean-pass" / "compact-0"
    _, want = _clean_once(source, target, offsets)
    check = _expect_all(want)
    base = _kafka_side(peer, "clean", check, image=str(source),
                       config={"segment_bytes": clean.SEGMENT_BYTES, "cleanup_policy": "compact",
                               "min_cleanable_dirty_ratio": 0.0},
                       recovery_point=offsets.recovery_point,
                       log_start_offset=offsets.log_start_offset,
                       high_watermark=offsets.high_watermark)

    def impl() -> Sample:
        elapsed, left = _clean_once(source, target, offsets)
        if left != want:
            raise KafkaStorageError(f"kafkalog's pass left {left}, its first pass {want}",
                                    where=str(target))
        return elapsed

    figure = _figure(scale, KEYS[6], f"cleaning pass: one pass over {dirty / MIB:.0f} MiB of "
                     f"dirty keyed log ({clean.KEYS:,} keys, {len(dirty_files)} segments) to "
                     f"{want['bytes'] / MIB:.1f} MiB, a fresh copy each repetition, fsyncs "
                     "included", "MiB/s", dirty / MIB, impl, base, peer)
    figure.extra.update({"bytes": dirty, "kept": want})
    return figure


ROWS = (leader_figure, leader_16k_figure, follower_figure, read_figure, lookup_figure,
        recovery_figure, clean_figure)


def kafka_figures(scale: Scale, root: Path, version: str | None = None) -> list[Figure]:
    """Every Kafka-peer row, against `version` (default: $KAFKALOG_BENCH_KAFKA, else 4.4)."""
    version = version or os.environ.get("KAFKALOG_BENCH_KAFKA") or DEFAULT_KAFKA
    try:
        peer: Peer = KafkaHarness.start(version, root)
    except HarnessUnavailable as error:
        peer = f"skipped: {error}"
    try:
        return [row(scale, root, peer) for row in ROWS]
    finally:
        if isinstance(peer, KafkaHarness):
            peer.close()
