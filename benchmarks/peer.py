"""Peer figures: kafkalog's format layer beside independent record-batch codecs, same run.

A user who does not take kafkalog would build, check and stamp Kafka batches with a client
library's codec. Two well-known independent ones are compared, each on the workloads of the
other figures, kafkalog's side timed as the implementation and the peer's as the baseline
(`paired`, interleaved), so the ratio is kafkalog's throughput over the peer's:

- kafka-python's `kafka.record` (pure Python; `MemoryRecords`, `DefaultRecordBatchBuilder`),
- aiokafka's `aiokafka.record._crecords` (the same classes compiled with Cython: the fastest
  independent Python codec of the format we found on PyPI).

Workloads (each checked to produce or accept the same bytes on both sides before timing):

- build: 16 KiB producer batches of 100 B records (`MemoryRecords.with_records` against the
  peer's `DefaultRecordBatchBuilder`; byte-identical batches, the epoch field aside).
- read: the sequential-read workload (1 MiB reads at the HW, every batch CRC-checked):
  `Log.read` + `RecordBatch.is_valid` against `os.pread` of the same ranges + the peer's
  `MemoryRecords.next_batch` + `validate_crc`.
- append: the 1 MiB leader-append workload: `Log.append_as_leader` (validation, offsets, epoch,
  write, indexes, epoch cache, producer state) against the peer's minimum for the same file
  bytes: walk + `validate_crc` + the header fields a leader checks, offsets and epoch stamped
  into a copy (neither peer has an API for it: one `pack_into` per batch), one `os.write`.

A peer that is not installed still gives its rows, with kafkalog's number alone and "skipped:
<package> not installed" (so `kafkalog bench` never fails for want of a peer).
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.model.errors import CorruptRecordError, InvalidRecordError

from . import append, read
from .core import (
    KIB,
    MIB,
    Figure,
    Sample,
    Scale,
    Stopwatch,
    fresh_dir,
    leader_batch,
    paired,
    records_for_batch_bytes,
    solo,
    value_records,
)

VALUE_SIZE = 100
_EPOCH = slice(12, 16)  # partitionLeaderEpoch: outside the CRC, written as 0 by kafka-python
_PUT_OFFSET_LENGTH_EPOCH = struct.Struct(">qii").pack_into
_LENGTH = struct.Struct(">i").unpack_from


@dataclass(frozen=True)
class Peer:
    """An independent codec: its MemoryRecords reader and DefaultRecordBatchBuilder."""

    key: str  # figure-key part, e.g. "kafka_python"
    package: str  # the PyPI name, for labels and the skip note
    label: str  # e.g. "kafka-python 3.0.12"
    memory_records: Callable[[bytes], Any] | None  # None: not installed
    builder: Callable[..., Any] | None

    @property
    def skipped(self) -> str | None:
        return None if self.memory_records else f"skipped: {self.package} not installed"


def _peer(key: str, package: str, reader: str, builder: str, note: str = "") -> Peer:
    """The peer's MemoryRecords (from module `reader`) and DefaultRecordBatchBuilder (from
    `builder`), or a Peer marked not installed."""
    try:
        memory_records = importlib.import_module(reader).MemoryRecords
        batch_builder = importlib.import_module(builder).DefaultRecordBatchBuilder
        version = importlib.metadata.version(package)
    except ImportError:
        return Peer(key, package, package, None, None)
    return Peer(key, package, f"{package} {version}{note}", memory_records, batch_builder)


def peers() -> list[Peer]:
    """kafka-python's pure-Python codec and aiokafka's Cython one (absent ones marked)."""
    return [_peer("kafka_python", "kafka-python", "kafka.record.memory_records",
                  "kafka.record.default_records"),
            _peer("aiokafka", "aiokafka", "aiokafka.record._crecords",
                  "aiokafka.record._crecords", " (Cython)")]


# --- the peers' side of each workload --------------------------------------------------------

def _peer_build(peer: Peer, records: list[Any], batches: int) -> list[bytes]:
    """`batches` batches of `records` through the peer's builder (base offset 0, no producer)."""
    assert peer.builder is not None
    out = []
    for _ in range(batches):
        builder = peer.builder(magic=2, compression_type=0, is_transactional=0, producer_id=-1,
                               producer_epoch=-1, base_sequence=-1, batch_size=1 << 30)
        add = builder.append
        for offset, r in enumerate(records):
            add(offset, timestamp=r.timestamp, key=r.key, value=r.value, headers=[])
        out.append(builder.build())
    return out


def _peer_check(peer: Peer, data: bytes) -> int:
    """Walk the whole batches of `data` with the peer's reader, CRC-checking each; batches."""
    assert peer.memory_records is not None
    records, n = peer.memory_records(data), 0
    while (batch := records.next_batch()) is not None:
        if not batch.validate_crc():
            raise CorruptRecordError("batch CRC mismatch in the peer's walk", where=f"batch {n}")
        n += 1
    return n


def _peer_append(peer: Peer, root: Path, chunks: list[bytes]) -> Sample:
    """Validate, stamp offsets and epoch 0 into a copy, and write each chunk (see module doc)."""
    assert peer.memory_records is not None
    fd = os.open(fresh_dir(root, "peer-0") / "peer.log", os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        reader, write = peer.memory_records, os.write
        put, length = _PUT_OFFSET_LENGTH_EPOCH, _LENGTH
        next_offset, max_ts = 0, -1
        watch = Stopwatch()
        for chunk in chunks:
            records, deltas = reader(chunk), []
            while (batch := records.next_batch()) is not None:
                if not batch.validate_crc() or batch.base_offset != 0:
                    raise InvalidRecordError("the peer's walk refused a producer batch")
                deltas.append(batch.last_offset_delta)
                max_ts = max(max_ts, batch.max_timestamp)  # the append's max timestamp
            copy, pos = bytearray(chunk), 0
            for delta in deltas:
                size = length(copy, pos + 8)[0]
                put(copy, pos, next_offset, size, 0)
                next_offset += delta + 1
                pos += 12 + size
            write(fd, copy)
        return watch.stop()
    finally:
        os.close(fd)


# --- figures -----------------------------------------------------------------------------------

def _figure(kind: str, peer: Peer, workload: str, total_bytes: int,
            impl: Callable[[], Sample], base: Callable[[], Sample], reps: int) -> Figure:
    """kafkalog's MiB/s beside the peer's (ratio = kafkalog / peer), or kafkalog's alone."""
    key = f"peer.{kind}.{peer.key}"
    if peer.skipped:
        wall, runs, cpu = solo(reps, impl)
        return Figure(key=key, figure="peer codec", workload=f"{workload}; {peer.skipped}",
                      unit="MiB/s", value=round(total_bytes / MIB / wall, 1),
                      extra={"skipped": peer.skipped, "impl_runs_s": [round(r, 6) for r in runs],
                             "cpu_s": round(cpu, 6)})
    result = paired(reps, impl, base)
    return Figure(
        key=key, figure="peer codec", workload=workload, unit="MiB/s",
        value=round(total_bytes / MIB / result.impl_s, 1), baseline_name=peer.label,
        baseline=round(total_bytes / MIB / result.base_s, 1), ratio=round(result.rate_ratio(), 3),
        extra={"bytes": total_bytes, **result.extra()})


def build_figure(scale: Scale, peer: Peer) -> Figure:
    """Build 16 KiB batches of 100 B records: kafkalog's builder against the peer's."""
    records = list(value_records(records_for_batch_bytes(16 * KIB, VALUE_SIZE), VALUE_SIZE))
    batches = max(4, scale.append_bytes // (16 * 16 * KIB))
    ours = leader_batch(len(records), VALUE_SIZE)
    if not peer.skipped:
        theirs = bytearray(_peer_build(peer, records, 1)[0])
        theirs[_EPOCH] = ours[_EPOCH]
        if bytes(theirs) != ours:
            raise CorruptRecordError(f"{peer.label} built other bytes than kafkalog",
                                     where="peer build")

    def impl() -> Sample:
        with_records = MemoryRecords.with_records
        watch = Stopwatch()
        for _ in range(batches):
            with_records(records)
        return watch.stop()

    def base() -> Sample:
        watch = Stopwatch()
        _peer_build(peer, records, batches)
        return watch.stop()

    return _figure("build", peer, f"build: {batches} x {len(ours)} B batches of "
                   f"{len(records)} 100 B records", batches * len(ours), impl, base, scale.reps)


@dataclass(frozen=True)
class ReadFixture:
    """The log every peer's read row consumes, the (file, position, size) of each 1 MiB read,
    and how many batches the log holds (each peer must see exactly these)."""

    log: Any
    ranges: list[read.Range]
    total: int
    batches: int


def read_fixture(scale: Scale, root: Path) -> ReadFixture:
    log, _ = read.build_log(root / "peer-read", scale.append_bytes, max(MIB, scale.append_bytes))
    ranges: list[read.Range] = []
    total = read.consume(log, ranges)
    batches = sum(1 for s in log.segments for _ in s.log.batches(0))
    return ReadFixture(log, ranges, total, batches)


def read_figure(scale: Scale, fixture: ReadFixture, peer: Peer) -> Figure:
    """The sequential-read workload: `Log.read` + per-batch CRC against pread + the peer's walk."""
    ranges = fixture.ranges
    fds = {path: os.open(path, os.O_RDONLY) for path, _, _ in ranges}
    try:
        if not peer.skipped:
            seen = sum(_peer_check(peer, os.pread(fds[p], n, at)) for p, at, n in ranges)
            if seen != fixture.batches:
                raise CorruptRecordError(f"{peer.label} saw {seen} batches, not "
                                         f"{fixture.batches}", where="peer read")

        def impl() -> Sample:
            watch = Stopwatch()
            read.consume(fixture.log)
            return watch.stop()

        def base() -> Sample:
            check, pread = functools.partial(_peer_check, peer), os.pread
            watch = Stopwatch()
            for path, at, n in ranges:
                check(pread(fds[path], n, at))
            return watch.stop()

        return _figure("read", peer, f"read: {fixture.total / MIB:.0f} MiB from offset 0, 1 MiB "
                       "reads, CRC per batch", fixture.total, impl, base, scale.reps)
    finally:
        for fd in fds.values():
            os.close(fd)


def append_figure(scale: Scale, root: Path, peer: Peer) -> Figure:
    """The 1 MiB leader-append workload: `append_as_leader` against the peer's minimum."""
    w = append.workloads(scale)[0]
    chunks = [w.chunk()] * w.calls
    impl = functools.partial(append._leader_run, root, chunks, False)
    base = functools.partial(_peer_append, peer, root, chunks)
    return _figure("append", peer, f"leader append: {w.label}", len(chunks[0]) * w.calls, impl,
                   base, scale.reps)


def peer_figures(scale: Scale, root: Path) -> list[Figure]:
    """Every peer row: build, read and append, for each peer in `peers()`."""
    fixture = read_fixture(scale, root)
    try:
        out = []
        for peer in peers():
            out += [build_figure(scale, peer), read_figure(scale, fixture, peer),
                    append_figure(scale, root, peer)]
        return out
    finally:
        fixture.log.close()
