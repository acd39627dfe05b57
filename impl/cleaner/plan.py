"""Pure planning of a cleaning pass from plain values (CLN-1..CLN-29): which range is dirty,
whether the log is eligible, how the segments group. No I/O; the cleaner applies the plan.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kafkalog.impl.records.record_batch import RecordBatch
from kafkalog.model.errors import InvalidRecordError
from kafkalog.model.values import INT32_MAX, LogConfig


@dataclass(frozen=True)
class SegmentFacts:
    """What planning reads of one segment."""

    base_offset: int
    size: int
    offset_index_bytes: int
    time_index_bytes: int
    first_batch_timestamp: int  # Long.MAX when empty


@dataclass(frozen=True)
class DirtyRange:
    first_dirty: int
    first_uncleanable: int
    eligible: bool
    reset_checkpoint: bool  # CLN-14: the stored checkpoint was invalid and must be rewritten


def _floor(bases: list[int], offset: int) -> int:
    return max((i for i, b in enumerate(bases) if b <= offset), default=0)


def dirty_range(segments: list[SegmentFacts], checkpoint: int | None, log_start: int,
                log_end: int, last_stable: int, lag_base: int, now_ms: int,
                config: LogConfig) -> DirtyRange:
    """CLN-15..CLN-19 over the segment facts; `lag_base` is -1 when no minimum lag bounds."""
    c = log_start if checkpoint is None else checkpoint
    first_dirty = log_start if c < log_start or c > log_end else c
    bases = [s.base_offset for s in segments]
    bound = min(last_stable, bases[-1])
    if lag_base >= 0:
        bound = min(bound, lag_base)
    uncleanable = max(first_dirty, bound)
    first_uncleanable = bases[_floor(bases, uncleanable)]
    cleanable = 0
    if first_dirty < first_uncleanable:
        start = _floor(bases, first_dirty)
        cleanable = sum(s.size for s in segments[start:] if s.base_offset < first_uncleanable)
    clean = sum(s.size for s in segments if s.base_offset < first_dirty)
    stamps = [s.first_batch_timestamp for s in segments[_floor(bases, first_dirty):-1]]
    positive = [t for t in stamps if t > 0]
    forced = bool(positive) and min(positive) < now_ms - max(config.max_compaction_lag_ms, 0)
    total = clean + cleanable
    eligible = cleanable > 0 and (forced or cleanable / float(total) >
                                  config.min_cleanable_dirty_ratio)
    return DirtyRange(first_dirty, first_uncleanable, eligible,
                      checkpoint is not None and first_dirty != checkpoint)


def group_lengths(segments: list[SegmentFacts], first_uncleanable: int, max_size: int,
                  max_index_size: int) -> list[int]:
    """CLN-29 (BUG-C1..C4): greedy groups within the size, index-size and Int.MAX range."""
    groups: list[int] = []
    i = 0
    while i < len(segments):
        head = segments[i]
        log_size, oi, ti = head.size, head.offset_index_bytes, head.time_index_bytes
        j = i + 1
        while j < len(segments):
            s = segments[j]
            estimate = (segments[j + 1].base_offset if j + 1 < len(segments)
                        else first_uncleanable) - 1
            if (log_size + s.size > max_size or oi + s.offset_index_bytes > max_index_size
                    or ti + s.time_index_bytes > max_index_size
                    or (s.size > 0 and estimate - head.base_offset > INT32_MAX)):
                break
            log_size, oi, ti = log_size + s.size, oi + s.offset_index_bytes, \
                ti + s.time_index_bytes
            j += 1
        groups.append(j - i)
        i = j
    return groups


def require_keys(batches: Iterable[RecordBatch]) -> None:
    """CLN-9 (KAFKA-1755): a compacted log's leader refuses keyless records (Kafka's
    `InvalidRecordException`); control batches are not checked. The caller asks only for a
    compacted log (`is_compacted`), so a delete-only log never parses its records for this."""
    for batch in batches:
        if not batch.is_control_batch and any(r.key is None for r in batch.records()):
            raise InvalidRecordError("Compacted topic cannot accept message without key",
                                     where=batch.where())
