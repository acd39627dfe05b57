"""`LocalLog`: the segments of one partition directory, the LEO and the recovery point (LOC-1..13).

A partition directory `my-topic-0/` holds the segments' files (see `log_segment`), plus
`leader-epoch-checkpoint` (owned by `Log`). Segments scheduled for deletion are renamed
`<file>.deleted` at once and removed `file_delete_delay_ms` later by the clock's scheduler
(LOC-11); a crash in between leaves `.deleted` files that the loader removes (REC-2).

Concurrency: mutations run under the owning `Log`'s writer lock. Readers take no lock: they read the
published LEO metadata (one reference) and the copy-on-write segment map, and a segment read is
bounded by the position in that metadata, so a reader never sees bytes of an append whose LEO has
not been published yet (LOC-3, BUG-29/30).
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import replace
from pathlib import Path

from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.log.transactions import add_aborted_transactions
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.segment.log_segment import (
    CLEANED_FILE_SUFFIX,
    DELETED_FILE_SUFFIX,
    EMPTY_RECORDS,
    INDEX_FILE_SUFFIX,
    LOG_FILE_SUFFIX,
    TIME_INDEX_FILE_SUFFIX,
    TXN_INDEX_FILE_SUFFIX,
    FetchDataInfo,
    LogSegment,
    segment_file,
)
from kafkalog.impl.segment.log_segments import LogSegments
from kafkalog.impl.time import Time
from kafkalog.impl.versions import index_entry_per_batch, read_reports_batch_base
from kafkalog.model.errors import (
    InvalidRollError,
    KafkaStorageError,
    LogClosedError,
    OffsetOutOfRangeError,
)
from kafkalog.model.values import LogConfig, LogOffsetMetadata


class LocalLog:
    """Segments + LEO metadata + recovery point of one partition directory."""

    def __init__(
        self,
        fs: FileSystem,
        dir_path: Path,
        config: LogConfig,
        segments: LogSegments,
        recovery_point: int,
        next_offset_metadata: LogOffsetMetadata,
        time: Time,
    ) -> None:
        self.fs = fs
        self.dir = Path(dir_path)
        self.config = config
        self.segments = segments
        self.recovery_point = recovery_point
        self.next_offset_metadata = next_offset_metadata
        self.time = time
        self.last_flush_time = time.milliseconds()
        self.is_memory_mapped_buffer_closed = False
        self._pending_lock = threading.Lock()
        # Base offsets whose files carry `.deleted` names (LOC-11). A rename onto an existing
        # `.deleted` name replaces it and each timer deletes by name, so the first timer that
        # fires for a base removes the file, whichever rename it was scheduled for.
        self._pending_deletions: set[int] = set()
        # The segment objects behind those names: their handles stay open until the timer fires,
        # and a close releases them (the files stay for the loader, REC-2).
        self._pending_segments: list[LogSegment] = []

    # --- offsets ----------------------------------------------------------------------------

    @property
    def log_end_offset(self) -> int:
        return self.next_offset_metadata.message_offset

    def update_log_end_offset(self, end_offset: int) -> None:
        """Publish the LEO at the active segment's end; lower the recovery point to it (LOC-2)."""
        active = self.segments.active_segment()
        self.next_offset_metadata = LogOffsetMetadata(end_offset, active.base_offset, active.size())
        if self.recovery_point > end_offset:
            self.recovery_point = end_offset

    def update_recovery_point(self, offset: int) -> None:
        self.recovery_point = offset

    def mark_flushed(self, offset: int) -> None:
        """Advance the recovery point to `offset` if that is higher (LOC-12)."""
        self.check_if_memory_mapped_buffer_closed()
        if offset > self.recovery_point:
            self.recovery_point = offset
            self.last_flush_time = self.time.milliseconds()

    def unflushed_messages(self) -> int:
        return self.log_end_offset - self.recovery_point

    def check_if_memory_mapped_buffer_closed(self) -> None:
        """ERR-35: any mutation after the handlers were closed or the log deleted."""
        if self.is_memory_mapped_buffer_closed:
            raise LogClosedError(f"The memory mapped buffer for log of {self.dir.name} is closed",
                                 where=str(self.dir))

    # --- append and read --------------------------------------------------------------------

    def append(self, last_offset: int, records: MemoryRecords,
               offset_of_max_timestamp: int | None = None) -> None:
        """Append to the active segment, then publish LEO = last_offset + 1 (LOC-3 [TRUNK]);
        the index decisions per batch or per append follow the profile (KL-VERSION-4), the
        latter pairing the max timestamp with the append's reported offset (KL-VERSION-2)."""
        self.segments.active_segment().append(
            last_offset, records, index_entry_per_batch(self.config.kafka_version),
            offset_of_max_timestamp)
        self.update_log_end_offset(last_offset + 1)

    def read(
        self,
        start_offset: int,
        max_length: int,
        min_one_message: bool,
        max_offset_metadata: LogOffsetMetadata,
        include_aborted: bool = False,
    ) -> FetchDataInfo:
        """Read at most `max_length` bytes from `start_offset`, bounded by `max_offset_metadata`.

        Spec: LOC-4 (BUG-30/31/33); with `include_aborted` the aborted transactions (TXN-14:
        an empty list at or past the bound, none past the last segment). Raises
        OffsetOutOfRangeError above the LEO or below the first segment (ERR-32).
        """
        end_md = self.next_offset_metadata
        segment = self.segments.floor_segment(start_offset)
        if start_offset > end_md.message_offset or segment is None:
            raise OffsetOutOfRangeError(
                f"Received request for offset {start_offset} for partition {self.dir.name}, but "
                f"we only have log segments upto {end_md.message_offset}.",
                where=str(self.dir),
            )
        empty = () if include_aborted else None
        if start_offset == max_offset_metadata.message_offset:
            return FetchDataInfo(max_offset_metadata, EMPTY_RECORDS, aborted_transactions=empty)
        if start_offset > max_offset_metadata.message_offset:
            md = self.convert_to_offset_metadata_or_throw(start_offset)
            return FetchDataInfo(md, EMPTY_RECORDS, aborted_transactions=empty)
        while segment is not None:
            bound = self._max_position(segment, max_offset_metadata)
            info = segment.read(start_offset, max_length, bound, min_one_message)
            if info is not None and not read_reports_batch_base(self.config.kafka_version):
                # KL-VERSION-3: before 4.0 the metadata names the offset asked for.
                info = replace(info, fetch_offset_metadata=replace(
                    info.fetch_offset_metadata, message_offset=start_offset))
            if info is not None:
                if include_aborted:
                    info = add_aborted_transactions(self, start_offset, segment, info)
                return info
            segment = self.segments.higher_segment(segment.base_offset)
        return FetchDataInfo(end_md, EMPTY_RECORDS)

    @staticmethod
    def _max_position(segment: LogSegment, bound: LogOffsetMetadata) -> int | None:
        if segment.base_offset < bound.segment_base_offset:
            return segment.size()
        if segment.base_offset == bound.segment_base_offset and not bound.message_offset_only:
            return bound.relative_position_in_segment
        return None  # KAFKA-16452: position unknown, so return no bytes

    def convert_to_offset_metadata_or_throw(self, offset: int) -> LogOffsetMetadata:
        """The metadata of a 1-byte read at `offset` bounded by the LEO (LOC-5)."""
        return self.read(offset, 1, False, self.next_offset_metadata).fetch_offset_metadata

    # --- roll -------------------------------------------------------------------------------

    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """Start a new active segment at max(expected, LEO) (LOC-6, LOC-7, BUG-21).

        Raises InvalidRollError (ERR-34) when that base exists and is not the empty active
        segment, or lies below the active segment's base.
        """
        self.check_if_memory_mapped_buffer_closed()
        new_offset = max(expected_next_offset or 0, self.log_end_offset)
        active = self.segments.active_segment()
        existing = self.segments.get(new_offset)
        if existing is not None:
            if existing is active and active.size() == 0:
                # `Log` moves the recovery point to the new base after any roll, so what lies
                # below it must be durable here too: after an unclean load that left its
                # recovery unsynced (Kafka's way, GAP-4) nothing else has flushed it.
                self._flush_below(new_offset)
                new_segment = self.create_and_delete_segment(new_offset, active, async_delete=True)
                self.update_log_end_offset(self.log_end_offset)
                return new_segment
            raise InvalidRollError(
                f"Trying to roll a new log segment for topic partition {self.dir.name} with start "
                f"offset {new_offset} =max(provided offset = {expected_next_offset}, LEO = "
                f"{self.log_end_offset}) while it already exists.",
                where=str(self.dir),
            )
        if new_offset < active.base_offset:
            raise InvalidRollError(
                f"Trying to roll a new log segment for topic partition {self.dir.name} with start "
                f"offset {new_offset} =max(provided offset = {expected_next_offset}, LEO = "
                f"{self.log_end_offset}) lower than start offset of the active segment {active}",
                where=str(self.dir),
            )
        self._delete_stale_files(new_offset)
        active.on_become_inactive_segment()
        # Strict (beyond Kafka, GAP-5, DUR-19): every segment below the new base, with its trims,
        # is durable before the new segment's entry can be, so a crash never leaves a later
        # segment past a hole. (kafkalog flushes at the roll anyway; `Log` marks it flushed.)
        self._flush_below_roll(active, new_offset)
        new_segment = self.segments.add(
            LogSegment.open(self.fs, self.dir, new_offset, self.config, self.time)
        )
        self.fs.fsync_dir(self.dir)
        self.update_log_end_offset(self.log_end_offset)
        return new_segment

    def _flush_below_roll(self, active: LogSegment, new_offset: int) -> None:
        """fsync every unflushed segment below `new_offset` and always the old active one (its
        trims happen after any earlier flush), then their directory entries (DUR-8, LOC-12)."""
        start = min(self.recovery_point, active.base_offset)
        self._flush_segments(self.segments.values(start, max(new_offset, active.base_offset + 1)))

    def _flush_below(self, offset: int) -> None:
        """fsync the segments overlapping [recovery point, offset), then their entries."""
        if self.recovery_point < offset:
            self._flush_segments(self.segments.values(self.recovery_point, offset))

    def _flush_segments(self, to_flush: list[LogSegment]) -> None:
        for segment in to_flush:
            segment.flush()
        if any(s.base_offset >= self.recovery_point for s in to_flush):
            self.fs.fsync_dir(self.dir)

    def _delete_stale_files(self, base_offset: int) -> None:
        """LOC-6 step 5.1: files left with the new segment's names are deleted first."""
        for suffix in (LOG_FILE_SUFFIX, INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX,
                       TXN_INDEX_FILE_SUFFIX):
            self.fs.delete_if_exists(segment_file(self.dir, base_offset, suffix))

    # --- truncation -------------------------------------------------------------------------

    def truncate_to(self, target_offset: int) -> list[LogSegment]:
        """Delete segments above `target_offset`, cut the new active one, LEO = target (LOC-8).

        Strict durability (beyond Kafka's DUR-23, GAP-1/GAP-2): the later segments are renamed
        `.deleted` highest first (a crash part-way leaves a prefix, never a hole) and the
        directory is fsynced; then the cut segment's `.log` and indexes are fsynced. When this
        returns no power loss can bring the truncated batches back (CRP-15).
        """
        deletable = [s for s in self.segments if s.base_offset > target_offset]
        self.remove_and_delete_segments(deletable[::-1], async_delete=True)
        active = self.segments.active_segment()
        active.truncate_to(target_offset)
        active.flush()
        self.update_log_end_offset(target_offset)
        return deletable

    def truncate_fully_and_start_at(self, new_offset: int) -> list[LogSegment]:
        """Replace every segment by one empty segment at `new_offset` (LOC-9, BUG-22/23)."""
        self.check_if_memory_mapped_buffer_closed()
        all_segments = self.segments.values()
        # Strict (GAP-1, GAP-2, CRP-6): files go highest segment first, each rename durable, and
        # the new segment appears only after the old active one is gone, so a crash part-way
        # leaves a prefix of the old log or the new empty one, never a hole before `new_offset`.
        last = all_segments[-1]
        last.change_file_suffixes("", DELETED_FILE_SUFFIX)
        self.fs.fsync_dir(self.dir)
        self.remove_and_delete_segments(all_segments[:-1][::-1], async_delete=True)
        self.create_and_delete_segment(new_offset, last, async_delete=True)
        self.update_log_end_offset(new_offset)
        return all_segments

    def create_and_delete_segment(
        self, new_offset: int, old: LogSegment, async_delete: bool
    ) -> LogSegment:
        """Open a segment at `new_offset` in place of `old`; add before removing (LOC-10).

        In memory the new segment is added before the old one is removed; on disk the old
        files are renamed `.deleted` first (strict: durably), then the new segment's entry is
        made durable.
        """
        if new_offset == old.base_offset and not old.has_suffix(DELETED_FILE_SUFFIX):
            return self._replace_in_place(old, async_delete)
        if not old.has_suffix(DELETED_FILE_SUFFIX):
            old.change_file_suffixes("", DELETED_FILE_SUFFIX)
            self.fs.fsync_dir(self.dir)
        new_segment = self.segments.add(
            LogSegment.open(self.fs, self.dir, new_offset, self.config, self.time)
        )
        self.fs.fsync_dir(self.dir)
        if new_offset != old.base_offset:
            self.segments.remove(old.base_offset)
        self.delete_segment_files([old], async_delete)
        return new_segment

    def _replace_in_place(self, old: LogSegment, async_delete: bool) -> LogSegment:
        """Replace `old` by a fresh segment with the same base, the name never missing.

        Kafka renames the old files `.deleted` and creates new ones (LL:494): a power loss can
        keep the rename and lose the create, leaving no `.log` and a loader that restarts the log
        at the log-start checkpoint, reusing offsets. Strict (specs/log.md §17, KL-ALLOW-6, which
        accepts Kafka's order too): the new files are made under `.cleaned`, fsynced, and
        renamed over the old names (atomic replace). The base still counts as a pending
        deletion for file_delete_delay_ms, as it does in Kafka (LOC-11); there is no `.deleted`
        file to remove.
        """
        base = old.base_offset
        new_segment = LogSegment.open(self.fs, self.dir, base, self.config, self.time,
                                      file_suffix=CLEANED_FILE_SUFFIX)
        new_segment.flush()
        old.close_handlers()
        new_segment.change_file_suffixes(CLEANED_FILE_SUFFIX, "")
        self.fs.fsync_dir(self.dir)
        self.segments.add(new_segment)
        if async_delete:
            with self._pending_lock:
                self._pending_deletions.add(base)

            def forget() -> None:
                with self._pending_lock:
                    self._pending_deletions.discard(base)

            self.time.scheduler.schedule("delete-file", forget, self.config.file_delete_delay_ms)
        return new_segment

    # --- deletion ---------------------------------------------------------------------------

    def remove_and_delete_segments(self, segments: list[LogSegment], async_delete: bool) -> None:
        """Remove from the map, rename to `.deleted`, delete now or later (LOC-11, BUG-47)."""
        to_delete = list(segments)  # a concrete copy, never a live view of the map
        for segment in to_delete:
            self.segments.remove(segment.base_offset)
        self.delete_segment_files(to_delete, async_delete)

    def delete_segment_files(self, segments: list[LogSegment], async_delete: bool) -> None:
        """Rename every file to `.deleted` now; remove after `file_delete_delay_ms` if async.

        Strict (beyond Kafka's DUR-20, GAP-2): each segment's `.log` rename is durable before
        its indexes are renamed and before the next segment's starts (`change_file_suffixes`),
        so a crash part-way loses segments in the caller's order (never a hole) and never a
        live `.log` without its index; one directory fsync at the end makes the last renames
        durable, so a deleted segment never reappears under its own name after a power loss.
        The later unlinks need no sync (RCV-3 removes leftovers).
        """
        renamed = False
        for segment in segments:
            if not segment.has_suffix(DELETED_FILE_SUFFIX):
                segment.change_file_suffixes("", DELETED_FILE_SUFFIX)
                renamed = True
        if renamed:
            self.fs.fsync_dir(self.dir)
        if not async_delete:
            for segment in segments:
                segment.delete_if_exists()
            return
        self.schedule_deletion(segments)

    def schedule_deletion(self, segments: list[LogSegment]) -> None:
        """LOC-11: remove segments already renamed `.deleted` after `file_delete_delay_ms`; they
        count as pending deletions until then (also the loader's dropped segments, REC-9)."""
        if not segments:
            return
        with self._pending_lock:
            self._pending_deletions.update(s.base_offset for s in segments)
            self._pending_segments.extend(segments)

        def delete_later() -> None:
            self._delete_pending(segments)

        self.time.scheduler.schedule("delete-file", delete_later, self.config.file_delete_delay_ms)

    def _delete_pending(self, segments: list[LogSegment]) -> None:
        with self._pending_lock:
            self._pending_deletions.difference_update(s.base_offset for s in segments)
            self._pending_segments = [s for s in self._pending_segments if s not in segments]
        if self.is_memory_mapped_buffer_closed:
            return  # the log was closed: the loader deletes the `.deleted` files (REC-2)
        for segment in segments:
            # Kafka marks the dir offline on failure; the next load removes the file (REC-2).
            with contextlib.suppress(KafkaStorageError):
                segment.delete_if_exists()

    def pending_deletions(self) -> tuple[int, ...]:
        """Base offsets renamed `.deleted` whose removal timer has not fired yet, ascending."""
        with self._pending_lock:
            return tuple(sorted(self._pending_deletions))

    # --- flush and close --------------------------------------------------------------------

    def flush(self, offset: int) -> None:
        """fsync the segments overlapping [recovery point, offset), and the dir (LOC-12)."""
        self._flush_below(offset)

    def close(self) -> None:
        """Close every segment (final time-index entry, trim, flush) (SEG-17)."""
        self.check_if_memory_mapped_buffer_closed()
        for segment in self.segments:
            segment.close()
        self._release_pending_handles()
        self.is_memory_mapped_buffer_closed = True

    def _release_pending_handles(self) -> None:
        """Close the handles of segments still waiting for deletion; their files stay (REC-2)."""
        with self._pending_lock:
            pending, self._pending_segments = self._pending_segments, []
        for segment in pending:
            segment.close_handlers()

    def close_handlers(self) -> None:
        """Release handles without writing; later mutations raise (LOC-13)."""
        for segment in self.segments:
            segment.close_handlers()
        self._release_pending_handles()
        self.is_memory_mapped_buffer_closed = True

    def delete_all_segments(self) -> list[LogSegment]:
        """Delete every segment synchronously and close the log (LOC-13)."""
        deleted = self.segments.values()
        for segment in deleted:
            segment.delete_if_exists()
        self.segments.clear()
        self.is_memory_mapped_buffer_closed = True
        return deleted

    def check(self) -> None:
        """Segments consistent, LEO metadata on the active segment, recovery point <= LEO."""
        self.segments.check()
        assert self.recovery_point <= self.log_end_offset, (
            f"recovery point {self.recovery_point} above LEO {self.log_end_offset}"
        )
        md = self.next_offset_metadata
        active = self.segments.active_segment()
        assert md.segment_base_offset == active.base_offset, "LEO metadata not on active segment"
        assert md.relative_position_in_segment == active.size(), "LEO position != active size"
