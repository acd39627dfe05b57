"""Partitions under Hadoop URIs, read on the executors through Spark's `binaryFile` source.

The driver's listing (hadoop.plan_hadoop) names every file of every remote partition, so it
also says which Spark group reads which file: a whole partition is one group; a partition the
split policy splits is one group per piece (its segments' `.log` and index files) plus a merge
group (the piece results, the leader-epoch checkpoint and the producer snapshots). A broadcast
join of `binaryFile`'s rows with that (directory, name) -> group table routes each file once.

A group's files are written to a worker-local temporary partition directory, with the other
listed names as empty placeholders (so the directory lists as the source does; placeholders are
never read: a piece scans only its own range, and the merge only its side files), verified by
the same code as a local partition, and every path in the results is mapped back to the URI.
The cost (stated in hadoop.py): one extra copy of every byte; a group must fit a Python
worker's memory, so a large remote partition is split as a local one is.
"""

from __future__ import annotations

import pickle
import re
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from kafkalog.conformance.audit.split import audit_piece, merge_pieces, segment_base
from kafkalog.conformance.audit.unit import (
    RUN_DDL,
    UNIT_DDL,
    Unit,
    arrow_schema,
    audit_unit,
    unit_record,
)

_SCHEME_SLASHES = r"^([A-Za-z][A-Za-z0-9+.-]*):/+"  # Spark may print `x:/p` for `x:///p`
_SIDE = "#side"
Listing = tuple[tuple[str, bool, int], ...]  # (name, is a directory, length)


def norm(uri: str) -> str:
    """One spelling of a directory URI for both the driver's listing and Spark's paths."""
    return re.sub(_SCHEME_SLASHES, r"\1:/", uri.rstrip("/"))


def remote_frame(spark: Any, whole: list[Unit], pieces: list[Any], listings: dict[str, Listing],
                 audit_id: str, deep: bool, cached: list[Any]) -> Any:
    """UNIT_DDL rows of the remote units: `whole` ones, and those split into `pieces` (merged);
    the frames it caches are appended to `cached` (the caller unpersists them)."""
    from pyspark.sql import functions as F  # optional: only a running job gets here

    units = [*whole, *{piece.unit.path: piece.unit for piece in pieces}.values()]
    routes = _routes(whole, pieces, listings)
    files = (spark.read.format("binaryFile").option("recursiveFileLookup", "true")
             .load([unit.path for unit in units])
             .select(F.regexp_replace(F.regexp_replace("path", "/[^/]*$", ""), _SCHEME_SLASHES,
                                      "$1:/").alias("dir"),
                     F.regexp_extract("path", "[^/]+$", 0).alias("name"), "content"))
    table = spark.createDataFrame(routes, "dir STRING, name STRING, grp STRING")
    routed = files.join(F.broadcast(table), ["dir", "name"]).select("grp", "name", "content")
    # Every whole unit and piece gets a group even with no file to read (an empty directory).
    groups = [(norm(u.path), None, None) for u in whole] + [(_group(p), None, None)
                                                          for p in pieces]
    anchors = spark.createDataFrame(groups, "grp STRING, name STRING, content BINARY")
    runner = group_runner({norm(u.path): u for u in whole}, {_group(p): p for p in pieces},
                          listings, audit_id, deep)
    read = routed.where(~F.col("grp").endswith(_SIDE)).unionByName(anchors)
    first = read.groupBy("grp").applyInArrow(runner, RUN_DDL).cache()
    cached.append(first)
    done = first.where(F.col("piece_of").isNull()).drop("piece_of", "payload")
    if not pieces:
        return done
    results = first.where(F.col("piece_of").isNotNull()).select(
        F.col("piece_of").alias("grp"), "payload", F.lit(None).cast("string").alias("name"),
        F.lit(None).cast("binary").alias("content"))
    side = routed.where(F.col("grp").endswith(_SIDE)).select(
        F.regexp_replace("grp", f"{_SIDE}$", "").alias("grp"),
        F.lit(None).cast("binary").alias("payload"), "name", "content")
    merger = remote_merger(listings, audit_id)
    return done.unionByName(results.unionByName(side).groupBy("grp").applyInArrow(merger,
                                                                                  UNIT_DDL))


def listed_logs(listing: Listing) -> list[tuple[int, int]]:
    """(base, bytes) of the `.log` files of a listing (the split policy's input)."""
    # A directory named like a segment counts, as in split.log_sizes and verify_partition.
    return sorted((base, size) for name, _, size in listing
                  if name.endswith(".log") and (base := segment_base(name)) is not None)


def _group(piece: Any) -> str:
    return f"{norm(piece.unit.path)}#{piece.index}"


def _routes(whole: list[Unit], pieces: list[Any],
            listings: dict[str, Listing]) -> list[tuple[str, str, str]]:
    """(dir, name, group) of every non-empty file to read."""
    routes = []
    for unit in whole:
        key = norm(unit.path)
        routes += [(key, name, key) for name, is_dir, size in listings[unit.path]
                   if not is_dir and size > 0]
    for piece in pieces:
        key = norm(piece.unit.path)
        for name, is_dir, size in listings[piece.unit.path]:
            if is_dir or size == 0:
                continue
            base = segment_base(name)
            if base is not None and piece.holds(base):
                routes.append((key, name, _group(piece)))
            elif piece.index == 0 and base is None and _side_file(name):
                routes.append((key, name, key + _SIDE))
    return routes


def _side_file(name: str) -> bool:
    """Files the merge reads: the leader-epoch checkpoint and producer snapshots."""
    return name == "leader-epoch-checkpoint" or name.endswith(".snapshot")


def _materialize(work: Path, unit: Unit, listing: Listing, names: list[Any],
                 contents: list[Any]) -> Unit:
    """The group's files under `work`, other listed names as placeholders; the local unit."""
    local_dir = work / "log-dir"
    part = local_dir / Path(unit.path).name
    part.mkdir(parents=True)
    for name, is_dir, _ in listing:
        if is_dir:
            (part / name).mkdir()
        else:
            (part / name).write_bytes(b"")  # placeholder, or a truly empty file
    for name, content in zip(names, contents, strict=True):
        if name is not None and content is not None:
            (part / name).write_bytes(content)
    return replace(unit, log_dir=str(local_dir), path=str(part))


def _remap(value: Any, local: str, uri: str) -> Any:
    """`value` (a row, Finding, SegmentScan or string) with the local prefix replaced."""
    if isinstance(value, str):
        return value.replace(local, uri)
    if isinstance(value, tuple):
        return tuple(_remap(item, local, uri) for item in value)
    fields = {name: _remap(getattr(value, name), local, uri)
              for name in ("path", "message") if isinstance(getattr(value, name, None), str)}
    return replace(value, **fields) if fields else value


def group_runner(whole: dict[str, Unit], pieces: dict[str, Any], listings: dict[str, Listing],
                 audit_id: str, deep: bool) -> Any:
    """`applyInArrow` over one group: a whole partition's UNIT_DDL row, or a piece's payload."""

    def run(table: Any) -> Any:
        import pyarrow as pa  # optional, with pyspark: imported on the executor only

        schema = arrow_schema(pa, with_pieces=True)
        key = table.column("grp")[0].as_py()
        piece = pieces.get(key)
        unit = piece.unit if piece is not None else whole[key]
        names, contents = table.column("name").to_pylist(), table.column("content").to_pylist()
        work = Path(tempfile.mkdtemp(prefix="kafkalog-audit-"))
        try:
            local = _materialize(work, unit, listings[unit.path], names, contents)
            if piece is None:
                row, findings = audit_unit(local, audit_id, deep)
            else:
                result = audit_piece(replace(piece, unit=local), deep)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if piece is None:
            record = unit_record(_remap(row, local.log_dir, unit.log_dir),
                                 [_remap(f, local.log_dir, unit.log_dir) for f in findings])
            return pa.Table.from_pylist([record], schema=schema)
        for name in ("findings", "scans", "file_findings"):
            setattr(result, name, [_remap(x, local.log_dir, unit.log_dir)
                                   for x in getattr(result, name)])
        result.error = _remap(result.error, local.log_dir, unit.log_dir)
        payload = pickle.dumps((piece, result), protocol=5)
        return pa.Table.from_pylist([{"piece_of": norm(unit.path), "payload": payload}],
                                    schema=schema)

    return run


def remote_merger(listings: dict[str, Listing], audit_id: str) -> Any:
    """`applyInArrow` over a split remote partition: its pieces and side files -> its row."""

    def merge(table: Any) -> Any:
        import pyarrow as pa  # optional, with pyspark: imported on the executor only

        blobs = [b for b in table.column("payload").to_pylist() if b is not None]
        pieces = [pickle.loads(blob) for blob in blobs]
        unit = pieces[0][0].unit
        work = Path(tempfile.mkdtemp(prefix="kafkalog-audit-"))
        try:
            local = _materialize(work, unit, listings[unit.path], table.column("name").to_pylist(),
                                 table.column("content").to_pylist())
            row, findings = merge_pieces([(replace(p, unit=local), r) for p, r in pieces],
                                         audit_id)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        record = unit_record(_remap(row, local.log_dir, unit.log_dir),
                             [_remap(f, local.log_dir, unit.log_dir) for f in findings])
        return pa.Table.from_pylist([record], schema=arrow_schema(pa))

    return merge
