"""Audit SOURCES given as Hadoop URIs (`viewfs://`, `hdfs://`, `s3a://`, ...: any scheme the
Hadoop client inside pyspark's jars, plus what `--packages` adds, can open).

Listing runs on the driver through the JVM's `org.apache.hadoop.fs.FileSystem` (`globStatus`,
`listStatus`; a Py4J call each, ~0.1 ms). The root files of each log directory (three
checkpoints, `meta.properties`, the clean-shutdown marker: small) are copied through Hadoop to a
driver-local mirror, where `plan_units` reads them as for a local directory. Partition files are
read on the executors by Spark's `binaryFile` source (so through Hadoop, on whichever node holds
the task), grouped per partition directory, written to a worker-local temporary directory and
verified there by the same `audit_unit`; every path in the rows is then mapped back to the URI.

Cost, stated: each byte crosses JVM -> Python (Arrow) -> local disk once before `verify` maps it,
and a partition is one group, so it must fit in a Python worker's memory
(`spark.executor.pyspark.memory`) and its temporary disk; `binaryFile` refuses files over 2 GiB.
Remote partitions are not split by segment (local ones are: split.py). Files whose names start
with `_` or `.` inside a partition directory are skipped by Spark's file listing (Kafka writes
none there).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from kafkalog.conformance.audit.job import (
    _ROOT_FILES,
    Row,
    Unit,
    _arrow_schema,
    audit_unit,
    plan_units,
    unit_record,
)
from kafkalog.conformance.campaign.errors import CampaignOptionsError

_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):/")
_MAX_DEPTH = 4
# (name, is a directory, length) of one partition directory's entries
Listing = tuple[tuple[str, bool, int], ...]


def is_hadoop_uri(source: str) -> bool:
    """A URI with a scheme other than `file` (those are read as local paths)."""
    match = _URI.match(source)
    return bool(match) and match.group(1).lower() != "file"


class HadoopLister:
    """Driver-side listing through the JVM's Hadoop FileSystem of a running session."""

    def __init__(self, spark: Any) -> None:
        self._jvm = spark.sparkContext._jvm
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()

    def file_system(self, uri: str) -> tuple[Any, Any]:
        """(FileSystem, Path) for `uri`; CampaignOptionsError when Hadoop cannot open it."""
        path = self._jvm.org.apache.hadoop.fs.Path(uri)
        try:
            return path.getFileSystem(self._conf), path
        except Exception as error:  # noqa: BLE001 - Py4JJavaError: say it in one line
            raise CampaignOptionsError(f"Hadoop cannot open this URI: {_java_cause(error)}",
                                       where=uri) from None

    def log_dirs(self, source: str) -> list[str]:
        """Log directories under one source URI (globs allowed), as URI strings, sorted."""
        fs, path = self.file_system(source)
        try:
            matches = fs.globStatus(path) or []
        except Exception as error:  # noqa: BLE001
            raise CampaignOptionsError(f"cannot list: {_java_cause(error)}", where=source) from None
        roots = [status.getPath() for status in matches if status.isDirectory()]
        if not roots:
            raise CampaignOptionsError("no directory matches this source", where=source)
        found: list[str] = []
        for root in roots:
            found.extend(self._walk(fs, root, _MAX_DEPTH))
        return sorted(set(found))

    def entries(self, fs: Any, path: Any) -> list[tuple[str, bool, bool, int]]:
        """(name, is dir, is symlink, length) of a directory's children, by name."""
        try:
            statuses = fs.listStatus(path)
        except Exception:  # noqa: BLE001 - unreadable: nothing here (as os.listdir failing)
            return []
        out = [(s.getPath().getName(), s.isDirectory(), s.isSymlink(), s.getLen())
               for s in statuses]
        return sorted(out)

    def _walk(self, fs: Any, path: Any, depth: int) -> list[str]:
        entries = self.entries(fs, path)
        names = {name for name, *_ in entries}
        if _ROOT_FILES & names:
            return [path.toString()]
        subdirs = [name for name, is_dir, link, _ in entries if is_dir and not link]
        for name in subdirs:
            child = self._jvm.org.apache.hadoop.fs.Path(path, name)
            if _live(name) and any(
                    n.endswith(".log") for n, *_ in self.entries(fs, child)):  # fmt: skip
                return [path.toString()]
        if depth == 0:
            return []
        children = [self._jvm.org.apache.hadoop.fs.Path(path, name) for name in subdirs]
        return [found for child in children for found in self._walk(fs, child, depth - 1)]


def _live(name: str) -> bool:
    """A live partition directory's name (`<topic>-<n>`)."""
    from kafkalog.impl.log_dir import DirKind, parse_partition_dir_name
    from kafkalog.model.errors import KafkalogError

    try:
        return parse_partition_dir_name(name).kind is DirKind.LIVE
    except KafkalogError:
        return False


def plan_hadoop(spark: Any, sources: list[str], audit_id: str,
                mirror: Path) -> tuple[list[str], list[Unit], list[Row], dict[str, Listing]]:
    """Log directories, units, root finding rows and each unit's listing for Hadoop sources.

    Root files are copied to `mirror` (a driver-local directory the caller removes)."""
    lister = HadoopLister(spark)
    log_dirs = sorted({d for source in sources for d in lister.log_dirs(source)})
    units: list[Unit] = []
    roots: list[Row] = []
    listings: dict[str, Listing] = {}
    for n, uri in enumerate(log_dirs):
        fs, path = lister.file_system(uri)
        local = mirror / f"d{n}"
        local.mkdir(parents=True)
        for name, is_dir, link, _ in lister.entries(fs, path):
            target = local / name
            if link:
                target.symlink_to(local / ".kafkalog-remote-link")  # reported, never followed
            elif is_dir:
                target.mkdir()
            elif name in _ROOT_FILES:
                fs.copyToLocalFile(False, lister._jvm.org.apache.hadoop.fs.Path(path, name),
                                   lister._jvm.org.apache.hadoop.fs.Path(str(target)), True)
        local_units, local_roots = plan_units([local], audit_id)
        roots.extend(remap(row, str(local), uri) for row in local_roots)
        for unit in local_units:
            name = Path(unit.path).name
            remote = lister._jvm.org.apache.hadoop.fs.Path(path, name)
            entries = lister.entries(fs, remote)
            logs = [size for entry, _, _, size in entries if entry.endswith(".log")]
            listings[f"{uri}/{name}"] = tuple((entry, is_dir, size)
                                              for entry, is_dir, _, size in entries)
            units.append(replace(unit, log_dir=uri, path=f"{uri}/{name}", bytes=sum(logs),
                                 log_segments=len(logs)))
    return log_dirs, units, roots, listings


def remap(row: Row, local: str, uri: str) -> Row:
    """The row with the local prefix of every string field replaced by the URI."""
    return tuple(value.replace(local, uri) if isinstance(value, str) else value for value in row)


def remote_frame(spark: Any, units: list[Unit], listings: dict[str, Listing], audit_id: str,
                 deep: bool) -> Any:
    """UNIT_DDL rows of the remote units: files read by `binaryFile`, one group per partition.

    Every unit also gets an empty row, so a partition directory without files still has a
    group (and its `no_segments` note)."""
    from pyspark.sql import functions as F

    files = (spark.read.format("binaryFile").option("recursiveFileLookup", "true")
             .load([unit.path for unit in units])
             .select(F.regexp_replace("path", "/[^/]*$", "").alias("dir"), "path", "content"))
    empty = spark.createDataFrame([(unit.path, None, None) for unit in units],
                                  "dir STRING, path STRING, content BINARY")
    runner = partition_runner({unit.path: unit for unit in units}, listings, audit_id, deep)
    return files.unionByName(empty).groupBy("dir").applyInArrow(runner, _unit_ddl())


def _unit_ddl() -> str:
    from kafkalog.conformance.audit.job import UNIT_DDL

    return UNIT_DDL


def partition_runner(units: dict[str, Unit], listings: dict[str, Listing], audit_id: str,
                     deep: bool) -> Any:
    """The `applyInArrow` function: one partition's files in, its UNIT_DDL row out."""

    def run(table: Any) -> Any:
        import pyarrow as pa

        schema = _arrow_schema(pa)
        key = _same_uri(table.column("dir")[0].as_py(), units)
        if key is None:  # files of a nested directory: its partition's listing covers it
            return schema.empty_table()
        unit = units[key]
        work = Path(tempfile.mkdtemp(prefix="kafkalog-audit-"))
        try:
            local_dir = work / "log-dir"
            part = local_dir / Path(unit.path).name
            part.mkdir(parents=True)
            for name, is_dir, size in listings.get(key, ()):
                if is_dir:
                    (part / name).mkdir()
                elif size == 0:  # Spark's file sources skip empty files; empty is all they hold
                    (part / name).write_bytes(b"")
            for path, content in zip(table.column("path").to_pylist(),
                                     table.column("content").to_pylist(), strict=True):
                if path is not None and content is not None:
                    (part / path.rsplit("/", 1)[-1]).write_bytes(content)
            row, findings = audit_unit(replace(unit, log_dir=str(local_dir), path=str(part)),
                                       audit_id, deep)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        row = remap(row, str(local_dir), unit.log_dir)
        findings = [remap(finding, str(local_dir), unit.log_dir) for finding in findings]
        return pa.Table.from_pylist([unit_record(row, findings)], schema=schema)

    return run


def _same_uri(spark_dir: str, units: dict[str, Unit]) -> str | None:
    """The unit whose path is `spark_dir` (Spark may spell `scheme:/x` for `scheme:///x`)."""
    if spark_dir in units:
        return spark_dir
    plain = re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*):/+", r"\1:/", spark_dir)
    for key in units:
        if re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*):/+", r"\1:/", key) == plain:
            return key
    return None


def _java_cause(error: Exception) -> str:
    """The Java exception's own message line, without Py4J's wrapping."""
    java = getattr(error, "java_exception", None)
    if java is not None:
        return f"{java.getClass().getSimpleName()}: {java.getMessage()}"
    return str(error).strip().splitlines()[0][:300]
