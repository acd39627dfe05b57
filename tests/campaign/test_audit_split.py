"""Large partitions split by segment: the split audit gives exactly the unsplit audit's rows."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from in_process_cli import entry_point
from kafkalog.conformance.audit.fleet import write_log_dir
from kafkalog.conformance.audit.job import find_log_dirs, plan_units, run_audit
from kafkalog.conformance.audit.split import (
    SplitPolicy,
    audit_piece,
    merge_pieces,
    split_units,
)
from kafkalog.conformance.audit.unit import audit_unit

EVERY_SEGMENT = SplitPolicy(max_bytes=1, max_segments=1)  # every segment its own piece
NEVER = SplitPolicy(max_bytes=1 << 60, max_segments=1 << 30)
SEGMENT = 60_000


def damaged_fleet(root: Path, kafka_fixtures: Path | None = None) -> Path:
    """Two generated broker dirs (one clean, one crashed) whose multi-segment partitions carry
    damage in middle segments and across range boundaries, plus the real fixtures if given."""
    clean = write_log_dir(root / "b0", {"big-0": 600_000, "big-1": 400_000, "small-0": 30_000},
                          SEGMENT)
    crashed = root / "b1"
    shutil.copytree(clean, crashed)
    (crashed / ".kafka_cleanshutdown").unlink()
    for broker in (clean, crashed):
        part = broker / "big-0"
        logs = sorted(part.glob("*.log"))
        assert len(logs) >= 8
        logs[2].with_suffix(".index").unlink()  # missing_index in a middle segment
        data = bytearray(logs[3].read_bytes())
        data[200] ^= 0xFF  # crc_mismatch
        logs[3].write_bytes(bytes(data) + b"\x00\x00\x00")  # and a torn tail
        # A copy of segment 4 named inside segment 5's range: overlap across a range boundary,
        # offsets outside its segment, epochs of batches checked in another piece.
        base5 = int(logs[5].stem)
        for suffix in (".log", ".index", ".timeindex"):
            shutil.copy(logs[4].with_suffix(suffix), part / f"{base5 - 3:020d}{suffix}")
        shutil.copy(logs[1].with_suffix(".index"), part / f"{int(logs[6].stem) + 1:020d}.index")
        (part / f"{int(logs[7].stem):020d}.log.deleted").write_bytes(b"")
        for rolled_or_active in (logs[6], logs[-1]):  # final time-index entry lost
            index = rolled_or_active.with_suffix(".timeindex")
            index.write_bytes(index.read_bytes()[:-12])
        epochs = (part / "leader-epoch-checkpoint").read_text().splitlines()
        epochs[3] = f"1 {int(epochs[3].split()[1]) + 40}"  # epoch 1 starts later: mismatches
        (part / "leader-epoch-checkpoint").write_text("\n".join(epochs) + "\n")
        unreadable = sorted((broker / "big-1").glob("*.log"))[2]
        unreadable.unlink()
        unreadable.mkdir()  # a directory where a middle segment should be
    if kafka_fixtures is not None:
        for log_dir in sorted(p for p in kafka_fixtures.iterdir() if p.is_dir()):
            shutil.copytree(log_dir, root / "fixtures" / log_dir.name, symlinks=True)
    return root


def comparable(rows: list[dict[str, Any]] | list[tuple[Any, ...]]) -> list[Any]:
    """Rows without duration and worker, in a stable order."""
    out = []
    for row in rows:
        values = dict(row) if isinstance(row, dict) else dict(enumerate(row))
        for volatile in ("duration_s", "worker", 19, 20):
            values.pop(volatile, None)
        out.append(repr(sorted(values.items(), key=lambda item: str(item[0]))))
    return sorted(out)


def test_split_units__policy__ranges_of_whole_segments_covering_the_partition(
    tmp_path: Path,
) -> None:
    """Pieces are consecutive, hold whole segments within the policy, and cover every base."""
    fleet = damaged_fleet(tmp_path)
    units, _ = plan_units(find_log_dirs([str(fleet)]), "a")
    whole, pieces = split_units(units, SplitPolicy(max_bytes=2 * SEGMENT, max_segments=3))
    assert {u.topic for u in whole} == {"small"} and pieces
    big = [p for p in pieces if p.unit.path == str(fleet / "b0" / "big-0")]
    assert [p.index for p in big] == list(range(big[0].count)) and big[0].first_base is None
    assert all(a.end_base == b.first_base for a, b in zip(big, big[1:], strict=False))
    assert big[-1].end_base is None and sum(p.bytes for p in big) == big[0].unit.bytes
    assert split_units(units, NEVER) == (units, [])


def test_merge_pieces__damaged_partitions_split_per_segment__rows_equal_unsplit(
    tmp_path: Path, kafka_fixtures: Path
) -> None:
    """Every partition, cut into one piece per segment and merged, gives audit_unit's rows."""
    fleet = damaged_fleet(tmp_path, kafka_fixtures)
    last = sorted((fleet / "b1" / "big-0").glob("*.log"))[-1]  # crashed: no final entry needed
    (last.parent / f"{int(last.stem) + 1000:020d}.log").symlink_to(last)  # refused, not last
    units, _ = plan_units(find_log_dirs([str(fleet)]), "a")
    _, pieces = split_units(units, EVERY_SEGMENT)
    assert len({p.key for p in pieces}) >= 5
    for unit in units:
        mine = [p for p in pieces if p.unit == unit]
        if not mine:
            continue
        row, findings = merge_pieces([(p, audit_piece(p, False)) for p in mine], "a")
        expected_row, expected = audit_unit(unit, "a", False)
        assert row[:19] == expected_row[:19], unit.path
        assert findings == expected, unit.path  # same findings, in the same order


def test_merge_pieces__a_piece_that_failed__one_unreadable_partition_finding(
    tmp_path: Path,
) -> None:
    """The partition vanished under its pieces: the unsplit audit's unreadable row, no raise."""
    fleet = damaged_fleet(tmp_path)
    units, _ = plan_units(find_log_dirs([str(fleet / "b0")]), "a")
    _, pieces = split_units(units, EVERY_SEGMENT)
    mine = [p for p in pieces if p.key.endswith("big-0")]
    shutil.rmtree(mine[0].unit.path)
    row, findings = merge_pieces([(p, audit_piece(p, False)) for p in mine], "a")
    assert (row, findings)[1] == audit_unit(mine[0].unit, "a", False)[1]
    assert [f[5] for f in findings] == ["unreadable_partition"] and "LogDirError" in row[18]


@pytest.mark.spark
def test_run_audit__split_forced_low_and_high__equal_partition_and_finding_rows(
    spark: Any, tmp_path: Path
) -> None:
    """The same fleet audited with every segment a task and with no split: equal rows (the
    real fixtures are compared piece by piece without Spark above)."""
    fleet = damaged_fleet(tmp_path / "fleet")
    units, roots = plan_units(find_log_dirs([str(fleet)]), "s")
    results = {}
    for name, policy in (("split", EVERY_SEGMENT), ("whole", NEVER)):
        out = tmp_path / name
        partitions, _, _ = run_audit(spark, units, roots, str(out), "s", False, policy=policy)
        assert partitions == len(units)
        results[name] = [comparable(pq.read_table(out / d).to_pylist())
                         for d in ("partitions", "findings")]
    assert results["split"] == results["whole"]
    kinds = {row for row in results["split"][1] if "'segments_overlap'" in row}
    assert kinds, "the fleet must exercise a cross-range check"


@pytest.mark.spark
def test_audit_cli__viewfs_uri_read_through_hadoop__rows_equal_the_file_uri_audit(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Hadoop-only scheme (viewfs mounted on the fleet), its multi-segment partitions split
    per segment, gives the file:// audit's rows; an unknown scheme is one error line, exit 2."""
    import uuid

    fleet = damaged_fleet(tmp_path / "fleet")
    table = f"kl{uuid.uuid4().hex[:8]}"  # Hadoop caches a FileSystem per authority
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    conf.set(f"fs.viewfs.mounttable.{table}.link./fleet", fleet.resolve().as_uri())
    rows = {}
    split = ["--split-mib", "1", "--split-segments", "1"]  # remote partitions split too
    for name, source, more in (("file", fleet.resolve().as_uri(), []),
                               ("viewfs", f"viewfs://{table}/fleet", split)):
        out = tmp_path / name
        assert entry_point(["audit", source, "--out", str(out), "--audit-id", "h", *more]) == 1
        text = [repr(r) for d in ("partitions", "findings")
                for r in comparable(pq.read_table(out / d).to_pylist())]
        split_line = "4 large partitions split into 46 pieces by segment"  # 2 x (14 + 9)
        assert (split_line in capsys.readouterr().out) == (name == "viewfs")
        rows[name] = sorted(t.replace(f"viewfs://{table}/fleet", str(fleet.resolve()))
                            for t in text)
    assert rows["viewfs"] == rows["file"] and any("segments_overlap" in r for r in rows["file"])
    capsys.readouterr()
    assert entry_point(["audit", "nosuch://host/x", "--out", str(tmp_path / "no")]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if "nosuch" in line]
    assert len(lines) == 1 and "No FileSystem for scheme" in lines[0], lines


def test_find_log_dirs__file_uris_in_every_spelling__same_log_dirs_as_the_path(
    tmp_path: Path,
) -> None:
    """`file:///p`, `file:/p` and `file://localhost/p` are local paths; other schemes are
    routed to Hadoop (is_hadoop_uri) and refused by the local finder with a typed error."""
    from kafkalog.conformance.audit.hadoop import is_hadoop_uri
    from kafkalog.conformance.campaign.errors import CampaignOptionsError

    fleet = write_log_dir(tmp_path / "fleet" / "b0", {"t-0": 10_000}, SEGMENT).parent
    plain = find_log_dirs([str(fleet)])
    path = fleet.resolve()
    for uri in (path.as_uri(), f"file:{path}", f"file://localhost{path}"):
        assert not is_hadoop_uri(uri) and find_log_dirs([uri]) == plain, uri
    assert is_hadoop_uri("viewfs://x/y") and is_hadoop_uri("hdfs://nn:8020/k")
    assert not is_hadoop_uri(str(path)) and not is_hadoop_uri("relative/dir")
    with pytest.raises(CampaignOptionsError, match="Hadoop"):
        find_log_dirs(["s3a://bucket/kafka"])
    with pytest.raises(CampaignOptionsError, match="local path"):
        find_log_dirs([f"file://otherhost{path}"])
