"""kafkalog.impl: a single-partition Kafka log store in Kafka's exact on-disk format.

Imports only the standard library, `crc32c`, `cramjam` and, from the model, `kafkalog.model.errors`
and `kafkalog.model.values` (never model operations). Every file-system effect goes through
`kafkalog.impl.fs.FileSystem`.
"""

from kafkalog.impl.checkpoint import (
    CheckpointFile,
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
)
from kafkalog.impl.epoch_cache import LeaderEpochCache
from kafkalog.impl.fs import FileSystem
from kafkalog.impl.log import Log, LogOffsets
from kafkalog.impl.log_dir import LogDir  # added by dir engineer: export LogDir
from kafkalog.impl.log_loader import LogLoader
from kafkalog.impl.log_segment import FetchDataInfo, LogSegment
from kafkalog.impl.log_segments import LogSegments
from kafkalog.impl.memory_records import MemoryRecords
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
    "LogDir",  # added by dir engineer
    "LogSegment",
    "LogSegments",
    "MemoryRecords",
    "MockTime",
    "OffsetCheckpointFile",
    "SystemTime",
]
