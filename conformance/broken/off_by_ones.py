"""Off-by-ones and forgotten steps of the log's rules, put back.

Each entry breaks the real implementation the way a plausible slip of one rule would (a `>=`
for a `>`, a bound one past its place, a step left out), named by the rule it breaks. They are
stated against the current code like the historical bugs (base.py, kafka_bugs.py); the point is
that default `kafkalog check` finds each one (tests/conformance/test_zoo.py).
"""

from __future__ import annotations

from kafkalog.conformance.broken.base import Broken, diff
from kafkalog.impl.index.time_index import TimeIndex
from kafkalog.impl.log import deletion
from kafkalog.impl.log.local_log import LocalLog
from kafkalog.impl.log.log import Log
from kafkalog.impl.log.retention import (
    log_start_offset_breached,
    retention_ms_breached,
    retention_size_breached,
)
from kafkalog.impl.segment import log_segment
from kafkalog.impl.segment.indexing import py_index_decisions
from kafkalog.impl.segment.log_segment import LogSegment
from kafkalog.model import values as v

# --- wrappers: the real method, with its arguments or result changed ---------------------------

_REAL_DELETE_FILES = LocalLog.delete_segment_files


def _delete_files_at_once(self: LocalLog, segments: list[LogSegment], async_delete: bool) -> None:
    """LOC-11: segment files removed at once instead of after file.delete.delay.ms."""
    _REAL_DELETE_FILES(self, segments, False)


_REAL_FETCH_BY_TS = Log.fetch_offset_by_timestamp


def _earliest_is_first_segment(self: Log, target_timestamp: int) -> v.TimestampAndOffset | None:
    """LOG-44: EARLIEST answered the first segment's base, not the log start offset."""
    found = _REAL_FETCH_BY_TS(self, target_timestamp)
    if target_timestamp == v.EARLIEST_TIMESTAMP and found is not None:
        first = self.local_log.segments.first_segment_base_offset()
        return v.TimestampAndOffset(found.timestamp, first, found.leader_epoch)
    return found  # type: ignore[no-any-return]


def _latest_is_last_offset(self: Log, target_timestamp: int) -> v.TimestampAndOffset | None:
    """LOG-45: LATEST answered the last offset (LEO - 1) instead of the LEO."""
    found = _REAL_FETCH_BY_TS(self, target_timestamp)
    if target_timestamp == v.LATEST_TIMESTAMP and found is not None and found.offset > 0:
        return v.TimestampAndOffset(found.timestamp, found.offset - 1, found.leader_epoch)
    return found  # type: ignore[no-any-return]


OFF_BY_ONES: tuple[Broken, ...] = (
    # Segments and indexes.
    Broken("index_interval_inclusive", "SEG-3", "SEG-3",
           "an index entry once bytes since the last one reach the interval (>= for >)",
           log_segment, "index_decisions",
           diff(("if since > interval:", "if since >= interval:"), source=py_index_decisions)),
    Broken("time_index_no_reserved_slot", "FMT-21", "SEG-6",
           "the time index counts its reserved last slot as free",
           TimeIndex, "is_full",
           diff(("self._entries >= self._max_entries - 1", "self._entries >= self._max_entries"))),
    Broken("roll_size_inclusive", "SEG-6", "SEG-6",
           "a batch that exactly fills the segment rolls it (>= for >)",
           LogSegment, "should_roll",
           diff(("size > p.max_segment_bytes - p.messages_size",
                 "size >= p.max_segment_bytes - p.messages_size"))),
    Broken("timestamp_search_exclusive", "SEG-18", "SEG-18",
           "a timestamp search skips records carrying exactly the target timestamp",
           LogSegment, "find_offset_by_timestamp",
           diff(("self.time_index.lookup(timestamp)", "self.time_index.lookup(timestamp + 1)"),
                ("search_for_timestamp(timestamp,", "search_for_timestamp(timestamp + 1,"))),
    # The log: rolling, the high watermark and log start, retention, offsets by timestamp.
    Broken("roll_without_flush", "LOG-25", "LOG-25",
           "a roll does not flush the old segment (recovery point stays)",
           Log, "_roll",
           diff(("        self.local_log.mark_flushed(min(new_segment.base_offset, "
                 "self.log_end_offset))\n", ""))),
    Broken("hw_increment_moves_back", "LOG-7", "LOG-7",
           "maybe_increment_high_watermark also moves the HW backwards",
           Log, "maybe_increment_high_watermark",
           diff(("if old.message_offset < new_hw.message_offset or (",
                 "if old.message_offset < new_hw.message_offset or "
                 "0 <= new_hw.message_offset < old.message_offset or ("))),
    Broken("log_start_above_hw", "LOG-30", "LOG-30",
           "the log start offset may move above the HW",
           Log, "maybe_increment_log_start_offset",
           diff(("if new_log_start_offset > self.high_watermark:",
                 "if new_log_start_offset > self.log_end_offset:"))),
    Broken("size_retention_strict", "LOG-37", "LOG-37",
           "size retention stops while the log is exactly at retention.bytes (> for >=)",
           deletion, "retention_size_breached",
           diff(("if excess - segment.size() >= 0:", "if excess - segment.size() > 0:"),
                source=retention_size_breached)),
    Broken("time_retention_inclusive", "LOG-36", "LOG-36",
           "time retention deletes a segment exactly retention.ms old (>= for >)",
           deletion, "retention_ms_breached",
           diff(("now_ms - segment.largest_timestamp() > retention_ms",
                 "now_ms - segment.largest_timestamp() >= retention_ms"),
                source=retention_ms_breached)),
    Broken("log_start_retention_strict", "LOG-38", "LOG-38",
           "log-start retention keeps a segment whose successor starts at the LSO (< for <=)",
           deletion, "log_start_offset_breached",
           diff(("nxt.base_offset <= log_start_offset", "nxt.base_offset < log_start_offset"),
                source=log_start_offset_breached)),
    Broken("retention_one_past_hw", "BUG-36", "LOG-33",
           "retention may delete a segment ending one past the HW",
           Log, "_delete_matching",
           diff(("deletable_segments(segments, self.high_watermark, self.log_end_offset,",
                 "deletable_segments(segments, self.high_watermark + 1, self.log_end_offset,"))),
    Broken("earliest_is_first_segment", "LOG-44", "LOG-44",
           "EARLIEST answers the first segment's base instead of the log start offset",
           Log, "fetch_offset_by_timestamp", _earliest_is_first_segment),
    Broken("latest_is_last_offset", "LOG-45", "LOG-45",
           "LATEST answers LEO - 1",
           Log, "fetch_offset_by_timestamp", _latest_is_last_offset),
    # LocalLog.
    Broken("delete_without_delay", "LOC-11", "LOC-11",
           "deleted segment files are removed at once, not after file.delete.delay.ms",
           LocalLog, "delete_segment_files", _delete_files_at_once),
)
