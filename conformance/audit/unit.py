"""One partition's unit of work and the rows it gives (specs/audit-schema.md).

`Unit` names a partition; `audit_unit` verifies it whole and turns the report into one partition
row and its finding rows. The job (job.py), the split pieces (split.py) and the Hadoop groups
(remote.py) all produce these rows, so the row builders and the Arrow schema live here, below
all three.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.load.log_dir import RootCheckpoints, TopicPartition
from kafkalog.impl.verify.verifier import Severity, verify_partition

PARTITION_DDL = (
    "audit_id STRING, log_dir STRING, topic STRING, partition INT, path STRING, "
    "clean_shutdown BOOLEAN, segments INT, bytes BIGINT, log_start_offset BIGINT, "
    "log_end_offset BIGINT, recovery_point BIGINT, high_watermark BIGINT, "
    "recovery_behind BOOLEAN, epochs INT, latest_epoch INT, problems INT, notes INT, "
    "problem_kinds MAP<STRING, INT>, error STRING, duration_s DOUBLE, worker STRING"
)
FINDING_DDL = (
    "audit_id STRING, log_dir STRING, topic STRING, partition INT, severity STRING, "
    "kind STRING, rule STRING, file STRING, position BIGINT, message STRING"
)


def columns(ddl: str) -> list[tuple[str, str]]:
    """(name, type) pairs of a flat DDL string (types may be `MAP<STRING, INT>`)."""
    parts = ddl.replace("MAP<STRING, INT>", "MAP<STRING;INT>").split(",")
    pairs = [part.strip().split(" ", 1) for part in parts]
    return [(name, kind.replace(";", ", ")) for name, kind in pairs]


_PARTITION_COLUMNS = [name for name, _ in columns(PARTITION_DDL)]
_NESTED = [name for name, _ in columns(FINDING_DDL)][4:]  # a finding's own columns
UNIT_DDL = PARTITION_DDL + (
    ", findings ARRAY<STRUCT<severity: STRING, kind: STRING, rule: STRING, file: STRING, "
    "position: BIGINT, message: STRING>>"
)
RUN_DDL = UNIT_DDL + ", piece_of STRING, payload BINARY"  # a piece's row: only these two set
Row = tuple[Any, ...]


@dataclass(frozen=True)
class Unit:
    """One partition to audit: plain values, so it pickles to any executor."""

    log_dir: str
    clean: bool
    topic: str
    partition: int
    path: str
    bytes: int
    recovery_point: int | None
    log_start: int | None
    high_watermark: int | None
    log_segments: int = 0  # `.log` files (the split policy reads it with `bytes`)


def audit_unit(unit: Unit, audit_id: str, deep: bool) -> tuple[Row, list[Row]]:
    """Verify one partition (read-only): its partition row and its finding rows. Never raises."""
    started = time.monotonic()
    try:
        tp = TopicPartition(unit.topic, unit.partition)
        checkpoints = unit_checkpoints(unit)
        report = verify_partition(FileSystem(), tp, Path(unit.path), checkpoints, unit.clean, deep)
    except BaseException as error:  # noqa: BLE001 - an unreadable partition is a finding
        if isinstance(error, KeyboardInterrupt):
            raise
        message = f"{type(error).__name__}: {error}"[:2000]
        return unreadable(unit, audit_id, message, time.monotonic() - started)
    findings = [
        from_finding(audit_id, unit.log_dir, unit.topic, unit.partition, f)
        for f in report.findings
    ]
    row = partition_row(unit, audit_id, (report, Severity), None, time.monotonic() - started)
    return row, findings


def unit_checkpoints(unit: Unit) -> RootCheckpoints:
    """The root checkpoint entries of the unit's partition, as a RootCheckpoints."""
    tp = TopicPartition(unit.topic, unit.partition)
    return RootCheckpoints(
        _one(tp, unit.recovery_point), _one(tp, unit.log_start), _one(tp, unit.high_watermark)
    )


def unreadable(unit: Unit, audit_id: str, message: str, duration: float) -> tuple[Row, list[Row]]:
    """The rows of a partition that could not be verified: one `unreadable_partition` finding."""
    finding = finding_row(
        audit_id,
        unit.log_dir,
        unit.topic,
        unit.partition,
        "problem",
        "unreadable_partition",
        "",
        unit.path,
        None,
        message,
    )
    return partition_row(unit, audit_id, None, message, duration), [finding]


def partition_row(
    unit: Unit, audit_id: str, verified: Any, error: str | None, duration: float
) -> Row:
    """The partition row (PARTITION_DDL order); `verified` is (report, Severity) or None."""
    segments = epochs = problems = notes = 0
    start = end = unit.log_start or 0
    latest: int | None = None
    kinds: dict[str, int] = {}
    if verified is not None:
        report, severity = verified
        segments, epochs = len(report.segments), len(report.epoch_entries)
        start = max(unit.log_start or 0, report.first_base_offset)
        end = report.log_end_offset
        latest = report.epoch_entries[-1].epoch if report.epoch_entries else None
        for finding in report.findings:
            if finding.severity is severity.PROBLEM:
                problems += 1
                kinds[finding.kind] = kinds.get(finding.kind, 0) + 1
            else:
                notes += 1
    else:
        problems, kinds = 1, {"unreadable_partition": 1}
    behind = unit.recovery_point is not None and unit.recovery_point < end
    worker = f"{socket.gethostname()}:{os.getpid()}"
    return (
        audit_id,
        unit.log_dir,
        unit.topic,
        unit.partition,
        unit.path,
        unit.clean,
        segments,
        unit.bytes,
        start,
        end,
        unit.recovery_point,
        unit.high_watermark,
        behind,
        epochs,
        latest,
        problems,
        notes,
        kinds,
        error,
        duration,
        worker,
    )


def from_finding(
    audit_id: str, log_dir: str, topic: str | None, partition: int | None, finding: Any
) -> Row:
    return finding_row(
        audit_id,
        log_dir,
        topic,
        partition,
        finding.severity.value,
        finding.kind,
        finding.rule,
        finding.path,
        finding.position,
        finding.message,
    )


def finding_row(*values: Any) -> Row:
    return tuple(values)


def _one(tp: Any, value: int | None) -> dict[Any, int]:
    return {} if value is None else {tp: value}


def unit_record(partition: Row, findings: list[Row]) -> dict[str, Any]:
    """One UNIT_DDL row: the partition's columns and its findings nested."""
    row = dict(zip(_PARTITION_COLUMNS, partition, strict=True))
    row["findings"] = [dict(zip(_NESTED, f[4:], strict=True)) for f in findings]
    return row


def arrow_schema(pa: Any, with_pieces: bool = False) -> Any:
    """UNIT_DDL (or RUN_DDL) as an Arrow schema (they must agree; test_audit.py reads them)."""
    types = {"STRING": pa.string(), "INT": pa.int32(), "BIGINT": pa.int64(),
             "BOOLEAN": pa.bool_(), "DOUBLE": pa.float64(),
             "MAP<STRING, INT>": pa.map_(pa.string(), pa.int32())}  # fmt: skip
    fields = [(name, types[kind]) for name, kind in columns(PARTITION_DDL)]
    nested = pa.struct([(name, types[kind]) for name, kind in columns(FINDING_DDL)][4:])
    pieces = [("piece_of", pa.string()), ("payload", pa.binary())] if with_pieces else []
    return pa.schema([*fields, ("findings", pa.list_(nested)), *pieces])
