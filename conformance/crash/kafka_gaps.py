"""Kafka-mode crash outcomes the model does not enumerate, by name (specs/log.md KL-CRASH-3).

`kafkalog check --crash-mode kafka` holds kafkalog's implementation with Kafka's fsync choices
put back (conformance/broken/kafka_durability.py) to the model's kafka allowed set. A few
outcomes Kafka really reaches are left out of that set on purpose: they need bytes the model
never wrote (a torn epoch or base offset from a garbage page, planted corruption torn into
later data, a stale `.swap` copy) or files a planted swap's undone renames lose (a time index).
A torn header's garbage page is held by construction first (KL-ALLOW-10, torn_clues.py); the
`resurrected_batch_*` names are left for one the recovered state's clues do not reconstruct.
A divergence that is one of them is reported as `crash.outside_kafka_set.<name>`, so it reads
as a known gap, not as an unexplained too-narrow set; the run still stops there (the model
cannot continue from it).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from kafkalog.model import values as v

__all__ = ["CAMPAIGN_UNPLANTED", "KAFKA_GAPS", "diverse_first", "kafka_gap", "kafka_load_gap",
           "leftovers_at_risk"]

KAFKA_GAPS: dict[str, str] = {
    "resurrected_batch_epoch": (
        "GAP-4, GAP-1 L-weak: a power loss undid an unsynced recovery cut under a later "
        "unsynced append at the same offsets; the old batch is back, and its partition leader "
        "epoch, which the batch CRC excludes (FLT-8), is a value no page choice the model "
        "enumerates gives (KL-ALLOW-10 holds old, new and zeroed pages; a garbage page is "
        "random bytes): only the epoch cache differs"),
    "resurrected_batch_offset": (
        "GAP-4, GAP-1 L-weak, FLT-8, GAP-11: as resurrected_batch_epoch, for the base offset, "
        "which the batch CRC excludes too: an old and a new batch of the same length and CRC-"
        "covered bytes at one position, torn with a garbage page, leave a CRC-valid batch whose "
        "offsets are neither (the last segment's bytes are the member's, its offsets are not)"),
    "resurrected_batch_below_base": (
        "GAP-1 L-weak, GAP-11, FLT-8, RCV-6: as resurrected_batch_offset, but the garbage "
        "base offset falls below its segment's base: recovery's range check (SEG-2) throws "
        "LogSegmentOffsetOverflowException, retryOnOffsetOverflow hands the "
        "segment to splitOverflowedSegment, whose precondition (hasOverflow: a last offset "
        "above base + Int.MAX) fails with IllegalArgumentException, and Kafka's load fails, "
        "as kafkalog's does (no split, LOC-15); the model's set holds that failure for old, "
        "new and zeroed header pages (KL-ALLOW-10), not for garbage ones"),
    "planted_batches_back": (
        "GAP-4, GAP-6, FLT-8: an earlier crash planted CRC-valid batches whose offsets go back "
        "(leftover offsets_back); the load emptied their segment (RCV-6) without an fsync, and "
        "a later power loss undid that cut: the planted batches, which the log never appended, "
        "are recovered as data in a way the kafka set does not hold (it holds them back as a "
        "valid prefix of the image the load emptied, model/crash/planted.py; e.g. a torn page "
        "mixing them with later appends is left)"),
    "swap_back": (
        "GAP-3, GAP-4, RCV-3, RCV-4: an earlier crash planted an unfinished split (leftover "
        "cleaned_swap); the load unlinked its `.cleaned` and `.swap` files without a directory "
        "fsync, and a later power loss kept the `.cleaned` unlink but undid the `.swap` one: "
        "the next load completes that swap of a stale copy (RCV-4) and reads it, failing on "
        "its torn bytes"),
    "swap_index_lost": (
        "GAP-3, GAP-4, RCV-4, FLT-5: an earlier crash planted a finished swap whose renames it "
        "interrupted (leftover swap_completed); the load completed it (unlinked the segment's "
        "files, renamed the `.swap` copies in) without a directory fsync, and a later power "
        "loss kept an index's unlink and rename but undid the `.log`'s: the next load completes "
        "the swap again and deletes the index already renamed in, and a segment below the "
        "recovery point loads with an empty time index (Kafka's sanityCheck resizes a new one "
        "to 0; nothing rebuilds it)"),
}

#: Leftovers (KL-CRASH-9) whose clean-up by a kafka-mode load a later power loss may undo,
#: and the gap each then leads to.
_LEFTOVER_GAPS = {"offsets_back": "planted_batches_back", "cleaned_swap": "swap_back",
                  "swap_completed": "swap_index_lost"}

#: Leftovers the default campaign's kafka-mode runs do not plant (campaign/task.py): a later
#: power loss turns their kafka-mode clean-up into a named gap the model cannot hold (a stale
#: `.swap` copy read, a time index a redone swap deleted), so a run that planted them would
#: stop at a known gap rather than check on. `check --crash-mode kafka` still plants them.
#: `offsets_back` stays: the kafka set holds its batches back (model/crash/planted.py).
CAMPAIGN_UNPLANTED = frozenset({"cleaned_swap", "swap_completed"})


def leftovers_at_risk(mode: Any, leftover: str) -> frozenset[str]:
    """The gap names a crash step's planted `leftover` may later lead to (kafka mode only)."""
    if str(mode) != "kafka" or leftover not in _LEFTOVER_GAPS:
        return frozenset()
    return frozenset({_LEFTOVER_GAPS[leftover]})


def kafka_gap(mode: Any, allowed: list[v.LogStateView], recovered: v.LogStateView,
              at_risk: frozenset[str] = frozenset()) -> str | None:
    """The name of the known kafka-mode gap `recovered` falls in, or None (strict mode: never).

    `resurrected_batch_epoch`: some allowed state is
    `recovered` but for the epoch cache, so the batches, offsets and segments are Kafka's.
    `planted_batches_back`: batches were planted earlier in the example
    (`at_risk`), and some allowed state has the recovered segments up to one whose base is the
    same but which holds fewer bytes and offsets than the recovered one, with the same time
    index and epoch cache (the planted batches, timeless and epochless, are the rest).
    `resurrected_batch_offset`: some allowed state has
    the recovered log start and segments but for the last one's offsets, whose base and size
    are the same (a torn base-offset field; the epoch cache, indexes and LEO follow it).
    `swap_index_lost`: a finished swap was planted earlier (`at_risk`), and some allowed state
    is `recovered` but for the empty time index of segments before the last.
    """
    if str(mode) != "kafka":
        return None
    if any(replace(m, epoch_entries=recovered.epoch_entries) == recovered for m in allowed):
        return "resurrected_batch_epoch"
    if "planted_batches_back" in at_risk and any(_grown(m, recovered) for m in allowed):
        return "planted_batches_back"
    if any(_reoffset(m, recovered) for m in allowed):
        return "resurrected_batch_offset"
    if "swap_index_lost" in at_risk and any(_time_index_lost(m, recovered) for m in allowed):
        return "swap_index_lost"
    return None


#: The implementation's LogSegmentOffsetOverflowError (LogSegment._ensure_offset_in_range).
_OVERFLOW = re.compile(r"LogSegmentOffsetOverflowError: Detected offset overflow at offset "
                       r"(-?\d+) in segment with base offset (-?\d+)")


def kafka_load_gap(mode: Any, error: str, at_risk: frozenset[str],
                   fault: str = "") -> str | None:
    """The known kafka-mode gap a failed load (`error`, the implementation's description)
    falls in, or None: `swap_back` when a `.swap` was planted earlier and the load failed
    reading a `.swap` file; `resurrected_batch_below_base` when a torn power loss (`fault`,
    the only fault that mixes two batches' bytes) left a batch below its segment's base."""
    if str(mode) != "kafka":
        return None
    if "swap_back" in at_risk and ".swap@" in error:
        return "swap_back"
    overflow = _OVERFLOW.search(error)
    if fault == "power_loss_torn" and overflow and int(overflow[1]) < int(overflow[2]):
        return "resurrected_batch_below_base"
    return None


def _grown(member: v.LogStateView, recovered: v.LogStateView) -> bool:
    """`recovered` has `member`'s segments up to one with the same base, more bytes and no
    fewer offsets (a planted batch may repeat one), but the same time index, and `member`'s
    epoch cache: planted batches carry no timestamp and no leader epoch (impl_sut.py
    `_offsets_back`)."""
    if member.epoch_entries != recovered.epoch_entries:
        return False
    for ours, theirs in zip(member.segments, recovered.segments, strict=False):
        if ours == theirs:
            continue
        return (ours.base_offset == theirs.base_offset
                and theirs.size_in_bytes > ours.size_in_bytes
                and theirs.next_offset >= ours.next_offset
                and theirs.time_index == ours.time_index)
    return False


def _reoffset(member: v.LogStateView, recovered: v.LogStateView) -> bool:
    """`recovered` is `member` but for the last segment's offsets: the same log start, the
    same segments before it, and a last segment with the same base and size that ends at
    another offset."""
    if member.log_start_offset != recovered.log_start_offset or \
            len(member.segments) != len(recovered.segments) or not member.segments:
        return False
    *ours, our_last = member.segments
    *theirs, their_last = recovered.segments
    return (ours == theirs and our_last.base_offset == their_last.base_offset
            and our_last.size_in_bytes == their_last.size_in_bytes
            and our_last.next_offset != their_last.next_offset)


def _time_index_lost(member: v.LogStateView, recovered: v.LogStateView) -> bool:
    """`recovered` is `member` but for the time index of one or more segments before the
    last, which it has empty (a swap's planted segment is never the last, impl_sut.py
    `_plant_finished_swap`)."""
    if len(member.segments) != len(recovered.segments):
        return False
    last = len(member.segments) - 1
    pairs = enumerate(zip(member.segments, recovered.segments, strict=True))
    emptied = tuple(replace(ours, time_index=()) if i < last and not theirs.time_index else ours
                    for i, (ours, theirs) in pairs)
    return emptied != member.segments and replace(member, segments=emptied) == recovered


def diverse_first(members: list[Any]) -> list[Any]:
    """The crash-set members matching the recovered view, one per distinct state and durable
    core (flushed frontier, checkpoint files, epoch-file contents) first, the rest after.

    The checker continues from the first member and keeps a few more as alternatives
    (crash_steps.py `_adopt`). Kafka mode's resurrectable layouts and snapshot files multiply the
    members that differ only there, which could push the member with the right
    recovery-point checkpoint out of the ones kept."""
    seen: set[Any] = set()
    first: list[Any] = []
    rest: list[Any] = []
    for member in members:
        state, durable = member
        key = (state, durable.flushed, durable.checkpoints, durable.epoch_options)
        (rest if key in seen else first).append(member)
        seen.add(key)
    return first + rest
