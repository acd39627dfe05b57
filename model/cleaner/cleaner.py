"""One cleaning pass as a pure action: `clean(state) -> (state, CleanResult | None)`.

The pass selects its dirty range (CLN-14..CLN-19), builds the offset map (CLN-27), groups the
segments below the end offset (CLN-29), cleans each group into one segment at the group's first
base and swaps it in (CLN-51..CLN-57), then writes the cleaner checkpoint (CLN-22). Where Kafka
leaves a choice (the offset map's capacity, CLN-85) the model offers every outcome
(`choices.choose`, KL-ALLOW-7). Not modelled: legacy (v0/v1) batches and their mtime horizon
(CLN-34), aborts inside a pass (CLN-56..CLN-61), the I/O throttle (CLN-50). `clean_stages`
gives the states a pass goes through, for a crash inside it (model/crash/cleaning.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..choices import choose
from ..helpers import OFFSET_INDEX_ENTRY_SIZE, TIME_INDEX_ENTRY_SIZE
from ..local_log import schedule_deletion
from ..producer.producer_state import delete_snapshots
from ..producer.transactions import last_stable_offset
from ..segment import append_batches, become_inactive, materialised, new_segment
from ..state import Batch, PartitionState, Segment
from ..values import AbortedTxnEntry, CleanResult
from ..versions import at_least, index_entry_per_batch
from .filter import PassContext, filter_batch
from .offset_map import build_offset_map, end_offset_options
from .offsets import (
    dirty_ratio_eligible,
    first_dirty_offset,
    first_uncleanable_offset,
    group_segments,
    must_compact_now,
    policy_flags,
    uncleanable_offset,
)
from .transactions import TxnTracker, add_aborted

#: CLN-7: each read buffer is io.buffer.size / threads / 2 with Kafka's defaults (one thread).
READ_BUFFER_BYTES = 512 * 1024 // 2


@dataclass(frozen=True)
class DirtyRange:
    """What selection decided (CLN-15..CLN-19); `eligible` False means no pass runs."""

    first_dirty: int
    first_uncleanable: int
    eligible: bool


def is_compacted(state: PartitionState) -> bool:
    """CLN-1: the log's policy contains `compact`."""
    flags = policy_flags(state.config.cleanup_policy)
    return flags is not None and flags[0]


def _floor_index(state: PartitionState, offset: int) -> int:
    """The index of the segment holding `offset` (the last base at or below it), else 0."""
    return max((i for i, s in enumerate(state.segments) if s.base_offset <= offset), default=0)


def _lag_base(state: PartitionState, first_dirty: int) -> tuple[PartitionState, int]:
    """CLN-16 third bound: the first dirty non-active segment with data newer than the minimum
    lag (-1 if none or no lag). Reading `largestTimestamp` materialises it (KL-TRUNC-3)."""
    lag = state.config.min_compaction_lag_ms
    if lag <= 0:
        return state, -1
    segments = list(state.segments)
    for i in range(_floor_index(state, first_dirty), len(segments) - 1):
        segments[i] = materialised(segments[i])
        if segments[i].largest_timestamp() > state.now_ms - lag:
            return replace(state, segments=tuple(segments)), segments[i].base_offset
    return replace(state, segments=tuple(segments)), -1


def select(state: PartitionState) -> tuple[PartitionState, DirtyRange]:
    """CLN-14..CLN-19: first dirty offset (writing a reset checkpoint at once, BUG-C10),
    uncleanable bound, first uncleanable offset, byte counts and eligibility.

    Spec: KL-CLEAN-2, KL-CLEAN-3.
    """
    entry = state.cleaner_file_entry
    checkpoint = -1 if entry is None else entry
    first_dirty = first_dirty_offset(checkpoint, state.log_start_offset, state.log_end_offset)
    if entry is not None and first_dirty != checkpoint:
        state = replace(state, cleaner_checkpoint=first_dirty,
                        cleaner_floor=state.log_start_offset, cleaner_entry_kept=None)
    state, lag_base = _lag_base(state, first_dirty)
    bases = [s.base_offset for s in state.segments]
    uncleanable = uncleanable_offset(first_dirty, last_stable_offset(state), bases[-1], lag_base)
    first_uncleanable = first_uncleanable_offset(bases, uncleanable)
    start = _floor_index(state, min(first_dirty, first_uncleanable))
    cleanable = sum(s.size for s in state.segments[start:]
                    if s.base_offset < first_uncleanable) if first_dirty < first_uncleanable else 0
    clean = sum(s.size for s in state.segments if s.base_offset < first_dirty)
    dirty_segments = state.segments[_floor_index(state, first_dirty):-1]
    forced = must_compact_now([s.batches[0].max_timestamp if s.batches else 2**63 - 1
                               for s in dirty_segments],
                              state.now_ms, max(state.config.max_compaction_lag_ms, 0))
    eligible = dirty_ratio_eligible(clean, cleanable, state.config.min_cleanable_dirty_ratio,
                                    forced)
    return state, DirtyRange(first_dirty, first_uncleanable, eligible)


def collect_aborted(state: PartitionState, start_offset: int,
                    upper: int) -> tuple[AbortedTxnEntry, ...]:
    """CLN-36 (KAFKA-13727): `.txnindex` entries of the segments from the one holding
    `start_offset` on whose last offset >= the log start and first offset < `upper`, stopping
    after an entry whose last stable offset >= `upper`. Spec: KL-CLEAN-7."""
    found: list[AbortedTxnEntry] = []
    for segment in state.segments[_floor_index(state, start_offset):]:
        for entry in segment.txn_index:
            if entry.last_offset >= state.log_start_offset and entry.first_offset < upper:
                found.append(entry)
            if entry.last_stable_offset >= upper:
                return tuple(found)
    return tuple(found)


def _chunks(batches: tuple[Batch, ...]) -> list[list[Batch]]:
    """CLN-49: the read-buffer chunks of a source segment (a larger batch is a chunk alone)."""
    chunks: list[list[Batch]] = []
    size = 0
    for batch in batches:
        if chunks and size + batch.size <= READ_BUFFER_BYTES:
            chunks[-1].append(batch)
            size += batch.size
        else:
            chunks.append([batch])
            size = batch.size
    return chunks


def _append_chunk(segment: Segment, output: list[Batch], state: PartitionState) -> Segment:
    """CLN-52: one append per chunk at the segment's end; index entries per the profile."""
    placed: list[Batch] = []
    position = segment.size
    for batch in output:
        placed.append(replace(batch, position=position))
        position += batch.size
    return append_batches(segment, tuple(placed), state.now_ms,
                          state.config.index_interval_bytes,
                          index_entry_per_batch(state.config.kafka_version))


def clean_group(state: PartitionState, group: tuple[Segment, ...], ctx: PassContext,
                tracker: TxnTracker) -> tuple[PartitionState, TxnTracker]:
    """CLN-51..CLN-57: clean `group` into one segment at its first base and swap it in: the old
    segments' files are renamed `.deleted` and deleted later, their snapshots (but the reused
    base's) go. Spec: KL-CLEAN-5, KL-CLEAN-10."""
    cleaned = new_segment(group[0].base_offset, state.config, state.now_ms)
    txn_entries: list[AbortedTxnEntry] = []
    bases = [s.base_offset for s in state.segments]
    for source in group:
        index = bases.index(source.base_offset)
        upper = bases[index + 1] if index + 1 < len(bases) else source.next_offset
        tracker = add_aborted(tracker, collect_aborted(state, source.base_offset, upper))
        for chunk in _chunks(source.batches):
            output: list[Batch] = []
            for batch in chunk:
                tracker, out, entry = filter_batch(batch, ctx, tracker)
                if out is not None:
                    output.append(out)
                if entry is not None:
                    txn_entries.append(entry)
            if output:
                cleaned = _append_chunk(cleaned, output, state)
    cleaned = replace(become_inactive(cleaned), last_modified_ms=group[-1].last_modified_ms,
                      txn_index=tuple(txn_entries))
    first = bases.index(group[0].base_offset)
    segments = (*state.segments[:first], cleaned, *state.segments[first + len(group):])
    state = schedule_deletion(replace(state, segments=segments), group)
    gone = [s.base_offset for s in group[1:]]
    return replace(state, producer_state=delete_snapshots(state.producer_state, gone)), tracker


def _groups(state: PartitionState, end_offset: int,
            first_uncleanable: int) -> list[tuple[Segment, ...]]:
    """CLN-24 step 3, CLN-29: the segments from the log's first up to the one holding
    end - 1, grouped."""
    listed = [s for s in state.segments if s.base_offset < end_offset]
    config = state.config
    lengths = group_segments(
        [s.size for s in listed],
        [len(s.offset_index) * OFFSET_INDEX_ENTRY_SIZE for s in listed],
        [len(s.time_index) * TIME_INDEX_ENTRY_SIZE for s in listed],
        [s.base_offset for s in listed], first_uncleanable,
        config.segment_bytes, config.segment_index_bytes,
    )
    groups: list[tuple[Segment, ...]] = []
    start = 0
    for length in lengths:
        groups.append(tuple(listed[start:start + length]))
        start += length
    return groups


def _active_producers(state: PartitionState) -> tuple[tuple[int, tuple[int, int]], ...]:
    """CLN-41, PST-25 `lastRecordsOfActiveProducers`: (last data offset or -1, epoch)."""
    return tuple((e.producer_id, (e.last_data_offset, e.producer_epoch))
                 for e in state.producer_state.producers)


def clean(state: PartitionState) -> tuple[PartitionState, CleanResult | None]:
    """One cleaning pass of a compacted log, if selection finds it eligible; None otherwise
    (a reset checkpoint is still written, CLN-14).

    Spec: KL-CLEAN-2, KL-CLEAN-3, KL-CLEAN-4, KL-CLEAN-5, KL-CLEAN-6, KL-CLEAN-7, KL-CLEAN-8,
    KL-CLEAN-9, KL-CLEAN-10, KL-CLEAN-11, KL-ALLOW-7. Offsets never change; nothing at or above
    the first uncleanable offset is read or changed; LEO, HW and the log start offset stay.
    """
    stages, result = clean_stages(state)
    return stages.final, result


@dataclass(frozen=True)
class PassStages:
    """The states one pass goes through, for a crash inside it (KL-CRASH-15): `selected` after
    selection (its reset checkpoint written), then per group the state after its swap and the
    group's old segments, then `final` with the checkpoint written."""

    selected: PartitionState
    swaps: tuple[tuple[PartitionState, tuple[Segment, ...]], ...]
    final: PartitionState


def clean_stages(state: PartitionState) -> tuple[PassStages, CleanResult | None]:
    """`clean`, with the states in between (CLN-51..CLN-57: groups are swapped one by one, the
    checkpoint written last, CLN-22). Spec: KL-CLEAN-5, KL-CRASH-15."""
    if not is_compacted(state):
        return PassStages(state, (), state), None
    state, dirty = select(state)
    if not dirty.eligible:
        return PassStages(state, (), state), None
    selected = state
    aborted = collect_aborted(state, dirty.first_dirty, dirty.first_uncleanable)
    options = end_offset_options(state, dirty.first_dirty, dirty.first_uncleanable, aborted)
    end_offset = choose("clean_end_offset", options)
    offset_map = build_offset_map(state, dirty.first_dirty, dirty.first_uncleanable, aborted,
                                  end_offset)
    ctx = PassContext(offset_map, state.now_ms, state.config.delete_retention_ms,
                      _active_producers(state), dirty.first_uncleanable,
                      at_least(state.config.kafka_version, "3.9.2"))
    tracker = TxnTracker()
    bases: list[int] = []
    swaps: list[tuple[PartitionState, tuple[Segment, ...]]] = []
    for group in _groups(state, end_offset, dirty.first_uncleanable):
        state, tracker = clean_group(state, group, ctx, tracker)
        bases.append(group[0].base_offset)
        swaps.append((state, group))
    # A pass that went on from the entry keeps its floor when a crash lowered the log start
    # below it (GAP-12): the data between was never in any pass's map (KL-INV-19).
    floor = max(state.log_start_offset, state.cleaner_floor)
    state = replace(state, cleaner_checkpoint=end_offset, cleaner_floor=floor)
    result = CleanResult(dirty.first_dirty, end_offset, dirty.first_uncleanable, tuple(bases))
    return PassStages(selected, tuple(swaps), state), result


def lower_checkpoint_on_truncation(state: PartitionState) -> PartitionState:
    """CLN-68 (KAFKA-3330): a truncation below the active base (or a full one) lowers a
    compacted log's checkpoint to the new active base. Spec: KL-CLEAN-13."""
    checkpoint = state.cleaner_file_entry
    if checkpoint is None or not is_compacted(state) or checkpoint <= state.active.base_offset:
        return state
    return replace(state, cleaner_checkpoint=state.active.base_offset, cleaner_entry_kept=None)
