"""Per-segment verify results kept while none of the segment's files changed.

A checker verifies the same live directory every few steps, and most segments are untouched
between two verifies. A file system that can tell when a file may have changed
(`FileSystem.version_of`: the recording file system journals every write, truncate, mapped
store and stamp, so an old segment rewritten in place changes it too) lets `verify` reuse the
scan and the findings of a segment whose files all carry the versions they had; a file system
that cannot tell (None) gets every segment checked again.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path

from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.verify.findings import Finding
from kafkalog.impl.verify.scan import SegmentScan


@dataclass(frozen=True)
class CheckedSegment:
    """One segment's checks: its scan (None: the `.log` was unreadable), the findings before
    the overlap check (the scan's, or the unreadable file's) and those after it (indexes,
    transaction index)."""

    scan: SegmentScan | None
    head: tuple[Finding, ...]
    tail: tuple[Finding, ...]


class SegmentMemo:
    """CheckedSegment by (directory, base), valid while its fingerprint holds."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, int], tuple[Hashable, CheckedSegment]] = {}

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
