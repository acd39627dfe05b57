"""`LogCleaner`: one cleaning pass over a `Log`, on disk (CLN-14..CLN-57).

Files of one pass over the group [0, 4) of `orders-0` (FMT-6, FMT-9)::

    orders-0/00000000000000000000.log.cleaned   the cleaned group, then `.swap`, then `.log`
    orders-0/00000000000000000000.log.deleted   the old segments, removed after the delay
    cleaner-offset-checkpoint                   0 / 1 / orders 0 4   (the log directory's root)

Crash policy (strict, every step durable before the next): the `.cleaned` files are flushed and
their names fsynced; all four are renamed `.swap` and the directory fsynced, so a load either
sees no complete swap (and deletes the leftovers, REC-2: the log is unchanged) or completes it
(REC-3..5); only then are the old segments renamed `.deleted` (durably, `delete_segment_files`)
and the swap files renamed to their plain names, the `.log` first and durably (a `.log.swap`
left beside an index already renamed in would make the load delete that index), with a final
directory fsync. The checkpoint is
written after the swaps, so a crash before it redoes the work (CLN-60). The pass runs under the
log's lock, so appends wait for it (Kafka cleans without the lock and takes it for the swap).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import cast

from kafkalog.impl.cleaner.checkpoint import CleanerCheckpoint
from kafkalog.impl.cleaner.config import is_compacted
from kafkalog.impl.cleaner.filter import OffsetMap, PassFacts, TxnTracker, filter_batch
from kafkalog.impl.cleaner.plan import (
    DirtyRange,
    SegmentFacts,
    dirty_range,
    group_lengths,
)
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.log.log import Log
from kafkalog.impl.producer.rebuild import producer_views
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.records.record_batch import RecordBatch
from kafkalog.impl.records.record_walk import walk_batch
from kafkalog.impl.segment.log_segment import CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX, LogSegment
from kafkalog.impl.versions import at_least, index_entry_per_batch
from kafkalog.model.values import AbortedTxnEntry, CleanResult

READ_BUFFER_BYTES = 512 * 1024 // 2  # CLN-7: io.buffer.size / threads / 2 (one thread)


def _facts(segment: LogSegment) -> SegmentFacts:
    return SegmentFacts(segment.base_offset, segment.size(),
                        segment.offset_index.size_in_bytes(), segment.time_index.size_in_bytes(),
                        segment.get_first_batch_timestamp())


def _drop_swap_suffix(segment: LogSegment, fs: FileSystem, directory: Path) -> None:
    """`.swap` -> plain names, the `.log`'s rename durable before the indexes' (KL-CRASH-15,
    strict, beyond Kafka's GAP-2 renames). While `<base>.log.swap` is there the load completes
    the swap (RCV-4) and deletes every plain file in its range: an index already renamed in
    would go with the old ones, and the segment, below the recovery point, would be rebuilt
    with an empty transaction index. Once the `.log` is plain, any `.swap` index left is
    merely renamed. (`change_file_suffixes` renames all four with no fsync between.)"""
    log_path = Path(segment.log.path)
    txn = segment.txn_index_file  # derived from the `.log` name: taken before it changes
    segment.log.rename_to(_without_swap(log_path))
    fs.fsync_dir(directory)
    segment._offset_index.rename_to(_without_swap(segment.offset_index_file))
    segment._time_index.rename_to(_without_swap(segment.time_index_file))
    if fs.exists(txn):
        fs.rename(txn, _without_swap(txn))
    fs.fsync_dir(directory)


def _without_swap(path: Path) -> Path:
    return path.with_name(path.name.removesuffix(SWAP_FILE_SUFFIX))


def _add_keys(offset_map: OffsetMap, batch: RecordBatch, first_dirty: int) -> bool:
    """CLN-27: each keyed record at or above `first_dirty` into the map, newest last; False
    when the map fills up first (the build stops there). Read from the batch's walk, without
    `Record` objects. Where the walk declines, `records()` is read lazily: a map that fills up
    before a malformed record ends the build without decoding it, so without raising."""
    walk = walk_batch(batch)
    if walk is None:
        return _add_pairs(offset_map, ((r.key, r.offset) for r in batch.records()), first_dirty)
    capacity, offsets = offset_map.capacity, offset_map.offsets
    if capacity is not None and len(offsets) + len(walk.offsets) > capacity:
        return _add_pairs(offset_map, zip(walk.keys, walk.offsets, strict=True), first_dirty)
    # The map cannot fill up within this batch: its entries go in at once, the whole batch
    # without a Python loop when every record is keyed and dirty (the common case).
    if walk.offsets and None not in walk.keys and walk.offsets[0] >= first_dirty:
        offsets.update(zip(cast(list[bytes], walk.keys), walk.offsets, strict=True))
        offset_map.latest_offset = walk.offsets[-1]
        return True
    entries = [(key, offset) for key, offset in zip(walk.keys, walk.offsets, strict=True)
               if key is not None and offset >= first_dirty]
    if entries:
        offsets.update(entries)
        offset_map.latest_offset = entries[-1][1]
    return True


def _add_pairs(offset_map: OffsetMap, pairs: Iterable[tuple[bytes | None, int]],
               first_dirty: int) -> bool:
    """`_add_keys` one (key, offset) at a time, checking for a full map before each."""
    for key, offset in pairs:
        if key is not None and offset >= first_dirty:
            if offset_map.full():
                return False
            offset_map.offsets[key] = offset
            offset_map.latest_offset = offset
    return True


class LogCleaner:
    """Cleans one log per call (`clean`); see the module docstring for files and crash policy."""

    def __init__(self, log: Log, map_capacity: int | None = None) -> None:
        self.log = log
        self.checkpoint = CleanerCheckpoint(log.local_log.fs, log.dir)
        self.map_capacity = map_capacity  # CLN-26 entries; None = never full (KL-ALLOW-7)

    # --- selection --------------------------------------------------------------------------

    def _lag_base(self, first_dirty: int) -> int:
        """CLN-16: the first dirty non-active segment with data newer than the minimum lag."""
        lag = self.log.config.min_compaction_lag_ms
        if lag <= 0:
            return -1
        now = self.log.time.milliseconds()
        for segment in self.log.local_log.segments.non_active_log_segments_from(first_dirty):
            if segment.largest_timestamp() > now - lag:
                return segment.base_offset
        return -1

    def select(self) -> DirtyRange:
        """CLN-14..CLN-19; an invalid checkpoint is rewritten at once (BUG-C10)."""
        log = self.log
        stored = self.checkpoint.read()
        provisional = dirty_range([_facts(s) for s in log.local_log.segments], stored,
                                  log.log_start_offset, log.log_end_offset,
                                  log.last_stable_offset, -1, log.time.milliseconds(),
                                  log.config)
        lag_base = self._lag_base(provisional.first_dirty)
        plan = dirty_range([_facts(s) for s in log.local_log.segments], stored,
                           log.log_start_offset, log.log_end_offset, log.last_stable_offset,
                           lag_base, log.time.milliseconds(), log.config)
        if plan.reset_checkpoint:
            self.checkpoint.write(plan.first_dirty)
        return plan

    # --- the offset map ---------------------------------------------------------------------

    def collect_aborted(self, start_offset: int, upper: int) -> list[AbortedTxnEntry]:
        """CLN-36 (KAFKA-13727): entries of the segments from the one holding `start_offset`."""
        found: list[AbortedTxnEntry] = []
        segments = self.log.local_log.segments
        floor = segments.floor_segment(start_offset) or segments.first_segment()
        assert floor is not None
        for segment in [floor, *segments.higher_segments(floor.base_offset)]:
            for entry in segment.txn_index.entries():
                if entry.last_offset >= self.log.log_start_offset and entry.first_offset < upper:
                    found.append(entry)
                if entry.last_stable_offset >= upper:
                    return found
        return found

    def build_offset_map(self, first_dirty: int, first_uncleanable: int) -> OffsetMap:
        """CLN-27, CLN-28: stop the whole build when the map is full (KAFKA-3587, KAFKA-8764)."""
        offset_map = OffsetMap(self.map_capacity)
        tracker = TxnTracker()
        tracker.add(self.collect_aborted(first_dirty, first_uncleanable))
        dirty = [s for s in self.log.local_log.segments.values()
                 if s.base_offset < first_uncleanable]
        floor = max((i for i, s in enumerate(dirty) if s.base_offset <= first_dirty), default=0)
        dirty = dirty[floor:]
        for i, segment in enumerate(dirty):
            next_base = dirty[i + 1].base_offset if i + 1 < len(dirty) else first_uncleanable
            for batch in segment.log.batches(0):
                if batch.last_offset < first_dirty:
                    continue
                if batch.is_control_batch:
                    tracker.on_control(batch, list(batch.records()))
                elif not tracker.on_data(batch) and not _add_keys(offset_map, batch, first_dirty):
                    return offset_map
                offset_map.latest_offset = batch.last_offset
            offset_map.latest_offset = next_base - 1
        return offset_map

    # --- cleaning and swapping --------------------------------------------------------------

    def _active_producers(self) -> dict[int, tuple[int, int]]:
        """CLN-41, PST-25: each producer's (last data offset or -1, epoch)."""
        return {p.producer_id: (p.batches[-1].last_offset if p.batches else -1, p.producer_epoch)
                for p in producer_views(self.log.producer_state)}

    def _chunks(self, segment: LogSegment) -> list[list[RecordBatch]]:
        """CLN-49: whole batches within one read buffer (a larger batch alone)."""
        chunks: list[list[RecordBatch]] = []
        size = 0
        for batch in segment.log.batches(0):
            if chunks and size + batch.size_in_bytes <= READ_BUFFER_BYTES:
                chunks[-1].append(batch)
                size += batch.size_in_bytes
            else:
                chunks.append([batch])
                size = batch.size_in_bytes
        return chunks

    def clean_group(self, group: list[LogSegment], facts: PassFacts,
                    tracker: TxnTracker) -> None:
        """CLN-51..CLN-53: write the group into `<base>.*.cleaned`, then swap it in."""
        local = self.log.local_log
        base = group[0].base_offset
        stale = LogSegment.open(local.fs, local.dir, base, local.config, local.time,
                                file_suffix=CLEANED_FILE_SUFFIX)
        stale.delete_if_exists()
        cleaned = LogSegment.open(local.fs, local.dir, base, local.config, local.time,
                                  file_suffix=CLEANED_FILE_SUFFIX)
        per_batch = index_entry_per_batch(local.config.kafka_version)
        entries: list[AbortedTxnEntry] = []
        for source in group:
            upper = local.segments.higher_segment(source.base_offset)
            bound = upper.base_offset if upper is not None else source.read_next_offset()
            tracker.add(self.collect_aborted(source.base_offset, bound))
            for chunk in self._chunks(source):
                out: list[bytes] = []
                for batch in chunk:
                    kept, entry = filter_batch(batch, facts, tracker)
                    if kept is not None:
                        out.append(kept)
                    if entry is not None:
                        entries.append(entry)
                if out:
                    records = MemoryRecords(b"".join(out))
                    last = max(b.last_offset for b in records.batches())
                    cleaned.append(last, records, per_batch)
        cleaned.on_become_inactive_segment()
        for entry in entries:
            cleaned.txn_index.append(entry)
        cleaned.last_modified_ms = group[-1].last_modified_ms
        cleaned.flush()
        local.fs.fsync_dir(local.dir)
        self._replace_segments(cleaned, group)

    def _replace_segments(self, cleaned: LogSegment, group: list[LogSegment]) -> None:
        """CLN-57, LOC-14: `.cleaned` -> `.swap` (durable), map updated, old files `.deleted`
        (durable, deleted after the delay), `.swap` -> plain, directory fsync; then the
        snapshots of the old bases but the first go (PSR-2)."""
        local = self.log.local_log
        cleaned.change_file_suffixes(CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX)
        local.fs.fsync_dir(local.dir)
        local.segments.add(cleaned)
        for old in group[1:]:
            local.segments.remove(old.base_offset)
        local.delete_segment_files(group, async_delete=True)
        _drop_swap_suffix(cleaned, local.fs, local.dir)
        self.log.producer_state.delete_snapshots_async(s.base_offset for s in group[1:])

    def clean(self) -> CleanResult | None:
        """One pass if the log is compacted and eligible (KL-CLEAN-2..11); else None."""
        log = self.log
        if not is_compacted(log.config):
            return None
        with log.lock:
            log.local_log.check_if_memory_mapped_buffer_closed()
            plan = self.select()
            if not plan.eligible:
                return None
            offset_map = self.build_offset_map(plan.first_dirty, plan.first_uncleanable)
            end_offset = offset_map.latest_offset + 1
            facts = PassFacts(offset_map, log.time.milliseconds(),
                              log.config.delete_retention_ms, self._active_producers(),
                              plan.first_uncleanable, at_least(log.config.kafka_version, "3.9.2"))
            listed = [s for s in log.local_log.segments.values() if s.base_offset < end_offset]
            lengths = group_lengths([_facts(s) for s in listed], plan.first_uncleanable,
                                    log.config.segment_bytes, log.config.segment_index_bytes)
            tracker = TxnTracker()
            bases: list[int] = []
            start = 0
            for length in lengths:
                group = listed[start:start + length]
                start += length
                self.clean_group(group, facts, tracker)
                bases.append(group[0].base_offset)
            self.checkpoint.write(end_offset)
            return CleanResult(plan.first_dirty, end_offset, plan.first_uncleanable,
                               tuple(bases))
