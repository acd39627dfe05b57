"""Audit SOURCES given as Hadoop URIs (`viewfs://`, `hdfs://`, `s3a://`, ...: any scheme the
Hadoop client inside pyspark's jars, plus what `--packages` adds, can open).

Listing runs on the driver through the JVM's `org.apache.hadoop.fs.FileSystem` (`globStatus`,
`listStatus`; a Py4J call each, ~0.1 ms). The root files of each log directory (three
checkpoints, `meta.properties`, the clean-shutdown marker: small) are copied through Hadoop to a
driver-local mirror, where `plan_units` reads them as for a local directory. Partition files are
read on the executors by Spark's `binaryFile` source (so through Hadoop, on whichever node runs
the task), routed to one group per partition (or per piece of a split partition), written to a
worker-local temporary directory and verified there by the same code (remote.py); every path in
the rows is then mapped back to the URI.

Cost, stated: each byte crosses JVM -> Python (Arrow) -> local disk once more than a local
audit's (which maps the file read-only); a group (a partition, or a piece of `--split-mib`) must
fit in a Python worker's memory (`spark.executor.pyspark.memory`) and its temporary disk;
`binaryFile` refuses files over 2 GiB (Kafka's default segment is 1 GiB). Files whose names start
with `_` or `.` inside a partition directory are skipped by Spark's file listing (Kafka writes
none there). A symbolic link inside a remote partition directory is read as the file it names
if the Hadoop file system follows it (a local audit refuses it: `symlink_refused`); links in the
log directory itself are reported as locally.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from kafkalog.conformance.audit.job import ROOT_FILES, plan_units
from kafkalog.conformance.audit.unit import Row, Unit
from kafkalog.conformance.campaign.errors import CampaignOptionsError
from kafkalog.impl.load.log_dir import DirKind, parse_partition_dir_name
from kafkalog.model.errors import KafkalogError

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
        if ROOT_FILES & names:
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
            elif name in ROOT_FILES:
                try:
                    fs.copyToLocalFile(False, lister._jvm.org.apache.hadoop.fs.Path(path, name),
                                       lister._jvm.org.apache.hadoop.fs.Path(str(target)), True)
                except Exception as error:  # noqa: BLE001 - a finding, as a local read error
                    roots.append((audit_id, uri, None, None, "problem", "unreadable_file",
                                  "ERR-36", f"{uri}/{name}", None, _java_cause(error)))
        local_units, local_roots = plan_units([local], audit_id)
        roots.extend(remap(row, str(local), uri) for row in local_roots)
        for unit in local_units:
            name = Path(unit.path).name
            remote = lister._jvm.org.apache.hadoop.fs.Path(path, name)
            entries = lister.entries(fs, remote)
            logs = [size for entry, _, link, size in entries
                    if entry.endswith(".log") and not link]
            listings[f"{uri}/{name}"] = tuple((entry, is_dir, size)
                                              for entry, is_dir, _, size in entries)
            units.append(replace(unit, log_dir=uri, path=f"{uri}/{name}", bytes=sum(logs),
                                 log_segments=len(logs)))
    return log_dirs, units, roots, listings


def remap(row: Row, local: str, uri: str) -> Row:
    """The row with the local prefix of every string field replaced by the URI."""
    return tuple(value.replace(local, uri) if isinstance(value, str) else value for value in row)


def _java_cause(error: Exception) -> str:
    """The Java exception's own message line, without Py4J's wrapping."""
    java = getattr(error, "java_exception", None)
    if java is not None:
        return f"{java.getClass().getSimpleName()}: {java.getMessage()}"
    return str(error).strip().splitlines()[0][:300]
