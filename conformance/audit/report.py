"""The audit's summary (Spark queries over its two Parquet datasets) and its HTML report.

Like the campaign report: one self-contained HTML file (inline SVG, no script, no network) and
`summary.json`, both pure functions of the summary, plus plain lines for the terminal.
"""

from __future__ import annotations

import html
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kafkalog.conformance.audit.unit import FINDING_DDL, PARTITION_DDL
from kafkalog.conformance.campaign.report import CSS, hbar_chart

_SIZE_EDGES = (0, 1 << 10, 1 << 20, 16 << 20, 256 << 20, 1 << 30, 16 << 30)
_SEGMENT_EDGES = (0, 1, 2, 5, 10, 50, 100, 1000)
_LISTED = 20  # rows of the worst-partitions and needs-recovery tables


@dataclass(frozen=True)
class AuditSummary:
    """Everything the audit report shows; `asdict` of it is summary.json."""

    audit_id: str
    log_dirs: int
    partitions: int
    segments: int
    bytes: int
    problems: int
    notes: int
    unreadable: int
    wall_s: float
    findings_by_kind: tuple[tuple[str, str, int], ...]  # (severity, kind, count), most first
    findings_by_rule: tuple[tuple[str, int], ...]  # (rule, problems), most first
    worst: tuple[tuple[str, int, str, int], ...]  # (path, problems, kinds, bytes)
    needing_recovery: int
    recovery_list: tuple[tuple[str, str], ...]  # (path, why)
    sizes: tuple[tuple[str, int], ...]  # (bucket label, partitions)
    segment_counts: tuple[tuple[str, int], ...]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)


def summarize_audit(spark: Any, out: str, audit_id: str, wall_s: float) -> AuditSummary:
    """Aggregate the audit's rows (small queries; only aggregates reach the driver)."""
    from pyspark.sql import functions as F

    parts = spark.read.schema(PARTITION_DDL).parquet(f"{out}/partitions").cache()
    found = spark.read.schema(FINDING_DDL).parquet(f"{out}/findings")
    totals = parts.agg(
        F.count("*").alias("n"),
        F.countDistinct("log_dir").alias("dirs"),
        F.sum("segments").alias("segments"),
        F.sum("bytes").alias("bytes"),
        F.count_if(F.col("error").isNotNull()).alias("unreadable"),
    ).first()
    by_kind = found.groupBy("severity", "kind").count().orderBy(F.desc("count"), "kind").collect()
    problems = found.where(F.col("severity") == "problem")
    by_rule = problems.groupBy("rule").count().orderBy(F.desc("count"), "rule").collect()
    worst = parts.where(F.col("problems") > 0).orderBy(F.desc("problems"), F.desc("bytes"))
    recovery = parts.where(~F.col("clean_shutdown") | F.col("recovery_behind"))
    summary = AuditSummary(
        audit_id=audit_id,
        log_dirs=int(totals.dirs),
        partitions=int(totals.n),
        segments=int(totals.segments or 0),
        bytes=int(totals.bytes or 0),
        problems=sum(int(r["count"]) for r in by_kind if r.severity == "problem"),
        notes=sum(int(r["count"]) for r in by_kind if r.severity == "note"),
        unreadable=int(totals.unreadable),
        wall_s=wall_s,
        findings_by_kind=tuple((r.severity, r.kind, int(r["count"])) for r in by_kind),
        findings_by_rule=tuple((r.rule or "(none)", int(r["count"])) for r in by_rule),
        worst=tuple(
            (r.path, r.problems, _kinds(r.problem_kinds), r.bytes)
            for r in worst.limit(_LISTED).collect()
        ),
        needing_recovery=recovery.count(),
        recovery_list=tuple((r.path, _why(r)) for r in recovery.limit(_LISTED).collect()),
        sizes=_histogram(parts, "bytes", _SIZE_EDGES, _bytes),
        segment_counts=_histogram(parts, "segments", _SEGMENT_EDGES, str),
    )
    parts.unpersist()
    return summary


def write_audit_report(summary: AuditSummary, out: Path) -> Path:
    """Write report.html and summary.json into `out`; returns the report's path."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(summary.to_json() + "\n")
    kinds = [(f"{severity}: {kind}", count) for severity, kind, count in summary.findings_by_kind]
    sections = [
        f"<h1>kafkalog audit {_e(summary.audit_id)}</h1>",
        f"<p>{_e(' · '.join(audit_lines(summary)[:2]))}</p>",
        "<h2>Findings by kind</h2>",
        hbar_chart(kinds, None),
        "<h2>Problems by rule</h2>",
        hbar_chart(list(summary.findings_by_rule), None),
        "<h2>Worst partitions</h2>",
        _table(("partition", "problems", "kinds", "bytes"), summary.worst),
        f"<h2>Partitions needing recovery ({summary.needing_recovery})</h2>",
        "<p>No clean-shutdown marker in their log directory, or a recovery point behind the "
        "data: the broker re-reads them at the next start (REC-10).</p>",
        _table(("partition", "why"), summary.recovery_list),
        "<h2>Partition sizes (bytes of .log files)</h2>",
        hbar_chart(list(summary.sizes), summary.partitions),
        "<h2>Segments per partition</h2>",
        hbar_chart(list(summary.segment_counts), summary.partitions),
    ]
    page = (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>kafkalog audit '
        f"{_e(summary.audit_id)}</title><style>{CSS}</style></head><body>\n"
        + "\n".join(sections)
        + "\n</body></html>\n"
    )
    path = out / "report.html"
    path.write_text(page)
    return path


def audit_lines(summary: AuditSummary) -> list[str]:
    """The summary as a few plain lines (terminal and report header)."""
    rate = summary.partitions / summary.wall_s if summary.wall_s > 0 else 0.0
    mib = summary.bytes / (1 << 20)
    lines = [
        f"{summary.partitions} partitions in {summary.log_dirs} log directories, "
        f"{summary.segments} segments, {mib:.1f} MiB",
        f"{summary.problems} problems, {summary.notes} notes, {summary.unreadable} unreadable "
        f"partitions; {summary.needing_recovery} need recovery",
        f"audited in {summary.wall_s:.1f} s ({rate:.1f} partitions/s, "
        f"{mib / summary.wall_s if summary.wall_s > 0 else 0.0:.1f} MiB/s)",
    ]
    lines += [
        f"  {severity}: {kind}: {count}" for severity, kind, count in summary.findings_by_kind
    ]
    return lines


def _histogram(frame: Any, column: str, edges: tuple[int, ...], label: Any) -> tuple[Any, ...]:
    """Rows per [edge, next edge) bucket of a numeric column, labelled, empty buckets kept."""
    from pyspark.sql import functions as F

    bucket = F.lit(len(edges) - 1)
    for index in range(len(edges) - 1, 0, -1):
        bucket = F.when(F.col(column) < edges[index], F.lit(index - 1)).otherwise(bucket)
    counts = {int(r.b): int(r["count"]) for r in frame.groupBy(bucket.alias("b")).count().collect()}
    names = [f"{label(a)}–{label(b)}" for a, b in zip(edges, edges[1:], strict=False)]
    names.append(f"≥ {label(edges[-1])}")
    return tuple((name, counts.get(index, 0)) for index, name in enumerate(names))


def _bytes(value: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= size:
            return f"{value / size:g} {unit}"
    return f"{value} B"


def _kinds(kinds: dict[str, int] | None) -> str:
    return ", ".join(f"{kind} x{count}" for kind, count in sorted((kinds or {}).items()))


def _why(row: Any) -> str:
    reasons = [] if row.clean_shutdown else ["no clean-shutdown marker"]
    if row.recovery_behind:
        reasons.append(f"recovery point {row.recovery_point} < log end {row.log_end_offset}")
    return "; ".join(reasons)


def _table(head: tuple[str, ...], rows: tuple[tuple[Any, ...], ...]) -> str:
    if not rows:
        return "<p><em>none</em></p>"
    top = "".join(f"<th>{_e(name)}</th>" for name in head)
    body = "".join(
        "<tr>" + "".join(f"<td>{_e(str(cell))}</td>" for cell in row) + "</tr>" for row in rows
    )
    return f"<table><tr>{top}</tr>{body}</table>"


def _e(text: str) -> str:
    return html.escape(text, quote=True)
