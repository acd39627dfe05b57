"""Kafka mode: a torn power loss mixing two batches' headers at one position (KL-ALLOW-10).

A v2 batch's CRC covers the bytes from its attributes on (FMT-45); the base offset and the
partition leader epoch lie before them. When an unsynced truncation's cut is undone under a
later unsynced append at the same position of the same segment (GAP-1 L-weak), and the two
batches there have the same size and the same CRC-covered bytes (a follower re-appending what
the leader wrote before, at other offsets or in another epoch), a torn power loss (FLT-7) may
keep each 4 KiB page of that header old or new, or zero the bytes that differ (FLT-10): the
batch left is CRC-valid, with a base offset and an epoch that may be neither batch's. Recovery
reads it like any other (RCV-6): a base offset under the segment's base fails the load
(LogSegmentOffsetOverflowException, which Kafka's split cannot handle), one going back empties
the segment, one ahead is kept.

The model enumerates the old, new and zeroed choice of each header page. Garbage pages (random
bytes where the two differ) leave values no finite set holds: for them the checker hands in
`TornClues`, numbers the recovered state shows (where a segment ends, where an epoch starts),
and the model adds each header those numbers imply that agrees with both batches on every
byte where the two agree (a garbage page replaces only the bytes that differ), then recovers
it like any other. The clues only choose which of the possible headers to try; membership is
still decided by the model's own recovery. Pure and stdlib-only.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import product

from ..state import Batch, Segment

__all__ = ["PAGE", "TornClues", "crc_covered", "torn_header_layouts", "torn_pairs"]

PAGE = 4096  # FLT-7: the unit a torn power loss keeps or loses
_OFFSET_FIELD = (0, 8)  # FMT-45: baseOffset, bytes [0, 8) of the batch
_EPOCH_FIELD = (12, 4)  # FMT-45: partitionLeaderEpoch, bytes [12, 16)
#: Per page: keep the old bytes, the new ones, or zero the bytes that differ.
_CHOICES = ("old", "new", "zero")

Pair = tuple[int, Batch, Batch]  # (segment base, one batch, the other) at one position
Header = tuple[int, int]  # (base offset, partition leader epoch)


@dataclass(frozen=True)
class TornClues:
    """Numbers a recovered state shows that a torn batch's header may have set: offsets one
    past a batch (`ends`: a segment's next offset, the log end), offsets a batch may start at
    (`starts`: an epoch's start offset, the offset a failed load names), offsets a batch may
    end at (`lasts`: an offset-index entry, the offset a failed load names), and epochs.
    `snapshots`: the producer snapshot files it lists (None: not reported), which say which
    removed files a kafka-mode power loss brought back (crash.py `_snapshot_options`)."""

    ends: frozenset[int] = frozenset()
    starts: frozenset[int] = frozenset()
    lasts: frozenset[int] = frozenset()
    epochs: frozenset[int] = frozenset()
    snapshots: frozenset[int] | None = None


def crc_covered(batch: Batch) -> tuple[object, ...]:
    """What the CRC covers (attributes on): everything but the base offset and the epoch, the
    records' offsets taken relative to the base."""
    relative = (None if batch.record_offsets is None
                else tuple(o - batch.base_offset for o in batch.record_offsets))
    return (batch.size, batch.last_offset - batch.base_offset, batch.max_timestamp,
            batch.records, batch.timestamp_type, batch.producer_id, batch.producer_epoch,
            batch.base_sequence, batch.is_transactional, batch.is_control, relative,
            batch.delete_horizon_ms)


def torn_pairs(sources: tuple[tuple[Segment, ...], ...]) -> list[Pair]:
    """Batches at one position of one segment in two layouts (the log's and one a kafka-mode
    crash may resurrect) with the same CRC-covered bytes and another header."""
    at: dict[tuple[int, int], list[Batch]] = {}
    for layout in sources:
        for segment in layout:
            for batch in segment.batches:
                at.setdefault((segment.base_offset, batch.position), []).append(batch)
    pairs: list[Pair] = []
    for (base, _), batches in at.items():
        for i, one in enumerate(batches):
            for other in batches[i + 1:]:
                if _header(one) != _header(other) and crc_covered(one) == crc_covered(other) \
                        and (base, other, one) not in pairs:
                    pairs.append((base, one, other))
    return pairs


def _header(batch: Batch) -> tuple[int, int]:
    return batch.base_offset, batch.partition_leader_epoch


def _field(value: int, width: int) -> bytes:
    return value.to_bytes(width, "big", signed=True)


def _mixed_field(start: int, width: int, position: int, old: int, new: int,
                 pages: dict[int, str]) -> int:
    """The field's value when each page it spans is kept old, new, or zeroed where the two
    differ (FLT-7, FLT-10)."""
    before, after = _field(old, width), _field(new, width)
    out = bytearray(width)
    for i, (a, b) in enumerate(zip(before, after, strict=True)):
        choice = pages[(position + start + i) // PAGE]
        out[i] = a if choice == "old" else b if choice == "new" else (a if a == b else 0)
    return int.from_bytes(out, "big", signed=True)


def _mixed_headers(old: Batch, new: Batch) -> Iterator[tuple[int, int]]:
    """Every (base offset, epoch) a torn header of `old` and `new` may leave, but theirs."""
    fields = (_OFFSET_FIELD, _EPOCH_FIELD)
    spanned = sorted({(new.position + start + i) // PAGE
                      for start, width in fields for i in range(width)})
    seen = {_header(old), _header(new)}
    for choice in product(_CHOICES, repeat=len(spanned)):
        pages = dict(zip(spanned, choice, strict=True))
        header = (
            _mixed_field(*_OFFSET_FIELD, new.position, old.base_offset, new.base_offset, pages),
            _mixed_field(*_EPOCH_FIELD, new.position, old.partition_leader_epoch,
                         new.partition_leader_epoch, pages))
        if header not in seen:
            seen.add(header)
            yield header


def _agrees(old: int, new: int, value: int, width: int) -> bool:
    """`value` fits the field and keeps every byte where `old` and `new` agree."""
    if not -(1 << (8 * width - 1)) <= value < 1 << (8 * width - 1):
        return False
    return all(a != b or c == a for a, b, c in zip(
        _field(old, width), _field(new, width), _field(value, width), strict=True))


def _garbage_headers(old: Batch, new: Batch, clues: TornClues) -> Iterator[Header]:
    """The headers `clues` imply that a garbage page may leave where `old` and `new` differ."""
    span = new.last_offset - new.base_offset
    bases = ({end - span - 1 for end in clues.ends} | set(clues.starts)
             | {last - span for last in clues.lasts})
    epochs = {*clues.epochs, old.partition_leader_epoch, new.partition_leader_epoch}
    for base in sorted(bases):
        if not _agrees(old.base_offset, new.base_offset, base, _OFFSET_FIELD[1]):
            continue
        for epoch in sorted(epochs):
            if (base, epoch) not in (_header(old), _header(new)) and _agrees(
                    old.partition_leader_epoch, new.partition_leader_epoch, epoch,
                    _EPOCH_FIELD[1]):
                yield base, epoch


def _with_header(batch: Batch, base_offset: int, epoch: int) -> Batch:
    shift = base_offset - batch.base_offset
    offsets = (None if batch.record_offsets is None
               else tuple(o + shift for o in batch.record_offsets))
    return replace(batch, base_offset=base_offset, last_offset=batch.last_offset + shift,
                   partition_leader_epoch=epoch, record_offsets=offsets,
                   reported_max_offset=None)


def _replaced(layout: tuple[Segment, ...], base: int, batch: Batch,
              mixed: Batch) -> tuple[Segment, ...] | None:
    """`layout` with `batch` of segment `base` read as `mixed`, or None without that batch."""
    for i, segment in enumerate(layout):
        if segment.base_offset == base and batch in segment.batches:
            batches = tuple(mixed if b == batch else b for b in segment.batches)
            return (*layout[:i], replace(segment, batches=batches), *layout[i + 1:])
    return None


def torn_header_layouts(layouts: list[tuple[Segment, ...]],
                        sources: tuple[tuple[Segment, ...], ...],
                        clues: TornClues | None = None) -> list[tuple[Segment, ...]]:
    """The surviving `layouts` with a torn header at one position where two of the `sources`
    hold batches of the same CRC-covered bytes (KL-ALLOW-10); none when no source pairs up.
    With `clues`, also the garbage-page headers they imply."""
    out: list[tuple[Segment, ...]] = []
    for base, one, other in torn_pairs(sources):
        for old, new in ((one, other), (other, one)):
            garbage = _garbage_headers(old, new, clues) if clues is not None else ()
            for offset, epoch in (*_mixed_headers(old, new), *garbage):
                mixed = _with_header(new, offset, epoch)
                for layout in layouts:
                    torn = _replaced(layout, base, new, mixed)
                    if torn is not None and torn not in out and torn not in layouts:
                        out.append(torn)
    return out
