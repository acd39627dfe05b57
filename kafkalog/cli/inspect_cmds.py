"""`kafkalog dump` and `kafkalog verify`: read-only views of Kafka log files (kafka-dump-log.sh).

`dump PATH` prints a `.log` (batches; records with `--deep`), an `.index` / `.timeindex` (entries),
a checkpoint file (entries), a partition directory (segments, epochs) or a whole log directory
(partitions), each followed by the consistency notes `kafkalog.impl.verify.verifier` finds. `verify LOGDIR`
prints every finding and exits 0 when there is no problem, 1 when there is one. Both take `--json`.

Nothing here writes: `.log` files are mapped read-only and the rest is read whole (small files).
A missing path or unreadable input is a typed `KafkalogError`, which `main` prints as one line
with exit status 2.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import struct
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from kafkalog.impl.checkpoint.checkpoint_file import (
    LEADER_EPOCH_CHECKPOINT_FILENAME,
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
)
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.index.index_file import open_index
from kafkalog.impl.load.log_dir import (
    CLEAN_SHUTDOWN_FILE_NAME,
    SegmentFileName,
    classify_partition_file,
    parse_partition_dir_name,
    read_root_checkpoints,
)
from kafkalog.impl.records.memory_records import batch_of, next_batch_size
from kafkalog.impl.records.record_batch import RecordBatch
from kafkalog.impl.verify.target import is_partition_dir, verify_path
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
from kafkalog.model.values import TimestampType

OFFSET_CHECKPOINTS = ("recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                      "log-start-offset-checkpoint", "cleaner-offset-checkpoint")
CONTROL_TYPES = {0: "ABORT", 1: "COMMIT"}  # control record key: int16 version, int16 type
PAYLOAD_PREVIEW = 80


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


def echo_json(dumped: dict[str, Any]) -> None:
    """Print a dump as one JSON document, streaming index rows one line each."""
    rows = dumped.get("entries")
    if not isinstance(rows, IndexRows):
        click.echo(json.dumps(dumped, indent=2))
        return
    head = json.dumps({k: v for k, v in dumped.items() if k != "entries"}, indent=2)
    click.echo(head[: head.rindex("}")].rstrip() + ',\n  "entries": [')
    out = click.get_text_stream("stdout")
    batch: list[str] = []  # rows are written a thousand at a time: fast, and bounded
    separator = ""
    for row in rows:
        batch.append(json.dumps(row))
        if len(batch) == 1000:
            out.write(separator + "    " + ",\n    ".join(batch))
            separator, batch = ",\n", []
    if batch:
        out.write(separator + "    " + ",\n    ".join(batch))
        separator = ",\n"
    out.write("\n" if separator else "")
    click.echo("  ]\n}")


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
    from kafkalog.impl.producer.snapshot import read_snapshot, snapshot_offset

    entries = [dataclasses.asdict(e) for e in read_snapshot(fs, path)]
    return {"type": "producer-snapshot", "path": str(path), "offset": snapshot_offset(path.name),
            "entries": entries, "findings": []}


def dump_txn_index(fs: FileSystem, path: Path, deep: bool) -> dict[str, Any]:
    """A `.txnindex` (PSF-8): every whole 34-byte aborted-transaction entry, in file order. A
    version byte > 0 raises CorruptIndexError (main() prints it, exits 2)."""
    from kafkalog.impl.index.transaction_index import ENTRY_SIZE, decode_entries

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


# --- text rendering ---


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _payload(encoded: str | None) -> str:
    if encoded is None:
        return "null"
    text = base64.b64decode(encoded).decode("utf-8", errors="replace")
    return text if len(text) <= PAYLOAD_PREVIEW else text[:PAYLOAD_PREVIEW] + "..."


def _render_batch(b: dict[str, Any]) -> Iterator[str]:
    if "error" in b:
        yield f"position: {b['position']} error: {b['error']}"
        return
    ts_name = "LogAppendTime" if b["timestamp_type"] == TimestampType.LOG_APPEND_TIME.value \
        else "CreateTime"
    last_seq = b["base_sequence"] + b["last_offset"] - b["base_offset"] \
        if b["base_sequence"] >= 0 else -1
    yield (f"baseOffset: {b['base_offset']} lastOffset: {b['last_offset']} count: {b['count']} "
           f"baseSequence: {b['base_sequence']} lastSequence: {last_seq} "
           f"producerId: {b['producer_id']} producerEpoch: {b['producer_epoch']} "
           f"partitionLeaderEpoch: {b['partition_leader_epoch']} "
           f"isTransactional: {_bool(b['is_transactional'])} "
           f"isControl: {_bool(b['is_control'])} position: {b['position']} "
           f"{ts_name}: {b['max_timestamp']} size: {b['size']} magic: {b['magic']} "
           f"compresscodec: {b['compression']} crc: {b['crc']} isvalid: {_bool(b['is_valid'])}")
    for r in b.get("records", []):
        line = (f"| offset: {r['offset']} {ts_name}: {r['timestamp']} keySize: {r['key_size']} "
                f"valueSize: {r['value_size']} sequence: {r['sequence']} "
                f"headerKeys: [{','.join(r['header_keys'])}]")
        control = r.get("control")
        if control:
            line += (f" endTxnMarker: {control['end_txn_marker']} "
                     f"coordinatorEpoch: {control['coordinator_epoch']}")
        else:
            line += f" payload: {_payload(r['value'])}"
        yield line


def render_text(dumped: dict[str, Any]) -> Iterator[str]:
    """kafka-dump-log-style lines for one `dump_path` result."""
    kind = dumped["type"]
    yield f"Dumping {dumped['path']}"
    if kind == "log":
        yield f"Log starting offset: {dumped['base_offset']}"
        for batch in dumped["batches"]:
            yield from _render_batch(batch)
    elif kind == "index":
        yield from (f"offset: {e['offset']} position: {e['position']}" for e in dumped["entries"])
    elif kind == "timeindex":
        yield from (f"timestamp: {e['timestamp']} offset: {e['offset']}"
                    for e in dumped["entries"])
    elif kind == "leader-epoch-checkpoint":
        yield from (f"epoch: {e['epoch']} startOffset: {e['start_offset']}"
                    for e in dumped["entries"])
    elif kind == "offset-checkpoint":
        yield from (f"{e['topic']}-{e['partition']} offset: {e['offset']}"
                    for e in dumped["entries"])
    elif kind == "txnindex":  # as kafka-dump-log prints AbortedTxn
        yield from (f"version: 0 producerId: {e['producer_id']} firstOffset: "
                    f"{e['first_offset']} lastOffset: {e['last_offset']} lastStableOffset: "
                    f"{e['last_stable_offset']}" for e in dumped["entries"])
    elif kind == "producer-snapshot":
        yield from (
            f"producerId: {e['producer_id']} producerEpoch: {e['epoch']} coordinatorEpoch: "
            f"{e['coordinator_epoch']} currentTxnFirstOffset: {e['current_txn_first_offset']} "
            f"lastTimestamp: {e['timestamp']} lastSequence: {e['last_sequence']} lastOffset: "
            f"{e['last_offset']} offsetDelta: {e['offset_delta']}" for e in dumped["entries"])
    elif kind == "partition":
        yield from _render_partition(dumped)
    else:
        yield f"clean shutdown marker: {_bool(dumped['clean_shutdown'])}"
        yield from (f"{p['partition']}: segments: {p['segments']} "
                    f"logEndOffset: {p['log_end_offset']} epochs: {p['epochs']}"
                    for p in dumped["partitions"])
    yield from _render_findings(dumped["findings"])


def _render_partition(dumped: dict[str, Any]) -> Iterator[str]:
    yield f"Partition {dumped['topic']}-{dumped['partition']} logEndOffset: " \
          f"{dumped['log_end_offset']}"
    for s in dumped["segments"]:
        yield (f"segment baseOffset: {s['base_offset']} size: {s['size']} "
               f"batches: {s['batches']} nextOffset: {s['next_offset']}")
        for batch in s.get("dump", []):
            yield from ("  " + line for line in _render_batch(batch))
    yield from (f"epoch: {e['epoch']} startOffset: {e['start_offset']}" for e in dumped["epochs"])


def _render_findings(findings: list[dict[str, Any]]) -> Iterator[str]:
    ordered = sorted(findings, key=lambda f: f["severity"] != Severity.PROBLEM.value)
    for f in ordered:
        where = f["path"] if f["position"] is None else f"{f['path']}@{f['position']}"
        rule = f" [{f['rule']}]" if f["rule"] else ""
        yield f"{f['severity']}: {f['kind']}: {where}: {f['message']}{rule}"


# --- commands ---


@click.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--deep", is_flag=True, help="Decode every record (decompressing as needed).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def dump(path: Path, deep: bool, as_json: bool) -> None:
    """Print a .log, .index, .timeindex, .txnindex, .snapshot, checkpoint file, partition dir
    or log dir.

    Exits 1 when the findings include a problem (as verify does), else 0.
    """
    dumped = dump_path(FileSystem(), path, deep)
    if as_json:
        echo_json(dumped)
    else:
        for line in render_text(dumped):
            click.echo(line)
    problem = any(f["severity"] == Severity.PROBLEM.value for f in dumped["findings"])
    sys.exit(1 if problem else 0)


@click.command()
@click.argument("logdir", type=click.Path(path_type=Path))
@click.option("--deep", is_flag=True, help="Also decode every record of every batch.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON document.")
def verify(logdir: Path, deep: bool, as_json: bool) -> None:
    """Check a log directory (or one partition directory) read-only; exit 0 when clean, 1 when
    there is a problem, 2 when it cannot be read or is empty."""
    report = verify_path(FileSystem(), logdir, deep)
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        for line in _render_findings([f.to_json() for f in report.all_findings()]):
            click.echo(line)
        segments = sum(len(p.segments) for p in report.partitions)
        notes = len(report.all_findings()) - len(report.problems)
        click.echo(f"{report.path}: {len(report.partitions)} partitions, {segments} segments, "
                   f"{len(report.problems)} problems, {notes} notes")
    # `main` runs click with standalone_mode=False, which drops a returned exit code; exit here.
    sys.exit(1 if report.problems else 0)


__all__ = ["dump", "verify", "dump_path", "render_text"]
