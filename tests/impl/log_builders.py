"""Record and batch builders shared by the Log (UnifiedLog) scenario tests."""

from __future__ import annotations

from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.model.values import NO_TIMESTAMP, Record


def recs(*values: str, ts: int = NO_TIMESTAMP, key: bytes | None = None) -> list[Record]:
    return [Record(key, v.encode(), ts) for v in values]


def batch(base: int, *values: str, epoch: int = 0, ts: int = NO_TIMESTAMP) -> MemoryRecords:
    return MemoryRecords.with_records(recs(*values, ts=ts), base_offset=base,
                                      partition_leader_epoch=epoch)


def leader(*values: str, ts: int = NO_TIMESTAMP) -> MemoryRecords:
    return MemoryRecords.with_records(recs(*values, ts=ts))
