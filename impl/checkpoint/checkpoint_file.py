"""Kafka's text checkpoint files: the generic `CheckpointFile` and its two entry formats.

Format (FMT-35): UTF-8 lines ending in "\\n": the version, the entry count, then one entry per
line. A `leader-epoch-checkpoint` holding (epoch 0 from offset 1) and (epoch 1 from offset 2) is::

    0
    2
    0 1
    1 2

and a `recovery-point-offset-checkpoint` is ``0 / 1 / my-topic 0 42`` (FMT-40).

Crash policy (FMT-36): a write goes to `<path>.tmp`, is fsync'd, renamed over the target and the
directory is fsync'd (`fs.write_atomically`), so a reader sees either the whole old file or the
whole new one. An empty file means "no entries" (FMT-37); anything else that does not parse is a
`CorruptCheckpointError` naming the file and the line (ERR-43).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Generic, TypeVar

from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.model.errors import CorruptCheckpointError
from kafkalog.model.values import EpochEntry

T = TypeVar("T")

LEADER_EPOCH_CHECKPOINT_FILENAME = "leader-epoch-checkpoint"  # FMT-8
RECOVERY_POINT_CHECKPOINT_FILENAME = "recovery-point-offset-checkpoint"  # FMT-9
LOG_START_OFFSET_CHECKPOINT_FILENAME = "log-start-offset-checkpoint"  # FMT-9
REPLICATION_OFFSET_CHECKPOINT_FILENAME = "replication-offset-checkpoint"  # FMT-9 (HW)
CURRENT_VERSION = 0
MAX_CHECKPOINT_BYTES = 64 << 20

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


# Integer.parseInt / Long.parseLong: an optional sign, then decimal digits only (Python's int()
# also takes "1_0" and surrounding whitespace, which Kafka rejects).
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")
# java.util.regex "\\s+" (ASCII whitespace), which Kafka's entry formatters split on.
_JAVA_WHITESPACE = re.compile(r"[ \t\n\x0b\f\r]+")
# BufferedReader.readLine ends a line at \n, \r or \r\n, and at nothing else.
_LINE_END = re.compile(r"\r\n|\r|\n")


def _parse_int(token: str, lo: int, hi: int) -> int:
    """Parse a decimal Java int/long; raises ValueError outside [lo, hi] or when not a number."""
    if _JAVA_INTEGER.fullmatch(token) is None:
        raise ValueError(f"{token!r} is not a decimal integer")
    value = int(token, 10)
    if not lo <= value <= hi:
        raise ValueError(f"{token} out of range")
    return value


def java_split(line: str) -> list[str]:
    """`line.split("\\s+")` as Java does it: a leading empty field is kept (so leading
    whitespace makes a malformed line), trailing empty fields are dropped."""
    fields = _JAVA_WHITESPACE.split(line)
    while fields and fields[-1] == "":
        fields.pop()
    return fields


def java_lines(text: str) -> list[str]:
    """The lines BufferedReader.readLine returns, in order (no final empty line)."""
    lines = _LINE_END.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


class CheckpointFile(Generic[T]):
    """A versioned list of entries in one text file (CF in the reference, FMT-35..38).

    `to_line` renders one entry; `from_line` parses one, raising ValueError when malformed.
    """

    def __init__(
        self,
        fs: FileSystem,
        path: Path | str,
        version: int,
        to_line: Callable[[T], str],
        from_line: Callable[[str], T],
        *,
        create_if_missing: bool = True,
    ) -> None:
        self.fs = fs
        self.path = Path(path)
        self.version = version
        self._to_line = to_line
        self._from_line = from_line
        # FMT-36: Kafka's constructor creates an empty file; read-only inspection opts out.
        if create_if_missing and not fs.exists(self.path):
            self.write(())

    def write(self, entries: Iterable[T]) -> None:
        """Replace the file's content atomically (tmp + fsync + rename + dir fsync, FMT-36)."""
        items = list(entries)
        lines = [str(self.version), str(len(items))] + [self._to_line(e) for e in items]
        self.fs.write_atomically(self.path, ("\n".join(lines) + "\n").encode("utf-8"))

    def write_if_dir_exists(self, entries: Iterable[T]) -> None:
        """Write unless the parent directory is gone (renamed for deletion, FMT-38)."""
        if self.fs.exists(self.path.parent):
            self.write(entries)

    def read(self) -> list[T]:
        """Parse the file; empty means no entries. Raises CorruptCheckpointError (ERR-43).

        As strict as Kafka's CheckpointReadBuffer: lines end at \\n, \\r or \\r\\n only;
        the version and count lines are exactly Integer.parseInt's (no whitespace, no `_`).
        """
        text = self._read_text()
        lines = java_lines(text)
        if not lines:
            return []
        self._check_version(lines[0])
        if len(lines) < 2:
            return []
        count = self._parse_count(lines[1])
        entries = [self._parse_entry(line, n) for n, line in enumerate(lines[2:], start=3)]
        if len(entries) != count:
            raise CorruptCheckpointError(
                f"Expected {count} entries in checkpoint file but found only {len(entries)}",
                where=str(self.path),
            )
        return entries

    def _read_text(self) -> str:
        size = self.fs.file_size(self.path)
        if size > MAX_CHECKPOINT_BYTES:
            # Bounded memory: a checkpoint of a million partitions is ~40 MB.
            raise CorruptCheckpointError(
                f"checkpoint file of {size} bytes exceeds {MAX_CHECKPOINT_BYTES}",
                where=str(self.path))
        data = self.fs.read_file(self.path)
        try:
            return bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptCheckpointError(
                f"checkpoint file is not UTF-8 text ({exc.reason})", where=str(self.path)
            ) from exc

    def _check_version(self, line: str) -> None:
        try:
            version: int | None = _parse_int(line, INT32_MIN, INT32_MAX)
        except ValueError:
            version = None
        if version != self.version:
            raise CorruptCheckpointError(
                f"Unrecognised version {line[:80]!r} in checkpoint file (expected "
                f"{self.version})",
                where=f"{self.path}:1",
            )

    def _parse_count(self, line: str) -> int:
        try:
            count = _parse_int(line, 0, INT32_MAX)
        except ValueError as exc:
            raise CorruptCheckpointError(
                f"Malformed line in checkpoint file: {line[:80]!r} (expected the entry count)",
                where=f"{self.path}:2",
            ) from exc
        return count

    def _parse_entry(self, line: str, line_number: int) -> T:
        try:
            return self._from_line(line)
        except ValueError as exc:
            raise CorruptCheckpointError(
                f"Malformed line in checkpoint file: {line[:80]!r}",
                where=f"{self.path}:{line_number}"
            ) from exc


def _epoch_to_line(entry: EpochEntry) -> str:
    return f"{entry.epoch} {entry.start_offset}"


def _epoch_from_line(line: str) -> EpochEntry:
    tokens = java_split(line)
    if len(tokens) != 2:
        raise ValueError("expected '<epoch> <start offset>'")
    epoch = _parse_int(tokens[0], INT32_MIN, INT32_MAX)
    return EpochEntry(epoch, _parse_int(tokens[1], 0, INT64_MAX))


class LeaderEpochCheckpointFile(CheckpointFile[EpochEntry]):
    """`leader-epoch-checkpoint` (FMT-39): version 0, lines `<epoch> <startOffset>`."""

    def __init__(self, fs: FileSystem, path: Path | str, *, create_if_missing: bool = True) -> None:
        super().__init__(
            fs, path, CURRENT_VERSION, _epoch_to_line, _epoch_from_line,
            create_if_missing=create_if_missing,
        )

    @staticmethod
    def new_file(dir_path: Path | str) -> Path:
        return Path(dir_path) / LEADER_EPOCH_CHECKPOINT_FILENAME


OffsetEntry = tuple[str, int, int]  # (topic, partition, offset)


def _offset_to_line(entry: OffsetEntry) -> str:
    topic, partition, offset = entry
    return f"{topic} {partition} {offset}"


def _offset_from_line(line: str) -> OffsetEntry:
    tokens = java_split(line)
    if len(tokens) != 3:
        raise ValueError("expected '<topic> <partition> <offset>'")
    partition = _parse_int(tokens[1], INT32_MIN, INT32_MAX)
    return tokens[0], partition, _parse_int(tokens[2], INT64_MIN, INT64_MAX)


class OffsetCheckpointFile:
    """A root offset checkpoint (FMT-40): version 0, lines `<topic> <partition> <offset>`.

    Used for the recovery points, log start offsets and high watermarks of a log directory.
    """

    def __init__(self, fs: FileSystem, path: Path | str, *, create_if_missing: bool = True) -> None:
        self._file: CheckpointFile[OffsetEntry] = CheckpointFile(
            fs, path, CURRENT_VERSION, _offset_to_line, _offset_from_line,
            create_if_missing=create_if_missing,
        )
        self.path = self._file.path

    def write(self, offsets: dict[tuple[str, int], int]) -> None:
        """Atomically replace the file with `offsets` (sorted for reproducible bytes)."""
        self._file.write((t, p, o) for (t, p), o in sorted(offsets.items()))

    def read(self) -> dict[tuple[str, int], int]:
        """(topic, partition) -> offset; raises CorruptCheckpointError; a later duplicate wins."""
        return {(t, p): o for t, p, o in self._file.read()}


def read_offsets_or_empty(fs: FileSystem, path: Path | str) -> dict[tuple[str, int], int]:
    """Read an offset checkpoint that may be absent; absent = no entries (FMT-41 defaults)."""
    if not fs.exists(Path(path)):
        return {}
    return OffsetCheckpointFile(fs, path, create_if_missing=False).read()

