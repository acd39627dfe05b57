"""`close_and_reopen`: a clean shutdown then a load (FMT-44, REC-*, LOG-3, LOG-4).

Re-exported by `log.py`. The unclean counterpart (a crash, then a load) is `crash.py`.
"""

from __future__ import annotations

from dataclasses import replace

from . import epochs as epoch_cache
from .helpers import (
    OFFSET_INDEX_ENTRY_SIZE,
    TIME_INDEX_ENTRY_SIZE,
    index_max_entries,
)
from .local_log import clamped_high_watermark
from .segment import become_inactive, new_segment
from .state import PartitionState, Segment
from .values import LogOffsetMetadata


def _reopened(segment: Segment, now_ms: int) -> Segment:
    """A segment object opened at load: created now, counter reset, trimmed indexes as on disk."""
    return replace(segment, created_ms=now_ms, bytes_since_last_index_entry=0)


def resize_active(segment: Segment, segment_index_bytes: int) -> Segment:
    """REC-12: the last segment's indexes regain full capacity after load."""
    return replace(
        segment,
        offset_index_max_entries=index_max_entries(segment_index_bytes, OFFSET_INDEX_ENTRY_SIZE),
        time_index_max_entries=index_max_entries(segment_index_bytes, TIME_INDEX_ENTRY_SIZE),
    )


def close_and_reopen(state: PartitionState) -> tuple[PartitionState, None]:
    """Clean shutdown (flush to LEO, close segments, checkpoints) then load (REC-*).

    Spec: KL-RELOAD-1, KL-RELOAD-2, KL-RELOAD-3, KL-RELOAD-4, KL-RELOAD-5. Pending `.deleted`
    files are removed by the load (REC-2) and their timers are gone.
    """
    now = state.now_ms
    closed = tuple(_reopened(become_inactive(s), now) for s in state.segments)
    first_base = closed[0].base_offset
    # FMT-40: the log-start checkpoint holds an entry only when LSO > first base; missing = 0.
    lso_checkpoint = state.log_start_offset if state.log_start_offset > first_base else 0
    hw_checkpoint = state.high_watermark.message_offset
    segments = (*closed[:-1], resize_active(closed[-1], state.config.segment_index_bytes))
    entries = state.epochs
    leo = segments[-1].next_offset
    if leo < lso_checkpoint:
        # REC-9 (KAFKA-8306): data below the checkpointed LSO is gone; start empty there.
        segments = (new_segment(lso_checkpoint, state.config, now),)
        entries = ()
        leo = lso_checkpoint
    # kafkalog trims the start first, then the end (KL-RELOAD-2): Kafka's order (end, then start,
    # RCV-10) leaves an entry at the LEO when LSO = LEO, which the next load removes (issue #10,
    # defect 4); this order gives the same cache on every load.
    entries = epoch_cache.truncate_from_start(entries, lso_checkpoint)
    entries = epoch_cache.truncate_from_end(entries, leo)
    log_start = max(lso_checkpoint, segments[0].base_offset)
    loaded = PartitionState(
        config=state.config,
        segments=segments,
        log_start_offset=log_start,
        high_watermark=LogOffsetMetadata(log_start),
        log_end_offset=leo,
        recovery_point=max(leo, log_start),
        epochs=entries,
        now_ms=now,
    )
    return replace(loaded, high_watermark=clamped_high_watermark(loaded, hw_checkpoint)), None
