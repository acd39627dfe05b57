"""Producer state and transactions on a `Log` (PST, PSR, TXN-7..9): a mixin of `impl/log/log.py`.

Kept apart so `Log` stays readable; the methods use `Log`'s attributes, declared below.
"""

from __future__ import annotations

from typing import Any

from kafkalog.impl.log.local_log import LocalLog
from kafkalog.impl.log.transactions import first_unstable_offset, last_stable_offset
from kafkalog.impl.producer.producer_state_manager import ProducerStateManager
from kafkalog.impl.producer.rebuild import rebuild_producer_state, recover_producer_state
from kafkalog.impl.time import Time


class LogProducers:
    """The producer-state and transaction half of Kafka's UnifiedLog."""

    local_log: LocalLog
    producer_state: ProducerStateManager
    time: Time
    lock: Any
    _log_start_offset: int
    _first_unstable_offset: int | None
    _closed: bool

    # --- producer state (PST, PSR) ------------------------------------------------------------

    def _load_producer_state(self, had_clean_shutdown: bool, log_start_checkpoint: int,
                             recovery_point: int, dropped: tuple[int, ...] = ()) -> None:
        """LDR: after an unclean shutdown, per-segment recovery of producer state from the
        recovery point (PSR-7); if the loader dropped every segment (REC-9), their snapshots go
        asynchronously and the rest at once (LDR deleteSegmentsIfLogStartGreaterThanLogEnd:
        deleteProducerSnapshotsAsync, then truncateFullyAndStartAt); then remove stray
        snapshots and rebuild up to the LEO (LDR:235, PSR-3, PSR-5)."""
        segments = self.local_log.segments.values()
        if not had_clean_shutdown:
            # From the loaded log start, not its checkpoint (kafkalog, KL-CRASH-11): see
            # `LogLoader._loaded_log_start`.
            recover_producer_state(
                lambda: ProducerStateManager(self.local_log.fs, self.dir, self.time,
                                             self.config.producer_id_expiration_ms,
                                             self.config.file_delete_delay_ms),
                segments, self._log_start_offset, recovery_point, self.time.milliseconds())
            self.producer_state.snapshots = self.producer_state._list_snapshots()
        if dropped:
            self.producer_state.delete_snapshots_async(dropped)
            self.producer_state.truncate_fully_and_start_at(log_start_checkpoint)
        self.producer_state.remove_stray_snapshots(s.base_offset for s in segments)
        self._rebuild_producer_state(self.log_end_offset, had_clean_shutdown)
        self.producer_state.make_snapshots_durable()  # strict: load twice = load once
        self._maybe_increment_first_unstable_offset()  # UL:481

    # --- transactions (TXN-7..TXN-9) ----------------------------------------------------------

    def _maybe_increment_first_unstable_offset(self) -> None:
        """TXN-8: recompute the cached FUO from the PSM (it may also go down)."""
        self._first_unstable_offset = first_unstable_offset(self.producer_state,
                                                            self._log_start_offset)

    @property
    def last_stable_offset(self) -> int:
        """TXN-9: the cached FUO if below the HW, else the HW."""
        return last_stable_offset(self._first_unstable_offset, self.high_watermark)

    def _rebuild_producer_state(self, last_offset: int, clean_shutdown: bool = False) -> None:
        rebuild_producer_state(self.producer_state, self.local_log.segments.values(),
                               self._log_start_offset, last_offset, self.time.milliseconds(),
                               clean_shutdown)

    def _schedule_producer_expiration(self) -> None:
        """PST-22: every check interval, first one interval from now; stops once closed."""
        interval = self.config.producer_id_expiration_check_interval_ms

        def check() -> None:
            if self._closed:
                return
            with self.lock:
                self.producer_state.remove_expired_producers(self.time.milliseconds())
            delay = interval
            horizon = getattr(self.time.scheduler, "horizon_ms", None)
            if horizon is not None:
                # Expiry is monotonic in time: the last due run before the horizon subsumes the
                # ones between (the model's run_due_expiry), so a long clock jump runs it once.
                delay += max(0, (horizon - self.time.milliseconds()) // interval - 1) * interval
            self.time.scheduler.schedule("PeriodicProducerExpirationCheck", check, delay)

        self.time.scheduler.schedule("PeriodicProducerExpirationCheck", check, interval)
