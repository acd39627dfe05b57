"""`LogDir`: one Kafka `log.dirs` directory holding many partition logs (LogManager's per-dir half).

Layout (FMT-1, FMT-8, FMT-9, FMT-42)::

    /var/kafka-logs/
        .kafka_cleanshutdown                {"version":0,"brokerEpoch":-1}
        recovery-point-offset-checkpoint    0 / 2 / orders 0 42 / orders 1 17
        replication-offset-checkpoint       0 / 2 / orders 0 40 / orders 1 17     (high watermarks)
        log-start-offset-checkpoint         0 / 0                                 (only LSO > base)
        orders-0/00000000000000000000.log   .index  .timeindex  leader-epoch-checkpoint
        orders-1/...
        orders-2.0123456789abcdef0123456789abcdef-delete/   (marked for deletion; not opened)

Opening (FMT-43, FMT-41, REC-1): the clean-shutdown marker is deleted *before* anything is loaded,
so a crash while loading counts as unclean (BUG-59); the recovery-point and log-start checkpoints
are read, and a corrupt one is reported and treated as empty (Kafka logs and carries on); the
high-watermark checkpoint is read and a corrupt one is a `CorruptCheckpointError` naming the file.
Every `<topic>-<partition>` directory is opened with `Log.open`, which runs the loader; what
recovery truncated or removed is reported per partition (`recovery_reports`).

Closing (FMT-44): every log is flushed and closed, then the three root checkpoints are written
(tmp + fsync + rename + dir fsync, FMT-36) and finally the clean-shutdown marker, so a crash at any
point before the marker makes the next start recover.

`inspect_log_dir`, `read_root_checkpoints` and `classify_partition_file` are the read-only half
used by `verify` and `dump`: they classify directory and file names (FMT-1..8) and read the
checkpoints without creating, deleting or rewriting anything.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from kafkalog.impl.bounds import validate_config
from kafkalog.impl.checkpoint.checkpoint_file import (
    LEADER_EPOCH_CHECKPOINT_FILENAME,
    LOG_START_OFFSET_CHECKPOINT_FILENAME,
    RECOVERY_POINT_CHECKPOINT_FILENAME,
    REPLICATION_OFFSET_CHECKPOINT_FILENAME,
    OffsetCheckpointFile,
)
from kafkalog.impl.cleaner.checkpoint import CleanerCheckpoint
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.log.log import Log, LogOffsets
from kafkalog.impl.time import Time
from kafkalog.model.errors import (
    CorruptCheckpointError,
    InvalidFileNameError,
    InvalidLogDirNameError,
    KafkalogError,
    KafkaStorageError,
    LogDirError,
)
from kafkalog.model.values import LogConfig

logger = logging.getLogger(__name__)

CLEAN_SHUTDOWN_FILE_NAME = ".kafka_cleanshutdown"  # FMT-9, FMT-42
DELETE_DIR_SUFFIX = "-delete"  # FMT-2
FUTURE_DIR_SUFFIX = "-future"
STRAY_DIR_SUFFIX = "-stray"
LOG_FILE_SUFFIX = ".log"
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MAX = 2**63 - 1

# FMT-2: "<topic>-<partition>.<unique id><suffix>", each part non-blank (Java's \S+, whole match).
_SUFFIXED_DIR = {
    suffix: re.compile(r"(\S+)-(\S+)\.(\S+)" + re.escape(suffix))
    for suffix in (DELETE_DIR_SUFFIX, FUTURE_DIR_SUFFIX, STRAY_DIR_SUFFIX)
}
# Integer.parseInt: an optional sign and ASCII digits only (Python's int() also takes "1_0", " 1").
_JAVA_INT = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True, order=True)
class TopicPartition:
    """A partition's identity; `str()` is its directory name (FMT-1)."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class DirKind(StrEnum):
    """What a partition directory's suffix says about it (FMT-2)."""

    LIVE = "live"
    DELETE = "delete"  # scheduled for asynchronous deletion
    FUTURE = "future"  # target of an intra-broker move
    STRAY = "stray"  # a stray KRaft replica


_KIND_OF_SUFFIX = {
    DELETE_DIR_SUFFIX: DirKind.DELETE,
    FUTURE_DIR_SUFFIX: DirKind.FUTURE,
    STRAY_DIR_SUFFIX: DirKind.STRAY,
}


@dataclass(frozen=True)
class PartitionDirName:
    """A parsed partition directory name."""

    topic_partition: TopicPartition
    kind: DirKind


def parse_partition_dir_name(name: str, where: str | None = None) -> PartitionDirName:
    """Parse `<topic>-<partition>` or its suffixed variants (FMT-2, FMT-3).

    The topic is everything before the last `-`; a suffixed name is cut at its last `.` first.
    Raises InvalidLogDirNameError (ERR-42) naming `where` (default: the name) otherwise.
    """
    def invalid(reason: str) -> InvalidLogDirNameError:
        return InvalidLogDirNameError(
            f"directory '{name}' is not in the form of topic-partition or "
            f"topic-partition.uniqueId-delete ({reason})", where=where or name)

    if not name.strip() or "-" not in name:
        raise invalid("no '-' in the name")
    kind = DirKind.LIVE
    base = name
    for suffix, pattern in _SUFFIXED_DIR.items():
        if name.endswith(suffix):
            if pattern.fullmatch(name) is None:
                raise invalid(f"malformed '{suffix}' name")
            kind = _KIND_OF_SUFFIX[suffix]
            base = name[: name.rindex(".")]
            break
    topic, _, partition_text = base.rpartition("-")
    if not topic or not partition_text:
        raise invalid("empty topic or partition")
    if _JAVA_INT.fullmatch(partition_text) is None:
        raise invalid(f"partition '{partition_text}' is not an integer")
    partition = int(partition_text)
    if not INT32_MIN <= partition <= INT32_MAX:
        raise invalid(f"partition '{partition_text}' is out of the int32 range")
    return PartitionDirName(TopicPartition(topic, partition), kind)


# --- File names (FMT-4..8) ---

# `<prefix><kind>[<status>]`; the prefix must be a 20-digit offset (FMT-4, FMT-5).
_SEGMENT_FILE = re.compile(r"(?P<prefix>[^.]*)(?P<suffix>\.log|\.index|\.timeindex|\.txnindex"
                           r"|\.snapshot)(?P<status>\.deleted|\.cleaned|\.swap)?")
_TWENTY_DIGITS = re.compile(r"[0-9]{20}")
# KRaft snapshots of `__cluster_metadata` (`<end offset>-<epoch>.checkpoint`) and their temp forms.
_RAFT_SNAPSHOT = re.compile(r"[0-9]{20}-[0-9]{10}\.checkpoint(\.part|\.deleted)?")
KNOWN_PARTITION_FILES = frozenset({LEADER_EPOCH_CHECKPOINT_FILENAME, "partition.metadata",
                                   "quorum-state"})


@dataclass(frozen=True)
class SegmentFileName:
    """A parsed segment file name: `00000000000000000042.log.deleted` is (42, .log, .deleted)."""

    base_offset: int
    suffix: str  # .log, .index, .timeindex, .txnindex or .snapshot
    status: str  # "", ".deleted", ".cleaned" or ".swap" (FMT-6)


def classify_partition_file(name: str) -> SegmentFileName | InvalidFileNameError | str:
    """A segment file, a typed error for a segment-like name without a 20-digit offset (ERR-48),
    "known" for the other files Kafka keeps in a partition directory, else "unknown". Pure."""
    match = _SEGMENT_FILE.fullmatch(name)
    if match is not None:
        if _TWENTY_DIGITS.fullmatch(match["prefix"]) is None or \
                int(match["prefix"]) > INT64_MAX:
            return InvalidFileNameError(f"'{name}' does not start with a 20-digit offset "
                                        "within Long.MAX", where=name)
        return SegmentFileName(int(match["prefix"]), match["suffix"], match["status"] or "")
    if name in KNOWN_PARTITION_FILES or _RAFT_SNAPSHOT.fullmatch(name):
        return "known"
    return "unknown"


# --- Root checkpoints (FMT-40, FMT-41) ---

OffsetMap = dict[TopicPartition, int]


@dataclass(frozen=True)
class RootCheckpoints:
    """The three offset checkpoints at the root of a log directory (missing file = no entries)."""

    recovery_points: OffsetMap
    log_start_offsets: OffsetMap
    high_watermarks: OffsetMap
    # FMT-41: a corrupt recovery-point or log-start file is reported here and read as empty.
    problems: tuple[CorruptCheckpointError, ...] = ()


def _read_offsets(fs: FileSystem, path: Path) -> OffsetMap:
    if not fs.exists(path) and not fs.is_symlink(path):
        return {}
    try:
        raw = OffsetCheckpointFile(fs, path, create_if_missing=False).read()
    except KafkaStorageError as error:  # e.g. a symbolic link, which is never followed
        raise CorruptCheckpointError(f"cannot read checkpoint: {error.message}",
                                     where=str(path)) from error
    return {TopicPartition(t, p): o for (t, p), o in raw.items()}


def read_root_checkpoints(fs: FileSystem, root: Path, *,
                          strict_high_watermarks: bool = True) -> RootCheckpoints:
    """Read the root checkpoints without writing anything.

    Spec: FMT-41. A corrupt recovery-point or log-start file is recorded in `problems` and read as
    empty; a corrupt replication-offset (HW) file raises CorruptCheckpointError (ERR-43) unless
    `strict_high_watermarks` is False (read-only inspection), when it is recorded likewise.
    """
    problems: list[CorruptCheckpointError] = []
    maps: list[OffsetMap] = []
    for name in (RECOVERY_POINT_CHECKPOINT_FILENAME, LOG_START_OFFSET_CHECKPOINT_FILENAME,
                 REPLICATION_OFFSET_CHECKPOINT_FILENAME):
        try:
            maps.append(_read_offsets(fs, root / name))
        except CorruptCheckpointError as error:
            if name == REPLICATION_OFFSET_CHECKPOINT_FILENAME and strict_high_watermarks:
                raise
            logger.warning("treating corrupt checkpoint as empty: %s", error)
            problems.append(error)
            maps.append({})
    return RootCheckpoints(maps[0], maps[1], maps[2], tuple(problems))


# --- Read-only inspection ---


@dataclass(frozen=True)
class LogDirLayout:
    """What a log directory holds, read without changing it (`verify`, `dump`, `LogDir.open`)."""

    path: Path
    clean_shutdown_marker: bool  # FMT-42: only the marker's existence matters
    partitions: dict[TopicPartition, Path]  # live `<topic>-<partition>` directories
    other_partition_dirs: tuple[tuple[PartitionDirName, Path], ...]  # -delete/-future/-stray
    invalid_dirs: tuple[InvalidLogDirNameError, ...]  # subdirectories that are not partitions
    root_files: tuple[str, ...]
    # Entries that are symbolic links: never followed, since they may point outside the log
    # directory (LogDir.open refuses them, verify reports them).
    symlinks: tuple[Path, ...] = ()


def _require_dir(fs: FileSystem, path: Path) -> list[str]:
    if not fs.exists(path):
        raise LogDirError("log directory does not exist", where=str(path))
    if not fs.is_dir(path):
        raise LogDirError("log directory path is not a directory", where=str(path))
    return fs.list_dir(path)  # LogDirError if unreadable


def inspect_log_dir(fs: FileSystem, path: Path | str) -> LogDirLayout:
    """Classify a log directory's entries; never writes. Raises LogDirError if unreadable."""
    root = Path(path)
    names = _require_dir(fs, root)
    partitions: dict[TopicPartition, Path] = {}
    others: list[tuple[PartitionDirName, Path]] = []
    invalid: list[InvalidLogDirNameError] = []
    files: list[str] = []
    links: list[Path] = []
    for name in names:
        child = root / name
        if fs.is_symlink(child):
            links.append(child)
            continue
        if not fs.is_dir(child):
            files.append(name)
            continue
        try:
            parsed = parse_partition_dir_name(name, where=str(child))
        except InvalidLogDirNameError as error:
            invalid.append(error)
            continue
        if parsed.kind is DirKind.LIVE:
            partitions[parsed.topic_partition] = child
        else:
            others.append((parsed, child))
    return LogDirLayout(root, CLEAN_SHUTDOWN_FILE_NAME in files, partitions, tuple(others),
                        tuple(invalid), tuple(files), tuple(links))


def partition_symlinks(fs: FileSystem, partition_dir: Path) -> list[Path]:
    """The entries of a partition directory that are symbolic links (never followed)."""
    return [partition_dir / name for name in fs.list_dir(partition_dir)
            if fs.is_symlink(partition_dir / name)]


def refuse_symlinks(fs: FileSystem, layout: LogDirLayout) -> None:
    """LogDirError naming the first symbolic link in the directory or a partition of it.

    A link could make recovery truncate or rewrite a file outside the log directory,
    so a directory holding one is not opened; nothing has been changed when this raises.
    """
    links = list(layout.symlinks)
    for partition_dir in layout.partitions.values():
        links += partition_symlinks(fs, partition_dir)
    if links:
        raise LogDirError(f"refusing to open a log directory holding {len(links)} symbolic "
                          f"link(s), which could point outside it", where=str(links[0]))


# --- The live directory ---


@dataclass(frozen=True)
class RecoveryReport:
    """What loading removed from one partition: REC-18's truncation made visible."""

    topic_partition: TopicPartition
    truncated_bytes: int  # bytes cut from `.log` files that survived
    removed_segments: tuple[str, ...]  # `.log` files that no longer exist after loading


def _segment_sizes(fs: FileSystem, partition_dir: Path) -> dict[str, int]:
    return {name: fs.file_size(partition_dir / name)
            for name in fs.list_dir(partition_dir) if name.endswith(LOG_FILE_SUFFIX)}


def _recovery_report(tp: TopicPartition, before: dict[str, int],
                     after: dict[str, int]) -> RecoveryReport | None:
    """Pure: compare `.log` sizes before and after loading; None when nothing was lost."""
    removed = tuple(sorted(name for name in before if name not in after))
    truncated = sum(before[name] - after[name] for name in before
                    if name in after and after[name] < before[name])
    if not removed and truncated == 0:
        return None
    return RecoveryReport(tp, truncated, removed)


def _offset_maps(offsets: Mapping[TopicPartition, tuple[LogOffsets, int]],
                 ) -> tuple[OffsetMap, OffsetMap, OffsetMap]:
    """Pure: (recovery points, log start offsets, high watermarks) to checkpoint.

    Spec: FMT-40: a log start offset is listed only when above the first segment's base.
    """
    recovery = {tp: o.recovery_point for tp, (o, _) in offsets.items()}
    starts = {tp: o.log_start_offset for tp, (o, first_base) in offsets.items()
              if o.log_start_offset > first_base}
    hws = {tp: o.high_watermark for tp, (o, _) in offsets.items()}
    return recovery, starts, hws


def clean_shutdown_content(broker_epoch: int = -1) -> bytes:
    """The marker's JSON body (FMT-42); Kafka writes -1 when it has no broker epoch."""
    return json.dumps({"version": 0, "brokerEpoch": broker_epoch},
                      separators=(",", ":")).encode("utf-8")


@dataclass
class LogDir:
    """An open log directory: its partition logs and the root checkpoints that describe them.

    Not thread-safe itself (open/close/checkpoint are driven by one owner, like LogManager's
    startup and shutdown); each `Log` is thread-safe on its own.
    """

    fs: FileSystem
    path: Path
    config: LogConfig
    time: Time
    had_clean_shutdown: bool
    topic_configs: Mapping[str, LogConfig] = field(default_factory=dict)
    logs: dict[TopicPartition, Log] = field(default_factory=dict)
    skipped_dirs: tuple[tuple[PartitionDirName, Path], ...] = ()
    checkpoint_problems: tuple[CorruptCheckpointError, ...] = ()
    recovery_reports: tuple[RecoveryReport, ...] = ()
    closed: bool = False

    @classmethod
    def open(cls, fs: FileSystem, path: Path | str, config: LogConfig, time: Time, *,
             topic_configs: Mapping[str, LogConfig] | None = None) -> LogDir:
        """Load every partition of the directory (LogManager.loadLogs for one dir).

        Spec: FMT-41, FMT-43, REC-1, REC-18. Raises IllegalArgumentError for a config Kafka
        refuses (KL-STATE-2, before the directory is touched), LogDirError (missing or
        unreadable, or holding a symbolic link at the root or in a partition directory),
        InvalidLogDirNameError (a subdirectory that is not a partition), CorruptCheckpointError
        (high-watermark checkpoint or a partition's leader-epoch-checkpoint), and whatever
        typed error a partition's loader raises, with every already-opened log closed again.
        """
        for checked in (config, *(topic_configs or {}).values()):
            validate_config(checked)
        layout = inspect_log_dir(fs, path)
        if layout.invalid_dirs:
            raise layout.invalid_dirs[0]
        refuse_symlinks(fs, layout)
        had_clean_shutdown = layout.clean_shutdown_marker
        if had_clean_shutdown:
            # FMT-43: delete first, so a crash while loading makes the next start recover.
            fs.delete(layout.path / CLEAN_SHUTDOWN_FILE_NAME)
            fs.fsync_dir(layout.path)
        checkpoints = read_root_checkpoints(fs, layout.path)
        log_dir = cls(fs, layout.path, config, time, had_clean_shutdown,
                      dict(topic_configs or {}), skipped_dirs=layout.other_partition_dirs,
                      checkpoint_problems=checkpoints.problems)
        try:
            log_dir._load_all(layout, checkpoints)
            if not had_clean_shutdown:
                # Strict (GAP-10, GAP-4): the partition directories served are durable entries
                # of the log dir, also one whose mkdir a crash left in the page cache only.
                fs.fsync_dir(layout.path)
        except BaseException:
            log_dir._close_logs_quietly()
            raise
        return log_dir

    def _config_for(self, topic: str) -> LogConfig:
        return self.topic_configs.get(topic, self.config)

    def _load_all(self, layout: LogDirLayout, checkpoints: RootCheckpoints) -> None:
        reports: list[RecoveryReport] = []
        for tp, partition_dir in sorted(layout.partitions.items()):
            before = _segment_sizes(self.fs, partition_dir)
            self.logs[tp] = self._open_log(tp, partition_dir, checkpoints)
            report = _recovery_report(tp, before, _segment_sizes(self.fs, partition_dir))
            if report is not None:
                logger.warning("recovery of %s removed %d bytes and segments %s", tp,
                               report.truncated_bytes, list(report.removed_segments))
                reports.append(report)
        self.recovery_reports = tuple(reports)

    def _open_log(self, tp: TopicPartition, partition_dir: Path,
                  checkpoints: RootCheckpoints) -> Log:
        # FMT-41: a missing entry means 0; the HW is then clamped by the log (LOG-5).
        try:
            log = Log.open(
                self.fs, partition_dir, self._config_for(tp.topic), self.time,
                log_start_offset=checkpoints.log_start_offsets.get(tp, 0),
                recovery_point=checkpoints.recovery_points.get(tp, 0),
                high_watermark=checkpoints.high_watermarks.get(tp, 0),
                had_clean_shutdown=self.had_clean_shutdown,
            )
            log.on_truncated = self.checkpoint_recovery_points
            _lower_cleaner_checkpoint(self.fs, partition_dir, log)
            return log
        except InvalidFileNameError as error:
            # The loader names the bare file; say which partition directory holds it.
            where = error.where or ""
            if not Path(where).is_absolute():
                where = str(partition_dir / where)
            raise InvalidFileNameError(error.message, where=where) from error

    # --- partitions ---

    def log(self, tp: TopicPartition) -> Log:
        """The open log of `tp`; KeyError if this directory has none."""
        return self.logs[tp]

    def get_or_create_log(self, tp: TopicPartition) -> Log:
        """The log of `tp`, creating `<topic>-<partition>/` and an empty log if absent."""
        self._ensure_open()
        existing = self.logs.get(tp)
        if existing is not None:
            return existing
        partition_dir = self.path / str(tp)
        self.fs.mkdir(partition_dir)
        self.fs.fsync_dir(self.path)
        log = Log.open(self.fs, partition_dir, self._config_for(tp.topic), self.time,
                       had_clean_shutdown=True)
        log.on_truncated = self.checkpoint_recovery_points
        self.logs[tp] = log
        return log

    # --- checkpoints and shutdown ---

    def checkpoint(self) -> None:
        """Write the three root checkpoints from the open logs (LogManager's periodic task).

        Spec: FMT-40 (the log-start file lists only logs whose start is above their first
        segment's base), FMT-36 (atomic writes).
        """
        self._ensure_open()
        self._write_checkpoints(self._offsets_of_open_logs())

    def checkpoint_recovery_points(self) -> None:
        """Rewrite `recovery-point-offset-checkpoint` alone, as LogManager.truncateTo does right
        after a truncation (DUR-26, CBUG-5): the lowered recovery point must be durable before
        appends above the cut, or a crash trusts torn bytes below the old one."""
        if self.closed:
            return
        recovery_points = self._offsets_of_open_logs()[0]
        OffsetCheckpointFile(self.fs, self.path / RECOVERY_POINT_CHECKPOINT_FILENAME,
                             create_if_missing=False).write(
            {(tp.topic, tp.partition): offset for tp, offset in recovery_points.items()})

    def _offsets_of_open_logs(self) -> tuple[OffsetMap, OffsetMap, OffsetMap]:
        return _offset_maps({tp: (log.offsets(), log.segments[0].base_offset)
                             for tp, log in self.logs.items()})

    def _write_checkpoints(self, offsets: tuple[OffsetMap, OffsetMap, OffsetMap]) -> None:
        names = (RECOVERY_POINT_CHECKPOINT_FILENAME, LOG_START_OFFSET_CHECKPOINT_FILENAME,
                 REPLICATION_OFFSET_CHECKPOINT_FILENAME)
        for name, values in zip(names, offsets, strict=True):
            OffsetCheckpointFile(self.fs, self.path / name, create_if_missing=False).write(
                {(tp.topic, tp.partition): offset for tp, offset in values.items()})

    def close(self, broker_epoch: int = -1) -> None:
        """Clean shutdown (FMT-44): flush and close every log, checkpoint, then write the marker.

        Idempotent. If closing a log fails the marker is not written, so the next open recovers.
        """
        if self.closed:
            return
        closed: dict[TopicPartition, tuple[LogOffsets, int]] = {}
        for tp, log in self.logs.items():
            first_base = log.segments[0].base_offset
            closed[tp] = (log.close(), first_base)  # Log.close flushes first (flush(true))
        self.closed = True
        self._write_checkpoints(_offset_maps(closed))
        self.fs.write_atomically(self.path / CLEAN_SHUTDOWN_FILE_NAME,
                                 clean_shutdown_content(broker_epoch))

    def _close_logs_quietly(self) -> None:
        """Close what was opened after a failed load; the failure being raised is what matters."""
        for log in self.logs.values():
            try:
                log.close()
            except KafkalogError as error:
                logger.warning("error closing %s after a failed load: %s", log, error)
        self.closed = True

    def _ensure_open(self) -> None:
        if self.closed:
            raise LogDirError("log directory has been closed", where=str(self.path))

    def __enter__(self) -> LogDir:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _lower_cleaner_checkpoint(fs: FileSystem, partition_dir: Path, log: Log) -> None:
    """KL-CRASH-15: a cleaner checkpoint entry above the loaded LEO is lowered to the active
    base (a crash interrupted a truncation's CLN-68 lowering). Directories whose name is no
    live `<topic>-<partition>` have no entry to lower."""
    try:
        checkpoint = CleanerCheckpoint(fs, partition_dir)
    except InvalidLogDirNameError:
        return
    active = log.local_log.segments.active_segment()
    checkpoint.lower_above_log_end(log.log_end_offset, active.base_offset, log.config)
