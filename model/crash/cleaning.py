"""A crash inside a cleaning pass (KL-CRASH-15): the states a pass goes through, then a load.

kafkalog's cleaner (impl/cleaner/log_cleaner.py, strict) writes each group into `.cleaned`
files, flushes them, renames them `.swap` and fsyncs the directory; only then renames the
group's old segments `.deleted` (lowest first, durably) and the `.swap` files to their plain
names. The load discards a swap that is not complete (a `.cleaned` file left, REC-2) and
completes one that is (RCV-4: every segment whose base lies in [swap base, swap next offset)
goes, then the `.swap` suffix is dropped). So a crash inside group k leaves groups before k
swapped, group k old or swapped, and when the cleaned segment ends below some of its group's
old bases (compaction removed their records), those of them whose `.deleted` rename had not
happened yet stay beside it (the swap's range does not reach them; Kafka's loader, with the
same range and the same lowest-first renames, leaves them too). The cleaner checkpoint is its
old content, the reset selection wrote (CLN-15) or, once every group is swapped, the pass's
end offset (CLN-22). Producer snapshots of a group's removed bases go after its swap; a load
removes them as strays anyway (PSR-3).

In kafka mode the same states are the pass's, under Kafka's fsync choices for everything
around it (`crash_states` in kafka mode: earlier layouts, removed snapshot files, the epoch
file's trims, loads that sync nothing). Kafka's own `replaceSegments` renames with no fsync
until its end (CLN-57), so a power loss that keeps each file's directory operations on its own
(FLT-5) may also leave overlapping segments (GAP-3) or lose a group whose `.cleaned` entries
were never durable while its old segments' `.deleted` renames were: no model state expresses
either, and kafkalog's kafka-mode variant keeps its swap syncs. A pass that returned is durable
in kafka mode too (crash.py `observe`).
Pure and stdlib-only like the rest of the model.
"""

from __future__ import annotations

from dataclasses import replace

from ..choices import outcomes
from ..cleaner.cleaner import PassStages, clean_stages
from ..crash.crash import CrashMode, Durable, FaultModel, Outcome, crash_states
from ..state import PartitionState, Segment

__all__ = ["crash_inside_clean", "pass_stages"]


def pass_stages(before: PartitionState, after: PartitionState) -> PassStages:
    """The stages of the pass that took `before` to `after` (the outcome of its choice points,
    KL-ALLOW-7, that ends in `after`); a pass without one is the two states alone."""
    for outcome in outcomes(clean_stages, before):
        if outcome.error is None and outcome.value[0].final == after:
            stages: PassStages = outcome.value[0]
            return stages
    return PassStages(before, (), after)


def _left_beside(swapped: PartitionState, group: tuple[Segment, ...]
                 ) -> list[tuple[Segment, ...]]:
    """The layouts a crash between group's swap and the last `.deleted` rename of its old
    segments may load to (RCV-4): the cleaned segment with the old segments not renamed yet
    (group[j:], lowest first) whose base is at or above its next offset (outside the swap's
    range). The first base is replaced by the swap's rename whatever its range.

    Spec: KL-CRASH-15.
    """
    base = group[0].base_offset
    index = next(i for i, s in enumerate(swapped.segments) if s.base_offset == base)
    cleaned = swapped.segments[index]
    layouts: list[tuple[Segment, ...]] = []
    for j in range(1, len(group)):
        kept = tuple(s for s in group[j:] if s.base_offset >= cleaned.next_offset)
        layout = (*swapped.segments[:index + 1], *kept, *swapped.segments[index + 1:])
        if kept and layout not in layouts:
            layouts.append(layout)
    return layouts


def _interrupted_states(stages: PassStages) -> list[PartitionState]:
    """Every log a crash before the pass's checkpoint write may leave on disk: each group's
    swap done or not (groups go one by one), with its removed bases' snapshot files still
    there or gone, and the partly renamed groups of `_left_beside`.

    Spec: KL-CRASH-15.
    """
    states = [stages.selected]
    previous = stages.selected
    for swapped, group in stages.swaps:
        pending = replace(swapped, producer_state=previous.producer_state)
        states += [swapped, pending]
        states += [replace(pending, segments=layout) for layout in _left_beside(swapped, group)]
        previous = swapped
    return list(dict.fromkeys(states))


def crash_inside_clean(before: PartitionState, durable_before: Durable, after: PartitionState,
                       fault: FaultModel, mode: CrashMode = CrashMode.STRICT,
                       offsets_back: bool = False) -> tuple[Outcome, ...]:
    """The allowed set of a crash inside the pass from `before` to `after` (both modes).

    Spec: KL-CRASH-8, KL-CRASH-15. F and the root checkpoints are those before the pass (it
    flushes only its cleaned segments, below F); the cleaner checkpoint is the old entry or the
    reset one before the last swap, and also the new one after it.
    """
    stages = pass_stages(before, after)
    early: tuple[int | None, ...] = (durable_before.checkpoints.cleaner,
                                     stages.selected.cleaner_checkpoint)
    members = [(state, early) for state in (before, *_interrupted_states(stages))]
    members.append((after, (*early, after.cleaner_checkpoint)))
    out: dict[Outcome, None] = {}
    # KL-INV-19's range is bounded by the newest floor whichever entry survives (the reset's
    # and the pass's floors are the log start then, at or above the old one).
    floor = max(durable_before.checkpoints.cleaner_floor, after.cleaner_floor)
    for state, entries in members:
        for entry in dict.fromkeys(entries):
            durable = replace(durable_before, checkpoints=replace(
                durable_before.checkpoints, cleaner=entry, cleaner_floor=floor))
            for outcome in crash_states(state, durable, fault, mode, offsets_back=offsets_back):
                out.setdefault(outcome, None)
    return tuple(out)
