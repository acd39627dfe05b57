"""Read-only consistency checks of a Kafka log directory: what `kafkalog verify` reports.

`verify_log_dir` opens nothing for writing: `.log` files are mapped read-only, index and
checkpoint files are read whole (they are small), and the directory is only listed. It returns a
`VerifyReport` of typed `Finding`s, each naming a file and a byte position (or line):

- **problem**: the bytes break a rule Kafka relies on (a bad CRC, a torn tail, an index entry
  that does not point at a batch start, a missing index, epochs that disagree with the batches);
  the loader would have to repair or reject it, or a read could return wrong data;
- **note**: legal but worth knowing (anchor-era index keying, leftovers the loader cleans up,
  checkpoint entries for partitions that are not here).

The checks are pure functions over small value types (`BatchFacts`, index entries, epoch entries),
so each rule is unit-tested without files; the scanning functions only gather those values.
Legacy v0/v1 entries are scanned and CRC-checked like batches but carry no leader epoch.

By concern: `findings.py` (the finding types), `scan.py` (the `.log` scan),
`index.py` (index checks), `producer.py` and `transactions.py`; this module keeps the
epoch and checkpoint checks and the drivers, and re-exports every public name of the others.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from kafkalog.impl.checkpoint.checkpoint_file import (
    LEADER_EPOCH_CHECKPOINT_FILENAME,
    LOG_START_OFFSET_CHECKPOINT_FILENAME,
    RECOVERY_POINT_CHECKPOINT_FILENAME,
    REPLICATION_OFFSET_CHECKPOINT_FILENAME,
    LeaderEpochCheckpointFile,
)
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.index.index_file import open_index
from kafkalog.impl.index.index_file import (
    parse_index as parse_index,  # re-exported for dump and tests
)
from kafkalog.impl.load.log_dir import (
    LogDirLayout,
    RootCheckpoints,
    SegmentFileName,
    TopicPartition,
    classify_partition_file,
    inspect_log_dir,
    read_root_checkpoints,
)
from kafkalog.impl.verify.findings import Finding as Finding
from kafkalog.impl.verify.findings import Severity as Severity
from kafkalog.impl.verify.findings import note as _note
from kafkalog.impl.verify.findings import problem as _problem
from kafkalog.impl.verify.index import MAX_INDEX_PROBLEMS as MAX_INDEX_PROBLEMS
from kafkalog.impl.verify.index import OFFSET_INDEX_ENTRY as OFFSET_INDEX_ENTRY
from kafkalog.impl.verify.index import TIME_INDEX_ENTRY as TIME_INDEX_ENTRY
from kafkalog.impl.verify.index import check_offset_index as check_offset_index
from kafkalog.impl.verify.index import check_time_index as check_time_index
from kafkalog.impl.verify.index import length_findings
from kafkalog.impl.verify.memo import CheckedSegment, SegmentMemo
from kafkalog.impl.verify.producer import check_snapshots
from kafkalog.impl.verify.scan import BatchFacts as BatchFacts
from kafkalog.impl.verify.scan import SegmentScan as SegmentScan
from kafkalog.impl.verify.scan import scan_bytes as scan_bytes
from kafkalog.impl.verify.scan import scan_segment as scan_segment
from kafkalog.impl.verify.transactions import check_txn_index
from kafkalog.model.errors import (
    CorruptCheckpointError,
    KafkalogError,
    KafkaStorageError,
    LogDirError,
)
from kafkalog.model.values import EpochEntry

# --- Epochs vs batches (EPO-1, SEG-15, REC-13) ---


def check_epochs(entries: Sequence[EpochEntry], scans: Sequence[SegmentScan],
                 log_end_offset: int, path: str, clean: bool,
                 log_start_offset: int = 0) -> list[Finding]:
    """The leader-epoch checkpoint agrees with the epochs stamped on the batches.

    Entries strictly increase in epoch and start offset (EPO-1); none starts beyond the LEO
    (REC-13; after an unclean shutdown that is a note, since loading truncates it); every v2
    batch at or above the first entry's start carries the epoch of the entry covering it.
    Batches wholly below `log_start_offset` are not judged: the cache is truncated from the log
    start (EPO-7), so an empty cache over them is legal.
    """
    findings: list[Finding] = []
    for n in range(1, len(entries)):
        a, b = entries[n - 1], entries[n]
        if b.epoch <= a.epoch or b.start_offset <= a.start_offset:
            findings.append(_problem("epochs_not_increasing", path, n + 2,
                                     f"entry {b.epoch} {b.start_offset} follows "
                                     f"{a.epoch} {a.start_offset}", "EPO-1"))
    if entries and entries[-1].start_offset > log_end_offset:
        # Legal even after a clean close: a leader assigns (epoch, LEO) and the LEO may sit above
        # the data after a mid-batch cut (LOC-8, KL-TRUNC-2); load truncates it (REC-13).
        last = entries[-1]
        findings.append(_note("epoch_beyond_log_end", path, len(entries) + 2,
                             f"epoch {last.epoch} starts at {last.start_offset} beyond the log "
                             f"end offset {log_end_offset}", "REC-13"))
    findings.extend(_batch_epoch_findings(entries, scans, path, log_start_offset))
    return findings


def _batch_epoch_findings(entries: Sequence[EpochEntry], scans: Sequence[SegmentScan],
                          path: str, log_start_offset: int = 0) -> Iterator[Finding]:
    starts = [e.start_offset for e in entries]
    for scan in scans:
        for batch in scan.batches:
            if batch.magic < 2 or batch.partition_leader_epoch < 0:
                continue
            if batch.last_offset < log_start_offset:
                continue  # below the log start: nothing is readable, the cache forgot it
            if not entries:
                yield _problem("epoch_missing", scan.path, batch.position,
                               f"batch at {batch.base_offset} has epoch "
                               f"{batch.partition_leader_epoch} but {path} has no entries",
                               "SEG-15")
                return
            if batch.last_offset < starts[0]:
                continue  # below the log start the cache was truncated from (EPO-7)
            covering = entries[max(0, _floor_index(starts, batch.base_offset))]
            if covering.epoch != batch.partition_leader_epoch:
                yield _problem("epoch_mismatch", scan.path, batch.position,
                               f"batch at {batch.base_offset} has epoch "
                               f"{batch.partition_leader_epoch} but {path} says epoch "
                               f"{covering.epoch} from {covering.start_offset}", "EPO-1")


def _floor_index(sorted_keys: Sequence[int], key: int) -> int:
    """Index of the largest element <= key, or -1. O(log n)."""
    lo, hi = 0, len(sorted_keys)
    while lo < hi:
        mid = (lo + hi) // 2
        if sorted_keys[mid] <= key:
            lo = mid + 1
        else:
            hi = mid
    return lo - 1


# --- Checkpoints vs partitions (FMT-40, FMT-41, REC-10, REC-19, LOG-2) ---


def check_partition_offsets(tp: TopicPartition, checkpoints: RootCheckpoints, log_start: int,
                            log_end: int, root: str, clean: bool) -> list[Finding]:
    """Root checkpoint entries of `tp` against its data. After a clean shutdown the recovery
    point equals the LEO (REC-19) and LSO <= HW <= LEO (LOG-2); after an unclean one a lag is
    expected and reported as a note (REC-10, LOG-5, REC-9 repair it at load)."""
    findings: list[Finding] = []
    strict = _problem if clean else _note
    recovery = checkpoints.recovery_points.get(tp)
    if recovery is None:
        findings.append(_note("no_recovery_point", root, None,
                              f"{tp} has no recovery point (loads as 0)", "FMT-41"))
    elif recovery > log_end:
        # Legal: truncate_to sets the LEO to its target even when the batch-aligned cut landed
        # lower (LOC-8, KL-TRUNC-2), and a later flush or clean close checkpoints that LEO. Load
        # takes min(checkpoint, LEO) or the LEO itself (REC-18, REC-19), so nothing is lost.
        findings.append(_note("recovery_point_above_data", root, None,
                              f"{tp} recovery point {recovery} above the data's end {log_end} "
                              "(load clamps it)", "REC-19" if clean else "REC-18"))
    elif recovery != log_end and clean:
        findings.append(strict("recovery_point_mismatch", root, None,
                               f"{tp} recovery point {recovery} but log end offset {log_end}",
                               "REC-19"))
    hw = checkpoints.high_watermarks.get(tp)
    if hw is None:
        findings.append(_note("no_high_watermark", root, None,
                              f"{tp} has no high watermark (loads as 0, clamped)", "FMT-41"))
    elif hw > log_end and not (clean and (recovery is None or hw > recovery)):
        # As for the recovery point: the HW may equal a truncation target above the data's end
        # (KL-TRUNC-2), never above the LEO a clean close checkpoints as the recovery point;
        # load clamps it to the LEO (LOG-5).
        findings.append(_note("high_watermark_above_data", root, None,
                              f"{tp} high watermark {hw} above the data's end {log_end} "
                              "(load clamps it)", "LOG-5"))
    elif hw > log_end or (clean and hw < log_start):
        findings.append(strict("high_watermark_out_of_range", root, None,
                               f"{tp} high watermark {hw} outside [{log_start}, {log_end}]",
                               "LOG-2"))
    start = checkpoints.log_start_offsets.get(tp)
    if start is not None and start > log_end:
        # Legal when a truncation's batch-aligned cut landed below the LSO (LOC-8, KL-TRUNC-2):
        # the checkpointed LEO (recovery point) still reaches the LSO and the load drops the data
        # asynchronously (REC-9, KL-RELOAD-3). Above that LEO no Kafka log can be.
        reached = recovery is not None and start <= recovery
        findings.append((_note if reached else strict)("log_start_beyond_log_end", root, None,
                               f"{tp} log start offset {start} > log end offset {log_end}",
                               "REC-9"))
    return findings


# --- Partition and directory drivers ---


@dataclass
class PartitionReport:
    """What verify learned about one partition (for `dump` and the JSON report)."""

    topic_partition: TopicPartition
    path: str
    segments: list[SegmentScan] = field(default_factory=list)
    epoch_entries: list[EpochEntry] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset if self.segments else 0

    @property
    def first_base_offset(self) -> int:
        return self.segments[0].base_offset if self.segments else 0


@dataclass
class VerifyReport:
    """All findings for one log directory."""

    path: str
    clean_shutdown: bool
    partitions: list[PartitionReport] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def all_findings(self) -> list[Finding]:
        out = list(self.findings)
        for partition in self.partitions:
            out.extend(partition.findings)
        return out

    @property
    def problems(self) -> list[Finding]:
        return [f for f in self.all_findings() if f.severity is Severity.PROBLEM]

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "clean_shutdown": self.clean_shutdown,
            "partitions": len(self.partitions),
            "problems": len(self.problems),
            "findings": [f.to_json() for f in self.all_findings()],
        }


def _symlink_finding(path: str) -> Finding:
    return _problem("symlink_refused", path, None, "a symbolic link, not followed (it could "
                    "point outside the log directory); LogDir.open refuses it", "FMT-1")


def _unreadable_into(findings: list[Finding], path: Path | str, error: KafkaStorageError) -> None:
    findings.append(_problem("unreadable_file", str(path), None, error.message, "ERR-36"))


#: `classify_partition_file` is pure in the name, and a checker classifies the same names at
#: every verify: parsed once each.
_classify = lru_cache(maxsize=4096)(classify_partition_file)


def classify_files(fs: FileSystem, partition_dir: Path
                   ) -> tuple[dict[int, set[str]], list[Finding]]:
    """Segment base offset -> the plain suffixes present (`.log`, `.index`, ...), and the
    findings about single files (links, leftovers, bad or unknown names)."""
    segments: dict[int, set[str]] = {}
    findings: list[Finding] = []
    directory = str(partition_dir)  # joined as strings: a Path per file cost ~8 µs each
    for name in fs.list_dir(partition_dir):
        path = f"{directory}/{name}"
        if fs.is_symlink(path):
            findings.append(_symlink_finding(path))
            continue
        kind = _classify(name)
        if isinstance(kind, SegmentFileName):
            if kind.status:
                findings.append(_note("leftover_file", path, None, f"{kind.status} file; the "
                                      f"loader deletes or completes it", "REC-2"))
            elif kind.suffix != ".snapshot":  # producer snapshots are not part of a segment
                segments.setdefault(kind.base_offset, set()).add(kind.suffix)
        elif isinstance(kind, KafkalogError):
            findings.append(_problem("invalid_file_name", path, None, kind.message, "FMT-5"))
        elif kind == "unknown":
            findings.append(_note("unknown_file", path, None,
                                  "not a file Kafka keeps in a partition directory", "FMT-8"))
    return segments, findings


def read_epochs(fs: FileSystem, path: Path) -> tuple[list[EpochEntry], list[Finding]]:
    """The leader-epoch checkpoint's entries ([] if absent) and why it could not be read."""
    if not fs.exists(path):
        return [], []
    try:
        return LeaderEpochCheckpointFile(fs, path, create_if_missing=False).read(), []
    except KafkaStorageError as error:
        return [], [_problem("unreadable_file", str(path), None, error.message, "ERR-36")]
    except CorruptCheckpointError as error:
        return [], [_problem("corrupt_checkpoint", str(path), None, str(error), "FMT-39")]


def check_indexes(fs: FileSystem, partition_dir: Path, base: int, suffixes: set[str],
                  scan: SegmentScan, final_entry: bool) -> list[Finding]:
    """The offset and time index of one segment against its scan."""
    findings: list[Finding] = []
    prefix = str(partition_dir / f"{base:020d}")
    for suffix, entry, rule in ((".index", OFFSET_INDEX_ENTRY, "FMT-18"),
                                (".timeindex", TIME_INDEX_ENTRY, "FMT-25")):
        path = prefix + suffix
        if suffix not in suffixes:
            findings.append(_problem("missing_index", path, None,
                                     "index file is missing (the loader rebuilds it)", "REC-6"))
            continue
        try:
            with open_index(fs, path, entry) as (entries, left_over, zeros):
                findings.extend(length_findings(path, left_over, zeros, entry.size, rule))
                if suffix == ".index":
                    findings.extend(check_offset_index(entries, scan, path))
                else:
                    findings.extend(check_time_index(entries, scan, path, final_entry))
        except KafkaStorageError as error:
            findings.append(_problem("unreadable_file", path, None, error.message, "ERR-36"))
    return findings


def overlap_finding(previous_next_offset: int, path: str, base: int) -> Finding:
    """LOG-2: a segment starting at or below the previous segment's last offset."""
    return _problem("segments_overlap", path, None, f"previous segment ends at "
                    f"{previous_next_offset - 1} >= this segment's base {base}", "LOG-2")


@dataclass
class SegmentRange:
    """The per-segment checks of consecutive segments: findings in order, the scans, and where
    an overlap with a segment before the range belongs in `findings` (None: no segment)."""

    findings: list[Finding] = field(default_factory=list)
    scans: list[SegmentScan] = field(default_factory=list)
    overlap_at: int | None = None


def verify_segments(fs: FileSystem, partition_dir: Path, segments: dict[int, set[str]],
                    bases: Sequence[int], deep: bool, final_entry: Callable[[int], bool],
                    memo: SegmentMemo | None = None) -> SegmentRange:
    """Every per-segment check of the segments at `bases` (ascending): batches, CRC, torn tail,
    offsets, overlap within the range, indexes, transaction index. `final_entry(base)`: whether
    that segment's time index must hold the final entry. `memo` (optional) reuses the checks of
    segments whose files did not change (memo.py). `kafkalog audit` runs ranges of one
    partition in parallel and joins them (conformance/audit/split.py)."""
    out = SegmentRange()
    previous: SegmentScan | None = None
    for base in bases:
        suffixes = segments[base]
        if ".log" not in suffixes:
            out.findings.extend(_note("orphan_index", str(partition_dir / f"{base:020d}{suffix}"),
                                      None, "index without a .log (the loader deletes it)",
                                      "REC-6") for suffix in sorted(suffixes))
            continue
        checked = _checked_segment(fs, partition_dir, base, suffixes, deep, final_entry(base),
                                   memo)
        out.findings.extend(checked.head)
        scan = checked.scan
        if scan is None:
            continue
        if previous is None:
            out.overlap_at = len(out.findings)
        elif previous.next_offset > base:
            out.findings.append(overlap_finding(previous.next_offset, scan.path, base))
        out.findings.extend(checked.tail)
        out.scans.append(scan)
        previous = scan
    return out


def _checked_segment(fs: FileSystem, partition_dir: Path, base: int, suffixes: set[str],
                     deep: bool, final: bool, memo: SegmentMemo | None) -> CheckedSegment:
    fingerprint = (None if memo is None else
                   SegmentMemo.fingerprint(fs, partition_dir, base, suffixes, (deep, final)))
    if memo is not None and fingerprint is not None:
        known = memo.get(partition_dir, base, fingerprint)
        if known is not None:
            return known
    checked = _check_segment(fs, partition_dir, base, suffixes, deep, final)
    if memo is not None and fingerprint is not None:
        memo.put(partition_dir, base, fingerprint, checked)
    return checked


def _check_segment(fs: FileSystem, partition_dir: Path, base: int, suffixes: set[str],
                   deep: bool, final: bool) -> CheckedSegment:
    """Scan one segment's `.log`, then check its indexes and transaction index against it."""
    try:
        scan = scan_segment(fs, partition_dir / f"{base:020d}.log", base, deep)
    except KafkaStorageError as error:
        unreadable: list[Finding] = []
        _unreadable_into(unreadable, partition_dir / f"{base:020d}.log", error)
        return CheckedSegment(None, tuple(unreadable), ())
    tail = check_indexes(fs, partition_dir, base, suffixes, scan, final)
    for problem, kind, path, message, rule in check_txn_index(fs, partition_dir, base,
                                                              scan.next_offset):
        tail.append((_problem if problem else _note)(kind, path, None, message, rule))
    return CheckedSegment(scan, tuple(scan.findings), tuple(tail))


def finish_partition(fs: FileSystem, report: PartitionReport, partition_dir: Path,
                     checkpoints: RootCheckpoints, clean: bool,
                     check_root_offsets: bool = True,
                     memo: SegmentMemo | None = None) -> PartitionReport:
    """The cross-segment checks once every segment is in `report`: no segments, epochs against
    the batches, the root checkpoints' offsets, producer snapshots (parsed once per version of
    each file with `memo`)."""
    tp = report.topic_partition
    if not report.segments:
        report.findings.append(_note("no_segments", str(partition_dir), None,
                                     "no .log file; loading creates an empty segment at the log "
                                     "start offset", "REC-8"))
    epoch_path = partition_dir / LEADER_EPOCH_CHECKPOINT_FILENAME
    if memo is None:
        report.epoch_entries, epoch_findings = read_epochs(fs, epoch_path)
    else:  # copies: the report owns its lists, the memo keeps the answer
        entries, epoch_findings = memo.read_kept(fs, (str(epoch_path),),
                                                 lambda: read_epochs(fs, epoch_path))
        report.epoch_entries = list(entries)
    report.findings.extend(epoch_findings)
    # Batches below the log start are not judged (EPO-7); without trusted root
    # checkpoints the first segment's base is the log start.
    start = max(checkpoints.log_start_offsets.get(tp, 0) if check_root_offsets else 0,
                report.first_base_offset)
    report.findings.extend(check_epochs(report.epoch_entries, report.segments,
                                        report.log_end_offset, str(epoch_path), clean, start))
    if not check_root_offsets:
        return report
    report.findings.extend(check_partition_offsets(tp, checkpoints, start, report.log_end_offset,
                                                   str(partition_dir.parent), clean))
    for problem, kind, path, message, rule in check_snapshots(fs, partition_dir,
                                                              report.log_end_offset, memo):
        report.findings.append((_problem if problem else _note)(kind, path, None, message, rule))
    return report


def verify_partition(fs: FileSystem, tp: TopicPartition, partition_dir: Path,
                     checkpoints: RootCheckpoints, clean: bool, deep: bool = False,
                     check_root_offsets: bool = True,
                     memo: SegmentMemo | None = None) -> PartitionReport:
    """Every check of one partition directory; read-only."""
    report = PartitionReport(tp, str(partition_dir))
    segments, report.findings = classify_files(fs, partition_dir)
    last_base = max((b for b, suffixes in segments.items() if ".log" in suffixes), default=None)
    # Only the active segment of a crashed broker may lack its final time-index entry.
    found = verify_segments(fs, partition_dir, segments, sorted(segments), deep,
                            lambda base: clean or base != last_base, memo)
    report.findings.extend(found.findings)
    report.segments.extend(found.scans)
    return finish_partition(fs, report, partition_dir, checkpoints, clean, check_root_offsets,
                            memo)


def root_findings(layout: LogDirLayout, checkpoints: RootCheckpoints) -> list[Finding]:
    root = str(layout.path)
    findings = [_problem("invalid_dir_name", e.where or root, None, e.message, "FMT-3")
                for e in layout.invalid_dirs]
    findings += [_problem("corrupt_checkpoint", e.where or root, None, e.message, "FMT-41")
                 for e in checkpoints.problems]
    findings += [_symlink_finding(str(link)) for link in layout.symlinks]
    findings += [_note("partition_dir_not_live", str(p), None,
                       f"{name.topic_partition} is marked {name.kind.value}; not loaded", "FMT-2")
                 for name, p in layout.other_partition_dirs]
    known = set(layout.partitions)
    listed = (set(checkpoints.recovery_points) | set(checkpoints.high_watermarks)
              | set(checkpoints.log_start_offsets))
    absent = sorted(listed - known)
    if absent:
        # One note, not one per partition: copies of log dirs often drop most partitions.
        shown = ", ".join(str(tp) for tp in absent[:5])
        more = f" and {len(absent) - 5} more" if len(absent) > 5 else ""
        findings.append(_note("checkpoint_entries_without_partition", root, None,
                              f"checkpoints list {len(absent)} partitions with no directory "
                              f"here: {shown}{more}", "FMT-40"))
    return findings


#: The files `read_root_checkpoints` reads.
_ROOT_CHECKPOINT_FILES = (RECOVERY_POINT_CHECKPOINT_FILENAME, LOG_START_OFFSET_CHECKPOINT_FILENAME,
                          REPLICATION_OFFSET_CHECKPOINT_FILENAME)


def _root_checkpoints(fs: FileSystem, root: Path, memo: SegmentMemo | None) -> RootCheckpoints:
    def read() -> RootCheckpoints:
        return read_root_checkpoints(fs, root, strict_high_watermarks=False)
    if memo is None:
        return read()
    return memo.read_kept(fs, tuple(str(root / name) for name in _ROOT_CHECKPOINT_FILES), read)


def verify_log_dir(fs: FileSystem, path: Path | str, deep: bool = False,
                   memo: SegmentMemo | None = None) -> VerifyReport:
    """Check a whole log directory without writing to it; `memo` (optional, memo.py) reuses
    the checks of segments whose files did not change since it last saw them.

    Raises LogDirError if it is missing, unreadable or empty (an empty directory is no log
    directory: a broker writes checkpoints into its log dirs at start-up).
    """
    layout = inspect_log_dir(fs, path)
    if not (layout.partitions or layout.root_files or layout.symlinks or layout.invalid_dirs
            or layout.other_partition_dirs):
        raise LogDirError("the directory is empty: not a Kafka log directory", where=str(path))
    # A corrupt HW file is fatal for LogDir.open; verify reports it and checks the rest.
    checkpoints = _root_checkpoints(fs, layout.path, memo)
    report = VerifyReport(str(layout.path), layout.clean_shutdown_marker)
    report.findings = root_findings(layout, checkpoints)
    for tp, partition_dir in sorted(layout.partitions.items()):
        report.partitions.append(verify_partition(fs, tp, partition_dir, checkpoints,
                                                  layout.clean_shutdown_marker, deep, memo=memo))
    return report
