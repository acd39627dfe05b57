"""`kafkalog audit` on Spark: real broker directories agree with `verify`; a generated fleet."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from in_process_cli import entry_point
from kafkalog.conformance.audit.job import find_log_dirs, pack, plan_units, run_audit
from kafkalog.conformance.audit.report import summarize_audit, write_audit_report
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.verify.verifier import verify_log_dir

pytestmark = pytest.mark.spark
TEMPLATE = "k2.1-zk-clean-many-partitions"  # 52 partitions, clean shutdown


def test_audit_cli__real_broker_dirs__findings_equal_verify(
    spark: Any, kafka_fixtures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every fixture log dir: the same problems as `verify` (none for the clean ones)."""
    out = tmp_path / "audit"
    assert entry_point(["audit", str(kafka_fixtures), "--out", str(out), "--audit-id", "f"]) == 1
    expected, partitions = set(), 0
    for log_dir in sorted(p for p in kafka_fixtures.iterdir() if p.is_dir()):
        report = verify_log_dir(FileSystem(), log_dir)
        partitions += len(report.partitions)
        expected |= {(f.kind, f.path, f.rule) for f in report.problems}
        if "-clean" in log_dir.name:
            assert report.problems == [], log_dir.name
    rows = pq.read_table(out / "findings").to_pylist()
    found = {(r["kind"], r["file"], r["rule"]) for r in rows if r["severity"] == "problem"}
    assert found == expected and {kind for kind, _, _ in found} == {"missing_index"}
    table = pq.read_table(out / "partitions")
    assert table.num_rows == partitions and set(table.column("audit_id").to_pylist()) == {"f"}
    output = capsys.readouterr().out
    assert f"partitions audited: {partitions}/{partitions}" in output
    assert "problem: missing_index: 14" in output and (out / "report.html").is_file()


def test_audit__generated_fleet_with_an_unreadable_segment__one_finding_not_a_failure(
    spark: Any, kafka_fixtures: Path, tmp_path: Path
) -> None:
    """1,040 partitions over 20 broker dirs; a segment that cannot be read is one finding."""
    fleet = tmp_path / "fleet"
    for broker in range(20):
        shutil.copytree(kafka_fixtures / TEMPLATE, fleet / f"broker-{broker}" / "data")
    broken = next((fleet / "broker-7" / "data").glob("*-0"))
    segment = next(broken.glob("*.log"))
    segment.unlink()
    segment.mkdir()  # a directory where the segment should be: unreadable
    log_dirs = find_log_dirs([str(fleet / "broker-*")])
    units, roots = plan_units(log_dirs, "fleet")
    assert len(log_dirs) == 20 and len(units) == 1040
    partitions, findings, wall = run_audit(spark, units, roots, str(tmp_path / "o"), "fleet", False)
    summary = summarize_audit(spark, str(tmp_path / "o"), "fleet", wall)
    assert (partitions, summary.partitions, summary.log_dirs) == (1040, 1040, 20)
    # verify reads the rest of the partition and names the file (ERR-36), so the partition is
    # audited, not unreadable.
    assert (summary.unreadable, summary.problems) == (0, 1)
    # (notes follow from the missing data: HW, recovery point and snapshots above it)
    assert [k for k in summary.findings_by_kind if k[0] == "problem"] == [
        ("problem", "unreadable_file", 1)]
    assert summary.worst[0][0] == str(broken) and summary.needing_recovery == 0
    page = write_audit_report(summary, tmp_path / "o").read_text()
    assert "unreadable_file" in page and "<script" not in page


def test_pack__largest_first__balances_bytes_over_slots() -> None:
    """LPT packing: no empty bin, and the biggest unit is alone when it outweighs the rest."""
    from kafkalog.conformance.audit.unit import Unit

    units = [Unit("d", True, "t", i, f"p{i}", size, None, None, None)
             for i, size in enumerate([100, 10, 10, 10, 10, 10])]  # fmt: skip
    bins = pack(units, 3)
    assert len(bins) == 3 and [u.bytes for u in bins[0]] == [100]
    assert sorted(sum(u.bytes for u in b) for b in bins[1:]) == [20, 30]
    assert pack(units[:1], 8) == [units[:1]]


def test_audit_schema_doc__documents_every_column() -> None:
    """specs/audit-schema.md has a table row for every column of both datasets."""
    from kafkalog.conformance.audit.unit import FINDING_DDL, PARTITION_DDL

    text = (Path(__file__).resolve().parents[2] / "specs" / "audit-schema.md").read_text()
    names = [part.strip().split()[0] for ddl in (PARTITION_DDL, FINDING_DDL)
             for part in ddl.replace("MAP<STRING, INT>", "MAP").split(",")]  # fmt: skip
    assert [name for name in names if f"| `{name}` |" not in text] == []


def test_audit_unit__partition_vanished_before_its_task__unreadable_partition_finding() -> None:
    """A partition whose verification raises is one `unreadable_partition` finding, no raise."""
    from kafkalog.conformance.audit.unit import Unit, audit_unit

    unit = Unit("d", True, "t", 0, "/nonexistent/kafkalog-audit/t-0", 0, None, None, None)
    row, findings = audit_unit(unit, "a1", False)
    assert len(findings) == 1 and "unreadable_partition" in findings[0]
    assert any(isinstance(field, str) and "LogDirError" in field for field in row)
