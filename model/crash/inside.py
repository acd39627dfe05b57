"""A crash inside an action (KL-CRASH-8): the allowed set is that of the log before or after it.

`crash_between` widens `crash.crash_states` with the intermediate segment layouts an action that
removes segments may leave (retention oldest first, kafkalog's truncations highest first,
Kafka's lowest first, Kafka's roll onto the empty active segment's base, KL-ALLOW-6) and with
either content of each checkpoint file (CRP-8).
Pure and stdlib-only like the rest of the model.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from ..crash.cleaning import crash_inside_clean
from ..crash.crash import (
    TRUNCATIONS,
    CrashMode,
    Durable,
    FaultModel,
    LoadFailure,
    Outcome,
    crash_states,
    durable_after,
)
from ..crash.torn import TornClues
from ..recovery import Checkpoints
from ..state import PartitionState, Segment

__all__ = ["crash_between"]


def crash_between(before: PartitionState, durable_before: Durable, after: PartitionState,
                  durable_after_action: Durable, action: str, fault: FaultModel,
                  mode: CrashMode = CrashMode.STRICT,
                  offsets_back: bool = False,
                  clues: TornClues | None = None) -> tuple[Outcome, ...]:
    """A crash inside `action`: a state of the allowed set of the log before or after it.

    Spec: KL-CRASH-8, KL-ALLOW-6. Data durable before the action and not removed by it stays (F
    is the lower of the two); each checkpoint is its old or its new content (CRP-8). A crash
    inside a clean shutdown may also leave the cleanly reopened log (the marker was durable,
    CRP-14). A crash inside a roll onto the empty active segment's base may leave the log
    without that segment (KL-ALLOW-6). A crash inside a cleaning pass: KL-CRASH-15
    (cleaning.py). `clues`: as for `crash_states` (KL-ALLOW-10).
    """
    if action == "clean":
        return crash_inside_clean(before, durable_before, after, fault, mode, offsets_back)
    low = min(durable_before.flushed, durable_after_action.flushed)
    # What a kafka-mode process crash inside the action leaves on disk: the layouts an earlier
    # unsynced cut may bring back stay possible, as after a crash between actions (GAP-1).
    on_disk = Durable(low, durable_after_action.checkpoints,
                      tuple(dict.fromkeys((*durable_after_action.epoch_options,
                                           *durable_before.epoch_options))),
                      tuple(dict.fromkeys(durable_before.layouts + durable_after_action.layouts)),
                      tuple(dict.fromkeys(durable_before.ghosts + durable_after_action.ghosts)),
                      tuple(dict.fromkeys(durable_before.planted + durable_after_action.planted)))
    process = fault is FaultModel.PROCESS_CRASH
    removing = action in TRUNCATIONS or action == "delete_old_segments"
    if fault is FaultModel.PROCESS_CRASH:
        # FLT-1: what the action had not written yet is all a process crash can lose: the
        # prefixes from there, as a power loss with that frontier would leave them. An action
        # that removes segments may have removed any of them already.
        if not removing:
            low = max(low, min(before.log_end_offset, after.log_end_offset))
        fault = FaultModel.POWER_LOSS
    # A full truncation (also inside truncate_to) removes the old segments before it creates
    # the new one (LOC-9), and removes them highest first; an
    # action that rolls and then removes (retention, KL-RET-6) may stop between the two.
    fully = action == "truncate_fully_and_start_at" or (
        action == "truncate_to"
        and after.segments[0].base_offset not in {s.base_offset for s in before.segments})
    extra: tuple[tuple[Segment, ...], ...] = ((),) if fully else ()
    rolled = tuple(s for s in after.segments if s.base_offset > before.active.base_offset)
    union = (*before.segments, *rolled)
    # Retention removes the oldest segments one by one (LOC-11): any number of them may be gone.
    removed = sum(1 for s in before.segments if s.base_offset < after.segments[0].base_offset)
    for k in range(removed + 1):
        for layout in (union[k:], before.segments[k:]):
            if layout and layout not in (before.segments, after.segments):
                extra = (*extra, layout)
    if _replaced_active(before, after):
        # KL-ALLOW-6: Kafka renames the empty active segment's files `.deleted` before it
        # creates the new ones at the same base (LocalLog.createAndDeleteSegment); a crash
        # between the two leaves the log without that base.
        extra = (*extra, before.segments[:-1])
    if action in TRUNCATIONS:
        # Removed highest first: any number of the top segments may be gone already.
        for k in range(1, len(before.segments)):
            layout = before.segments[:k]
            if fully or layout[-1].next_offset >= after.log_end_offset:
                extra = (*extra, layout)
        if mode is CrashMode.KAFKA:
            extra = (*extra, *_lowest_removed_first(before, after, fully))
            # ... and over a layout an earlier unsynced truncation may bring back (GAP-1).
            cut_from = 0 if fully else len(after.segments)
            extra = (*extra, *_partly_retained(durable_before.layouts,
                                               before.segments[cut_from:]))
    elif mode is CrashMode.KAFKA and removed:
        extra = (*extra, *_partly_retained(durable_before.layouts, before.segments[:removed]))
    out: dict[Outcome, None] = {}
    if action == "close_and_reopen":
        out[(after, durable_after_action)] = None
    options = tuple(dict.fromkeys(
        (*durable_after_action.epoch_options, *durable_before.epoch_options)))
    # A truncation's snapshot deletions come after its cut: the after-state's layout alone.
    pending = tuple((s, ()) for s in _snapshot_deletions_pending(before, after, action))
    for state, layouts in ((after, extra), *pending, (before, extra)):
        for checkpoints in _mixed(durable_before.checkpoints, durable_after_action.checkpoints):
            merged = Durable(low, checkpoints, options,
                             durable_before.layouts + durable_after_action.layouts,
                             tuple(dict.fromkeys(durable_before.ghosts
                                                 + durable_after_action.ghosts)),
                             tuple(dict.fromkeys(durable_before.planted
                                                 + durable_after_action.planted)))
            for outcome in crash_states(state, merged, fault, mode, layouts, offsets_back, clues):
                if process and mode is CrashMode.KAFKA and not isinstance(outcome, LoadFailure):
                    # GAP-4: the page cache survived; the disk only has what was durable.
                    loaded, after_load = outcome
                    outcome = (loaded, durable_after(loaded, after_load.checkpoints, on_disk,
                                                     FaultModel.PROCESS_CRASH, mode,
                                                     state.segments))
                out.setdefault(outcome, None)
    return tuple(out)


def _snapshot_deletions_pending(before: PartitionState, after: PartitionState,
                                action: str) -> tuple[PartitionState, ...]:
    """A truncation cuts the log first and deletes producer snapshots afterwards (Kafka's
    `UnifiedLog.truncateTo`: `localLog.truncateTo`, then `rebuildProducerState`, whose
    `truncateAndReload` deletes every snapshot above the target or at or below the log start,
    PSR-4; `truncateFullyAndStartAt` likewise, PSR-11; kafkalog keeps that order). A crash
    between leaves the truncated log with snapshot files the after-state no longer has; they
    go in ascending order, so any suffix of them may be left.

    Spec: KL-CRASH-8, KL-CRASH-11.
    """
    if action not in TRUNCATIONS:
        return ()
    kept = after.producer_state.snapshots
    taken = {offset for offset, _ in kept}
    doomed = tuple(f for f in before.producer_state.snapshots if f[0] not in taken)
    return tuple(
        replace(after, producer_state=replace(
            after.producer_state,
            snapshots=tuple(sorted((*doomed[k:], *kept), key=lambda f: f[0]))))
        for k in range(len(doomed)))


def _replaced_active(before: PartitionState, after: PartitionState) -> bool:
    """Whether the action replaced the empty active segment by a fresh one at its base (KL-ROLL-6,
    also inside an append or a retention pass that rolls): the base stays in the log and a
    deletion timer for it was scheduled.

    Spec: KL-ALLOW-6.
    """
    base = before.active.base_offset
    scheduled = Counter(after.deletion_timers) - Counter(before.deletion_timers)
    return (before.active.size == 0 and any(b == base for _, b in scheduled)
            and any(s.base_offset == base for s in after.segments))


def _lowest_removed_first(before: PartitionState, after: PartitionState,
                          fully: bool) -> tuple[tuple[Segment, ...], ...]:
    """Kafka mode, a crash inside a truncation: the layouts with the lowest removed segments
    gone and the later ones still whole (a hole in the offsets).

    Kafka renames the segments a truncation removes `.deleted` in base order, lowest first
    (`LocalLog.truncateTo` and `truncateFullyAndStartAt` through `deleteSegmentFiles`), and
    cuts the segment it keeps only afterwards (DUR-20, DUR-23); kafkalog removes them highest
    first. The loader checks no layout (RCV-14), so the hole is served.

    Spec: KL-CRASH-8.
    """
    kept = 0 if fully else len(after.segments)
    return tuple((*before.segments[:kept], *before.segments[kept + k:])
                 for k in range(1, len(before.segments) - kept))


def _partly_retained(layouts: tuple[tuple[Segment, ...], ...],
                     removed: tuple[Segment, ...]) -> tuple[tuple[Segment, ...], ...]:
    """Kafka mode, a crash inside retention or a truncation: the layouts an earlier truncation
    may resurrect (GAP-1) with the first k of the segments the action removes gone, lowest
    first (retention LOC-11, truncation `LocalLog.truncateTo`), as `observe` applies a
    completed retention to them (e.g. segment 0 removed, segment 2 kept, segment 3 holding the
    batch an unsynced truncation had cut; or a second truncation's lowest removed segment gone,
    the next one back whole because the first truncation's cut of it was never synced).

    Spec: KL-CRASH-8.
    """
    out: dict[tuple[Segment, ...], None] = {}
    for k in range(1, len(removed) + 1):
        gone = {s.base_offset for s in removed[:k]}
        for layout in layouts:
            kept = tuple(s for s in layout if s.base_offset not in gone)
            if kept and kept != layout:
                out.setdefault(kept, None)
    return tuple(out)


def _mixed(old: Checkpoints, new: Checkpoints) -> list[Checkpoints]:
    """CRP-8: each checkpoint file is its old or its new content, independently of the others
    (the cleaner checkpoint too: a truncation lowers it after its cut, CLN-68)."""
    out: dict[Checkpoints, None] = {}
    floor = max(old.cleaner_floor, new.cleaner_floor)  # the narrower KL-INV-19 range holds
    for rp in {old.recovery_point, new.recovery_point}:
        for lso in {old.log_start, new.log_start}:
            for hw in {old.high_watermark, new.high_watermark}:
                for cleaner in dict.fromkeys((old.cleaner, new.cleaner)):
                    out.setdefault(Checkpoints(rp, lso, hw, new.epochs, cleaner, floor), None)
    return list(out)
