"""`kafkalog dump`'s views of Kafka log files as JSON-ready values (kafka-dump-log.sh).

`dump_path` reads a `.log` (batches; records with `deep`), an `.index` / `.timeindex` (entries),
a `.txnindex`, a producer `.snapshot`, a checkpoint file (entries), a partition directory
(segments, epochs) or a whole log directory (partitions), each with the findings of
`kafkalog.impl.verify.verifier`. The CLI prints the result (dump_text.py renders it as text);
the file fuzzer runs it over damaged directories.

Nothing here writes: `.log` files are mapped read-only and the rest is read whole (small files).
A missing path or unreadable input is a typed `KafkalogError`.
"""

from __future__ import annotations

import base64
import dataclasses
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kafkalog.impl.checkpoint.checkpoint_file import (
    LEADER_EPOCH_CHECKPOINT_FILENAME,
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
)
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.index.index_file import open_index
from kafkalog.impl.index.transaction_index import ENTRY_SIZE, decode_entries
from kafkalog.impl.load.log_dir import (
    CLEAN_SHUTDOWN_FILE_NAME,
    SegmentFileName,
    classify_partition_file,
    parse_partition_dir_name,
    read_root_checkpoints,
)
from kafkalog.impl.producer.snapshot import read_snapshot, snapshot_offset
from kafkalog.impl.records.memory_records import batch_of, next_batch_size
from kafkalog.impl.records.record_batch import RecordBatch
from kafkalog.impl.verify.target import is_partition_dir
from kafkalog.impl.verify.verifier import (
    OFFSET_INDEX_ENTRY,
    TIME_INDEX_ENTRY,
    Finding,
    SegmentScan,
    Severity,
    check_offset_index,
    check_time_index,
    scan_segment,
    verify_log_dir,
    verify_partition,
)
from kafkalog.model.errors import KafkalogError, LogDirError

OFFSET_CHECKPOINTS = ("recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                      "log-start-offset-checkpoint", "cleaner-offset-checkpoint")
CONTROL_TYPES = {0: "ABORT", 1: "COMMIT"}  # control record key: int16 version, int16 type


# --- .log ---


def _control_marker(record: Any) -> dict[str, Any] | None:
    """An end-transaction marker's type and coordinator epoch, if the record is one."""
    if record.key is None or len(record.key) < 4 or record.value is None or len(record.value) < 6:
        return None
    _, kind = struct.unpack_from(">hh", record.key)
    _, coordinator_epoch = struct.unpack_from(">hi", record.value)
    return {"end_txn_marker": CONTROL_TYPES.get(kind, f"UNKNOWN({kind})"),
            "coordinator_epoch": coordinator_epoch}


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _record_json(batch: RecordBatch, record: Any) -> dict[str, Any]:
    sequence = batch.base_sequence
    if sequence >= 0:
        sequence += record.offset - batch.base_offset
    out: dict[str, Any] = {
        "offset": record.offset, "timestamp": record.timestamp,
        "key_size": -1 if record.key is None else len(record.key),
        "value_size": -1 if record.value is None else len(record.value),
        "sequence": sequence, "header_keys": [h.key for h in record.headers],
        "key": _b64(record.key), "value": _b64(record.value),
    }
    if batch.magic >= 2 and batch.is_control_batch:
        out["control"] = _control_marker(record)
    return out


def _batch_json(batch: RecordBatch, deep: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "base_offset": batch.base_offset, "last_offset": batch.last_offset,
        "count": batch.record_count, "base_sequence": batch.base_sequence,
        "producer_id": batch.producer_id, "producer_epoch": batch.producer_epoch,
        "partition_leader_epoch": batch.partition_leader_epoch,
        "is_transactional": batch.is_transactional, "is_control": batch.is_control_batch,
        "position": batch.position, "timestamp_type": batch.timestamp_type.value,
        "max_timestamp": batch.max_timestamp, "size": batch.size_in_bytes, "magic": batch.magic,
        "compression": batch.compression_type.name.lower(), "crc": batch.crc,
        "is_valid": batch.is_valid(),
    }
    if deep:
        out["records"] = [_record_json(batch, r) for r in batch.records()]
    return out


def _mapped_batches(fs: FileSystem, path: Path) -> Iterator[RecordBatch]:
    """Whole batches of a `.log` through a read-only mapping; stops at a torn tail or a bad size
    field (scan_segment reports both). Each batch must be consumed before the next is taken."""
    handle = fs.open_file(path, create=False, writable=False)
    try:
        size = handle.size()
        if size == 0:
            return
        mapped = handle.mmap(size, writable=False)
        view = memoryview(mapped)
        try:
            pos = 0
            while (length := _safe_size(view, pos, size, path)) is not None:
                batch = batch_of(view[pos : pos + length], pos, str(path))
                yield batch
                batch.buffer.release()
                pos += length
        finally:
            view.release()
            mapped.close()
    finally:
        handle.close()


def _safe_size(view: memoryview, pos: int, end: int, path: Path) -> int | None:
    try:
        size: int | None = next_batch_size(view, pos, end, 0, str(path))
    except KafkalogError:
        return None
    return size


def _segment_name(path: Path) -> SegmentFileName:
    """The parsed name of a segment file (`.deleted`/`.cleaned`/`.swap` ones included)."""
    kind = classify_partition_file(path.name)
    if isinstance(kind, KafkalogError):
        raise kind
    if not isinstance(kind, SegmentFileName):
        raise LogDirError("not a segment, index or checkpoint file kafkalog can dump",
                          where=str(path))
    return kind


def dump_log(fs: FileSystem, path: Path, deep: bool) -> dict[str, Any]:
    """A `.log`: every batch (and record with `deep`) plus the scan's findings."""
    base = _segment_name(path).base_offset
    batches = []
    for batch in _mapped_batches(fs, path):
        try:
            batches.append(_batch_json(batch, deep))
        except KafkalogError as error:
            batches.append({"position": batch.position, "error": str(error)})
    scan = scan_segment(fs, path, base, deep=False)
    return {"type": "log", "path": str(path), "base_offset": base, "size": scan.file_size,
            "batches": batches, "findings": [f.to_json() for f in scan.findings]}


# --- indexes ---


def _sibling_scan(fs: FileSystem, path: Path, name: SegmentFileName) -> SegmentScan | None:
    """The scan of the `.log` an index belongs to (same base offset and status suffix)."""
    log_path = path.with_name(f"{name.base_offset:020d}.log{name.status}")
    return scan_segment(fs, log_path, name.base_offset) if fs.exists(log_path) else None


def dump_index(fs: FileSystem, path: Path, deep: bool) -> dict[str, Any]:
    """An `.index` or `.timeindex`: entries, checked against the `.log` beside it.

    The file is read in chunks (never whole); the zero-filled tail of a preallocated index is
    measured, not listed.
    """
    name = _segment_name(path)
    is_time = name.suffix == ".timeindex"
    entry = TIME_INDEX_ENTRY if is_time else OFFSET_INDEX_ENTRY
    with open_index(fs, path, entry) as (entries, left_over, zeros):
        findings: list[Finding] = []
        if left_over or zeros:
            findings.append(Finding(Severity.PROBLEM, "index_wrong_length" if left_over else
                                    "index_not_trimmed", str(path), None,
                                    f"{left_over} extra bytes, {zeros} zero-filled entries",
                                    "FMT-27"))
        scan = _sibling_scan(fs, path, name)
        if scan is None:
            findings.append(Finding(Severity.NOTE, "no_log_file", str(path), None,
                                    "no .log beside this index; entries not checked", "REC-6"))
        else:
            check = check_time_index if is_time else check_offset_index
            findings += check(entries, scan, str(path))
    return {"type": "timeindex" if is_time else "index", "path": str(path),
            "base_offset": name.base_offset,
            "entries": IndexRows(fs, path, entry, name.base_offset, is_time),
            "findings": [f.to_json() for f in findings]}


class IndexRows:
    """The rows of an index dump, read from the file in chunks each time they are iterated, so
    dumping an index of any size never holds a list of its entries."""

    def __init__(self, fs: FileSystem, path: Path, entry: struct.Struct, base_offset: int,
                 is_time: bool) -> None:
        self.fs, self.path, self.entry = fs, path, entry
        self.base_offset, self.is_time = base_offset, is_time

    def __iter__(self) -> Iterator[dict[str, int]]:
        base = self.base_offset
        with open_index(self.fs, self.path, self.entry) as (entries, _, _):
            for a, b in entries:
                yield ({"timestamp": a, "offset": base + b} if self.is_time
                       else {"offset": base + a, "position": b})


# --- checkpoints ---


def dump_checkpoint(fs: FileSystem, path: Path, deep: bool) -> dict[str, Any]:
    """A leader-epoch or offset checkpoint; a malformed one raises CorruptCheckpointError."""
    if path.name == LEADER_EPOCH_CHECKPOINT_FILENAME:
        epochs = LeaderEpochCheckpointFile(fs, path, create_if_missing=False).read()
        rows = [{"epoch": e.epoch, "start_offset": e.start_offset} for e in epochs]
        return {"type": "leader-epoch-checkpoint", "path": str(path), "entries": rows,
                "findings": []}
    offsets = OffsetCheckpointFile(fs, path, create_if_missing=False).read()
    rows = [{"topic": t, "partition": p, "offset": o} for (t, p), o in sorted(offsets.items())]
    return {"type": "offset-checkpoint", "path": str(path), "entries": rows, "findings": []}


# --- directories ---


def _segment_summary(scan: SegmentScan, deep: bool, fs: FileSystem) -> dict[str, Any]:
    out: dict[str, Any] = {"base_offset": scan.base_offset, "size": scan.file_size,
                           "batches": len(scan.batches), "next_offset": scan.next_offset}
    if deep:
        out["dump"] = dump_log(fs, Path(scan.path), deep=True)["batches"]
    return out


def dump_partition(fs: FileSystem, path: Path, deep: bool) -> dict[str, Any]:
    """A partition directory: segments, epochs and every partition-level finding."""
    name = parse_partition_dir_name(path.name, where=str(path))
    root = path.parent
    checkpoints = read_root_checkpoints(fs, root, strict_high_watermarks=False)
    clean = fs.exists(root / CLEAN_SHUTDOWN_FILE_NAME)
    report = verify_partition(fs, name.topic_partition, path, checkpoints, clean, deep)
    return {"type": "partition", "path": str(path), "topic": name.topic_partition.topic,
            "partition": name.topic_partition.partition, "kind": name.kind.value,
            "log_end_offset": report.log_end_offset,
            "segments": [_segment_summary(s, deep, fs) for s in report.segments],
            "epochs": [{"epoch": e.epoch, "start_offset": e.start_offset}
                       for e in report.epoch_entries],
            "findings": [f.to_json() for f in report.findings]}


def dump_log_dir(fs: FileSystem, path: Path, deep: bool) -> dict[str, Any]:
    """A whole log directory: one line per partition plus directory-level findings."""
    report = verify_log_dir(fs, path, deep)
    partitions = [{"partition": str(p.topic_partition), "segments": len(p.segments),
                   "log_end_offset": p.log_end_offset,
                   "epochs": len(p.epoch_entries)} for p in report.partitions]
    return {"type": "log-dir", "path": str(path), "clean_shutdown": report.clean_shutdown,
            "partitions": partitions, "findings": [f.to_json() for f in report.all_findings()]}


def dump_snapshot(fs: FileSystem, path: Path, deep: bool) -> dict[str, Any]:
    """A producer `.snapshot` (PSF-2): one entry per producer, in file order. A corrupt file
    raises CorruptSnapshotError (PSF-5)."""
    entries = [dataclasses.asdict(e) for e in read_snapshot(fs, path)]
    return {"type": "producer-snapshot", "path": str(path), "offset": snapshot_offset(path.name),
            "entries": entries, "findings": []}


def dump_txn_index(fs: FileSystem, path: Path, deep: bool) -> dict[str, Any]:
    """A `.txnindex` (PSF-8): every whole 34-byte aborted-transaction entry, in file order. A
    version byte > 0 raises CorruptIndexError (the CLI prints it, exits 2)."""
    data = fs.read_file(path)
    entries = [dataclasses.asdict(e) for e in decode_entries(data, str(path))]
    return {"type": "txnindex", "path": str(path), "entries": entries,
            "trailing_bytes": len(data) % ENTRY_SIZE, "findings": []}


def dump_path(fs: FileSystem, path: Path, deep: bool) -> dict[str, Any]:
    """Pick the dumper from what `path` is. Raises a typed error for anything else."""
    if not fs.exists(path):
        raise LogDirError("no such file or directory", where=str(path))
    if fs.is_dir(path):
        return (dump_partition if is_partition_dir(fs, path) else dump_log_dir)(fs, path, deep)
    if path.name == LEADER_EPOCH_CHECKPOINT_FILENAME or path.name in OFFSET_CHECKPOINTS:
        return dump_checkpoint(fs, path, deep)
    if path.name.endswith(".snapshot"):
        return dump_snapshot(fs, path, deep)
    suffix = _segment_name(path).suffix
    if suffix == ".log":
        return dump_log(fs, path, deep)
    if suffix in (".index", ".timeindex"):
        return dump_index(fs, path, deep)
    if suffix == ".txnindex":
        return dump_txn_index(fs, path, deep)
    raise LogDirError(f"cannot dump {suffix} files", where=str(path))
