"""The high watermark of a `Log` (LOG-5..11): a mixin of `impl/log/log.py`.

Kept apart so `Log` stays readable; the methods use `Log`'s attributes, declared below.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from kafkalog.impl.bounds import require_int64
from kafkalog.impl.log.local_log import LocalLog
from kafkalog.impl.producer.producer_state_manager import ProducerStateManager
from kafkalog.model.errors import IllegalArgumentError, OffsetOutOfRangeError
from kafkalog.model.values import LogOffsetMetadata


class LogHighWatermark:
    """Where the high watermark is, how it moves, and its segment position (materialised lazily)."""

    local_log: LocalLog
    producer_state: ProducerStateManager
    lock: Any
    _hw_lock: threading.Lock
    _hw_metadata: LogOffsetMetadata
    _log_start_offset: int
    log_end_offset: int
    log_end_offset_metadata: LogOffsetMetadata
    high_watermark: int
    _maybe_increment_first_unstable_offset: Callable[[], None]  # LogProducers': the FUO follows

    def update_high_watermark(self, hw: int | LogOffsetMetadata) -> int:
        """Clamp `hw` into [LSO, LEO] and store it; may decrease the HW (LOG-5)."""
        require_int64(hw if isinstance(hw, int) else hw.message_offset, "high watermark",
                      "update_high_watermark")
        with self.lock:
            md = hw if isinstance(hw, LogOffsetMetadata) else LogOffsetMetadata(hw)
            end = self.log_end_offset_metadata
            if md.message_offset < self._log_start_offset:
                md = LogOffsetMetadata(self._log_start_offset)
            elif md.message_offset >= end.message_offset:
                md = end
            self._update_high_watermark_metadata(md)
            return md.message_offset

    def maybe_increment_high_watermark(self, new_hw: LogOffsetMetadata) -> LogOffsetMetadata | None:
        """Leader path: advance only, returning the old metadata when it moved (LOG-7, LOG-8).

        Raises IllegalArgumentError when `new_hw` is above the LEO (ERR-28).
        """
        require_int64(new_hw.message_offset, "high watermark", "maybe_increment_high_watermark")
        with self.lock:
            if new_hw.message_offset > self.log_end_offset:
                raise IllegalArgumentError(
                    f"High watermark {new_hw} update exceeds current log end offset "
                    f"{self.log_end_offset_metadata}"
                )
            old = self.fetch_high_watermark_metadata()
            if old.message_offset < new_hw.message_offset or (
                old.message_offset == new_hw.message_offset and _on_older_segment(old, new_hw)
            ):
                self._update_high_watermark_metadata(new_hw)
                return old
            return None

    def _update_high_watermark_metadata(self, md: LogOffsetMetadata) -> None:
        """LOG-6; raises IllegalArgumentError for a negative offset (ERR-29)."""
        if md.message_offset < 0:
            raise IllegalArgumentError("High watermark offset should be non-negative")
        with self._hw_lock:
            self._hw_metadata = md
        # UL.updateHighWatermarkMetadata: unreplicated transactions retire, the FUO follows.
        self.producer_state.on_high_watermark_updated(md.message_offset)
        self._maybe_increment_first_unstable_offset()

    def _update_high_watermark_with_log_end_offset(self) -> None:
        """LOG-10: when HW >= LEO the HW metadata follows the LEO metadata."""
        end = self.log_end_offset_metadata
        if self.high_watermark >= end.message_offset:
            self._update_high_watermark_metadata(end)

    def fetch_high_watermark_metadata(self) -> LogOffsetMetadata:
        """The HW with its segment position, materialised and cached (LOG-11, BUG-33)."""
        md = self._hw_metadata
        if not md.message_offset_only:
            return md
        try:
            found = self.local_log.convert_to_offset_metadata_or_throw(md.message_offset)
        except OffsetOutOfRangeError:
            with self.lock:  # Kafka re-assigns the (message-only) HW metadata here too
                self._update_high_watermark_metadata(md)
            return md
        # specs/log.md KL-HW-4: keep the HW offset itself, take only the segment and position.
        # (LOC-5 reports the batch base with CHG-1, or the LEO across a gap at a segment end.)
        full = LogOffsetMetadata(
            md.message_offset, found.segment_base_offset, found.relative_position_in_segment
        )
        with self.lock:
            if self._hw_metadata is md:  # a concurrent update wins over this cached conversion
                self._update_high_watermark_metadata(full)
        return full


def _on_older_segment(old: LogOffsetMetadata, new: LogOffsetMetadata) -> bool:
    """LOG-8: false if either side is message-only, else compare segment bases."""
    if old.message_offset_only or new.message_offset_only:
        return False
    return old.segment_base_offset < new.segment_base_offset

