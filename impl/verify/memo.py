"""Per-segment verify results kept while none of the segment's files changed.

A checker verifies the same live directory every few steps, and most segments are untouched
between two verifies. A file system that can tell when a file may have changed
(`FileSystem.version_of`: the recording file system journals every write, truncate, mapped
store and stamp, so an old segment rewritten in place changes it too) lets `verify` reuse the
scan and the findings of a segment whose files all carry the versions they had; a file system
that cannot tell (None) gets every segment checked again. Producer snapshots, the root offset
checkpoints and the leader-epoch checkpoint are read once per version of their files the same
way.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.producer.snapshot import SnapshotEntry, read_snapshot
from kafkalog.impl.verify.findings import Finding
from kafkalog.impl.verify.scan import SegmentScan

_Read = TypeVar("_Read")


@dataclass(frozen=True)
class CheckedSegment:
    """One segment's checks: its scan (None: the `.log` was unreadable), the findings before
    the overlap check (the scan's, or the unreadable file's) and those after it (indexes,
    transaction index)."""

    scan: SegmentScan | None
    head: tuple[Finding, ...]
    tail: tuple[Finding, ...]


class SegmentMemo:
    """CheckedSegment by (directory, base), valid while its fingerprint holds; and the entries
    of each producer snapshot that parsed, valid while the file's version holds."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, int], tuple[Hashable, CheckedSegment]] = {}
        self._snapshots: dict[str, tuple[Hashable, list[SnapshotEntry]]] = {}
        self._reads: dict[tuple[str, ...], tuple[Hashable, Any]] = {}

    def read_kept(self, fs: FileSystem, paths: tuple[str, ...], read: Callable[[], _Read]
                  ) -> _Read:
        """`read()`, whose answer depends on the files at `paths` alone, run again only when
        one of their versions changed (or is unknown). An answer that raises is not kept; the
        caller must not change what it is given (it is given again)."""
        versions = tuple(fs.version_of(path) for path in paths)
        if None in versions:
            return read()
        known = self._reads.get(paths)
        if known is not None and known[0] == versions:
            return known[1]  # type: ignore[no-any-return]
        answer = read()
        self._reads[paths] = (versions, answer)
        return answer

    def snapshot_entries(self, fs: FileSystem, path: Path | str) -> list[SnapshotEntry]:
        """`read_snapshot(fs, path)`, read again only when the file's version changed. A file
        that fails to parse is not remembered: it is read (and raises) every time."""
        version = fs.version_of(path)
        if version is None:
            return read_snapshot(fs, Path(path))
        known = self._snapshots.get(str(path))
        if known is not None and known[0] == version:
            return known[1]
        entries = read_snapshot(fs, Path(path))
        self._snapshots[str(path)] = (version, entries)
        return entries

    @staticmethod
    def fingerprint(fs: FileSystem, partition_dir: Path, base: int, suffixes: set[str],
                    options: Hashable) -> Hashable | None:
        """The files' versions and the check's options, or None if any version is unknown."""
        prefix = str(partition_dir / f"{base:020d}")
        versions = []
        for suffix in sorted(suffixes):
            version = fs.version_of(prefix + suffix)
            if version is None:
                return None
            versions.append((suffix, version))
        return tuple(versions), options

    def get(self, partition_dir: Path, base: int, fingerprint: Hashable) -> CheckedSegment | None:
        entry = self._entries.get((str(partition_dir), base))
        return entry[1] if entry is not None and entry[0] == fingerprint else None

    def put(self, partition_dir: Path, base: int, fingerprint: Hashable,
            checked: CheckedSegment) -> None:
        self._entries[(str(partition_dir), base)] = (fingerprint, checked)
