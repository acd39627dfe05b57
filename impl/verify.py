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
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from kafkalog.model.errors import (
    CorruptCheckpointError,
    CorruptRecordError,
    KafkalogError,
    KafkaStorageError,
    LogDirError,
)
from kafkalog.model.values import EpochEntry

from .checkpoint import LEADER_EPOCH_CHECKPOINT_FILENAME, LeaderEpochCheckpointFile
from .fs import FileSystem
from .index_file import open_index
from .index_file import parse_index as parse_index  # re-exported for dump and tests
from .log_dir import (
    LogDirLayout,
    RootCheckpoints,
    SegmentFileName,
    TopicPartition,
    classify_partition_file,
    inspect_log_dir,
    read_root_checkpoints,
)
from .memory_records import batch_of, next_batch_size
from .verify_producer import check_snapshots
from .verify_txn import check_txn_index

INT32_MAX = 2**31 - 1
# Per index file: after this many problems the rest of the file is summarised in one note, so a
# garbage index of any size costs bounded memory and output (issue 13).
MAX_INDEX_PROBLEMS = 100
OFFSET_INDEX_ENTRY = struct.Struct(">ii")  # FMT-10: relative offset, position
TIME_INDEX_ENTRY = struct.Struct(">qi")  # FMT-19: timestamp, relative offset


class Severity(StrEnum):
    """A problem makes `verify` exit 1; a note is information only."""

    PROBLEM = "problem"
    NOTE = "note"


@dataclass(frozen=True)
class Finding:
    """One observation about one file; `position` is a byte position (or line for checkpoints)."""

    severity: Severity
    kind: str
    path: str
    position: int | None
    message: str
    rule: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"severity": self.severity.value, "kind": self.kind, "path": self.path,
                "position": self.position, "message": self.message, "rule": self.rule}

    def __str__(self) -> str:
        where = self.path if self.position is None else f"{self.path}@{self.position}"
        rule = f" [{self.rule}]" if self.rule else ""
        return f"{self.severity.value}: {self.kind}: {where}: {self.message}{rule}"


def _problem(kind: str, path: str, position: int | None, message: str, rule: str) -> Finding:
    return Finding(Severity.PROBLEM, kind, path, position, message, rule)


def _note(kind: str, path: str, position: int | None, message: str, rule: str) -> Finding:
    return Finding(Severity.NOTE, kind, path, position, message, rule)


# --- Segment scan (FMT-52, FMT-46, SEG-2) ---


@dataclass(frozen=True)
class BatchFacts:
    """The header facts of one batch at `position` in its `.log` (what every check needs)."""

    position: int
    size: int
    base_offset: int
    last_offset: int  # inclusive
    magic: int
    partition_leader_epoch: int  # -1 for v0/v1
    max_timestamp: int


@dataclass(frozen=True)
class SegmentScan:
    """Every whole batch of one `.log`, and what scanning found wrong with it."""

    path: str
    base_offset: int
    file_size: int
    batches: tuple[BatchFacts, ...]
    findings: tuple[Finding, ...]

    @property
    def valid_bytes(self) -> int:
        return self.batches[-1].position + self.batches[-1].size if self.batches else 0

    @property
    def next_offset(self) -> int:
        """SEG-12: the last batch's last offset + 1, or the base offset when empty."""
        return self.batches[-1].last_offset + 1 if self.batches else self.base_offset


def scan_bytes(buf: memoryview | bytes, base_offset: int, path: str,
               deep: bool = False) -> SegmentScan:
    """Shallow-scan `buf` as a `.log` of a segment at `base_offset`. Pure; O(batches).

    Checks: size field >= 14 (FMT-52), CRC (FMT-46), no torn tail, offsets strictly increasing
    and within [base, base + Int.MAX] (SEG-2, LOG-2). With `deep`, every record is decoded too.
    """
    view = memoryview(buf)
    facts: list[BatchFacts] = []
    findings: list[Finding] = []
    pos, end = 0, len(view)
    while True:
        try:
            size = next_batch_size(view, pos, end, 0, path)
        except CorruptRecordError as error:
            findings.append(_problem("corrupt_batch_size", path, pos, error.message, "FMT-52"))
            return SegmentScan(path, base_offset, end, tuple(facts), tuple(findings))
        if size is None:
            break
        batch = batch_of(view[pos : pos + size], pos, path)
        try:
            fact = BatchFacts(pos, size, batch.base_offset, batch.last_offset, batch.magic,
                              batch.partition_leader_epoch if batch.magic >= 2 else -1,
                              batch.max_timestamp)
            findings.extend(_check_batch(batch, fact, facts[-1] if facts else None,
                                         base_offset, path, deep))
            facts.append(fact)
        except KafkalogError as error:
            # A legacy wrapper's offsets come from its compressed inner messages, which may not
            # decode; the size field still says where the next batch starts.
            findings.append(_problem("corrupt_batch", path, pos, error.message, "FMT-51"))
        finally:
            del batch  # release the view into `buf` (an mmap cannot close while views exist)
        pos += size
    if pos < end:
        findings.append(_problem("torn_tail", path, pos,
                                 f"{end - pos} bytes after the last whole batch", "FMT-52"))
    return SegmentScan(path, base_offset, end, tuple(facts), tuple(findings))


def _check_batch(batch: Any, fact: BatchFacts, previous: BatchFacts | None, base_offset: int,
                 path: str, deep: bool) -> Iterator[Finding]:
    pos = fact.position
    if not batch.is_valid():
        yield _problem("crc_mismatch", path, pos,
                       f"batch {fact.base_offset}..{fact.last_offset} fails its CRC/size check "
                       f"(stored crc {batch.crc}, computed {batch.compute_checksum()})", "FMT-46")
    elif deep:
        try:
            for _ in batch.records():
                pass
        except KafkalogError as error:
            yield _problem("corrupt_records", path, pos, error.message, "FMT-49")
    if fact.last_offset < fact.base_offset:
        yield _problem("negative_offset_delta", path, pos,
                       f"last offset {fact.last_offset} < base offset {fact.base_offset}", "FMT-45")
    if fact.base_offset < base_offset or fact.last_offset - base_offset > INT32_MAX:
        yield _problem("offset_outside_segment", path, pos,
                       f"batch {fact.base_offset}..{fact.last_offset} is outside "
                       f"[{base_offset}, {base_offset} + Int.MAX]", "SEG-2")
    if previous is not None and fact.base_offset <= previous.last_offset:
        yield _problem("offsets_not_increasing", path, pos,
                       f"batch starts at {fact.base_offset} but the previous one ends at "
                       f"{previous.last_offset}", "LOG-2")


def scan_segment(fs: FileSystem, path: Path, base_offset: int, deep: bool = False) -> SegmentScan:
    """Scan a `.log` through a read-only mapping (never written, never read whole into memory)."""
    handle = fs.open_file(path, create=False, writable=False)
    try:
        size = handle.size()
        if size == 0:
            return SegmentScan(str(path), base_offset, 0, (), ())
        mapped = handle.mmap(size, writable=False)
        try:
            view = memoryview(mapped)
            try:
                return scan_bytes(view, base_offset, str(path), deep)
            finally:
                view.release()
        finally:
            mapped.close()
    finally:
        handle.close()


# --- Index checks (FMT-10..18, FMT-19..25, BUG-26) ---


def _length_findings(path: str, left_over: int, zeros: int, entry_size: int,
                     rule: str) -> Iterator[Finding]:
    if left_over:
        yield _problem("index_wrong_length", path, None,
                       f"length is not a multiple of {entry_size} ({left_over} extra bytes)", rule)
    if zeros:
        yield _problem("index_not_trimmed", path, None,
                       f"{zeros} zero-filled preallocated entries at the end (unclean shutdown; "
                       f"recovery rebuilds the index)", "FMT-27")


class _ProblemBudget:
    """Stops an index check after MAX_INDEX_PROBLEMS problems, adding one note that says so.
    Counts only the findings added since the last call, so each entry costs O(1)."""

    def __init__(self, findings: list[Finding], path: str, count: int) -> None:
        self.findings, self.path, self.count = findings, path, count
        self.seen = self.problems = 0

    def exhausted(self, n: int) -> bool:
        for finding in self.findings[self.seen :]:
            self.problems += finding.severity is Severity.PROBLEM
        self.seen = len(self.findings)
        if self.problems < MAX_INDEX_PROBLEMS:
            return False
        self.findings.append(_note("index_check_stopped", self.path, None,
                                   f"stopped after {MAX_INDEX_PROBLEMS} problems; entries "
                                   f"{n}..{self.count - 1} not checked", "FMT-18"))
        return True


def check_offset_index(entries: Sequence[tuple[int, int]], scan: SegmentScan,
                       path: str) -> list[Finding]:
    """Every entry points at a batch start keyed by that batch's last offset (FMT-12).

    Keys and positions strictly increase (FMT-14). A key beyond the batch at its position is
    anchor-era per-append keying (SEG-4): legal by BUG-26's rule (lookup never lands past the
    batch containing the key), so it is a note; a key below that batch's base is a problem.
    """
    by_position = {b.position: b for b in scan.batches}
    last_offsets = {b.last_offset for b in scan.batches}
    findings: list[Finding] = []
    previous: tuple[int, int] | None = None
    budget = _ProblemBudget(findings, path, len(entries))
    for n, (relative, position) in enumerate(entries):
        if budget.exhausted(n):
            break
        at, key = n * OFFSET_INDEX_ENTRY.size, scan.base_offset + relative
        if relative < 0:
            findings.append(_problem("index_offset_below_base", path, at,
                                     f"relative offset {relative} < 0", "FMT-18"))
        if previous is not None and (key <= previous[0] or position <= previous[1]):
            findings.append(_problem("index_not_increasing", path, at,
                                     f"entry ({key}, {position}) does not follow "
                                     f"({previous[0]}, {previous[1]})", "FMT-14"))
        previous = (key, position)
        batch = by_position.get(position)
        if batch is None:
            findings.append(_problem("index_entry_not_batch_start", path, at,
                                     f"entry ({key}, {position}) points at no batch start in "
                                     f"{scan.path}", "FMT-12"))
        elif key < batch.base_offset or (key > batch.last_offset and key >= scan.next_offset):
            findings.append(_problem("index_key_outside_batch", path, at,
                                     f"key {key} is outside batch {batch.base_offset}.."
                                     f"{batch.last_offset} at position {position}", "BUG-26"))
        elif key != batch.last_offset:
            detail = "an anchor-era per-append key" if key in last_offsets else "mid-batch"
            findings.append(_note("index_key_not_batch_last_offset", path, at,
                                  f"key {key} is {detail}; batch at {position} ends at "
                                  f"{batch.last_offset}", "SEG-4"))
    return findings


def check_time_index(entries: Sequence[tuple[int, int]], scan: SegmentScan, path: str,
                     expect_final_entry: bool = False) -> list[Finding]:
    """(T, O): T is the largest timestamp of the batches up to the one holding O (FMT-19).

    Timestamps strictly increase and offsets never decrease (FMT-22); O lies in the segment.
    With `expect_final_entry` (a rolled segment, or any segment after a clean shutdown) the last
    entry carries the segment's largest timestamp (SEG-16, SEG-17): timestamp lookups and time
    retention read a segment's largest timestamp from there (SEG-19).
    """
    findings = _time_index_entry_findings(entries, scan, path)
    largest = max((b.max_timestamp for b in scan.batches), default=-1)
    last = entries[-1][0] if entries else -1
    if expect_final_entry and largest >= 0 and not entries:
        # Legal: LogSegment.truncateTo re-derives the max timestamp only if the truncated time
        # index kept an entry, so a segment cut back below its first entry (after a reload, when
        # the max was not yet loaded) rolls with no entry at all (SEG-13); lookups then scan.
        findings.append(_note("time_index_empty", path, None,
                              f"no entry, though the segment's largest timestamp is {largest}",
                              "SEG-13"))
    elif expect_final_entry and largest >= 0 and last != largest:
        findings.append(_problem("time_index_missing_final_entry", path, None,
                                 f"last entry has timestamp {last} but the segment's largest "
                                 f"timestamp is {largest}", "SEG-17"))
    return _explain_forgotten_prefix(findings, entries, scan, path, expect_final_entry)


_PREFIX_KINDS = ("time_index_timestamp_mismatch", "time_index_missing_final_entry")


def _explain_forgotten_prefix(findings: list[Finding], entries: Sequence[tuple[int, int]],
                              scan: SegmentScan, path: str, final: bool) -> list[Finding]:
    """Timestamp mismatches that Kafka itself produces become one note.

    After a reload a segment's max timestamp is loaded lazily; a truncation that empties its
    time index then forgets the batches before the cut (LogSegment.truncateTo re-derives the
    max only if it is already >= 0, SEG-13), so every later entry, the final one included, is
    the max over the batches from some batch k on. Any other mismatch stays a problem.
    """
    if not any(f.kind in _PREFIX_KINDS for f in findings):
        return findings
    batches = scan.batches
    for k in range(1, len(batches)):
        def since_k(offset: int, k: int = k) -> int:
            return max((b.max_timestamp for b in batches[k:] if b.base_offset <= offset),
                       default=-1)

        if all(ts == since_k(scan.base_offset + rel) for ts, rel in entries) and (
            not final or (entries[-1][0] if entries else -1) == since_k(scan.next_offset)
        ):
            kept = [f for f in findings if f.kind not in _PREFIX_KINDS]
            return [*kept, _note("time_index_forgot_prefix", path, None,
                                 f"entries describe only the batches from offset "
                                 f"{batches[k].base_offset} on (a reload, then a truncation "
                                 "that emptied the time index)", "SEG-13")]
    return findings


def _time_index_entry_findings(entries: Sequence[tuple[int, int]], scan: SegmentScan,
                               path: str) -> list[Finding]:
    findings: list[Finding] = []
    previous: tuple[int, int] | None = None
    budget = _ProblemBudget(findings, path, len(entries))
    for n, (timestamp, relative) in enumerate(entries):
        if budget.exhausted(n):
            break
        at, offset = n * TIME_INDEX_ENTRY.size, scan.base_offset + relative
        if previous is not None and (timestamp <= previous[0] or offset < previous[1]):
            findings.append(_problem("time_index_not_increasing", path, at,
                                     f"entry ({timestamp}, {offset}) does not follow "
                                     f"({previous[0]}, {previous[1]})", "FMT-22"))
        previous = (timestamp, offset)
        if relative < 0 or offset >= scan.next_offset:
            findings.append(_problem("time_index_entry_outside_segment", path, at,
                                     f"offset {offset} is outside [{scan.base_offset}, "
                                     f"{scan.next_offset})", "FMT-25"))
            continue
        seen = max((b.max_timestamp for b in scan.batches if b.base_offset <= offset), default=-1)
        if seen != timestamp:
            findings.append(_problem("time_index_timestamp_mismatch", path, at,
                                     f"entry ({timestamp}, {offset}) but the largest timestamp "
                                     f"up to offset {offset} is {seen}", "FMT-19"))
    return findings


# --- Epochs vs batches (EPO-1, SEG-15, REC-13) ---


def check_epochs(entries: Sequence[EpochEntry], scans: Sequence[SegmentScan],
                 log_end_offset: int, path: str, clean: bool,
                 log_start_offset: int = 0) -> list[Finding]:
    """The leader-epoch checkpoint agrees with the epochs stamped on the batches.

    Entries strictly increase in epoch and start offset (EPO-1); none starts beyond the LEO
    (REC-13; after an unclean shutdown that is a note, since loading truncates it); every v2
    batch at or above the first entry's start carries the epoch of the entry covering it.
    Batches wholly below `log_start_offset` are not judged: the cache is truncated from the log
    start (EPO-7), so an empty cache over them is legal (issue #10, defect 5).
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


def _unreadable(report: PartitionReport, path: Path | str, error: KafkaStorageError) -> None:
    report.findings.append(_problem("unreadable_file", str(path), None, error.message, "ERR-36"))


def _classify_files(fs: FileSystem, partition_dir: Path,
                    report: PartitionReport) -> dict[int, set[str]]:
    """Segment base offset -> the plain suffixes present (`.log`, `.index`, ...)."""
    segments: dict[int, set[str]] = {}
    for name in fs.list_dir(partition_dir):
        path = str(partition_dir / name)
        if fs.is_symlink(path):
            report.findings.append(_symlink_finding(path))
            continue
        kind = classify_partition_file(name)
        if isinstance(kind, SegmentFileName):
            if kind.status:
                report.findings.append(_note("leftover_file", path, None,
                                             f"{kind.status} file; the loader deletes or "
                                             f"completes it", "REC-2"))
            elif kind.suffix != ".snapshot":  # producer snapshots are not part of a segment
                segments.setdefault(kind.base_offset, set()).add(kind.suffix)
        elif isinstance(kind, KafkalogError):
            report.findings.append(_problem("invalid_file_name", path, None, kind.message,
                                            "FMT-5"))
        elif kind == "unknown":
            report.findings.append(_note("unknown_file", path, None,
                                         "not a file Kafka keeps in a partition directory",
                                         "FMT-8"))
    return segments


def _read_epochs(fs: FileSystem, partition_dir: Path, report: PartitionReport) -> None:
    path = partition_dir / LEADER_EPOCH_CHECKPOINT_FILENAME
    if not fs.exists(path):
        return
    try:
        report.epoch_entries = LeaderEpochCheckpointFile(fs, path, create_if_missing=False).read()
    except KafkaStorageError as error:
        _unreadable(report, path, error)
    except CorruptCheckpointError as error:
        report.findings.append(_problem("corrupt_checkpoint", str(path), None, str(error),
                                        "FMT-39"))


def _check_indexes(fs: FileSystem, partition_dir: Path, base: int, suffixes: set[str],
                   scan: SegmentScan, report: PartitionReport, final_entry: bool) -> None:
    prefix = str(partition_dir / f"{base:020d}")
    for suffix, entry, rule in ((".index", OFFSET_INDEX_ENTRY, "FMT-18"),
                                (".timeindex", TIME_INDEX_ENTRY, "FMT-25")):
        path = prefix + suffix
        if suffix not in suffixes:
            report.findings.append(_problem("missing_index", path, None,
                                            "index file is missing (the loader rebuilds it)",
                                            "REC-6"))
            continue
        try:
            with open_index(fs, path, entry) as (entries, left_over, zeros):
                report.findings.extend(_length_findings(path, left_over, zeros, entry.size, rule))
                if suffix == ".index":
                    report.findings.extend(check_offset_index(entries, scan, path))
                else:
                    report.findings.extend(check_time_index(entries, scan, path, final_entry))
        except KafkaStorageError as error:
            _unreadable(report, path, error)


def verify_partition(fs: FileSystem, tp: TopicPartition, partition_dir: Path,
                     checkpoints: RootCheckpoints, clean: bool, deep: bool = False,
                     check_root_offsets: bool = True) -> PartitionReport:
    """Every check of one partition directory; read-only."""
    report = PartitionReport(tp, str(partition_dir))
    segments = _classify_files(fs, partition_dir, report)
    previous: SegmentScan | None = None
    last_base = max((b for b, suffixes in segments.items() if ".log" in suffixes), default=None)
    for base in sorted(segments):
        suffixes = segments[base]
        if ".log" not in suffixes:
            for suffix in sorted(suffixes):
                report.findings.append(_note("orphan_index", str(partition_dir /
                                             f"{base:020d}{suffix}"), None,
                                             "index without a .log (the loader deletes it)",
                                             "REC-6"))
            continue
        try:
            scan = scan_segment(fs, partition_dir / f"{base:020d}.log", base, deep)
        except KafkaStorageError as error:
            _unreadable(report, partition_dir / f"{base:020d}.log", error)
            continue
        report.findings.extend(scan.findings)
        if previous is not None and previous.next_offset > base:
            report.findings.append(_problem("segments_overlap", scan.path, None,
                                            f"previous segment ends at {previous.next_offset - 1}"
                                            f" >= this segment's base {base}", "LOG-2"))
        # Only the active segment of a crashed broker may lack its final time-index entry.
        _check_indexes(fs, partition_dir, base, suffixes, scan, report,
                       final_entry=clean or base != last_base)
        for problem, kind, path, message, rule in check_txn_index(fs, partition_dir, base,
                                                                  scan.next_offset):
            report.findings.append((_problem if problem else _note)(kind, path, None, message,
                                                                    rule))
        report.segments.append(scan)
        previous = scan
    if not report.segments:
        report.findings.append(_note("no_segments", str(partition_dir), None,
                                     "no .log file; loading creates an empty segment at the log "
                                     "start offset", "REC-8"))
    _read_epochs(fs, partition_dir, report)
    epoch_path = str(partition_dir / LEADER_EPOCH_CHECKPOINT_FILENAME)
    # Batches below the log start are not judged (issue #10 defect 5); without trusted root
    # checkpoints the first segment's base is the log start.
    start = max(checkpoints.log_start_offsets.get(tp, 0) if check_root_offsets else 0,
                report.first_base_offset)
    report.findings.extend(check_epochs(report.epoch_entries, report.segments,
                                        report.log_end_offset, epoch_path, clean, start))
    if not check_root_offsets:
        return report
    report.findings.extend(check_partition_offsets(tp, checkpoints, start, report.log_end_offset,
                                                   str(partition_dir.parent), clean))
    for problem, kind, path, message, rule in check_snapshots(fs, partition_dir,
                                                              report.log_end_offset):
        report.findings.append((_problem if problem else _note)(kind, path, None, message, rule))
    return report


def _root_findings(layout: LogDirLayout, checkpoints: RootCheckpoints) -> list[Finding]:
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


def verify_log_dir(fs: FileSystem, path: Path | str, deep: bool = False) -> VerifyReport:
    """Check a whole log directory without writing to it.

    Raises LogDirError if it is missing, unreadable or empty (an empty directory is no log
    directory: a broker writes checkpoints into its log dirs at start-up).
    """
    layout = inspect_log_dir(fs, path)
    if not (layout.partitions or layout.root_files or layout.symlinks or layout.invalid_dirs
            or layout.other_partition_dirs):
        raise LogDirError("the directory is empty: not a Kafka log directory", where=str(path))
    # A corrupt HW file is fatal for LogDir.open; verify reports it and checks the rest.
    checkpoints = read_root_checkpoints(fs, layout.path, strict_high_watermarks=False)
    report = VerifyReport(str(layout.path), layout.clean_shutdown_marker)
    report.findings = _root_findings(layout, checkpoints)
    for tp, partition_dir in sorted(layout.partitions.items()):
        report.partitions.append(verify_partition(fs, tp, partition_dir, checkpoints,
                                                  layout.clean_shutdown_marker, deep))
    return report
