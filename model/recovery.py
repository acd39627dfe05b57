"""Unclean loading: what the loader makes of a directory a crash left (REC-*, RCV-*).

`load_unclean` is the load half of the crash action (crash.py): given the segments that
survived (a layout), the checkpoints that were durable and the clock, it returns every state the
loader may produce. It differs from `reload.close_and_reopen` (a clean load) in that recovery runs
from the checkpointed recovery point: indexes are rebuilt, epochs re-added from the batches, and
the recovery point falls back to its checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from . import epochs as epoch_cache
from .choices import choose
from .crash.producers import reload_producers
from .errors import KafkalogError, LogSegmentOffsetOverflowError
from .helpers import floor_index, relative_offset_fits
from .local_log import clamped_high_watermark, schedule_deletion
from .producer.producer_state import Producers
from .producer.transactions import on_high_watermark_updated
from .reload import resize_active
from .segment import append_batches, become_inactive, new_segment
from .state import PartitionState, Segment
from .values import EpochEntry, LogConfig, LogOffsetMetadata
from .versions import recovery_cut_deletes_asynchronously

#: Index capacity while rebuilding: recovery appends to a reset index that has the full
#: preallocated size; the rebuilt index is trimmed afterwards (SEG-15 step 4).
_UNBOUNDED = 2**31


@dataclass(frozen=True)
class Checkpoints:
    """The content of every checkpoint file a load reads (FMT-36..FMT-41, DUR-14).

    A missing entry reads as 0 (RCV-2); the log-start file holds an entry only when the log
    start offset is above the first segment's base (FMT-40). `cleaner` is the partition's entry
    in `cleaner-offset-checkpoint` (FMT-9, CLN-21; None: no entry), which every write makes
    durable at once (KL-CRASH-15).
    """

    recovery_point: int = 0
    log_start: int = 0
    high_watermark: int = 0
    epochs: tuple[EpochEntry, ...] = ()
    cleaner: int | None = None
    # Not a file: the log start when the cleaner entry was written (PartitionState.cleaner_floor),
    # kept beside the entry so the load restores KL-INV-19's lower bound with it.
    cleaner_floor: int = 0


def rebuilt_segment(segment: Segment, config: LogConfig, now_ms: int,
                    last_modified_ms: int) -> Segment | None:
    """RCV-6 / SEG-15: reset both indexes, re-add an entry every `index_interval_bytes`, append
    the final time-index entry and trim. None when an index append fails (an offset below the
    base, ERR-2): the loader then empties the segment (RCV-6, KAFKA-905). Raises
    LogSegmentOffsetOverflowError for a batch whose offsets lie outside the segment's range
    (SEG-2; a torn header can leave one, KL-ALLOW-10): the load fails.

    Spec: KL-CRASH-5.
    """
    reset = replace(segment, batches=(), size=0, offset_index=(), time_index=(),
                    offset_index_max_entries=_UNBOUNDED, time_index_max_entries=_UNBOUNDED,
                    bytes_since_last_index_entry=0, max_so_far=None)
    # A leader append's reported offset of the max timestamp (KL-VERSION-2, before 3.8) lives
    # only in memory: recovery pairs each batch's max timestamp with its last offset (SEG-15).
    batches = tuple(replace(b, reported_max_offset=None) for b in segment.batches)
    out_of_range = next((k for k, b in enumerate(batches)
                         if not relative_offset_fits(b.last_offset, segment.base_offset)), None)
    try:
        filled = append_batches(reset, batches[:out_of_range], last_modified_ms,
                                config.index_interval_bytes)
    except KafkalogError:
        return None
    if out_of_range is not None:
        # Kafka's recover checks each batch's range before indexing it and lets the overflow
        # escape; the split it then tries needs offsets above the range (LOC-15): the load fails.
        raise LogSegmentOffsetOverflowError(
            f"Detected offset overflow at offset {batches[out_of_range].last_offset} in segment "
            f"with base offset {segment.base_offset}", where=f"segment {segment.base_offset}")
    return replace(become_inactive(filled), created_ms=now_ms, bytes_since_last_index_entry=0,
                   last_modified_ms=last_modified_ms)


def _emptied(segment: Segment, config: LogConfig, now_ms: int) -> Segment:
    """RCV-6: `truncateTo(base)` after an index rebuild failure; trimmed like a recovered one."""
    return become_inactive(replace(new_segment(segment.base_offset, config, now_ms),
                                   roll_jitter_ms=segment.roll_jitter_ms))


def _recover_segments(layout: tuple[Segment, ...], recovery_point: int, config: LogConfig,
                      now_ms: int, touched: frozenset[int],
                      entries: tuple[EpochEntry, ...], unreadable: int | None = None,
                      kafka_walk: bool = False
                      ) -> tuple[tuple[Segment, ...], tuple[EpochEntry, ...]]:
    """RCV-6, RCV-10: recover every segment from the one holding the recovery point.

    `touched` are the bases whose `.log` recovery cut (their last-modified time becomes now).
    The cache is first truncated at the recovery point; then batches at or above it with an
    epoch above the latest add cache entries (RCV-10, narrowed by kafkalog). An emptied
    segment ends the log: one whose index rebuild fails, or the `unreadable` one (its `.log`
    holds CRC-valid batches whose offsets go back, so an index append fails there, KL-CRASH-9).
    `kafka_walk` takes Kafka's own walk of the checkpointed cache instead (KL-ALLOW-8).
    """
    first = max(floor_index([s.base_offset for s in layout], recovery_point), 0)
    # A segment loaded without recovery reads its max timestamp lazily (KL-TRUNC-3).
    out = [replace(s, created_ms=now_ms, bytes_since_last_index_entry=0, max_so_far=None)
           for s in layout[:first]]
    for segment in layout[first:]:
        modified = now_ms if segment.base_offset in touched else segment.last_modified_ms
        rebuilt = (None if segment.base_offset == unreadable
                   else rebuilt_segment(segment, config, now_ms, modified))
        if rebuilt is None:
            out.append(_emptied(segment, config, now_ms))
            break
        out.append(rebuilt)
    if first < len(layout):
        entries = (_kafka_walk_epochs(entries, out[first:]) if kafka_walk
                   else _rederived_epochs(entries, out[first:], recovery_point))
    return tuple(out), entries


def _kafka_walk_epochs(entries: tuple[EpochEntry, ...],
                       recovered: list[Segment]) -> tuple[EpochEntry, ...]:
    """KL-ALLOW-8 (RCV-10, Kafka's `LogSegment.recover`): the checkpointed cache is kept as read
    (no cut at the recovery point), and a batch of the recovered segments adds an entry only
    when its epoch is above the latest. Entries at or above the end are trimmed by the caller,
    as Kafka's `truncateFromEnd(nextOffset)` does. Spec: KL-ALLOW-8"""
    for batch in (b for s in recovered for b in s.batches):
        latest = epoch_cache.latest_epoch(entries)
        if batch.partition_leader_epoch >= 0 and (
            latest is None or batch.partition_leader_epoch > latest
        ):
            entries = epoch_cache.assign(entries, batch.partition_leader_epoch, batch.base_offset)
    return entries


def _rederived_epochs(entries: tuple[EpochEntry, ...], recovered: list[Segment],
                     recovery_point: int) -> tuple[EpochEntry, ...]:
    """KL-CRASH-6 (kafkalog; Kafka differs, RCV-10): the cache after the recovery pass.

    The entries from the recovery point on are re-derived from the batches at or above it: an
    entry below it was written before the flushed batches it describes (EPO-2 is synchronous),
    and a flushed batch whose epoch a lower one replaced since (EPO-3) would otherwise come back
    and make a reload after a clean load differ from it (KL-CRASH-7). Every recovered batch may
    add an entry, RCV-10's walk, when the checkpointed cache had entries and none is left below
    the recovery point, and when the
    recovered log ends below it (a crash inside a truncation leaves both checkpoints above the
    data it kept): then the kept entries need not describe the recovered batches, and the cache
    is cut at that end.
    Entries at or above the end are trimmed by the caller.
    """
    end = recovered[-1].next_offset
    read = entries
    entries = epoch_cache.truncate_from_end(entries, min(recovery_point, end))
    # With no entry left below the recovery point (a log-start advance trimmed them and a crash
    # undid the advance, GAP-12), every recovered batch may add one, RCV-10's walk. An empty
    # cache is the log's own (entries an assign of a lower epoch removed, EPO-3): a clean load
    # walks nothing, so neither may this one below the recovery point.
    derive_from = recovery_point if recovery_point <= end and (entries or not read) else None
    for batch in (b for s in recovered for b in s.batches):
        if derive_from is not None and batch.base_offset < derive_from:
            continue
        latest = epoch_cache.latest_epoch(entries)
        if batch.partition_leader_epoch >= 0 and (
            latest is None or batch.partition_leader_epoch > latest
        ):
            entries = epoch_cache.assign(entries, batch.partition_leader_epoch, batch.base_offset)
    return entries


def defer_cut_deletion(state: PartitionState, cut: tuple[Segment, ...],
                       on_disk: int = 0) -> PartitionState:
    """KL-ALLOW-5: the segments recovery's cut removed from the map (RCV-6, LOC-11).

    kafkalog deletes them at once (option 0, nothing pending). Kafka's `recoverLog` renames
    them `.deleted` and deletes them `file_delete_delay_ms` after the load
    (`removeAndDeleteSegmentsAsync`), as KL-RELOAD-3's load does: those on disk are then pending
    deletions. The first `on_disk` of `cut` surely are; of the rest, whose directory entries a
    power loss may have dropped, the ones on disk are a prefix in base order (creation order).
    """
    if not cut or not recovery_cut_deletes_asynchronously(state.config.kafka_version):
        return state
    kept = choose("recovery_cut_deletion",
                  ((), *(cut[:k] for k in range(len(cut), max(on_disk, 1) - 1, -1))))
    return schedule_deletion(state, kept)


def load_unclean(layout: tuple[Segment, ...], checkpoints: Checkpoints, config: LogConfig,
                 now_ms: int, touched: frozenset[int] = frozenset(),
                 snapshots: tuple[tuple[int, Producers], ...] = (),
                 beyond: tuple[Segment, ...] = (),
                 unreadable: int | None = None) -> PartitionState:
    """`recover_unclean`, then the choice of KL-ALLOW-5 (a choice point, model/choices.py).

    Spec: KL-CRASH-6, KL-ALLOW-5.
    """
    return defer_cut_deletion(*recover_unclean(layout, checkpoints, config, now_ms, touched,
                                               snapshots, beyond, unreadable))


def recover_unclean(layout: tuple[Segment, ...], checkpoints: Checkpoints, config: LogConfig,
                    now_ms: int, touched: frozenset[int] = frozenset(),
                    snapshots: tuple[tuple[int, Producers], ...] = (),
                    beyond: tuple[Segment, ...] = (),
                    unreadable: int | None = None, kafka_walk: bool = False,
                    kafka_producers: bool = False, kafka_cleaner: bool = False
                    ) -> tuple[PartitionState, tuple[Segment, ...], int]:
    """The loader on a directory without a clean-shutdown marker (RCV-3..RCV-13).

    `layout` is the segments that survived, already cut at the first invalid batch (a cut drops
    every later segment, RCV-6, and in kafkalog also in the index-rebuild path, KL-CRASH-5).
    `beyond` are the segments after the layout's end that may still be on disk when that cut was
    recovery's (a torn tail): Kafka may leave them pending deletion (KL-ALLOW-5).
    `.deleted`, `.cleaned`, `.swap`-below-cleaned and orphan index files are removed (RCV-3,
    RCV-5), so no leftover is pending afterwards, whatever the crash left (KL-CRASH-9); only a
    LEO below the log-start checkpoint schedules the loaded segments' deletion (RCV-7), and
    recovery's cut may, Kafka's way (KL-ALLOW-5): returns kafkalog's state (nothing of the cut
    pending), the segments the cut removed and how many of them are surely on disk, for
    `defer_cut_deletion` (split so the crash set recovers each layout once for every choice).
    `unreadable` names a recovered segment whose offsets go back (see `_recover_segments`).
    `kafka_walk` takes Kafka's walk of the checkpointed epoch cache instead of kafkalog's
    re-derivation (KL-ALLOW-8; kafka mode allows both). `kafka_producers` starts the producer
    recovery passes at the log-start checkpoint as Kafka's `recoverSegment` does, not at the
    loaded log start (KL-ALLOW-9; kafka mode allows both). `kafka_cleaner` keeps a cleaner entry
    above the loaded LEO as Kafka's cleaner manager reads it (KL-ALLOW-11). A function of the
    image alone, so a crash inside the implementation's load must leave an image that loads to
    the same state (KL-CRASH-14).
    Spec: KL-CRASH-5, KL-CRASH-6, KL-CRASH-7, KL-CRASH-9, KL-CRASH-11, KL-CRASH-12, KL-ALLOW-5,
    KL-CRASH-14, KL-ALLOW-9, KL-ALLOW-11.
    """
    segments, entries = _recover_segments(layout, checkpoints.recovery_point, config, now_ms,
                                          touched, checkpoints.epochs, unreadable, kafka_walk)
    # An index-rebuild failure empties a segment and ends the log there (RCV-6): the layout's
    # later segments were on disk and recovery's cut removed them.
    emptied = tuple(s for s in layout if segments and s.base_offset > segments[-1].base_offset)
    cut = (*emptied, *beyond)
    if not segments:
        segments = (new_segment(checkpoints.log_start, config, now_ms),)
    leo = segments[-1].next_offset
    dropped: tuple[Segment, ...] = ()
    if leo < checkpoints.log_start:
        snapshots = ()
        # RCV-7 (REC-9, KAFKA-8306): data below the checkpointed LSO is gone; start empty there.
        # Kafka deletes the old segments asynchronously: `.deleted` now, removed after the delay.
        dropped = segments
        segments = (new_segment(checkpoints.log_start, config, now_ms),)
        entries = ()
        leo = checkpoints.log_start
    segments = (*segments[:-1], resize_active(segments[-1], config.segment_index_bytes))
    log_start = max(checkpoints.log_start, segments[0].base_offset)
    # PSR-7 (KL-CRASH-11): recovery rewrites the snapshots segment by segment and rebuilds the
    # recovered segments' transaction indexes.
    producer_state, segments = reload_producers(
        snapshots, segments, log_start, leo, checkpoints.recovery_point, config, now_ms,
        dropped=bool(dropped),
        pass_start=checkpoints.log_start if kafka_producers else None)
    # kafkalog trims at the loaded log start, Kafka at the checkpoint (REC-15): a crash inside
    # a full truncation or a retention pass may leave the checkpoint below the first segment,
    # and an entry below the log start would break KL-INV-10.
    entries = epoch_cache.truncate_from_start(entries, log_start)
    entries = epoch_cache.truncate_from_end(entries, leo)
    loaded = PartitionState(
        config=config,
        segments=segments,
        log_start_offset=log_start,
        high_watermark=LogOffsetMetadata(log_start),
        log_end_offset=leo,
        # RCV-8, then LOG-3 step 1: the loaded LSO raises the recovery point to itself.
        recovery_point=max(min(checkpoints.recovery_point, leo), log_start),
        epochs=entries,
        now_ms=now_ms,
        producer_state=producer_state,
    )
    hw = clamped_high_watermark(loaded, checkpoints.high_watermark)  # RCV-13
    # TXN-8 (KL-TXN-7): the FUO from the reloaded producer state, at the HW assignment.
    loaded = on_high_watermark_updated(replace(loaded, high_watermark=hw))
    entry = checkpoints.cleaner
    kept = entry if kafka_cleaner and entry is not None and entry > leo else None
    loaded = replace(loaded, cleaner_checkpoint=loaded_cleaner_checkpoint(entry, loaded),
                     cleaner_floor=checkpoints.cleaner_floor, cleaner_entry_kept=kept)
    return schedule_deletion(loaded, dropped), cut, len(emptied)


def loaded_cleaner_checkpoint(entry: int | None, loaded: PartitionState) -> int | None:
    """The cleaner checkpoint after an unclean load: the file's entry, lowered to the active
    base when it lies above the loaded LEO (kafkalog, strict: a crash inside a truncation
    after its cut and before CLN-68 lowered the entry, or a load that started the log at the
    log-start checkpoint, leaves it there; the load finishes that lowering so KL-INV-18
    holds. Kafka keeps the entry until the next pass resets it, CLN-15).

    Spec: KL-CRASH-15, KL-CLEAN-13.
    """
    if entry is None or entry <= loaded.log_end_offset:
        return entry
    return loaded.active.base_offset
