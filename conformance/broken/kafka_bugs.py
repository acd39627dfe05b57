"""Historical Kafka bugs of the log, its segments, indexes and epoch cache, put back.

Each entry makes the real implementation behave like Kafka did before the fix named by its bug
ID (the BUG entries of specs/sources.md), stated against the current code (base.py): a `diff` of the
method's source, or a wrapper that calls the real method. `kafkalog check --broken NAME` and
tests/conformance/test_broken.py and test_zoo.py prove the checker catches every one.
"""

from __future__ import annotations

from typing import Any

from kafkalog.conformance.broken.base import Broken, diff
from kafkalog.impl.checkpoint.epoch_cache import LeaderEpochCache
from kafkalog.impl.index.abstract_index import AbstractIndex, round_down
from kafkalog.impl.index.offset_index import OffsetIndex
from kafkalog.impl.log.local_log import LocalLog
from kafkalog.impl.log.log import Log
from kafkalog.impl.records.memory_records import BatchFacts, MemoryRecords
from kafkalog.impl.segment import log_segment
from kafkalog.impl.segment.indexing import Decisions, per_append_decisions, py_index_decisions
from kafkalog.impl.segment.log_segment import FetchDataInfo, LogSegment
from kafkalog.model import values as v

# --- wrappers: the real method, with its arguments or result changed ---------------------------

_REAL_TRUNCATE_TO = Log.truncate_to


def _truncate_to_keeping_hw(self: Log, target_offset: int) -> bool:
    """LOG-40 step 4: truncation below the HW did not clamp the HW to the new LEO."""
    hw = self._hw_metadata
    truncated = _REAL_TRUNCATE_TO(self, target_offset)
    self._hw_metadata = hw
    return truncated  # type: ignore[no-any-return]


_REAL_END_OFFSET_FOR = LeaderEpochCache.end_offset_for


def _end_offset_for_undefined_as_latest(self: LeaderEpochCache, requested_epoch: int,
                                        log_end_offset: int) -> tuple[int, int]:
    """BUG-50 (KAFKA-6857): a request for the undefined epoch -1 was answered with the LEO."""
    latest = self.latest_epoch
    if requested_epoch == v.UNDEFINED_EPOCH and latest is not None:
        return latest, log_end_offset
    return _REAL_END_OFFSET_FOR(self, requested_epoch, log_end_offset)  # type: ignore[no-any-return]


_REAL_SEGMENT_TRUNCATE = LogSegment.truncate_to


def _segment_truncate_keeping_clock(self: LogSegment, offset: int, before_cut: Any = None) -> int:
    """BUG-18 (KAFKA-596): a segment emptied by truncation kept its old roll clock."""
    created, rolling = self.created, self.rolling_based_timestamp
    removed = _REAL_SEGMENT_TRUNCATE(self, offset, before_cut)
    self.created, self.rolling_based_timestamp = created, rolling
    return removed  # type: ignore[no-any-return]


_REAL_MAX_TIMESTAMP = Log._fetch_max_timestamp


def _max_timestamp_last_offset(self: Log) -> v.TimestampAndOffset | None:
    """BUG-12 (KAFKA-16310): MAX_TIMESTAMP answered the batch's last offset."""
    found = _REAL_MAX_TIMESTAMP(self)
    if found is None:
        return None
    for segment in self.local_log.segments.values():
        for batch in segment.log.batches(0):
            if batch.base_offset <= found.offset <= batch.last_offset:
                return v.TimestampAndOffset(found.timestamp, batch.last_offset, found.leader_epoch)
    return found  # type: ignore[no-any-return]


_REAL_RESIZE = AbstractIndex.resize


def _resize_resetting_entries(self: AbstractIndex, new_size: int) -> bool:
    """BUG-2 (KAFKA-748): growing an index remapped it with the write position back at 0."""
    grows = round_down(new_size, self.entry_size()) > self._length
    changed = _REAL_RESIZE(self, new_size)
    if grows and changed:
        self._entries = 0
        self._after_entries_changed()
    return changed  # type: ignore[no-any-return]


_REAL_SEGMENT_READ = LogSegment.read


def _segment_read_ignoring_max_position(self: LogSegment, start_offset: int, max_size: int,
                                        max_position: int | None = -1,
                                        min_one_message: bool = False) -> FetchDataInfo | None:
    """BUG-30 (LOC-4 step 4): a segment read that ignored its max position (reads past the
    HW)."""
    bound = -1 if max_position is not None else None
    return _REAL_SEGMENT_READ(self, start_offset, max_size, bound, min_one_message)  # type: ignore[no-any-return]


_REAL_FOLLOWER = Log.append_as_follower


def _follower_ignoring_request_epoch(self: Log, records: MemoryRecords,
                                     leader_epoch: int | None = None) -> v.LogAppendInfo:
    """BUG-58 (KAFKA-18723): batches above the request's leader epoch were appended."""
    return _REAL_FOLLOWER(self, records, None)  # type: ignore[no-any-return]


# BUG-24: the follower's offset check (KAFKA-3047), gone.
_FOLLOWER_OFFSET_CHECK = """\
            if analysis.first_offset < self.log_end_offset:
                raise UnexpectedAppendOffsetError(
                    f"Unexpected offset in append to {self.dir.name}. First offset "
                    f"{analysis.first_offset} is less than the next offset "
                    f"{self.log_end_offset}.",
                    analysis.first_offset, analysis.last_offset,
                )
"""

def _decisions_per_append(batches: list[BatchFacts], position: int, interval: int, since: int,
                          max_ts: int, max_off: int) -> Decisions:
    """`index_decisions` taken per append, as Kafka before 4.0 does (the step's own signature)."""
    return per_append_decisions(batches, position, interval, since, max_ts, max_off)


KAFKA_BUGS: tuple[Broken, ...] = (
    # The log: retention, truncation, the high watermark, offsets by timestamp.
    Broken("retention_ignores_hw", "BUG-36", "LOG-33",
           "retention deletes segments holding offsets at or above the HW",
           Log, "_delete_matching",
           diff(("deletable_segments(segments, self.high_watermark, self.log_end_offset,",
                 "deletable_segments(segments, self.log_end_offset, self.log_end_offset,"))),
    Broken("truncate_fully_keeps_hw", "BUG-38", "LOG-41",
           "full truncation moves the LSO but not the HW",
           Log, "_truncate_fully_and_start_at",
           diff(("        self.update_high_watermark(self.log_end_offset_metadata)\n", ""))),
    Broken("truncate_keeps_hw", "BUG-38", "LOG-40",
           "truncation below the HW does not clamp the HW",
           Log, "truncate_to", _truncate_to_keeping_hw),
    Broken("log_start_retention_last", "BUG-41", "LOG-32",
           "log-start retention runs after time and size retention",
           Log, "delete_old_segments",
           diff(("self._delete_log_start_offset_breached_segments()\n"
                 "                + self._delete_retention_size_breached_segments()\n"
                 "                + self._delete_retention_ms_breached_segments()",
                 "self._delete_retention_ms_breached_segments()\n"
                 "                + self._delete_retention_size_breached_segments()\n"
                 "                + self._delete_log_start_offset_breached_segments()"))),
    Broken("max_timestamp_last_offset", "BUG-12", "LOG-48",
           "MAX_TIMESTAMP returns the batch's last offset",
           Log, "_fetch_max_timestamp", _max_timestamp_last_offset),
    Broken("roll_keeps_hw_metadata", "BUG-37", "LOG-10",
           "after a roll with HW = LEO the HW metadata points at the old segment",
           Log, "_roll", diff(("        self._update_high_watermark_with_log_end_offset()\n", ""))),
    Broken("hw_below_log_start", "BUG-35", "LOG-5",
           "the HW is not clamped up to the log start offset",
           Log, "update_high_watermark",
           diff(("if md.message_offset < self._log_start_offset:",
                 "if md.message_offset < 0:"))),
    Broken("follower_below_leo_accepted", "BUG-24", "LOG-19",
           "follower batches starting below the LEO are appended",
           Log, "append_as_follower",
           diff((_FOLLOWER_OFFSET_CHECK, ""))),
    Broken("follower_epoch_above_request", "BUG-58", "LOG-15a",
           "follower batches above the request's leader epoch are appended",
           Log, "append_as_follower", _follower_ignoring_request_epoch),
    Broken("retention_never_rolls", "BUG-46", "KL-RET-6",
           "retention never rolls the active segment away",
           Log, "_delete_segments",
           diff(("        if len(self.local_log.segments) == count:\n"
                 "            new_segment = self._roll(None)\n"
                 "            if to_delete[-1].base_offset == new_segment.base_offset:\n"
                 "                to_delete.pop()\n",
                 "        active = self.local_log.segments.active_segment()\n"
                 "        to_delete = [s for s in to_delete if s is not active]\n"))),
    Broken("truncate_above_leo_keeps_epochs", "BUG-54", "LOG-40",
           "truncate_to(target >= LEO) keeps epoch entries at or above the target",
           Log, "truncate_to",
           diff(("                self.leader_epoch_cache.truncate_from_end(self.log_end_offset)\n",
                 ""))),
    # LocalLog: the recovery point and reads up to a bound.
    Broken("recovery_point_above_leo", "BUG-60", "LOC-2",
           "truncation leaves the recovery point above the LEO",
           LocalLog, "update_log_end_offset",
           diff(("        if self.recovery_point > end_offset:\n"
                 "            self.recovery_point = end_offset\n", ""))),
    Broken("read_without_bound_shortcut", "BUG-31", "LOC-4",
           "no start == bound short-cut in the local read",
           LocalLog, "read",
           diff(("        if start_offset == max_offset_metadata.message_offset:\n"
                 "            return FetchDataInfo(max_offset_metadata, EMPTY_RECORDS, "
                 "aborted_transactions=empty)\n", ""))),
    Broken("read_bound_segment_to_end", "BUG-33", "LOC-4",
           "the bound's own segment is readable to its end",
           LocalLog, "_max_position",
           diff(("if segment.base_offset < bound.segment_base_offset:",
                 "if segment.base_offset <= bound.segment_base_offset:"))),
    # Segments: appends, truncation, rolling, reads.
    Broken("index_per_append", "BUG-10", "SEG-3",
           "one index decision per append instead of per batch",
           # The decision Kafka before 4.0 makes (SEG-4), taken where 4.0+ decides per batch.
           log_segment, "index_decisions", _decisions_per_append),
    Broken("time_index_pairs_current_batch", "BUG-11", "FMT-19",
           "a time-index entry pairs the max timestamp with the current batch's offset",
           log_segment, "index_decisions",
           diff(("timed.append((max_ts, max_off))", "timed.append((max_ts, base + delta))"),
                source=py_index_decisions)),
    Broken("truncation_keeps_index_trimmed", "BUG-20", "SEG-13",
           "truncation does not resize the indexes back to full capacity",
           LogSegment, "truncate_to",
           diff(("        self.resize_indexes(self.max_index_size)\n", ""))),
    Broken("truncation_keeps_roll_clock", "BUG-18", "SEG-13",
           "a segment emptied by truncation keeps its old roll clock",
           LogSegment, "truncate_to", _segment_truncate_keeping_clock),
    Broken("time_roll_wall_clock", "BUG-19", "SEG-7",
           "time rolls compare the wall clock with the first batch's timestamp",
           LogSegment, "time_waited_for_roll",
           diff(("return message_timestamp - rbt", "return now - rbt"))),
    Broken("rolled_indexes_not_trimmed", "BUG-7", "SEG-16",
           "a rolled segment's index files stay preallocated",
           LogSegment, "on_become_inactive_segment",
           diff(("        self.offset_index.trim_to_valid_size()\n"
                 "        self.time_index.trim_to_valid_size()\n", ""))),
    Broken("segment_read_ignores_max_position", "BUG-30", "LOC-4",
           "a segment read ignores its max position and reads past the HW",
           LogSegment, "read", _segment_read_ignoring_max_position),
    # Indexes.
    Broken("index_truncation_keeps_target", "BUG-1", "FMT-15",
           "offset-index truncation keeps the entry at the target",
           OffsetIndex, "truncate_to",
           diff(("            elif self._parse(slot)[0] == offset - self.base_offset:\n"
                 "                new_entries = slot  # the entry at exactly `offset` goes too "
                 "(KAFKA-588)\n", ""))),
    Broken("index_resize_resets_entries", "BUG-2", "FMT-28",
           "growing an index resets its write position to 0",
           AbstractIndex, "resize", _resize_resetting_entries),
    # The leader-epoch cache.
    Broken("end_offset_undefined_is_latest", "BUG-50", "EPO-4",
           "end_offset_for(-1) returns the latest epoch and the LEO",
           LeaderEpochCache, "end_offset_for", _end_offset_for_undefined_as_latest),
    Broken("end_offset_names_requested_epoch", "BUG-51", "EPO-4",
           "end_offset_for names the requested epoch instead of the largest known one",
           LeaderEpochCache, "end_offset_for",
           diff(("            floor = [e for e in self._entries if e.epoch <= requested_epoch]\n"
                 "            if not floor:\n"
                 "                return requested_epoch, higher.start_offset\n"
                 "            return floor[-1].epoch, higher.start_offset\n",
                 "            return requested_epoch, higher.start_offset\n"))),
    Broken("epoch_cache_non_monotonic", "BUG-52", "EPO-2",
           "the epoch cache accepts non-monotonic entries",
           LeaderEpochCache, "_assign",
           diff(("        while entries and (entries[-1].epoch >= epoch or "
                 "entries[-1].start_offset >= start_offset):\n"
                 "            entries.pop()\n", ""))),
)
