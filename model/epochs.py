"""The leader-epoch cache as pure functions over a tuple of entries (EPO-1..EPO-9).

The cache is a tuple of `EpochEntry` in ascending epoch order. Every function returns a new tuple;
none mutates. Durability (synchronous vs asynchronous checkpoint writes, EPO-10) is the
implementation's concern: kafkalog writes every change synchronously (KL-EPOCH-6).

Invariant kept by every function here when it holds on entry: epochs strictly increase and start
offsets strictly increase along the tuple (LOG-2 (7)).
"""

from __future__ import annotations

from .errors import IllegalArgumentError
from .values import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, EpochEndOffset, EpochEntry

Entries = tuple[EpochEntry, ...]


def ordered(entries: Entries) -> bool:
    """EPO-1 / LOG-2 (7): epochs and start offsets both strictly increase along the tuple."""
    pairs = zip(entries, entries[1:], strict=False)
    return all(a.epoch < b.epoch and a.start_offset < b.start_offset for a, b in pairs)


def latest_epoch(entries: Entries) -> int | None:
    """The epoch of the last entry, or None for an empty cache (EPO-9).

    post: (__return__ is None) == (len(entries) == 0)
    """
    return entries[-1].epoch if entries else None


def assign(entries: Entries, epoch: int, start_offset: int) -> Entries:
    """Record that `epoch` starts at `start_offset` (EPO-2, EPO-3). Spec: KL-EPOCH-1.

    Raises IllegalArgumentError when `epoch < 0` or `start_offset < 0` (ERR-27).
    An update happens iff the cache is empty, the epoch differs from the latest, or the start
    offset is below the latest's; it first drops tail entries whose epoch >= `epoch` or whose
    start offset >= `start_offset`.

    pre: epoch >= 0 and start_offset >= 0
    pre: ordered(entries)
    post: ordered(_)
    post: __return__[-1].epoch == epoch or __return__ == entries
    """
    if epoch < 0 or start_offset < 0:
        raise IllegalArgumentError(
            f"Received invalid partition leader epoch entry (epoch={epoch}, "
            f"start_offset={start_offset})",
            where="assign_epoch",
        )
    if entries and entries[-1].epoch == epoch and start_offset >= entries[-1].start_offset:
        return entries
    kept = list(entries)
    while kept and (kept[-1].epoch >= epoch or kept[-1].start_offset >= start_offset):
        kept.pop()
    kept.append(EpochEntry(epoch, start_offset))
    return tuple(kept)


def end_offset_for(entries: Entries, requested_epoch: int, log_end_offset: int) -> EpochEndOffset:
    """The (epoch, exclusive end offset) answer of EPO-4 (KIP-279). Spec: KL-EPOCH-2.

    (-1, -1) for the undefined epoch, an empty cache, or a request above the latest epoch.

    pre: ordered(entries)
    post: __return__.epoch <= requested_epoch or __return__.epoch == -1
    post: _.end_offset in (-1, log_end_offset) or _.end_offset in [e.start_offset for e in entries]
    """
    undefined = EpochEndOffset(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
    if requested_epoch == UNDEFINED_EPOCH:
        return undefined
    if entries and entries[-1].epoch == requested_epoch:
        return EpochEndOffset(requested_epoch, log_end_offset)
    higher = next((e for e in entries if e.epoch > requested_epoch), None)
    if higher is None:
        return undefined
    floor = None
    for entry in entries:
        if entry.epoch <= requested_epoch:
            floor = entry
    if floor is None:
        return EpochEndOffset(requested_epoch, higher.start_offset)
    return EpochEndOffset(floor.epoch, higher.start_offset)


def truncate_from_end(entries: Entries, end_offset: int) -> Entries:
    """Drop tail entries starting at or after `end_offset` (EPO-6). Spec: KL-EPOCH-3.

    `end_offset < 0` does nothing.

    pre: ordered(entries)
    post: ordered(_)
    post: all(e.start_offset < end_offset for e in __return__) or end_offset < 0
    """
    if end_offset < 0 or not entries or entries[-1].start_offset < end_offset:
        return entries
    return tuple(e for e in entries if e.start_offset < end_offset)


def truncate_from_start(entries: Entries, start_offset: int) -> Entries:
    """Drop head entries starting at or before `start_offset`, keeping the last one moved (EPO-7).

    The last removed epoch is re-inserted at `start_offset`, so the cut is exclusive: the epoch
    that covers `start_offset` survives, starting exactly there. Spec: KL-EPOCH-4.

    pre: ordered(entries)
    post: ordered(_)
    post: all(e.start_offset >= start_offset for e in _)
    """
    removed = [e for e in entries if e.start_offset <= start_offset]
    if not removed:
        return entries
    kept = tuple(e for e in entries if e.start_offset > start_offset)
    return (EpochEntry(removed[-1].epoch, start_offset), *kept)


def epoch_for_offset(entries: Entries, offset: int) -> int | None:
    """The epoch covering `offset`, or None when it lies before the first entry (EPO-8).

    Spec: KL-EPOCH-5.

    post: __return__ is None or any(e.epoch == __return__ for e in entries)
    """
    previous: EpochEntry | None = None
    for entry in entries:
        if entry.start_offset == offset:
            return entry.epoch
        if entry.start_offset > offset:
            return previous.epoch if previous is not None else None
        previous = entry
    return previous.epoch if previous is not None else None
