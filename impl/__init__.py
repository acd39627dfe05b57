"""kafkalog.impl: a single-partition Kafka log store in Kafka's exact on-disk format.

Imports only the standard library, `crc32c`, `cramjam` and, from the model, `kafkalog.model.errors`
and `kafkalog.model.values` (never model operations). Every file-system effect goes through
`kafkalog.impl.fs.file_system.FileSystem`.
"""

from kafkalog.impl.checkpoint.checkpoint_file import (
    CheckpointFile,
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
)
from kafkalog.impl.checkpoint.epoch_cache import LeaderEpochCache
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.load.log_dir import LogDir
from kafkalog.impl.load.log_loader import LogLoader
from kafkalog.impl.log.log import Log, LogOffsets
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.segment.log_segment import FetchDataInfo, LogSegment
from kafkalog.impl.segment.log_segments import LogSegments
from kafkalog.impl.time import MockTime, SystemTime

__all__ = [
    "CheckpointFile",
    "FetchDataInfo",
    "FileSystem",
    "LeaderEpochCache",
    "LeaderEpochCheckpointFile",
    "Log",
    "LogLoader",
    "LogOffsets",
    "LogDir",
    "LogSegment",
    "LogSegments",
    "MemoryRecords",
    "MockTime",
    "OffsetCheckpointFile",
    "SystemTime",
]
