"""Kafka mode: the `offsets_back` corruption a load emptied without an fsync (KL-CRASH-9).

An earlier crash may plant CRC-valid batches after the last segment's valid data (FLT-8, the
checker's `offsets_back`): two that continue the segment's offsets, then one back at its base,
each one record of `index_interval_bytes + 1` zero bytes with no key, timestamp, leader epoch or
producer. The load empties that segment (RCV-6). Kafka does not fsync that cut (GAP-4), so a
later power loss may undo it: the planted bytes are then part of the image a crash may bring
back (crash.py `durable_after`), and recovery keeps any valid prefix of them that stops before
the batch going back (a torn or lost one ends the log there). The third batch is left out of
that image, which the model's segments cannot hold: the image's last segment is remembered
instead (crash.py `Durable.planted`), and a recovery that finds that segment whole reaches the
third batch and empties it again, just as unsynced, so the image stays one a later power loss
may bring back, whole or as a prefix torn at a later write's size.
Pure and stdlib-only like the rest of the model.
"""

from __future__ import annotations

from dataclasses import replace

from ..sizes import batch_size
from ..state import Batch, Segment
from ..values import NO_TIMESTAMP, Record

__all__ = ["empties_again", "with_planted"]

#: The planted batches that continue the segment's offsets (the third goes back to its base).
_CONTINUING = 2


def empties_again(layout: tuple[Segment, ...], planted: tuple[Segment, ...]) -> bool:
    """Whether `layout` ends with a planted image's last segment whole (one of `planted`), so
    that the batch going back follows its data on disk and recovery empties it (RCV-6)."""
    return bool(layout) and layout[-1] in planted


def with_planted(layout: tuple[Segment, ...], unreadable: int | None,
                 index_interval_bytes: int,
                 planted: tuple[Segment, ...] = ()) -> tuple[Segment, ...]:
    """`layout` with the continuing planted batches after its last segment's data when the
    load emptied that segment because of them (`unreadable` is its base), else `layout`; a
    layout that already ends with a planted image's segment (`planted`) is that image."""
    if unreadable is None or not layout or layout[-1].base_offset != unreadable \
            or empties_again(layout, planted):
        return layout
    last = layout[-1]
    record = Record(None, bytes(max(index_interval_bytes, 0) + 1), NO_TIMESTAMP)
    size = batch_size((record,))
    batches = tuple(
        Batch(base_offset=last.next_offset + i, last_offset=last.next_offset + i,
              partition_leader_epoch=-1, max_timestamp=NO_TIMESTAMP, size=size,
              position=last.size + i * size, records=(record,))
        for i in range(_CONTINUING))
    grown = replace(last, batches=(*last.batches, *batches), size=last.size + len(batches) * size)
    return (*layout[:-1], grown)
