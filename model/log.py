"""The model's action vocabulary (docs/design.md): pure `action(state, ...) -> (state, result)`.

Each action either returns the new state and its result or raises a typed error from
`errors.py` and leaves no state change. Rule IDs (`KL-*`) are defined in specs/log.md.

Not modelled: transaction verification guards, tiered storage, compression, v0/v1
writes, flush.messages, preallocate (specs/log.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from . import epochs as epoch_cache
from .append import append_as_follower, append_as_leader, append_marker
from .bounds import INT64_MAX, require_config, require_int32, require_int64
from .cleaner.cleaner import clean, is_compacted, lower_checkpoint_on_truncation
from .cleaner.offsets import require_compaction_config
from .errors import IllegalArgumentError, OffsetOutOfRangeError
from .helpers import (
    OFFSET_INDEX_ENTRY_SIZE,
    TIME_INDEX_ENTRY_SIZE,
    clamp_high_watermark,
)
from .local_log import (
    clamped_high_watermark,
    complete_pending_flushes,
    fire_due_deletions,
    last_stable_offset_metadata,
    local_read,
    materialise_high_watermark,
    roll_log,
    schedule_deletion,
)
from .producer.producer_state import (
    Producers,
    ProducerState,
    delete_snapshots,
    on_log_start_offset_incremented,
    producer_views,
    rebuild,
    run_due_expiry,
)
from .producer.transactions import (
    aborted_txn_entries,
    last_stable_offset,
    on_high_watermark_updated,
    refresh_first_unstable_offset,
)
from .reload import close_and_reopen, segment_producer_batches
from .retention import delete_old_segments
from .segment import new_segment
from .segment import truncate as truncate_segment
from .state import PartitionState
from .timestamps import fetch_offset_by_timestamp
from .values import (
    EpochEndOffset,
    FetchDataInfo,
    Isolation,
    LogConfig,
    LogOffsetMetadata,
    LogStateView,
    ProducerView,
    SegmentView,
)
from .versions import check_profile

__all__ = [
    "append_as_follower",
    "append_as_leader",
    "append_marker",
    "assign_epoch",
    "advance_clock",
    "clean",
    "close_and_reopen",
    "delete_old_segments",
    "empty_log",
    "end_offset_for_epoch",
    "fetch_offset_by_timestamp",
    "flush",
    "maybe_increment_high_watermark",
    "maybe_increment_log_start_offset",
    "read",
    "roll",
    "truncate_fully_and_start_at",
    "truncate_to",
    "update_high_watermark",
    "view",
]


def validate_config(config: LogConfig) -> None:
    """KL-STATE-2: reject configurations Kafka would refuse or could not index; KL-VERSION-1.

    Every integer has to fit its Java type (KL-BOUND-1) and meet Kafka's validator
    (`bounds.CONFIG_BOUNDS`); the time index needs room for one entry.
    """
    assert OFFSET_INDEX_ENTRY_SIZE < TIME_INDEX_ENTRY_SIZE
    require_config(config)
    check_profile(config.kafka_version)
    problem = require_compaction_config(
        config.cleanup_policy, config.min_cleanable_dirty_ratio, config.min_compaction_lag_ms,
        config.max_compaction_lag_ms)
    if problem is not None:
        raise IllegalArgumentError(problem, where="LogConfig")  # KL-CLEAN-1


def empty_log(config: LogConfig, now_ms: int = 0, log_start_offset: int = 0) -> PartitionState:
    """A new log: one empty segment at `log_start_offset`; LSO = HW = LEO = recovery point.

    Spec: KL-STATE-1, KL-STATE-2, KL-BOUND-1. Raises IllegalArgumentError for a bad config, a
    negative start offset, or a clock or offset outside int64.
    """
    validate_config(config)
    require_int64(now_ms, "clock", "empty_log")
    require_int64(log_start_offset, "log start offset", "empty_log")
    if log_start_offset < 0:
        raise IllegalArgumentError(
            f"log start offset {log_start_offset} is negative", where="empty_log"
        )
    return PartitionState(
        config=config,
        segments=(new_segment(log_start_offset, config, now_ms),),
        log_start_offset=log_start_offset,
        high_watermark=LogOffsetMetadata(log_start_offset),
        log_end_offset=log_start_offset,
        recovery_point=log_start_offset,
        epochs=(),
        now_ms=now_ms,
        # A new log is loaded as after a clean shutdown (PSR-5 shortcut: an empty snapshot at
        # a start offset above 0); the expiry check runs one interval later (PST-22).
        producer_state=rebuild(
            ProducerState(expiry_due_ms=now_ms + config.producer_id_expiration_check_interval_ms),
            ((log_start_offset, ()),), log_start_offset, log_start_offset, now_ms,
            config.producer_id_expiration_ms, clean_shutdown=True,
        ),
    )


def read(state: PartitionState, start_offset: int, max_bytes: int, isolation: Isolation,
         min_one_message: bool) -> tuple[PartitionState, FetchDataInfo]:
    """Read whole batches from `start_offset`, byte-granular at the end (LOG-27, LOC-4, SEG-10).

    Spec: KL-READ-1, KL-READ-2, KL-READ-3, KL-READ-4, KL-READ-5, KL-HW-4, KL-TXN-9. The state
    changes only by caching the materialised HW metadata. TXN_COMMITTED reads stop at the last
    stable offset and list the aborted transactions overlapping the range (TXN-14..TXN-16).
    Raises OffsetOutOfRangeError (ERR-31, ERR-32), IllegalArgumentError for a negative
    `max_bytes` reaching a segment (ERR-15).
    """
    require_int64(start_offset, "start offset", "read")
    require_int32(max_bytes, "max bytes", "read")
    if start_offset < state.log_start_offset:
        raise OffsetOutOfRangeError(
            f"Received request for offset {start_offset}, but the log start offset is "
            f"{state.log_start_offset}",
            where="read",
        )
    if isolation is Isolation.HIGH_WATERMARK:
        state, bound = materialise_high_watermark(state)
    elif isolation is Isolation.TXN_COMMITTED:
        state, bound = last_stable_offset_metadata(state)
    else:
        bound = state.log_end_offset_metadata
    return state, local_read(state, start_offset, max_bytes, min_one_message, bound,
                             isolation is Isolation.TXN_COMMITTED)


def update_high_watermark(state: PartitionState, offset: int) -> tuple[PartitionState, int]:
    """Set the HW, clamped into [log start, LEO]; it may decrease (LOG-5, LOG-6).

    Spec: KL-HW-1, KL-HW-2.
    """
    require_int64(offset, "high watermark", "update_high_watermark")
    metadata = clamped_high_watermark(state, offset)
    assert metadata.message_offset == clamp_high_watermark(
        offset, state.log_start_offset, state.log_end_offset
    )
    state = on_high_watermark_updated(replace(state, high_watermark=metadata))
    return state, metadata.message_offset


def _on_older_segment(old: LogOffsetMetadata, new: LogOffsetMetadata) -> bool:
    """LOG-8: false if either side is message-only, else old's segment base < new's."""
    if old.message_offset_only or new.message_offset_only:
        return False
    return old.segment_base_offset < new.segment_base_offset


def maybe_increment_high_watermark(
    state: PartitionState, hw: LogOffsetMetadata
) -> tuple[PartitionState, LogOffsetMetadata | None]:
    """The leader's monotonic HW update; returns the old HW metadata iff it changed (LOG-7).

    Spec: KL-HW-3, KL-HW-4, KL-HW-6. Raises IllegalArgumentError above the LEO (ERR-28).
    """
    require_int64(hw.message_offset, "high watermark", "maybe_increment_high_watermark")
    if hw.message_offset > state.log_end_offset:
        raise IllegalArgumentError(
            f"High watermark {hw.message_offset} update exceeds current log end offset "
            f"{state.log_end_offset}",
            where="maybe_increment_high_watermark",
        )
    state, old = materialise_high_watermark(state)
    if old.message_offset < hw.message_offset or (
        old.message_offset == hw.message_offset and _on_older_segment(old, hw)
    ):
        return on_high_watermark_updated(replace(state, high_watermark=hw)), old
    return state, None


def _update_log_start_offset(state: PartitionState, offset: int) -> PartitionState:
    """LOG-29 step 4.1 updateLogStartOffset: HW and recovery point are raised to it if lower."""
    state = replace(state, log_start_offset=offset)
    if state.high_watermark.message_offset < offset:
        state, _ = update_high_watermark(state, offset)
    if state.recovery_point < offset:
        state = replace(state, recovery_point=offset)
    return state


def maybe_increment_log_start_offset(state: PartitionState,
                                     offset: int) -> tuple[PartitionState, bool]:
    """Move the log start offset up (DeleteRecords); segments stay until retention (LOG-29/30).

    Spec: KL-LSO-1, KL-LSO-2. Raises OffsetOutOfRangeError above the HW (ERR-30).
    """
    require_int64(offset, "log start offset", "maybe_increment_log_start_offset")
    if offset > state.high_watermark.message_offset:
        raise OffsetOutOfRangeError(
            f"Cannot increment the log start offset to {offset} since it is larger than the "
            f"high watermark {state.high_watermark.message_offset}",
            where="maybe_increment_log_start_offset",
        )
    if offset <= state.log_start_offset:
        return state, False
    state = _update_log_start_offset(state, offset)
    state = replace(state, epochs=epoch_cache.truncate_from_start(state.epochs, offset),
                    producer_state=on_log_start_offset_incremented(state.producer_state, offset))
    return refresh_first_unstable_offset(state), True


def roll(state: PartitionState,
         expected_next_offset: int | None = None) -> tuple[PartitionState, int]:
    """A new active segment at max(expected, LEO) (LOG-25, LOC-6, LOC-7).

    Spec: KL-ROLL-3, KL-ROLL-5, KL-ROLL-6, KL-ROLL-7. Raises InvalidRollError (ERR-34).
    """
    if expected_next_offset is not None:
        require_int64(expected_next_offset, "expected next offset", "roll")
    return roll_log(state, expected_next_offset)


def truncate_fully_and_start_at(state: PartitionState, offset: int) -> tuple[PartitionState, None]:
    """Replace everything by one empty segment at `offset`; LSO = HW = LEO = offset (LOG-41).
    Producer state is emptied and every snapshot deleted (PSR-11).

    Spec: KL-TRUNC-4, KL-PROD-11, KL-CLEAN-13. Raises IllegalArgumentError for a negative
    offset (ERR-29).
    """
    require_int64(offset, "offset", "truncate_fully_and_start_at")
    if offset < 0:
        raise IllegalArgumentError(
            f"Cannot start the log at negative offset {offset}", where="truncate_fully_and_start_at"
        )
    old = state.segments
    fresh = new_segment(offset, state.config, state.now_ms)
    state = replace(state, segments=(fresh,), log_end_offset=offset,
                    recovery_point=min(state.recovery_point, offset), epochs=())
    state = schedule_deletion(state, old)
    # Kafka assigns the log start offset directly here (not updateLogStartOffset), so the recovery
    # point stays min(recovery point, offset) as updateLogEndOffset left it.
    producers = replace(state.producer_state, producers=(), snapshots=(),
                        last_map_offset=offset, last_snap_offset=offset, unreplicated=())
    state = replace(state, log_start_offset=offset, producer_state=producers)
    state = lower_checkpoint_on_truncation(state)
    return on_high_watermark_updated(
        replace(state, high_watermark=state.log_end_offset_metadata)), None


def truncate_to(state: PartitionState, offset: int) -> tuple[PartitionState, bool]:
    """Follower truncation to `offset`: batch-aligned cut, LEO = offset (LOG-40, LOC-8, SEG-13).

    Spec: KL-TRUNC-1, KL-TRUNC-2, KL-TRUNC-3, KL-TRUNC-5, KL-EPOCH-3, KL-PROD-11, KL-PROD-12,
    KL-CLEAN-13.
    Producer state is rebuilt from the newest snapshot at or below `offset` plus the batches
    after it (PSR-10). Returns true iff something was truncated. Raises IllegalArgumentError for
    a negative offset (ERR-33).
    """
    require_int64(offset, "offset", "truncate_to")
    if offset < 0:
        raise IllegalArgumentError(
            f"Cannot truncate partition to a negative offset ({offset})", where="truncate_to"
        )
    if offset >= state.log_end_offset:
        # KAFKA-10706: trailing epochs are trimmed even when no data is.
        trimmed = epoch_cache.truncate_from_end(state.epochs, state.log_end_offset)
        return replace(state, epochs=trimmed), False
    if state.segments[0].base_offset > offset:
        state, _ = truncate_fully_and_start_at(state, offset)
        return state, True
    below_active = offset < state.active.base_offset
    kept = tuple(s for s in state.segments if s.base_offset <= offset)
    removed = tuple(s for s in state.segments if s.base_offset > offset)
    active, _ = truncate_segment(kept[-1], offset, state.config, state.now_ms)
    state = replace(
        state,
        segments=(*kept[:-1], active),
        log_end_offset=offset,
        recovery_point=min(state.recovery_point, offset),
        epochs=epoch_cache.truncate_from_end(state.epochs, offset),
        log_start_offset=min(offset, state.log_start_offset),
    )
    state = schedule_deletion(state, removed)
    producers = delete_snapshots(state.producer_state, (s.base_offset for s in removed))
    producers = rebuild(producers, segment_producer_batches(state.segments),
                        state.log_start_offset, offset, state.now_ms,
                        state.config.producer_id_expiration_ms, clean_shutdown=False)
    state = replace(state, producer_state=producers)
    if below_active:
        state = lower_checkpoint_on_truncation(state)
    if state.high_watermark.message_offset >= state.log_end_offset:
        state = on_high_watermark_updated(
            replace(state, high_watermark=state.log_end_offset_metadata))
    return state, True


def flush(state: PartitionState, offset: int | None = None) -> tuple[PartitionState, int]:
    """Advance the recovery point to `offset` (or the LEO) if higher (LOG-26, LOC-12).

    Spec: KL-FLUSH-1, KL-FLUSH-2. Raises IllegalArgumentError outside [0, LEO].
    """
    if offset is not None:
        require_int64(offset, "flush offset", "flush")
    target = state.log_end_offset if offset is None else offset
    if not 0 <= target <= state.log_end_offset:
        raise IllegalArgumentError(
            f"flush offset {target} outside [0, {state.log_end_offset}]", where="flush"
        )
    if target > state.recovery_point:
        state = replace(state, recovery_point=target)
    return state, state.recovery_point


def assign_epoch(
    state: PartitionState, epoch: int, start_offset: int
) -> tuple[PartitionState, None]:
    """Record a leader epoch's start offset in the cache (LOG-50, EPO-2).

    Spec: KL-EPOCH-1. Raises IllegalArgumentError for negatives (ERR-27).
    """
    require_int32(epoch, "epoch", "assign_epoch")
    require_int64(start_offset, "start offset", "assign_epoch")
    return replace(state, epochs=epoch_cache.assign(state.epochs, epoch, start_offset)), None


def end_offset_for_epoch(state: PartitionState,
                         epoch: int) -> tuple[PartitionState, EpochEndOffset | None]:
    """EPO-4 against the LEO; None when the end offset is undefined (LOG-51).

    Spec: KL-EPOCH-2.
    """
    require_int32(epoch, "epoch", "end_offset_for_epoch")
    result = epoch_cache.end_offset_for(state.epochs, epoch, state.log_end_offset)
    return state, (None if result.end_offset == -1 else result)


def advance_clock(state: PartitionState, ms: int) -> tuple[PartitionState, int]:
    """Move the clock forward; asynchronous deletions and producer expiry checks that fall due
    happen (LOC-11, PST-22).

    Spec: KL-CLOCK-1, KL-DEL-2, KL-ALLOW-3, KL-PROD-9, KL-BOUND-1. Raises IllegalArgumentError
    for negative `ms` or a clock beyond Long.MAX.
    """
    if ms < 0:
        raise IllegalArgumentError(f"cannot move the clock back by {ms} ms", where="advance_clock")
    if state.now_ms + ms > INT64_MAX:
        raise IllegalArgumentError(f"advancing the clock by {ms} ms passes Long.MAX",
                                   where="advance_clock")
    state = complete_pending_flushes(state)  # KL-ALLOW-3: the scheduler runs the due roll flushes
    state = fire_due_deletions(replace(state, now_ms=state.now_ms + ms))
    config = state.config
    state = replace(state, producer_state=run_due_expiry(
        state.producer_state, state.now_ms, config.producer_id_expiration_ms,
        config.producer_id_expiration_check_interval_ms))
    return state, state.now_ms


def view(state: PartitionState,
         views_of: Callable[[Producers], tuple[ProducerView, ...]] = producer_views
         ) -> LogStateView:
    """The observable state conformance compares after every step. Spec: KL-STATE-3, KL-PROD-1.

    `views_of` must equal `producer_views`; a checker that takes a view after every step passes
    one that remembers the tables it already turned into views (they are frozen values)."""
    return LogStateView(
        log_start_offset=state.log_start_offset,
        high_watermark=state.high_watermark.message_offset,
        log_end_offset=state.log_end_offset,
        recovery_point=state.recovery_point,
        segments=tuple(
            SegmentView(s.base_offset, s.size, s.next_offset, s.offset_index, s.time_index)
            for s in state.segments
        ),
        epoch_entries=state.epochs,
        pending_deletions=state.deleted_files,
        producers=views_of(state.producer_state.producers),
        producer_snapshots=tuple(off for off, _ in state.producer_state.snapshots),
        last_stable_offset=last_stable_offset(state),
        aborted_txns=aborted_txn_entries(state),
        producer_snapshot_tables=tuple(views_of(table)
                                       for _, table in state.producer_state.snapshots),
        cleaner_checkpoint=_checkpoint_view(state),
    )


def _checkpoint_view(state: PartitionState) -> int | None:
    """KL-CLEAN-11: the cleaner checkpoint of a compacted log (-1: no entry), else None."""
    if not is_compacted(state):
        return None
    entry = state.cleaner_file_entry  # KL-ALLOW-11: what Kafka's cleaner manager would read
    return -1 if entry is None else entry
