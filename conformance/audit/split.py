"""Large partitions split by segment: pieces verified in parallel, then merged per partition.

A partition whose `.log` files exceed the split policy (bytes or segment count) becomes several
`Piece`s, each a range of consecutive segment base offsets. A piece task runs the per-segment
checks of `kafkalog verify` on its range (batches, CRC, torn tail, offsets within the range,
offset and time index, transaction index) and returns a `PieceResult`; the merge (a Spark
`groupBy` on the partition) runs the cross-segment checks over the joined results: overlap
between ranges, the partition's file-name findings, epochs vs the checkpoint, LEO, recovery
point, log start and producer snapshots. The rows equal an unsplit audit's, in the same order
(tests/campaign/test_audit_split.py audits one fleet split and unsplit and compares).

The checks are `kafkalog.impl.verify.verifier`'s own stages (`classify_files`, `verify_segments`,
`overlap_finding`, `finish_partition`), the ones `verify_partition` runs over the whole
partition; only the split and the join live here.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kafkalog.conformance.audit.unit import (
    Row,
    Unit,
    from_finding,
    partition_row,
    unit_checkpoints,
    unreadable,
)
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.load.log_dir import SegmentFileName, TopicPartition, classify_partition_file
from kafkalog.impl.verify.verifier import (
    PartitionReport,
    Severity,
    classify_files,
    finish_partition,
    overlap_finding,
    verify_segments,
)


@dataclass(frozen=True)
class SplitPolicy:
    """A piece holds consecutive segments up to `max_bytes` of `.log` and `max_segments`
    segments (always at least one); a partition that needs more than one piece is split."""

    max_bytes: int = 256 << 20
    max_segments: int = 100


@dataclass(frozen=True)
class Piece:
    """Segments [first_base, end_base) of one partition (end None: to the last); plain values."""

    unit: Unit
    index: int
    count: int
    first_base: int | None  # None: from the lowest base (orphan indexes below the first .log)
    end_base: int | None
    last_base: int  # the partition's last segment with a `.log` (the active one)
    bytes: int

    @property
    def path(self) -> str:
        """Sort key for packing (LPT ties): the partition directory, then the piece number."""
        return f"{self.unit.path}#{self.index:06d}"

    @property
    def key(self) -> str:
        return self.unit.path

    def holds(self, base: int) -> bool:
        above = self.first_base is None or base >= self.first_base
        return above and (self.end_base is None or base < self.end_base)


@dataclass
class PieceResult:
    """What one piece found: its findings in `verify_partition`'s order, and per-segment facts.

    `scans` keep each segment's path, base, size and only the batches the merge needs (v2
    batches with a leader epoch, for the epoch checks, and the last batch, which fixes the
    segment's next offset): the merge never re-reads a `.log`.
    """

    index: int
    findings: list[Any] = field(default_factory=list)
    overlap_at: int | None = None  # where a cross-range segments_overlap finding goes
    scans: list[Any] = field(default_factory=list)
    file_findings: list[Any] = field(default_factory=list)  # piece 0 only
    error: str | None = None
    duration: float = 0.0


def segment_base(name: str) -> int | None:
    """The base offset of a segment's `.log`, `.index`, `.timeindex` or `.txnindex` file."""
    kind = classify_partition_file(name)
    if isinstance(kind, SegmentFileName) and not kind.status and kind.suffix != ".snapshot":
        return kind.base_offset
    return None


def log_sizes(path: str) -> list[tuple[int, int]]:
    """(base offset, bytes) of each `<base>.log` of a partition directory, by base; [] if
    unreadable (the piece or unit task then reports why)."""
    out = []
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                if entry.is_symlink():  # refused by verify, so no segment (nor the last one)
                    continue
                kind = classify_partition_file(entry.name)
                if isinstance(kind, SegmentFileName) and kind.suffix == ".log" and not kind.status:
                    out.append((kind.base_offset, entry.stat(follow_symlinks=False).st_size))
    except OSError:
        return []
    return sorted(out)


def split_units(units: list[Unit], policy: SplitPolicy,
                sizes_of: Any = None) -> tuple[list[Unit], list[Piece]]:
    """The units left whole, and the pieces of those the policy splits (driver side).
    `sizes_of(unit)` lists (base, bytes) of its `.log`s (default: from its local path)."""
    whole: list[Unit] = []
    pieces: list[Piece] = []
    for unit in units:
        if unit.bytes <= policy.max_bytes and unit.log_segments <= policy.max_segments:
            whole.append(unit)
            continue
        sizes = sizes_of(unit) if sizes_of is not None else log_sizes(unit.path)
        ranges = _ranges(sizes, policy)
        if len(ranges) < 2:
            whole.append(unit)
            continue
        last_base = sizes[-1][0]
        for n, group in enumerate(ranges):
            first = None if n == 0 else group[0][0]
            end = ranges[n + 1][0][0] if n + 1 < len(ranges) else None
            total = sum(size for _, size in group)
            pieces.append(Piece(unit, n, len(ranges), first, end, last_base, total))
    return whole, pieces


def _ranges(sizes: list[tuple[int, int]], policy: SplitPolicy) -> list[list[tuple[int, int]]]:
    ranges: list[list[tuple[int, int]]] = []
    load = 0
    for base, size in sizes:
        if ranges and load + size <= policy.max_bytes and len(ranges[-1]) < policy.max_segments:
            ranges[-1].append((base, size))
            load += size
        else:
            ranges.append([(base, size)])
            load = size
    return ranges


# --- The piece task (executors) ---


def audit_piece(piece: Piece, deep: bool) -> PieceResult:
    """The per-segment checks of one piece; read-only. Never raises (an error is recorded)."""
    started = time.monotonic()
    result = PieceResult(piece.index)
    try:
        _scan_piece(piece, deep, result)
    except BaseException as error:  # noqa: BLE001 - the merge turns it into a finding
        if isinstance(error, KeyboardInterrupt):
            raise
        result.error = f"{type(error).__name__}: {error}"[:2000]
    result.duration = time.monotonic() - started
    return result


def _scan_piece(piece: Piece, deep: bool, result: PieceResult) -> None:
    fs, partition_dir = FileSystem(), Path(piece.unit.path)
    segments, file_findings = classify_files(fs, partition_dir)
    result.file_findings = file_findings if piece.index == 0 else []
    found = verify_segments(fs, partition_dir, segments,
                            sorted(b for b in segments if piece.holds(b)), deep,
                            lambda base: piece.unit.clean or base != piece.last_base)
    result.findings, result.overlap_at = found.findings, found.overlap_at
    result.scans = [_slim(scan) for scan in found.scans]


def _slim(scan: Any) -> Any:
    """The scan with only the batches the merge reads (see PieceResult)."""
    keep = [b for b in scan.batches if b.magic >= 2 and b.partition_leader_epoch >= 0]
    if scan.batches and (not keep or keep[-1] is not scan.batches[-1]):
        keep.append(scan.batches[-1])
    return replace(scan, batches=tuple(keep), findings=())


# --- The merge (one Spark group per split partition) ---


def merge_pieces(pieces: list[tuple[Piece, PieceResult]],
                 audit_id: str) -> tuple[Row, list[Row]]:
    """The partition row and finding rows of a split partition, from all its pieces' results;
    equal to `audit_unit` on the whole partition (duration aside). Never raises."""
    pieces = sorted(pieces, key=lambda pair: pair[0].index)
    unit = pieces[0][0].unit
    started = time.monotonic()
    spent = sum(result.duration for _, result in pieces)
    errors = [result.error for _, result in pieces if result.error]
    if not errors and [p.index for p, _ in pieces] != list(range(pieces[0][0].count)):
        errors = [f"AuditError: pieces {[p.index for p, _ in pieces]} of {pieces[0][0].count}"]
    if not errors:
        try:
            report = _join(unit, [result for _, result in pieces])
        except BaseException as error:  # noqa: BLE001 - an unreadable partition is a finding
            if isinstance(error, KeyboardInterrupt):
                raise
            errors = [f"{type(error).__name__}: {error}"[:2000]]
    duration = spent + time.monotonic() - started
    if errors:
        return unreadable(unit, audit_id, errors[0], duration)
    findings = [from_finding(audit_id, unit.log_dir, unit.topic, unit.partition, f)
                for f in report.findings]
    return partition_row(unit, audit_id, (report, Severity), None, duration), findings


def _join(unit: Unit, results: list[PieceResult]) -> Any:
    """The PartitionReport `verify_partition` would return: pieces' findings in order, with the
    cross-range checks (overlap between ranges, epochs, root offsets, snapshots) added."""
    report = PartitionReport(TopicPartition(unit.topic, unit.partition), unit.path)
    report.findings.extend(results[0].file_findings)
    previous = None
    for result in results:
        found = list(result.findings)
        if previous is not None and result.scans and result.overlap_at is not None:
            first = result.scans[0]
            if previous.next_offset > first.base_offset:
                found.insert(result.overlap_at, overlap_finding(previous.next_offset, first.path,
                                                                first.base_offset))
        report.findings.extend(found)
        report.segments.extend(result.scans)
        previous = result.scans[-1] if result.scans else previous
    return finish_partition(FileSystem(), report, Path(unit.path), unit_checkpoints(unit),
                            unit.clean)
