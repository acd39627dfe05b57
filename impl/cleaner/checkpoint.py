"""`cleaner-offset-checkpoint` (FMT-9, FMT-40, CLN-21): each partition's first offset not yet
cleaned, one file at the root of a log directory, shared by its partitions.

    0
    1
    orders 0 4

Writes reread the file, replace one entry and rewrite it atomically (tmp, fsync, rename, fsync
directory: `CheckpointFile`), so a crash leaves the old or the new file.
"""

from __future__ import annotations

from pathlib import Path

from kafkalog.impl.checkpoint.checkpoint_file import OffsetCheckpointFile, read_offsets_or_empty
from kafkalog.impl.cleaner.config import policy_flags
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.model.errors import InvalidLogDirNameError
from kafkalog.model.values import LogConfig

CLEANER_CHECKPOINT_FILENAME = "cleaner-offset-checkpoint"


def _topic_partition(name: str) -> tuple[str, int]:
    """FMT-2 `<topic>-<partition>` of a live partition directory (ERR-42 otherwise); the
    loader's parser (`impl/load/log_dir.py`) also reads suffixed names and imports the log."""
    topic, _, partition = name.rpartition("-")
    if not topic or not (partition.isascii() and partition.isdigit()):
        raise InvalidLogDirNameError(f"directory '{name}' is not in the form of topic-partition",
                                     where=name)
    return topic, int(partition)


class CleanerCheckpoint:
    """The checkpoint entry of the partition in `partition_dir`."""

    def __init__(self, fs: FileSystem, partition_dir: Path) -> None:
        self.fs = fs
        self.path = partition_dir.parent / CLEANER_CHECKPOINT_FILENAME
        self.key = _topic_partition(partition_dir.name)

    def read(self) -> int | None:
        """The entry, or None without one (the file may be absent)."""
        return read_offsets_or_empty(self.fs, self.path).get(self.key)

    def write(self, offset: int) -> None:
        offsets = read_offsets_or_empty(self.fs, self.path)
        offsets[self.key] = offset
        OffsetCheckpointFile(self.fs, self.path).write(offsets)

    def lower_to(self, active_base: int, config: LogConfig) -> None:
        """CLN-68 (KAFKA-3330): after a truncation below the active base (or a full one), a
        compacted log's entry above the new active base is lowered to it. KL-CLEAN-13."""
        flags = policy_flags(config.cleanup_policy)
        if flags is None or not flags[0]:
            return
        current = self.read()
        if current is not None and current > active_base:
            self.write(active_base)

    def lower_above_log_end(self, log_end_offset: int, active_base: int,
                            config: LogConfig) -> None:
        """KL-CRASH-15 (kafkalog, strict): at load, an entry above the LEO is lowered to the
        active base. A crash inside a truncation between its cut and the CLN-68 lowering leaves
        one (the load finishes the lowering, so KL-INV-18 holds); Kafka keeps it until the
        next pass resets it (CLN-15)."""
        flags = policy_flags(config.cleanup_policy)
        if flags is None or not flags[0]:
            return
        current = self.read()
        if current is not None and current > log_end_offset:
            self.write(active_base)
