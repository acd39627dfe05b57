"""The crash action: which states a crash followed by a load may leave (specs/log.md §15).

The model keeps, beside the logical state, what is durable (`Durable`, CRP-2): the flushed
frontier, the content of each checkpoint file, and (kafka mode) the earlier segment layouts a
crash may resurrect. `observe` advances it after every completed action, from the action's name
and the states before and after. `crash_states` is the set of post-crash-and-load states for one
crash point after an action (`inside.crash_between`: inside one) and fault model;
`crash_allows` is its membership predicate on the observable view. A load the image makes fail
(recovery's replay raising, as Kafka's `LogSegment.recover` lets an `InvalidTxnStateException`
escape) is a member too: a
`LoadFailure` naming the error type (KL-CRASH-13). Two modes (KL-CRASH-1):

- **strict**: what kafkalog's implementation promises (truncation, deletion, index trims and
  recovery's own cuts are durable before the action returns; the recovery-point checkpoint is
  rewritten after a truncation; epoch-cache writes are synchronous);
- **kafka**: the outcomes Kafka's own fsync choices allow on top (GAP-1 truncated batches come
  back, GAP-2 deleted segments come back, DUR-15 epoch truncations not yet written).

Pure and stdlib-only like the rest of the model.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from ..choices import outcomes
from ..crash.planted import empties_again, with_planted
from ..crash.producers import surviving_snapshots
from ..crash.torn import TornClues, torn_header_layouts
from ..errors import KafkalogError
from ..helpers import floor_index
from ..log import view
from ..recovery import Checkpoints, defer_cut_deletion, recover_unclean
from ..state import PartitionState, Segment
from ..values import EpochEntry, LogConfig, LogStateView

__all__ = [
    "CrashMode",
    "Durable",
    "FaultModel",
    "LoadFailure",
    "crash_allows",
    "crash_states",
    "load_failures",
    "loaded_outcomes",
    "durable_after",
    "initial_durable",
    "log_start_checkpoint",
    "observe",
]

#: Earlier layouts kept for kafka mode (GAP-1, GAP-2); older ones are assumed overwritten.
_MAX_LAYOUTS = 4
#: Removed snapshot files kept for kafka mode (DUR-29), newest last; forgotten at every flush
#: that moves F (its directory fsync commits the removals).
_MAX_GHOSTS = 32
#: Of them, the newest the set brings back one at a time when no recovered state says which
#: (`_ghosts_back`; with one, the state's list picks among all of them).
_GHOSTS_ALONE = 4
#: The actions that cut the log (inside.py widens a crash inside one).
TRUNCATIONS = frozenset({"truncate_to", "truncate_fully_and_start_at"})


class CrashMode(StrEnum):
    """KL-CRASH-1: whose durability promises the allowed set follows."""

    STRICT = "strict"
    KAFKA = "kafka"


class FaultModel(StrEnum):
    """FLT-1..FLT-5 as kafkalog's fault-injecting file system names them
    (conformance/crash/fault_fs.py)."""

    PROCESS_CRASH = "process_crash"  # FLT-1: the page cache survives
    POWER_LOSS = "power_loss"  # FLT-2: unsynced writes lost
    POWER_LOSS_PREFIX = "power_loss_prefix"  # FLT-3: a prefix of unsynced appends kept
    POWER_LOSS_TORN = "power_loss_torn"  # FLT-3, FLT-7: pages kept, lost, zeroed or garbage


@dataclass(frozen=True)
class Durable:
    """What a power loss cannot take away (CRP-2).

    `flushed` is F: every batch below it is durable, with every directory entry of its segment.
    `checkpoints` is what each checkpoint file holds; `epoch_options` are the contents the
    leader-epoch-checkpoint may hold (one in strict mode; kafka mode adds contents an
    asynchronous truncation had not replaced yet, DUR-15). `layouts` (kafka mode only) are
    earlier segment layouts whose removal was never made durable (GAP-1, GAP-2); `ghosts`
    (kafka mode only) are producer snapshot files (offset, content) removed since, whose
    removal no directory fsync has made durable yet (DUR-29). `planted` (kafka mode only) are
    last segments of `layouts` whose `.log` holds, past their data, a planted batch going back
    (KL-CRASH-9, planted.py): a load that finds one whole empties it again (RCV-6).
    """

    flushed: int
    checkpoints: Checkpoints
    epoch_options: tuple[tuple[EpochEntry, ...], ...] = ((),)
    layouts: tuple[tuple[Segment, ...], ...] = ()
    ghosts: tuple[tuple[int, Any], ...] = ()
    planted: tuple[Segment, ...] = ()


def initial_durable(state: PartitionState) -> Durable:
    """A new log: nothing checkpointed yet (every root checkpoint reads as 0, RCV-2)."""
    return Durable(flushed=state.log_end_offset, checkpoints=Checkpoints(),
                   epoch_options=(state.epochs,))


def log_start_checkpoint(state: PartitionState) -> int:
    """FMT-40: the log-start file holds the LSO only when it is above the first segment's base."""
    first = state.segments[0].base_offset
    return state.log_start_offset if state.log_start_offset > first else 0


def _root_checkpoints(state: PartitionState) -> Checkpoints:
    """The three root checkpoints written from `state` (LogDir._write_checkpoints, DUR-14),
    with the epoch cache and the cleaner checkpoint (written on every change, KL-CRASH-15)."""
    return Checkpoints(recovery_point=state.recovery_point,
                       log_start=log_start_checkpoint(state),
                       high_watermark=state.high_watermark.message_offset,
                       epochs=state.epochs, cleaner=state.cleaner_file_entry,
                       cleaner_floor=state.cleaner_floor)


def _rolled_to(action: str, before: PartitionState, after: PartitionState) -> int | None:
    """The offset a roll inside this action flushed to (KL-ROLL-7), or None without a roll.
    A truncation never rolls, even one that restarts the log above the active base (LOG-41,
    LOC-9, DUR-23: `truncateFullyAndStartAt` renames and creates, no fsync)."""
    if action in TRUNCATIONS or after.active.base_offset == before.active.base_offset:
        return None
    if after.active.base_offset < before.active.base_offset:
        return None  # a deletion, not a roll
    return min(after.active.base_offset, before.log_end_offset)


def observe(durable: Durable, action: str, before: PartitionState, after: PartitionState,
            mode: CrashMode = CrashMode.STRICT) -> Durable:
    """What is durable once `action` has returned (taking `before` to `after`).

    Spec: KL-CRASH-2, KL-CRASH-3, KL-CRASH-4, KL-CRASH-15. Actions that do not change the log
    leave it as is. The cleaner checkpoint file is rewritten atomically and durably whenever
    the entry changes (a pass's reset and end, a truncation's lowering, CLN-68), so it holds
    the entry the action left; a pass's swaps are durable before it returns (strict).
    """
    flushed = durable.flushed
    checkpoints = replace(durable.checkpoints, cleaner=after.cleaner_file_entry,
                          cleaner_floor=after.cleaner_floor)
    layouts = durable.layouts
    planted = durable.planted
    ghosts = (_removed_snapshots(durable.ghosts, before, after)
              if mode is CrashMode.KAFKA else ())
    rolled = _rolled_to(action, before, after)
    if rolled is not None:
        flushed = max(flushed, rolled)  # KL-CRASH-2: the roll's flush is synchronous
    # KL-CRASH-2: `flush`, and (strict) an LSO increase flushes up to the LSO before it raises
    # the recovery point (Kafka does not, GAP-9).
    raised = action not in TRUNCATIONS and after.recovery_point > before.recovery_point
    if raised and (mode is CrashMode.STRICT or action == "flush"):
        flushed = max(flushed, after.recovery_point)
    if action == "close_and_reopen":
        # KL-CRASH-4: a clean shutdown flushes everything and writes every checkpoint.
        return Durable(flushed=after.log_end_offset,
                       # Written before the load: rp = the LEO flushed to (which a truncation
                       # into a gap may leave above the data), the pre-close LSO and HW.
                       checkpoints=replace(_root_checkpoints(after),
                                           recovery_point=before.log_end_offset,
                                           log_start=log_start_checkpoint(before),
                                           high_watermark=before.high_watermark.message_offset),
                       epoch_options=(after.epochs,))
    cut = action == "truncate_fully_and_start_at" or (
        action == "truncate_to" and after.log_end_offset < before.log_end_offset)
    if cut:
        if mode is CrashMode.STRICT:
            # KL-CRASH-3: the cut and the removals are durable; the recovery point follows.
            flushed = after.log_end_offset
        else:
            flushed = min(flushed, after.log_end_offset)
            layouts = (*layouts, before.segments)[-_MAX_LAYOUTS:]  # GAP-1
        checkpoints = replace(checkpoints, recovery_point=after.recovery_point)  # DUR-26
    elif mode is CrashMode.KAFKA and len(after.segments) < len(before.segments) \
            and action != "clean":
        # GAP-2: retention's renames may be lost; those that reach the disk also apply to the
        # layouts an earlier truncation may resurrect (their segments below the new first base
        # gone too). A cleaning pass that returned is durable in kafka mode too: Kafka's
        # `replaceSegments` ends with a directory fsync (CLN-57), the cleaned files were flushed
        # before their `.swap` rename.
        first = after.segments[0].base_offset
        trimmed = tuple(t for t in (tuple(x for x in layout if x.base_offset >= first)
                                    for layout in layouts) if t)
        layouts = tuple(dict.fromkeys((*layouts, *trimmed, before.segments)))[-_MAX_LAYOUTS:]
    if flushed > durable.flushed:
        # an fsync commits the earlier renames and cuts with it (FLT-5, GAP-1), and the
        # directory fsync that comes with it the snapshot removals (DUR-8)
        layouts, ghosts, planted = (), (), ()
    options = durable.epoch_options
    if after.epochs != before.epochs:
        grew = bool(after.epochs) and after.epochs[-1] not in before.epochs
        if mode is CrashMode.STRICT or grew:
            options = (after.epochs,)  # KL-EPOCH-6 / DUR-15: a synchronous write
        else:
            options = tuple(dict.fromkeys((*options, after.epochs)))  # an asynchronous trim
    return Durable(flushed, checkpoints, options, layouts, ghosts, planted)


def _removed_snapshots(ghosts: tuple[tuple[int, Any], ...], before: PartitionState,
                       after: PartitionState) -> tuple[tuple[int, Any], ...]:
    """Kafka mode (DUR-29): the snapshot files `before` had and `after` lacks join the ghosts
    (the files a power loss may bring back: their removal was never dir-fsynced)."""
    kept = after.producer_state.snapshots
    gone = tuple(f for f in before.producer_state.snapshots if f not in kept)
    return tuple(dict.fromkeys((*ghosts, *gone)))[-_MAX_GHOSTS:]


def durable_after(state: PartitionState, checkpoints: Checkpoints,
                  before: Durable | None = None, fault: FaultModel | None = None,
                  mode: CrashMode = CrashMode.STRICT,
                  on_disk: tuple[Segment, ...] = (), planted: bool = False) -> Durable:
    """After a crash and load: everything on disk is durable (it is what the crash left); the
    root checkpoint files keep their content, the epoch file holds the loaded cache (KL-CRASH-7).

    Kafka mode after a process crash (GAP-4, DUR-25): recovery fsyncs nothing, so what it served
    from the page cache is durable only up to the frontier `before` had, the epoch file may
    still hold what it held before the crash, and the layout on disk before the crash
    (`on_disk`, whose cuts and removals recovery never made durable) may come back like the
    layouts `before` kept (GAP-1, GAP-2). After a power loss in kafka mode the image the
    crash left is durable but recovery's cuts of it are not, so that image (`on_disk`) may
    come back too. `planted`: `on_disk` is a planted image whose last segment the load emptied
    (planted.py); it stays one a load empties again.
    """
    marked = (on_disk[-1],) if planted and on_disk and mode is CrashMode.KAFKA else ()
    # The load's lowering of a cleaner checkpoint above the LEO is durable (KL-CRASH-15).
    checkpoints = replace(checkpoints, cleaner=state.cleaner_file_entry,
                          cleaner_floor=state.cleaner_floor)
    if mode is CrashMode.KAFKA and fault is FaultModel.PROCESS_CRASH and before is not None:
        mixed = _removals_undone(on_disk, state.segments)
        layouts = tuple(dict.fromkeys((*before.layouts, *((on_disk,) if on_disk else ()),
                                       *((mixed,) if mixed else ()))))
        return Durable(flushed=min(before.flushed, state.log_end_offset),
                       checkpoints=checkpoints,
                       epoch_options=tuple(dict.fromkeys((state.epochs,
                                                          *before.epoch_options))),
                       layouts=layouts[-_MAX_LAYOUTS:], ghosts=before.ghosts,
                       planted=tuple(dict.fromkeys((*before.planted, *marked)))[-_MAX_LAYOUTS:])
    if mode is CrashMode.KAFKA and _batches_of(on_disk) != _batches_of(state.segments):
        # GAP-4 after a power loss too: what the crash left is durable, recovery's cuts of it
        # are not; the image may come back (a prefix of it at or above F, like any layout).
        return Durable(flushed=state.log_end_offset, checkpoints=checkpoints,
                       epoch_options=(state.epochs,), layouts=(on_disk,), planted=marked)
    return Durable(flushed=state.log_end_offset, checkpoints=checkpoints,
                   epoch_options=(state.epochs,))


def _removals_undone(on_disk: tuple[Segment, ...],
                     loaded: tuple[Segment, ...]) -> tuple[Segment, ...]:
    """The loaded segments with the ones the load removed back (FLT-5 WEAK: its new files'
    entries kept, its unlinks and renames lost), when they do not overlap; else ()."""
    bases = {s.base_offset for s in loaded}
    back = [s for s in on_disk if s.base_offset not in bases]
    if not on_disk or not back:
        return ()
    mixed = tuple(sorted((*loaded, *back), key=lambda s: s.base_offset))
    if any(a.next_offset > b.base_offset for a, b in zip(mixed, mixed[1:], strict=False)):
        return ()  # overlapping segments: not a state of the model (KL-CRASH-3)
    return mixed


def _batches_of(segments: tuple[Segment, ...]) -> list[Any]:
    """Each batch's offsets and size, in log order: whether recovery cut anything."""
    return [(b.base_offset, b.last_offset, b.size) for s in segments for b in s.batches]


# --- the allowed set ---------------------------------------------------------------------------


def _cut(segment: Segment, count: int) -> Segment:
    """The segment with its first `count` batches (a batch-aligned valid prefix)."""
    kept = segment.batches[:count]
    return replace(segment, batches=kept, size=sum(b.size for b in kept))


def _layouts_after_power_loss(segments: tuple[Segment, ...],
                              flushed: int) -> Iterator[tuple[Segment, ...]]:
    """KL-CRASH-2 (CRP-6): every batch-aligned prefix ending at or above F.

    Segments below the one holding F survive whole. From there on, a layout is a prefix of the
    segments, the last one cut after any number of its batches (ending at or above F) or gone
    entirely when its directory entry was not durable.
    """
    start = max(floor_index([s.base_offset for s in segments], flushed), 0)
    if start > 0 and segments[start].base_offset >= flushed:
        yield segments[:start]  # the segment F starts was created but its entry not durable
    for i in range(start, len(segments)):
        if i > start:
            yield segments[:i]
        segment = segments[i]
        for count in range(len(segment.batches) + 1):
            # A cut loses only batches from the first one dropped on: it is allowed when that
            # batch starts at or above F. Its start, not the kept end, decides: after a
            # truncation inside a batch the LEO (and F) can sit above the kept end (SEG-14).
            if i > start or count == len(segment.batches) or \
                    segment.batches[count].base_offset >= flushed:
                yield (*segments[:i], _cut(segment, count))


def _surviving_layouts(state: PartitionState, durable: Durable, fault: FaultModel,
                       mode: CrashMode) -> list[tuple[Segment, ...]]:
    if fault is FaultModel.PROCESS_CRASH:
        return [state.segments]  # FLT-1: every completed operation persists
    found: list[tuple[Segment, ...]] = []
    sources = [state.segments]
    if mode is CrashMode.KAFKA:
        sources += list(durable.layouts)  # GAP-1, GAP-2: removals that were never durable
    for source in sources:
        for layout in _layouts_after_power_loss(source, durable.flushed):
            if layout and layout not in found:
                found.append(layout)
    return found


def _touched_variants(layout: tuple[Segment, ...],
                      state: PartitionState) -> list[frozenset[int]]:
    """Whether recovery cut the last segment's `.log` (a torn tail) or found it whole.

    A cut stamps the segment's last-modified time (RCV-6 step 4), which only time retention of
    a segment without timestamps can observe (SEG-19); both are legal after a power loss or
    with a torn tail left behind (KL-CRASH-9).
    """
    if not layout:
        return [frozenset()]
    last = layout[-1]
    if last.batches_max_timestamp_and_offset[0] >= 0:
        return [frozenset()]
    return [frozenset(), frozenset({last.base_offset})]


@dataclass(frozen=True)
class LoadFailure:
    """A member of an allowed set that is no log: the load after the crash fails with the
    typed error `code` (KL-CRASH-13). Kafka's unclean load replays each recovered segment's
    batches into a temporary producer-state manager (PSR-7); an error that replay raises is
    caught neither by `LogSegment.recover` nor by `LogLoader.recoverLog`, so the log does not
    load. `message` says where, for the report; members compare on both."""

    code: str
    message: str


Outcome = tuple[PartitionState, Durable] | LoadFailure


def _snapshot_options(state: PartitionState, mode: CrashMode = CrashMode.STRICT,
                      ghosts: tuple[tuple[int, Any], ...] = (),
                      listed: frozenset[int] | None = None
                      ) -> list[tuple[tuple[int, Any], ...]]:
    """The producer snapshot files a crash may leave (KL-CRASH-11): any prefix of the list; in
    kafka mode also the list without any one file, and the list with removed files back (no
    snapshot removal is ever dir-fsynced, DUR-29).

    A power loss keeps or undoes each file's unsynced directory operations independently of the
    others' (FLT-5), so any subset of the removed files may come back: too many sets to load
    each. Without `listed`, the set offers any one of the newest four back, or all. `listed`
    (the files a recovered state lists, TornClues.snapshots) picks the subset: a removed file
    the load kept is listed, so those listed come back together, with any one unlisted beside
    them (the load deletes unlisted ones as strays or above its recovery, but one may still be
    the newest file its rebuild reads first, PSR-5)."""
    snapshots = state.producer_state.snapshots
    options = surviving_snapshots(snapshots)
    if mode is CrashMode.KAFKA:
        options += [snapshots[:i] + snapshots[i + 1:] for i in range(len(snapshots))]
        taken = {offset for offset, _ in snapshots}
        back = tuple(g for g in ghosts if g[0] not in taken)
        for extra in _ghosts_back(back, listed):
            options.append(tuple(sorted((*snapshots, *extra), key=lambda f: f[0])))
    return list(dict.fromkeys(options))


def _ghosts_back(back: tuple[tuple[int, Any], ...], listed: frozenset[int] | None
                 ) -> list[tuple[tuple[int, Any], ...]]:
    """The sets of removed snapshot files `_snapshot_options` brings back (none empty)."""
    if listed is None:
        alone = back[-_GHOSTS_ALONE:]
        return [*((g,) for g in alone), *((back,) if len(back) > 1 else ())]
    kept = tuple(g for g in back if g[0] in listed)
    sets = [kept, *((*kept, g) for g in back if g[0] not in listed)]
    return [tuple(sorted(s, key=lambda f: f[0])) for s in sets if s]


def _recovery_variants(layout: tuple[Segment, ...], state: PartitionState, offsets_back: bool,
                       planted: tuple[Segment, ...] = ()
                       ) -> list[tuple[frozenset[int], int | None]]:
    """(segments whose `.log` recovery cut, the segment recovery must empty or None).

    With offsets going back planted (KL-CRASH-9, RCV-6), the last segment may be emptied: an
    offset-index append during its rebuild meets an offset not above the last (InvalidOffsetError,
    which Kafka's LogLoader.recoverLog catches: `segment.truncateTo(baseOffset)`). They are
    planted by this crash (`offsets_back`), or (kafka mode) a power loss brought back whole a
    planted image an earlier load emptied without an fsync (`planted`, planted.py).
    """
    out: list[tuple[frozenset[int], int | None]] = [
        (touched, None) for touched in _touched_variants(layout, state)]
    if layout and (offsets_back or empties_again(layout, planted)):
        out.append((frozenset({layout[-1].base_offset}), layout[-1].base_offset))
    return out


def crash_states(state: PartitionState, durable: Durable, fault: FaultModel,
                 mode: CrashMode = CrashMode.STRICT,
                 extra_layouts: tuple[tuple[Segment, ...], ...] = (),
                 offsets_back: bool = False,
                 clues: TornClues | None = None) -> tuple[Outcome, ...]:
    """Every state a crash after the last completed action, then a load, may leave.

    Spec: KL-CRASH-1, KL-CRASH-2, KL-CRASH-5, KL-CRASH-6, KL-CRASH-7, KL-ALLOW-10. Checkpoints
    keep their durable content (the in-memory recovery point, LSO and HW are lost, GAP-12); the
    load is
    unclean (the marker was consumed when the log was opened). `offsets_back`: CRC-valid
    batches whose offsets go back were planted after the last segment's data (KL-CRASH-9);
    recovery empties that segment when it reaches them, or cuts earlier at a torn batch. Kafka
    mode, torn power loss: a header torn between two batches at one position (KL-ALLOW-10),
    with `clues` also the garbage-page headers the recovered state shows (torn.py).
    """
    layouts = _surviving_layouts(state, durable, fault, mode)
    for extra in extra_layouts:  # intermediate layouts lose unsynced data like the others
        more = ([extra] if not extra or fault is FaultModel.PROCESS_CRASH
                else list(_layouts_after_power_loss(extra, durable.flushed)))
        layouts += [layout for layout in more if layout not in layouts]
    out: dict[Outcome, None] = {}
    sources = (state.segments, *(durable.layouts if mode is CrashMode.KAFKA else ()),
               *extra_layouts)
    if mode is CrashMode.KAFKA and fault is FaultModel.POWER_LOSS_TORN:
        layouts += torn_header_layouts(layouts, sources, clues)  # KL-ALLOW-10
    for layout in layouts:
        beyond = _beyond_cut(layout, sources)
        for epochs in durable.epoch_options:
            checkpoints = replace(durable.checkpoints, epochs=epochs)
            for touched, unreadable in _recovery_variants(layout, state, offsets_back,
                                                          durable.planted):
                # Snapshot files are written at a roll without an fsync (DUR-29): the newest may
                # be there or not; the load rebuilds from whatever is (KL-PROD-12).
                for snapshots in _snapshot_options(state, mode, durable.ghosts,
                                                   clues.snapshots if clues else None):
                    for recovered in _recoveries(mode, layout, checkpoints, state, touched,
                                                 snapshots, beyond, unreadable):
                        if isinstance(recovered, LoadFailure):  # KL-CRASH-13: the load fails
                            out.setdefault(recovered, None)
                            continue
                        # KL-ALLOW-5: every way the load may treat the segments its cut removed.
                        options = ([o.value for o in outcomes(defer_cut_deletion, *recovered)]
                                   if recovered[1] else [recovered[0]])
                        # Kafka mode: the emptied segment's planted batches may come back.
                        on_disk = with_planted(layout, unreadable,
                                               state.config.index_interval_bytes,
                                               durable.planted)
                        for loaded in options:
                            out.setdefault((loaded, durable_after(
                                loaded, checkpoints, durable, fault, mode, on_disk,
                                planted=unreadable is not None)), None)
    return tuple(out)


def _recoveries(mode: CrashMode, layout: tuple[Segment, ...], checkpoints: Checkpoints,
                state: PartitionState, touched: frozenset[int],
                snapshots: tuple[tuple[int, Any], ...], beyond: tuple[Segment, ...],
                unreadable: int | None) -> list[Any]:
    """`recover_unclean`'s result, or the LoadFailure it raised: kafkalog's load, and in kafka
    mode also Kafka's, which keeps the checkpointed epoch cache (KL-ALLOW-8), starts its
    producer recovery passes at the log-start checkpoint (KL-ALLOW-9) and keeps a cleaner entry
    above the loaded LEO (KL-ALLOW-11).
    Spec: KL-ALLOW-8, KL-ALLOW-9, KL-ALLOW-11"""
    return list(_loads(mode, layout, checkpoints, state.config, state.now_ms, touched,
                       snapshots, beyond, unreadable))


@functools.lru_cache(maxsize=4096)
def _loads(mode: CrashMode, layout: tuple[Segment, ...], checkpoints: Checkpoints,
           config: LogConfig, now_ms: int, touched: frozenset[int],
           snapshots: tuple[tuple[int, Any], ...], beyond: tuple[Segment, ...],
           unreadable: int | None) -> tuple[Any, ...]:
    """`_recoveries` of one image, remembered: a crash set meets the same image under many
    durable variants (checkpoints mixed old and new, epoch files, ghosts), and a load is a
    pure function of the image."""
    out: list[Any] = []
    for walk in (False, True) if mode is CrashMode.KAFKA else (False,):
        recovered: Any
        try:
            recovered = recover_unclean(layout, checkpoints, config, now_ms, touched,
                                        snapshots, beyond, unreadable, kafka_walk=walk,
                                        kafka_producers=walk, kafka_cleaner=walk)
        except KafkalogError as error:
            recovered = LoadFailure(error.code, error.message)
        if recovered not in out:
            out.append(recovered)
    return tuple(out)


def _beyond_cut(layout: tuple[Segment, ...],
                sources: tuple[tuple[Segment, ...], ...]) -> tuple[Segment, ...]:
    """The segments after the layout's end that may still be on disk (KL-ALLOW-5): when the
    layout's last segment lost batches of the segment layout it came from (the log's, or one a
    kafka-mode crash may resurrect), recovery's cut of its torn tail (RCV-6) removes them."""
    if not layout:
        return ()
    last = layout[-1]
    for segments in sources:
        source = next((s for s in segments if s.base_offset == last.base_offset), None)
        if source is not None and len(last.batches) < len(source.batches) \
                and source.batches[: len(last.batches)] == last.batches:
            return tuple(s for s in segments if s.base_offset > last.base_offset)
    return ()


def crash_allows(candidates: tuple[Outcome, ...], recovered: LogStateView | str) -> bool:
    """CRP-1: the recovered observable state is the view of some state of the allowed set; a
    load that failed (`recovered` is its error code) must be one the set has (KL-CRASH-13).

    Spec: KL-CRASH-1, KL-CRASH-13.
    """
    if isinstance(recovered, str):
        return recovered in load_failures(candidates)
    return any(view(o[0]) == recovered for o in loaded_outcomes(candidates))


def loaded_outcomes(candidates: tuple[Outcome, ...]
                    ) -> tuple[tuple[PartitionState, Durable], ...]:
    """The members of an allowed set where the load succeeded (the states to continue from)."""
    return tuple(o for o in candidates if not isinstance(o, LoadFailure))


def load_failures(candidates: tuple[Outcome, ...]) -> frozenset[str]:
    """The error codes with which the load after the crash may fail (KL-CRASH-13).

    Spec: KL-CRASH-13.
    """
    return frozenset(o.code for o in candidates if isinstance(o, LoadFailure))
