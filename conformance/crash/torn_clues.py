"""What a recovered state shows of a batch header a garbage page tore (KL-ALLOW-10).

A torn power loss in kafka mode may leave, where two batches with the same CRC-covered bytes
met at one position, a header whose differing bytes are random (FLT-10 L-garbage). No finite set
holds every such header, so when a recovered state is outside the model's set the checker asks
the model again with the numbers that state shows (model/crash/torn.py `TornClues`): the model
tries only the headers those numbers imply and agree with both batches where the two agree, and
the recovered state conforms only if the model's own recovery of one of them is that state.
"""

from __future__ import annotations

import re

from kafkalog.model import values as v
from kafkalog.model.crash.torn import TornClues

__all__ = ["TORN_FAULT", "clues_of_error", "clues_of_view"]

#: The only fault that mixes two batches' bytes within a page (FLT-7).
TORN_FAULT = "power_loss_torn"

#: A load that failed on a batch outside its segment's range (LogSegment._ensure_offset_in_range).
_OVERFLOW = re.compile(r"Detected offset overflow at offset (-?\d+) in segment")


def clues_of_view(view: v.LogStateView) -> TornClues:
    """Where the recovered segments end, where its epochs and cached producer batches start,
    the offsets its indexes and cached batches name as last, and its epochs."""
    ends = {view.log_end_offset, *(s.next_offset for s in view.segments)}
    starts = {e.start_offset for e in view.epoch_entries}
    lasts: set[int] = set()
    for segment in view.segments:
        lasts.update(offset for offset, _ in segment.offset_index or ())
        lasts.update(offset for _, offset in segment.time_index or ())
    for producer in view.producers or ():
        for batch in producer.batches:
            starts.add(batch.first_offset)
            lasts.add(batch.last_offset)
    snapshots = (None if view.producer_snapshots is None
                 else frozenset(view.producer_snapshots))
    return TornClues(frozenset(ends), frozenset(starts), frozenset(lasts),
                     frozenset(e.epoch for e in view.epoch_entries), snapshots)


def clues_of_error(error: str) -> TornClues | None:
    """The offset a load that failed on a batch outside its segment's range names (a base or a
    last offset), or None for any other failure."""
    found = _OVERFLOW.search(error)
    if found is None:
        return None
    offset = int(found[1])
    return TornClues(starts=frozenset({offset}), lasts=frozenset({offset}))
