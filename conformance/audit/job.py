"""`kafkalog audit`: `verify` over a fleet of Kafka log directories as one Spark job.

The driver finds the log directories under SOURCES (local paths, globs, `file:` URIs; Hadoop
URIs go through hadoop.py and remote.py), reads each one's root files (layout, checkpoints,
clean-shutdown marker: a listing and three small files) and turns every live partition
directory into a unit of work. Units are packed into about 4 x cores Spark tasks, largest
partitions first (longest-processing-time first, so one big partition is not left for the end);
each task runs the same read-only `kafkalog.impl.verify.verifier.verify_partition` that `kafkalog
verify`
runs, and emits one row per partition and one row per finding. A partition above the split
policy is cut into pieces of segments (split.py), packed with the whole units and merged by a
groupBy on the partition into the same rows. A partition that cannot be read is a finding
(`unreadable_partition`), never a failed job. Rows go to `<out>/partitions/` and
`<out>/findings/` (specs/audit-schema.md), written into a staging folder and renamed into place.

Discovery never follows symbolic links, and nothing here writes to a source.
"""

from __future__ import annotations

import glob
import os
import pickle
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from kafkalog.conformance.audit.remote import listed_logs, remote_frame
from kafkalog.conformance.audit.split import (
    Piece,
    SplitPolicy,
    audit_piece,
    log_sizes,
    merge_pieces,
    split_units,
)
from kafkalog.conformance.audit.unit import (
    FINDING_DDL,
    RUN_DDL,
    UNIT_DDL,
    Row,
    Unit,
    arrow_schema,
    audit_unit,
    finding_row,
    from_finding,
    unit_record,
)
from kafkalog.conformance.campaign.errors import CampaignDataError, CampaignOptionsError
from kafkalog.conformance.campaign.store import LocalStore, new_attempt
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.load.log_dir import (
    DirKind,
    inspect_log_dir,
    parse_partition_dir_name,
    read_root_checkpoints,
)
from kafkalog.impl.verify.verifier import root_findings
from kafkalog.model.errors import KafkalogError

ROOT_FILES = {
    "meta.properties",
    "recovery-point-offset-checkpoint",
    "replication-offset-checkpoint",
    "log-start-offset-checkpoint",
    ".kafka_cleanshutdown",
}
_MAX_DEPTH = 4  # how far below a SOURCE log directories are looked for


def find_log_dirs(sources: list[str]) -> list[Path]:
    """Log directories under SOURCES (paths, globs, file: URIs), sorted, symlinks not followed.

    Raises CampaignOptionsError for a source that names nothing or uses another URI scheme
    (those are listed through Hadoop: hadoop.plan_hadoop).
    """
    found: set[Path] = set()
    for source in sources:
        if source.startswith("file:"):
            parsed = urlparse(source)
            if parsed.netloc not in ("", "localhost"):
                raise CampaignOptionsError("a file: URI names a local path", where=source)
            pattern = unquote(parsed.path)
        elif "://" in source:
            raise CampaignOptionsError("a Hadoop URI is listed through Spark's Hadoop client "
                                       "(kafkalog audit does that)", where=source)
        else:
            pattern = source
        matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        roots = [Path(match) for match in matches if Path(match).is_dir()]
        if not roots:
            raise CampaignOptionsError("no directory matches this source", where=source)
        for root in roots:
            found.update(_walk(root, _MAX_DEPTH))
    return sorted(found)


def _walk(path: Path, depth: int) -> list[Path]:
    if _is_log_dir(path):
        return [path]
    if depth == 0:
        return []
    children = sorted(child for child in _subdirs(path))
    return [found for child in children for found in _walk(child, depth - 1)]


def _subdirs(path: Path) -> list[Path]:
    try:
        return [entry for entry in path.iterdir() if entry.is_dir() and not entry.is_symlink()]
    except OSError:
        return []


def _is_log_dir(path: Path) -> bool:
    """A Kafka log directory: its root files, or a live partition directory with a segment."""
    try:
        names = os.listdir(path)
    except OSError:
        return False
    if ROOT_FILES & set(names):
        return True
    for name in names:
        child = path / name
        try:
            if parse_partition_dir_name(name).kind is DirKind.LIVE and child.is_dir():
                return any(entry.endswith(".log") for entry in os.listdir(child))
        except (KafkalogError, OSError):
            continue
    return False


def plan_units(log_dirs: list[Path], audit_id: str) -> tuple[list[Unit], list[Row]]:
    """Every live partition of the log directories, and the root findings (as finding rows)."""
    fs, units, roots = FileSystem(), [], []
    for log_dir in log_dirs:
        try:
            layout = inspect_log_dir(fs, log_dir)
            checkpoints = read_root_checkpoints(fs, layout.path, strict_high_watermarks=False)
        except KafkalogError as error:
            roots.append(
                finding_row(
                    audit_id,
                    str(log_dir),
                    None,
                    None,
                    "problem",
                    "unreadable_log_dir",
                    "",
                    str(log_dir),
                    None,
                    str(error),
                )
            )
            continue
        # verify's own root checks, unchanged
        for finding in root_findings(layout, checkpoints):
            roots.append(from_finding(audit_id, str(log_dir), None, None, finding))
        for tp, path in sorted(layout.partitions.items()):
            sizes = log_sizes(str(path))
            units.append(
                Unit(
                    str(log_dir),
                    layout.clean_shutdown_marker,
                    tp.topic,
                    tp.partition,
                    str(path),
                    sum(size for _, size in sizes),
                    checkpoints.recovery_points.get(tp),
                    checkpoints.log_start_offsets.get(tp),
                    checkpoints.high_watermarks.get(tp),
                    len(sizes),
                )
            )
    return units, roots


def pack(units: list[Any], slots: int) -> list[list[Any]]:
    """Units in `slots` bins of similar total bytes, largest first (LPT); no empty bins."""
    bins: list[list[Any]] = [[] for _ in range(max(1, min(slots, len(units))))]
    loads = [0] * len(bins)
    for unit in sorted(units, key=lambda u: (-u.bytes, u.path)):
        lightest = loads.index(min(loads))
        bins[lightest].append(unit)
        loads[lightest] += unit.bytes + 1
    return [each for each in bins if each]


def run_audit(
    spark: Any,
    units: list[Unit],
    roots: list[Row],
    out: str,
    audit_id: str,
    deep: bool,
    on_task: Any = None,
    policy: Any = None,
    remote: dict[str, Any] | None = None,
    on_split: Any = None,
) -> tuple[int, int, float]:
    """The Spark job: audit every unit, write both datasets; returns (partitions, findings, s).

    `policy` (a split.SplitPolicy; default: SplitPolicy()) says which partitions are split
    into pieces of segments; their pieces are packed with the whole units, and a groupBy on
    the partition merges each one's pieces into the same rows an unsplit audit gives.
    `remote` (unit path -> listing, from hadoop.plan_hadoop) names the units read through
    Hadoop (remote.remote_frame, split by the same policy); the others are read locally.
    `on_split(partitions, pieces)` is told how many partitions were split, if any.
    """
    # pyspark and pyarrow (campaign.waves pulls in campaign.task, which needs it) are optional
    # dependencies: imported only when a job runs, so planning and the per-unit checks work
    # without them.
    from kafkalog.conformance.campaign.waves import TaskProgress
    from pyspark.sql import functions as F

    store = LocalStore()
    for name in ("partitions", "findings"):
        if store.exists(f"{out}/{name}"):
            raise CampaignDataError("--out already holds an audit; use a new folder", where=out)
    started = time.monotonic()
    remote, cached, policy = remote or {}, [], policy or SplitPolicy()
    whole, pieces = split_units([unit for unit in units if unit.path not in remote], policy)
    far: tuple[list[Unit], list[Any]] = ([], [])
    if remote:
        far = split_units([unit for unit in units if unit.path in remote], policy,
                          lambda unit: listed_logs(remote[unit.path]))
    split = {piece.unit.path for piece in [*pieces, *far[1]]}
    if split and on_split is not None:
        on_split(len(split), len(pieces) + len(far[1]))
    slots = max(1, int(spark.sparkContext.defaultParallelism)) * 4
    bins: list[list[Any]] = pack([*whole, *pieces], slots) or [[]]
    staging = f"{out}/_staging/{new_attempt()}"
    tasks = (
        spark.range(0, len(bins), 1, len(bins))
        .mapInArrow(bin_runner(bins, audit_id, deep), RUN_DDL)
        .cache()
    )
    done = tasks.where(F.col("piece_of").isNull()).drop("piece_of", "payload")
    if pieces:
        parts = tasks.where(F.col("piece_of").isNotNull()).select("piece_of", "payload")
        done = done.unionByName(parts.groupBy("piece_of").applyInArrow(
            piece_merger(audit_id), UNIT_DDL))  # fmt: skip
    if remote:
        done = done.unionByName(remote_frame(spark, *far, remote, audit_id, deep, cached))
    frame = done.cache()
    try:
        # The audit itself: every task in parallel, rows cached (writing first would let
        # coalesce(1) pull the whole computation into one task).
        with TaskProgress(spark, f"kafkalog-audit-{audit_id}", len(units), on_task or _quiet):
            totals = frame.agg(F.count("*").alias("n"), F.sum(F.size("findings")).alias("f"))
            counted = totals.first()
        frame.drop("findings").coalesce(1).write.parquet(f"{staging}/partitions")
        keys = ("audit_id", "log_dir", "topic", "partition")
        nested = frame.select(*keys, F.explode("findings").alias("x")).select(*keys, "x.*")
        at_roots = spark.createDataFrame(roots, FINDING_DDL)
        nested.unionByName(at_roots).coalesce(1).write.parquet(f"{staging}/findings")
    finally:
        for each in (frame, tasks, *cached):
            each.unpersist()
    for name in ("partitions", "findings"):
        store.rename(f"{staging}/{name}", f"{out}/{name}")
    store.delete(f"{out}/_staging")
    found = int(counted.f or 0) + len(roots)
    return int(counted.n), found, time.monotonic() - started


def bin_runner(bins: list[list[Any]], audit_id: str, deep: bool) -> Any:
    """The `mapInArrow` function: input ids index `bins`; one Arrow batch of rows per bin.

    A whole unit gives its final rows; a piece (split.Piece) gives one row holding only
    `piece_of` (its partition) and `payload` (the pickled piece and its PieceResult).
    """

    def run(batches: Any) -> Any:
        import pyarrow as pa  # optional, with pyspark: imported on the executor only

        schema = arrow_schema(pa, with_pieces=True)
        for batch in batches:
            for index in batch.column(0).to_pylist():
                rows = []
                for item in bins[index]:
                    if isinstance(item, Piece):
                        payload = pickle.dumps((item, audit_piece(item, deep)), protocol=5)
                        rows.append({"piece_of": item.key, "payload": payload})
                    else:
                        rows.append(unit_record(*audit_unit(item, audit_id, deep)))
                yield pa.RecordBatch.from_pylist(rows, schema=schema)

    return run


def piece_merger(audit_id: str) -> Any:
    """The `applyInArrow` function: one split partition's pieces in, its UNIT_DDL row out."""

    def merge(table: Any) -> Any:
        import pyarrow as pa  # optional, with pyspark: imported on the executor only

        pieces = [pickle.loads(blob) for blob in table.column("payload").to_pylist()]
        record = unit_record(*merge_pieces(pieces, audit_id))
        return pa.Table.from_pylist([record], schema=arrow_schema(pa))

    return merge


def _quiet(done: int) -> None:
    """No progress output."""
