"""Generated Kafka log directories for audit tests and benchmarks: real logs written by
`kafkalog.impl` (Kafka's byte format, real indexes, checkpoints, a clean-shutdown marker), with
many segments per partition and several leader epochs, so split audits have ranges to join."""

from __future__ import annotations

from pathlib import Path

from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.load.log_dir import LogDir, TopicPartition
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.time import MockTime
from kafkalog.model.values import LogConfig, Record


def write_log_dir(path: Path, partitions: dict[str, int], segment_bytes: int,
                  record_bytes: int = 1000, records_per_batch: int = 16,
                  epochs: int = 3) -> Path:
    """A cleanly closed log directory at `path`: `{"topic-N": approximate .log bytes}`, rolled
    every `segment_bytes`, leader epoch raised `epochs` times over each partition's data."""
    fs = FileSystem()
    fs.mkdir(path)
    log_dir = LogDir.open(fs, path, LogConfig(segment_bytes=segment_bytes), MockTime(1_000))
    value = b"v" * record_bytes
    try:
        for name, size in sorted(partitions.items()):
            topic, _, number = name.rpartition("-")
            log = log_dir.get_or_create_log(TopicPartition(topic, int(number)))
            batches = max(1, size // (record_bytes * records_per_batch))
            for n in range(batches):
                epoch = n * epochs // batches
                ts = 1_000 + n * records_per_batch
                records = [Record(None, value, ts + i) for i in range(records_per_batch)]
                log.append_as_leader(MemoryRecords.with_records(records), epoch)
    finally:
        log_dir.close()
    return path
