"""`close_and_reopen`: a clean shutdown then a load (FMT-44, REC-*, LOG-3, LOG-4).

Re-exported by `log.py`. The unclean counterpart (a crash, then a load) is `crash.py`.
"""

from __future__ import annotations

from dataclasses import replace

from . import epochs as epoch_cache
from .helpers import (
    OFFSET_INDEX_ENTRY_SIZE,
    TIME_INDEX_ENTRY_SIZE,
    regained_capacity,
)
from .local_log import clamped_high_watermark, schedule_deletion
from .producer.producer_entry import ProducerBatch
from .producer.producer_state import (
    ProducerState,
    rebuild,
    remove_stray_snapshots,
    take_snapshot,
)
from .producer.transactions import on_high_watermark_updated
from .segment import become_inactive, new_segment
from .state import JITTER_UNCONSTRAINED, PartitionState, Segment
from .values import LogOffsetMetadata


def segment_producer_batches(
    segments: tuple[Segment, ...],
) -> tuple[tuple[int, tuple[ProducerBatch, ...]], ...]:
    """(base, producer facts of every batch) per segment: what a producer-state rebuild reads."""
    return tuple((s.base_offset, tuple(b.producer_batch() for b in s.batches)) for s in segments)


def _reload_producer_state(state: PartitionState, segments: tuple[Segment, ...], log_start: int,
                           leo: int, truncated_fully: bool) -> ProducerState:
    """Close takes a snapshot at the map end (PSR-1); the load builds a fresh manager over the
    snapshot files, removes strays and rebuilds with the clean-shutdown flag (PSR-3, PSR-5,
    PSR-8, PSR-9). The expiry check is rescheduled one interval after the load (PST-22).

    Spec: KL-PROD-10, KL-PROD-12.
    """
    closed = take_snapshot(state.producer_state)
    config = state.config
    fresh = ProducerState(
        snapshots=() if truncated_fully else closed.snapshots,
        last_map_offset=leo if truncated_fully else 0,
        expiry_due_ms=state.now_ms + config.producer_id_expiration_check_interval_ms,
    )
    fresh = remove_stray_snapshots(fresh, (s.base_offset for s in segments))
    return rebuild(fresh, segment_producer_batches(segments), log_start, leo, state.now_ms,
                   config.producer_id_expiration_ms, clean_shutdown=True)


def _reopened(segment: Segment, now_ms: int) -> Segment:
    """A segment object opened at load: created now, counter reset, trimmed indexes as on disk.

    A new object draws a new jitter in Kafka, so no earlier roll decision constrains it
    (KL-ALLOW-2).
    """
    return replace(segment, created_ms=now_ms, bytes_since_last_index_entry=0,
                   roll_jitter_bounds=JITTER_UNCONSTRAINED, max_so_far=None)


def resize_active(segment: Segment, segment_index_bytes: int) -> Segment:
    """REC-12: the last segment's indexes regain full capacity after load; an index recovery
    rebuilt beyond it keeps its entries and reads full (KL-CRASH-5)."""
    return replace(
        segment,
        offset_index_max_entries=regained_capacity(
            segment_index_bytes, OFFSET_INDEX_ENTRY_SIZE, len(segment.offset_index)),
        time_index_max_entries=regained_capacity(
            segment_index_bytes, TIME_INDEX_ENTRY_SIZE, len(segment.time_index)),
    )


def close_and_reopen(state: PartitionState) -> tuple[PartitionState, None]:
    """Clean shutdown (flush to LEO, close segments, checkpoints) then load (REC-*).

    Spec: KL-RELOAD-1, KL-RELOAD-2, KL-RELOAD-3, KL-RELOAD-4, KL-RELOAD-5, KL-PROD-12.
    Pending `.deleted` files are removed by the load (REC-2) and their timers are gone. A LEO
    below the log-start checkpoint deletes every loaded segment asynchronously (REC-9).
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
    truncated_fully = leo < lso_checkpoint
    dropped: tuple[Segment, ...] = ()
    if truncated_fully:
        # REC-9 (KAFKA-8306): data below the checkpointed LSO is gone; start empty there. Kafka
        # renames the old segments `.deleted` and removes them after the delay (KL-RELOAD-3).
        dropped = segments
        segments = (new_segment(lso_checkpoint, state.config, now),)
        entries = ()
        leo = lso_checkpoint
    # kafkalog trims the start first, then the end (KL-RELOAD-2): Kafka's order (end, then start,
    # RCV-10) leaves an entry at the LEO when LSO = LEO, which the next load removes, so
    # two loads disagree; this order gives the same cache on every load.
    log_start = max(lso_checkpoint, segments[0].base_offset)
    # At the loaded log start (KL-CRASH-6; the same as the checkpoint after a clean shutdown).
    entries = epoch_cache.truncate_from_start(entries, log_start)
    entries = epoch_cache.truncate_from_end(entries, leo)
    producer_state = _reload_producer_state(state, segments, log_start, leo, truncated_fully)
    loaded = PartitionState(
        config=state.config,
        segments=segments,
        log_start_offset=log_start,
        high_watermark=LogOffsetMetadata(log_start),
        log_end_offset=leo,
        recovery_point=max(leo, log_start),
        epochs=entries,
        now_ms=now,
        producer_state=producer_state,
        # CLN-21: `cleaner-offset-checkpoint` outlives the log object (KL-CLEAN-11).
        cleaner_checkpoint=state.cleaner_checkpoint,
        cleaner_floor=state.cleaner_floor,
        cleaner_entry_kept=state.cleaner_entry_kept,
    )
    # TXN-8/TXN-13 (KL-TXN-7): the loaded log computes its FUO from the reloaded producer state
    # (open transactions from the snapshot, no unreplicated ones) at its HW assignment.
    loaded = replace(loaded, high_watermark=clamped_high_watermark(loaded, hw_checkpoint))
    loaded = schedule_deletion(loaded, dropped)
    return on_high_watermark_updated(loaded), None
