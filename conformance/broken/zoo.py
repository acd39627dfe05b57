"""The bug zoo (issue #11 item 5): more historical Kafka bugs and classic off-by-ones put back.

Like broken.py, each entry patches one method of `kafkalog.impl` so that it behaves like Kafka
did before a fix (a BUG-n of kafka-log-reference.md §10) or like a plausible off-by-one of the
same layer (a rule ID instead). They were written against the checker, not with it: the point
is that default `kafkalog check` finds each one (tests/conformance/test_zoo.py).
"""

from __future__ import annotations

from typing import Any

from kafkalog.conformance.broken.base import Broken
from kafkalog.impl.checkpoint.epoch_cache import LeaderEpochCache
from kafkalog.impl.index.abstract_index import AbstractIndex, round_down
from kafkalog.impl.index.time_index import TimeIndex
from kafkalog.impl.log.local_log import EMPTY_RECORDS, LocalLog
from kafkalog.impl.log.log import Log
from kafkalog.impl.log.retention import deletable_segments
from kafkalog.impl.log.transactions import add_aborted_transactions
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.segment.log_segment import FetchDataInfo, LogSegment, RollParams, batch_facts
from kafkalog.model import values as v
from kafkalog.model.errors import OffsetOutOfRangeError

# --- segment appends and index density ---------------------------------------------------------


def _append_one_index_decision(self: LogSegment, largest_offset: int, records: Any) -> None:
    """BUG-10 (KAFKA-806): one index decision per append call, keyed by its largest offset."""
    if records.size_in_bytes == 0:
        return
    position = self.log.size_in_bytes
    self._ensure_offset_in_range(largest_offset)
    batches = batch_facts(records)
    self._check_index_capacity(batches)
    if position == 0:
        self.rolling_based_timestamp = batches[0][5]
    self.log.append(records)
    self.last_modified_ms = self.time.milliseconds()
    max_ts, max_off = self.max_timestamp_and_offset_so_far
    for _, _, base, delta, _, batch_max_ts, _, _ in batches:
        if batch_max_ts > max_ts:
            max_ts, max_off = batch_max_ts, base + delta
    self._max_ts_and_offset = (max_ts, max_off)
    if self.bytes_since_last_index_entry > self.index_interval_bytes:
        self.offset_index.append(largest_offset, position)
        self.time_index.maybe_append(max_ts, max_off)
        self.bytes_since_last_index_entry = 0
    self.bytes_since_last_index_entry += records.size_in_bytes


def _segment_append_with(interval_inclusive: bool, pair_current_batch: bool) -> Any:
    """LogSegment.append with one deliberate change in its per-batch index decision."""

    def append(self: LogSegment, largest_offset: int, records: Any) -> None:
        if records.size_in_bytes == 0:
            return
        position = self.log.size_in_bytes
        self._ensure_offset_in_range(largest_offset)
        batches = batch_facts(records)
        self._check_index_capacity(batches)
        if position == 0:
            self.rolling_based_timestamp = batches[0][5]
        self.log.append(records)
        self.last_modified_ms = self.time.milliseconds()
        max_ts, max_off = self.max_timestamp_and_offset_so_far
        interval, since = self.index_interval_bytes, self.bytes_since_last_index_entry
        for _, size, base, delta, _, batch_max_ts, _, _ in batches:
            if batch_max_ts > max_ts:
                max_ts = batch_max_ts
                max_off = max_off if pair_current_batch else base + delta
                self._max_ts_and_offset = (max_ts, max_off)
            if since >= interval if interval_inclusive else since > interval:
                self.offset_index.append(base + delta, position)
                # BUG-11: the time entry pairs the max timestamp with this batch's offset.
                self.time_index.maybe_append(max_ts, base + delta if pair_current_batch
                                             else max_off)
                since = 0
            position += size
            since += size
        self.bytes_since_last_index_entry = since

    return append


_REAL_RESIZE = AbstractIndex.resize


def _resize_resetting_entries(self: AbstractIndex, new_size: int) -> bool:
    """BUG-2 (KAFKA-748): growing an index remapped it with the write position back at 0."""
    grows = round_down(new_size, self.entry_size()) > self._length
    changed = _REAL_RESIZE(self, new_size)
    if grows and changed:
        self._entries = 0
        self._after_entries_changed()
    return changed  # type: ignore[no-any-return]


def _truncate_without_resize(self: LogSegment, offset: int) -> int:
    """BUG-20 (KAFKA-6492) / BUG-3: truncation left a trimmed index trimmed (so "full")."""
    mapping = self.translate_offset(offset)
    self.offset_index.truncate_to(offset)
    self.time_index.truncate_to(offset)
    removed = 0 if mapping is None else self.log.truncate_to(mapping.position)
    if removed:
        self.last_modified_ms = self.time.milliseconds()
    if self.log.size_in_bytes == 0:
        self.created = self.time.milliseconds()
        self.rolling_based_timestamp = None
    self.bytes_since_last_index_entry = 0
    if self.max_timestamp_so_far() >= 0:
        self._max_ts_and_offset = self.read_largest_timestamp()
    return int(removed)


def _time_index_full_without_reserved_slot(self: TimeIndex) -> bool:
    """FMT-21: the last time-index slot is reserved for the roll's final entry; forgot it."""
    return self._entries >= self._max_entries


# --- rolling ---------------------------------------------------------------------------------


def _become_inactive_without_trim(self: LogSegment) -> None:
    """BUG-7 (KAFKA-4734): a rolled segment's indexes stayed preallocated (not trimmed)."""
    max_ts, max_off = self.max_timestamp_and_offset_so_far
    self.time_index.maybe_append(max_ts, max_off, skip_full_check=True)


def _time_waited_wall_clock(self: LogSegment, now: int, message_timestamp: int) -> int:
    """BUG-19 (KAFKA-4099): the roll clock compared wall time with the first batch's time."""
    self._load_first_batch_timestamp()
    rbt = self.rolling_based_timestamp
    if rbt is not None and rbt >= 0:
        return now - rbt
    return now - self.created


def _should_roll_inclusive_size(self: LogSegment, p: RollParams) -> bool:
    """SEG-6 (1): rolled when the batch would exactly fill the segment (>= for >)."""
    size = self.size()
    reached_time_limit = size > 0 and self.time_waited_for_roll(
        p.now, p.max_timestamp_in_messages) > p.max_segment_ms - self.roll_jitter_ms
    return (
        size >= p.max_segment_bytes - p.messages_size
        or reached_time_limit
        or self.offset_index.is_full()
        or self.time_index.is_full()
        or not self.can_convert_to_relative_offset(p.max_offset_in_messages)
    )


def _roll_keeping_hw_metadata(self: Log, expected_next_offset: int | None) -> LogSegment:
    """BUG-37 (KAFKA-9196): after a roll with HW = LEO the HW metadata kept the old segment."""
    new_segment = self.local_log.roll(expected_next_offset)
    self._flush_to(min(new_segment.base_offset, self.log_end_offset), including=False)
    return new_segment


def _roll_without_flush(self: Log, expected_next_offset: int | None) -> LogSegment:
    """LOG-25 step 4: the roll forgot to flush the old segment (recovery point stays)."""
    new_segment = self.local_log.roll(expected_next_offset)
    self._update_high_watermark_with_log_end_offset()
    return new_segment


# --- reads ------------------------------------------------------------------------------------

_REAL_SEGMENT_READ = LogSegment.read


def _segment_read_ignoring_max_position(self: LogSegment, start_offset: int, max_size: int,
                                        max_position: int | None = -1,
                                        min_one_message: bool = False) -> FetchDataInfo | None:
    """LOC-4 step 4: a segment read that ignored its max position (reads past the HW)."""
    bound = -1 if max_position is not None else None
    return _REAL_SEGMENT_READ(self, start_offset, max_size, bound, min_one_message)  # type: ignore[no-any-return]


def _local_read_without_bound_shortcut(self: LocalLog, start_offset: int, max_length: int,
                                       min_one_message: bool,
                                       max_offset_metadata: v.LogOffsetMetadata,
                                       include_aborted: bool = False) -> Any:
    """BUG-31 (KAFKA-9838): no `start == bound` short-cut; the segment read decides alone."""
    end_md = self.next_offset_metadata
    segment = self.segments.floor_segment(start_offset)
    if start_offset > end_md.message_offset or segment is None:
        raise OffsetOutOfRangeError(
            f"Received request for offset {start_offset}, but we only have log segments upto "
            f"{end_md.message_offset}.", where=str(self.dir))
    empty = () if include_aborted else None
    if start_offset > max_offset_metadata.message_offset:
        md = self.convert_to_offset_metadata_or_throw(start_offset)
        return FetchDataInfo(md, EMPTY_RECORDS, aborted_transactions=empty)
    while segment is not None:
        bound = self._max_position(segment, max_offset_metadata)
        info = segment.read(start_offset, max_length, bound, min_one_message)
        if info is not None:
            if include_aborted:
                info = add_aborted_transactions(self, start_offset, segment, info)
            return info
        segment = self.segments.higher_segment(segment.base_offset)
    return FetchDataInfo(end_md, EMPTY_RECORDS)


def _max_position_whole_bound_segment(segment: LogSegment, bound: v.LogOffsetMetadata
                                      ) -> int | None:
    """LOC-4 step 4: the bound's own segment was readable to its end (<= for <)."""
    if segment.base_offset <= bound.segment_base_offset:
        return segment.size()
    return None


# --- high watermark and log start offset ------------------------------------------------------


def _update_hw_without_lower_clamp(self: Log, hw: int | v.LogOffsetMetadata) -> int:
    """BUG-35 (KAFKA-3978): the HW was clamped to the LEO but not up to the log start offset."""
    with self.lock:
        md = hw if isinstance(hw, v.LogOffsetMetadata) else v.LogOffsetMetadata(hw)
        end = self.log_end_offset_metadata
        if md.message_offset >= end.message_offset:
            md = end
        if md.message_offset < 0:
            md = v.LogOffsetMetadata(self._log_start_offset)
        self._update_high_watermark_metadata(md)
        return md.message_offset


_REAL_MAYBE_INCREMENT_HW = Log.maybe_increment_high_watermark


def _maybe_increment_hw_backwards(self: Log, new_hw: v.LogOffsetMetadata
                                  ) -> v.LogOffsetMetadata | None:
    """LOG-7: the leader's HW update also moved the HW backwards."""
    with self.lock:
        old = self.fetch_high_watermark_metadata()
        if new_hw.message_offset < old.message_offset and new_hw.message_offset >= 0:
            self._update_high_watermark_metadata(new_hw)
            return old
    return _REAL_MAYBE_INCREMENT_HW(self, new_hw)  # type: ignore[no-any-return]


def _log_start_above_hw(self: Log, new_log_start_offset: int) -> bool:
    """LOG-30 / ERR-30: DeleteRecords above the HW was accepted."""
    with self.lock:
        if new_log_start_offset > self.log_end_offset:
            raise OffsetOutOfRangeError(f"log start {new_log_start_offset} above the LEO")
        if new_log_start_offset <= self._log_start_offset:
            return False
        self._update_log_start_offset(new_log_start_offset)
        self.leader_epoch_cache.truncate_from_start(new_log_start_offset)
        return True


# --- appends ----------------------------------------------------------------------------------


def _follower_skipping_offset_check(self: Log, records: MemoryRecords,
                                    leader_epoch: int | None = None) -> v.LogAppendInfo:
    """BUG-24 (KAFKA-3047): follower batches below the LEO were accepted."""
    from kafkalog.impl.log.validator import analyze_and_validate
    from kafkalog.impl.records.memory_records import ScannedRecords

    analysis = analyze_and_validate(records, leader=False,
                                    max_message_bytes=self.config.max_message_bytes,
                                    where=self.dir.name, leader_epoch=leader_epoch)
    if analysis.valid_bytes <= 0:
        return v.LogAppendInfo(-1, -1, -1, -1, -1, 0, 0)
    with self.lock:
        prefix = records.buffer[: analysis.valid_bytes]
        valid = (MemoryRecords(prefix) if analysis.facts is None
                 else ScannedRecords(prefix, analysis.facts))
        return self._append_validated(valid, analysis.follower_info())  # type: ignore[no-any-return]


_REAL_FOLLOWER = Log.append_as_follower


def _follower_ignoring_request_epoch(self: Log, records: MemoryRecords,
                                     leader_epoch: int | None = None) -> v.LogAppendInfo:
    """BUG-58 (KAFKA-18723): batches above the request's leader epoch were appended."""
    return _REAL_FOLLOWER(self, records, None)  # type: ignore[no-any-return]


# --- retention --------------------------------------------------------------------------------


def _size_retention_strict(self: Log) -> int:
    """LOG-37: a segment went only while the log stayed strictly above retention.bytes."""
    retention = self.config.retention_bytes
    size = self.local_log.segments.size_in_bytes()
    if retention < 0 or size < retention:
        return 0
    excess = size - retention

    def predicate(segment: Any, _next: Any) -> bool:
        nonlocal excess
        if excess - segment.size() > 0:
            excess -= segment.size()
            return True
        return False

    return self._delete_matching(predicate)  # type: ignore[no-any-return]


def _time_retention_inclusive(self: Log) -> int:
    """LOG-36: a segment went when exactly retention.ms old (>= for >)."""
    now, retention = self.time.milliseconds(), self.config.retention_ms
    if retention < 0:
        return 0
    return self._delete_matching(  # type: ignore[no-any-return]
        lambda segment, _next: now - segment.largest_timestamp() >= retention)


def _log_start_retention_strict(self: Log) -> int:
    """LOG-38: a segment went only when its successor started strictly below the LSO."""
    lso = self._log_start_offset
    return self._delete_matching(  # type: ignore[no-any-return]
        lambda _s, nxt: nxt is not None and nxt.base_offset < lso)


def _delete_segments_without_roll(self: Log, deletable: list[LogSegment]) -> int:
    """BUG-46 (KAFKA-15047): the active segment was never rolled away by retention."""
    to_delete = [s for s in deletable if s is not self.local_log.segments.active_segment()]
    if not to_delete:
        return 0
    successor = self.local_log.segments.higher_segment(to_delete[-1].base_offset)
    assert successor is not None
    self.maybe_increment_log_start_offset(successor.base_offset)
    self.local_log.remove_and_delete_segments(to_delete, async_delete=True)
    return len(to_delete)


_REAL_DELETE_FILES = LocalLog.delete_segment_files


def _delete_files_at_once(self: LocalLog, segments: list[LogSegment], async_delete: bool) -> None:
    """LOC-11: segment files removed at once instead of after file.delete.delay.ms."""
    _REAL_DELETE_FILES(self, segments, False)


# --- truncation and epochs ----------------------------------------------------------------------

_REAL_TRUNCATE_TO = Log.truncate_to


def _truncate_above_leo_keeping_epochs(self: Log, target_offset: int) -> bool:
    """BUG-54 (KAFKA-10706): truncateTo(target >= LEO) returned before trimming the epochs."""
    if target_offset >= 0 and target_offset >= self.log_end_offset:
        return False
    return _REAL_TRUNCATE_TO(self, target_offset)  # type: ignore[no-any-return]


def _end_offset_requested_epoch(self: LeaderEpochCache, requested_epoch: int,
                                log_end_offset: int) -> tuple[int, int]:
    """BUG-51 (KAFKA-6361): the answer named the requested epoch, not the largest known one."""
    with self._lock:
        if requested_epoch == v.UNDEFINED_EPOCH:
            return v.UNDEFINED_EPOCH, -1
        if self._entries and requested_epoch == self._entries[-1].epoch:
            return requested_epoch, log_end_offset
        higher = next((e for e in self._entries if e.epoch > requested_epoch), None)
        if higher is None:
            return v.UNDEFINED_EPOCH, -1
        return requested_epoch, higher.start_offset


# --- offsets by timestamp -------------------------------------------------------------------

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


def _find_by_timestamp_exclusive(self: LogSegment, timestamp: int, starting_offset: int) -> Any:
    """SEG-18: the search took the first record strictly after the target timestamp."""
    entry = self.time_index.lookup(timestamp + 1)
    position = self.offset_index.lookup(max(entry.offset, starting_offset)).position
    return self.log.search_for_timestamp(timestamp + 1, position, starting_offset)


def _retention_walk_past_hw(self: Log, predicate: Any) -> int:
    """LOG-33 step 3 off by one: a segment ending exactly one past the HW could go."""
    if predicate is None:
        return 0
    segments = self.local_log.segments.values()
    chosen = deletable_segments(segments, self.high_watermark + 1, self.log_end_offset, predicate)
    return self._delete_segments(segments[: len(chosen)])  # type: ignore[no-any-return]


ZOO: tuple[Broken, ...] = (
    Broken("index_per_append", "BUG-10", "SEG-3",
           "one index decision per append instead of per batch",
           LogSegment, "append", _append_one_index_decision),
    Broken("index_interval_inclusive", "SEG-3", "SEG-3",
           "an index entry once bytes since the last one reach the interval (>= for >)",
           LogSegment, "append", _segment_append_with(True, False)),
    Broken("time_index_pairs_current_batch", "BUG-11", "FMT-19",
           "a time-index entry pairs the max timestamp with the current batch's offset",
           LogSegment, "append", _segment_append_with(False, True)),
    Broken("index_resize_resets_entries", "BUG-2", "FMT-28",
           "growing an index resets its write position to 0",
           AbstractIndex, "resize", _resize_resetting_entries),
    Broken("truncation_keeps_index_trimmed", "BUG-20", "SEG-13",
           "truncation does not resize the indexes back to full capacity",
           LogSegment, "truncate_to", _truncate_without_resize),
    Broken("time_index_no_reserved_slot", "FMT-21", "SEG-6",
           "the time index counts its reserved last slot as free",
           TimeIndex, "is_full", _time_index_full_without_reserved_slot),
    Broken("time_roll_wall_clock", "BUG-19", "SEG-7",
           "time rolls compare the wall clock with the first batch's timestamp",
           LogSegment, "time_waited_for_roll", _time_waited_wall_clock),
    Broken("roll_size_inclusive", "SEG-6", "SEG-6",
           "a batch that exactly fills the segment rolls it (>= for >)",
           LogSegment, "should_roll", _should_roll_inclusive_size),
    Broken("rolled_indexes_not_trimmed", "BUG-7", "SEG-16",
           "a rolled segment's index files stay preallocated",
           LogSegment, "on_become_inactive_segment", _become_inactive_without_trim),
    Broken("roll_keeps_hw_metadata", "BUG-37", "LOG-10",
           "after a roll with HW = LEO the HW metadata points at the old segment",
           Log, "_roll", _roll_keeping_hw_metadata),
    Broken("roll_without_flush", "LOG-25", "LOG-25",
           "a roll does not flush the old segment (recovery point stays)",
           Log, "_roll", _roll_without_flush),
    Broken("segment_read_ignores_max_position", "BUG-30", "LOC-4",
           "a segment read ignores its max position and reads past the HW",
           LogSegment, "read", _segment_read_ignoring_max_position),
    Broken("read_without_bound_shortcut", "BUG-31", "LOC-4",
           "no start == bound short-cut in the local read",
           LocalLog, "read", _local_read_without_bound_shortcut),
    Broken("read_bound_segment_to_end", "BUG-33", "LOC-4",
           "the bound's own segment is readable to its end",
           LocalLog, "_max_position", staticmethod(_max_position_whole_bound_segment)),
    Broken("hw_below_log_start", "BUG-35", "LOG-5",
           "the HW is not clamped up to the log start offset",
           Log, "update_high_watermark", _update_hw_without_lower_clamp),
    Broken("hw_increment_moves_back", "LOG-7", "LOG-7",
           "maybe_increment_high_watermark also moves the HW backwards",
           Log, "maybe_increment_high_watermark", _maybe_increment_hw_backwards),
    Broken("log_start_above_hw", "LOG-30", "LOG-30",
           "the log start offset may move above the HW",
           Log, "maybe_increment_log_start_offset", _log_start_above_hw),
    Broken("follower_below_leo_accepted", "BUG-24", "LOG-19",
           "follower batches starting below the LEO are appended",
           Log, "append_as_follower", _follower_skipping_offset_check),
    Broken("follower_epoch_above_request", "BUG-58", "LOG-15a",
           "follower batches above the request's leader epoch are appended",
           Log, "append_as_follower", _follower_ignoring_request_epoch),
    Broken("size_retention_strict", "LOG-37", "LOG-37",
           "size retention stops while the log is exactly at retention.bytes (> for >=)",
           Log, "_delete_retention_size_breached_segments", _size_retention_strict),
    Broken("time_retention_inclusive", "LOG-36", "LOG-36",
           "time retention deletes a segment exactly retention.ms old (>= for >)",
           Log, "_delete_retention_ms_breached_segments", _time_retention_inclusive),
    Broken("log_start_retention_strict", "LOG-38", "LOG-38",
           "log-start retention keeps a segment whose successor starts at the LSO (< for <=)",
           Log, "_delete_log_start_offset_breached_segments", _log_start_retention_strict),
    Broken("retention_never_rolls", "BUG-46", "KL-RET-6",
           "retention never rolls the active segment away",
           Log, "_delete_segments", _delete_segments_without_roll),
    Broken("retention_one_past_hw", "BUG-36", "LOG-33",
           "retention may delete a segment ending one past the HW",
           Log, "_delete_matching", _retention_walk_past_hw),
    Broken("delete_without_delay", "LOC-11", "LOC-11",
           "deleted segment files are removed at once, not after file.delete.delay.ms",
           LocalLog, "delete_segment_files", _delete_files_at_once),
    Broken("truncate_above_leo_keeps_epochs", "BUG-54", "LOG-40",
           "truncate_to(target >= LEO) keeps epoch entries at or above the target",
           Log, "truncate_to", _truncate_above_leo_keeping_epochs),
    Broken("end_offset_names_requested_epoch", "BUG-51", "EPO-4",
           "end_offset_for names the requested epoch instead of the largest known one",
           LeaderEpochCache, "end_offset_for", _end_offset_requested_epoch),
    Broken("earliest_is_first_segment", "LOG-44", "LOG-44",
           "EARLIEST answers the first segment's base instead of the log start offset",
           Log, "fetch_offset_by_timestamp", _earliest_is_first_segment),
    Broken("latest_is_last_offset", "LOG-45", "LOG-45",
           "LATEST answers LEO - 1",
           Log, "fetch_offset_by_timestamp", _latest_is_last_offset),
    Broken("timestamp_search_exclusive", "SEG-18", "SEG-18",
           "a timestamp search skips records carrying exactly the target timestamp",
           LogSegment, "find_offset_by_timestamp", _find_by_timestamp_exclusive),
)
