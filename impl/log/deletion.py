"""Retention and truncation on a `Log` (LOG-32..42): a mixin of `impl/log/log.py`.

Kept apart so `Log` stays readable; the methods use `Log`'s attributes, declared below.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafkalog.impl.bounds import require_int64
from kafkalog.impl.checkpoint.epoch_cache import LeaderEpochCache
from kafkalog.impl.cleaner.checkpoint import CleanerCheckpoint
from kafkalog.impl.cleaner.config import deletes, is_compacted
from kafkalog.impl.log.local_log import LocalLog
from kafkalog.impl.log.retention import (
    Predicate,
    deletable_segments,
    log_start_offset_breached,
    retention_ms_breached,
    retention_size_breached,
)
from kafkalog.impl.producer.producer_state_manager import ProducerStateManager
from kafkalog.impl.segment.log_segment import LogSegment
from kafkalog.impl.time import Time
from kafkalog.model.errors import IllegalArgumentError


class LogDeletion:
    """What removes data from a log: retention (delete_old_segments) and truncation."""

    local_log: LocalLog
    leader_epoch_cache: LeaderEpochCache
    producer_state: ProducerStateManager
    time: Time
    lock: Any
    _log_start_offset: int
    on_truncated: Callable[[], None] | None

    # --- retention --------------------------------------------------------------------------

    def delete_old_segments(self) -> int:
        """Log-start, then size, then time retention; returns segments deleted (LOG-32..38)."""
        with self.lock:
            if not deletes(self.config):  # LOG-32, CLN-20 (KAFKA-7400): KL-CLEAN-14
                return self._delete_log_start_offset_breached_segments()
            return (
                self._delete_log_start_offset_breached_segments()
                + self._delete_retention_size_breached_segments()
                + self._delete_retention_ms_breached_segments()
            )

    def _delete_log_start_offset_breached_segments(self) -> int:
        return self._delete_matching(log_start_offset_breached(self._log_start_offset))

    def _delete_retention_size_breached_segments(self) -> int:
        size = self.local_log.segments.size_in_bytes()
        return self._delete_matching(retention_size_breached(size, self.config.retention_bytes))

    def _delete_retention_ms_breached_segments(self) -> int:
        now = self.time.milliseconds()
        return self._delete_matching(retention_ms_breached(now, self.config.retention_ms))

    def _delete_matching(self, predicate: Predicate | None) -> int:
        if predicate is None:
            return 0
        segments = self.local_log.segments.values()
        chosen = deletable_segments(segments, self.high_watermark, self.log_end_offset, predicate)
        return self._delete_segments(segments[: len(chosen)])  # the walk takes a prefix

    def _delete_segments(self, deletable: list[LogSegment]) -> int:
        """LOG-34: roll first if all would go, raise the LSO, then delete asynchronously."""
        count = len(deletable)
        if count == 0:
            return 0
        to_delete = list(deletable)
        if len(self.local_log.segments) == count:
            new_segment = self._roll(None)
            if to_delete[-1].base_offset == new_segment.base_offset:
                to_delete.pop()
        self.local_log.check_if_memory_mapped_buffer_closed()
        if to_delete:
            successor = self.local_log.segments.higher_segment(to_delete[-1].base_offset)
            assert successor is not None, "a deletable segment always has a successor"
            self.maybe_increment_log_start_offset(successor.base_offset)
            self.local_log.remove_and_delete_segments(to_delete, async_delete=True)
        # PSR-2: the whole deletable list, including an empty active segment kept above.
        self.producer_state.delete_snapshots_async(s.base_offset for s in deletable)
        self._snapshot_removals_durable()
        return count

    def _snapshot_removals_durable(self) -> None:
        """Strict (KL-CRASH-3, KL-CRASH-11): the snapshot renames and deletions of a retention
        pass or a truncation reach the directory before the call returns, like its segments',
        so a power loss cannot bring back producer state of removed data (Kafka: GAP-2)."""
        self.local_log.fs.fsync_dir(self.dir)

    # --- truncation -------------------------------------------------------------------------

    def truncate_to(self, target_offset: int) -> bool:
        """Follower truncation to `target_offset`; True iff something was cut (LOG-40, LOG-42).

        Raises IllegalArgumentError for a negative target (ERR-33).
        """
        require_int64(target_offset, "offset", "truncate_to")
        if target_offset < 0:
            raise IllegalArgumentError(
                f"Cannot truncate partition {self.dir.name} to a negative offset "
                f"({target_offset})."
            )
        with self.lock:
            self.local_log.check_if_memory_mapped_buffer_closed()
            if target_offset >= self.log_end_offset:
                self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
                return False
            first = self.local_log.segments.first_segment_base_offset()
            if first is not None and first > target_offset:
                self._truncate_fully_and_start_at(target_offset)
                return True
            below_active = target_offset < self.local_log.segments.active_segment().base_offset
            removed = self.local_log.truncate_to(target_offset)
            self.producer_state.delete_snapshots_async(s.base_offset for s in removed)
            self.leader_epoch_cache.truncate_from_end(target_offset)
            self._log_start_offset = min(target_offset, self._log_start_offset)
            self._rebuild_producer_state(target_offset)  # PSR-10, before the HW (KAFKA-12153)
            self._snapshot_removals_durable()
            if self.high_watermark >= self.log_end_offset:
                self.update_high_watermark(self.log_end_offset_metadata)
            if below_active:
                self._lower_cleaner_checkpoint()
            self._truncated()
            return True

    def _lower_cleaner_checkpoint(self) -> None:
        """CLN-68: LogManager lowers a compacted log's cleaner checkpoint after a truncation
        below the active base. KL-CLEAN-13."""
        if is_compacted(self.config):
            CleanerCheckpoint(self.local_log.fs, self.dir).lower_to(
                self.local_log.segments.active_segment().base_offset, self.config)

    def _truncated(self) -> None:
        """DUR-26: the lowered recovery point reaches its checkpoint before the caller goes on."""
        if self.on_truncated is not None:
            self.on_truncated()

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Delete everything and start empty at `new_offset`: LSO = HW = LEO (LOG-41, BUG-38).

        Raises IllegalArgumentError for a negative offset (as the model does).
        """
        require_int64(new_offset, "offset", "truncate_fully_and_start_at")
        if new_offset < 0:
            raise IllegalArgumentError(f"Cannot start the log at negative offset {new_offset}")
        with self.lock:
            self._truncate_fully_and_start_at(new_offset)

    def _truncate_fully_and_start_at(self, new_offset: int) -> None:
        self.local_log.truncate_fully_and_start_at(new_offset)
        self.leader_epoch_cache.clear_and_flush()
        self.producer_state.truncate_fully_and_start_at(new_offset)  # PSR-11
        self._snapshot_removals_durable()
        # Assigned directly, as UnifiedLog.truncateFullyAndStartAt does: the recovery point stays
        # min(recovery point, offset), where LocalLog.updateLogEndOffset left it (KL-TRUNC-4).
        self._log_start_offset = new_offset
        self._rebuild_producer_state(new_offset)
        self.update_high_watermark(self.log_end_offset_metadata)
        self._lower_cleaner_checkpoint()
        self._truncated()
