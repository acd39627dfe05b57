"""Helpers CrossHair cannot confirm, compared with deliberately naive versions by Hypothesis.

CrossHair only searches list-shaped inputs up to its timeout ("Not confirmed"), so each such
helper is also checked here against a one-line restatement of its rule: a linear scan for a binary
search, a filter for a walk, the reference's own wording for the epoch cache. The naive versions
are written from the Kafka rules (specs/sources.md), not from the model's code.
"""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st
from kafkalog.model import epochs
from kafkalog.model.helpers import (
    deletable_prefix,
    file_name_prefix,
    floor_index,
    higher_index,
    index_entries_after_truncation,
    index_floor_position,
    offset_from_file_name,
    retention_size_deletable,
    truncation_cut,
)
from kafkalog.model.sizes import varint_size, zigzag
from kafkalog.model.values import EpochEndOffset, EpochEntry

OFFSETS = st.integers(-5, 60)
SORTED = st.lists(st.integers(0, 50), unique=True, max_size=10).map(sorted)
SIZES = st.lists(st.integers(0, 40), max_size=8)


@st.composite
def caches(draw: st.DrawFn) -> tuple[EpochEntry, ...]:
    """An EPO-1 cache: epochs and start offsets both strictly increasing."""
    epoch_list = draw(st.lists(st.integers(0, 12), unique=True, max_size=6).map(sorted))
    starts = draw(st.lists(st.integers(0, 40), unique=True, min_size=len(epoch_list),
                           max_size=len(epoch_list)).map(sorted))
    return tuple(EpochEntry(e, s) for e, s in zip(epoch_list, starts, strict=True))


# --- naive restatements ------------------------------------------------------------------------


def naive_floor(bases: list[int], offset: int) -> int:
    """MAP-2 floorSegment as a scan: the last index whose base <= offset."""
    return max((i for i, b in enumerate(bases) if b <= offset), default=-1)


def naive_higher(bases: list[int], offset: int) -> int:
    """MAP-2 higherSegment as a scan: the first index whose base > offset."""
    return min((i for i, b in enumerate(bases) if b > offset), default=-1)


def naive_index_lookup(keys: list[int], positions: list[int], target: int) -> int:
    """FMT-13: the position of the largest key <= target, else 0."""
    found = [p for k, p in zip(keys, positions, strict=True) if k <= target]
    return found[-1] if found else 0


def naive_size_deletable(sizes: list[int], retention_bytes: int) -> int:
    """LOG-37: segment i goes iff what stays after it is still >= retention.bytes."""
    if retention_bytes < 0 or sum(sizes) < retention_bytes:
        return 0
    return max(c for c in range(len(sizes) + 1) if sum(sizes[c:]) >= retention_bytes)


def naive_deletable(uppers: list[int], sizes: list[int], ok: list[bool], hw: int) -> int:
    """LOG-33: the first segment that is not below the HW, fails, or is the empty last stops."""
    def eligible(i: int) -> bool:
        empty_last = i == len(sizes) - 1 and sizes[i] == 0
        return uppers[i] <= hw and ok[i] and not empty_last
    return next((i for i in range(len(sizes)) if not eligible(i)), len(sizes))


def naive_offset_from_name(name: str) -> int | None:
    """FMT-5 as kafkalog takes it: ASCII decimal digits before the first '.', else None."""
    match = re.fullmatch(r"([0-9]+)(\..*)?", name, flags=re.DOTALL)
    return int(match.group(1)) if match else None


def naive_assign(entries: tuple[EpochEntry, ...], epoch: int, start: int) -> tuple[EpochEntry, ...]:
    """EPO-3: same epoch at a later start is ignored; otherwise drop conflicting entries."""
    if entries and entries[-1].epoch == epoch and start >= entries[-1].start_offset:
        return entries
    kept = tuple(e for e in entries if e.epoch < epoch and e.start_offset < start)
    return (*kept, EpochEntry(epoch, start))


def naive_end_offset(entries: tuple[EpochEntry, ...], req: int, leo: int) -> EpochEndOffset:
    """EPO-4 read literally, with min/max over the whole cache."""
    undefined = EpochEndOffset(-1, -1)
    if req == -1:
        return undefined
    if entries and max(e.epoch for e in entries) == req:
        return EpochEndOffset(req, leo)
    higher = min((e for e in entries if e.epoch > req), key=lambda e: e.epoch, default=None)
    if higher is None:
        return undefined
    floor = max((e for e in entries if e.epoch <= req), key=lambda e: e.epoch, default=None)
    return EpochEndOffset(req if floor is None else floor.epoch, higher.start_offset)


Cache = tuple[EpochEntry, ...]


def naive_truncate_from_start(entries: Cache, start: int) -> Cache:
    """EPO-7: drop entries at or before `start`, re-insert the last dropped epoch at `start`."""
    dropped = [e for e in entries if e.start_offset <= start]
    if not dropped:
        return entries
    return (EpochEntry(dropped[-1].epoch, start), *[e for e in entries if e.start_offset > start])


def naive_epoch_for_offset(entries: tuple[EpochEntry, ...], offset: int) -> int | None:
    """EPO-8: the epoch of the entry with the largest start offset <= offset."""
    covering = [e for e in entries if e.start_offset <= offset]
    return covering[-1].epoch if covering else None


def naive_varint_size(n: int) -> int:
    """FMT-48: encode the zig-zag value 7 bits at a time and count the bytes."""
    value = (n << 1) ^ (n >> 63)  # Kafka's zig-zag for a long
    out = [value & 0x7F]
    while value >= 0x80:
        value >>= 7
        out.append(value & 0x7F)
    return len(out)


# --- comparisons -------------------------------------------------------------------------------


@given(SORTED, OFFSETS)
def test_floor_and_higher_index__match_linear_scans(bases: list[int], offset: int) -> None:
    """Spec: KL-READ-1 (MAP-2 floor and higher segment lookups)."""
    assert floor_index(bases, offset) == naive_floor(bases, offset)
    assert higher_index(bases, offset) == naive_higher(bases, offset)


@given(SORTED, OFFSETS, st.data())
def test_index_floor_position__matches_fmt13_scan(keys: list[int], target: int,
                                                  data: st.DataObject) -> None:
    """FMT-13: the position of the largest key <= target, position 0 when there is none."""
    positions = data.draw(st.lists(st.integers(0, 10_000), min_size=len(keys),
                                   max_size=len(keys)))
    assert index_floor_position(keys, positions, target) == naive_index_lookup(
        keys, positions, target)


@given(SORTED, OFFSETS)
def test_truncation_counts__match_filters(keys: list[int], offset: int) -> None:
    """Spec: KL-TRUNC-2, KL-TRUNC-3 (entries and batches below the offset are kept)."""
    below = len([k for k in keys if k < offset])
    assert index_entries_after_truncation(keys, offset) == below
    assert truncation_cut(keys, offset) == below


@given(SIZES, st.integers(-2, 150))
def test_retention_size_deletable__matches_remaining_bytes_rule(sizes: list[int],
                                                                retention: int) -> None:
    """Spec: KL-RET-4 (LOG-37)."""
    assert retention_size_deletable(sizes, retention) == naive_size_deletable(sizes, retention)


@given(st.data())
def test_deletable_prefix__matches_first_stopping_segment(data: st.DataObject) -> None:
    """Spec: KL-RET-2 (LOG-33)."""
    sizes = data.draw(SIZES)
    uppers = data.draw(st.lists(st.integers(0, 60), min_size=len(sizes), max_size=len(sizes)))
    ok = data.draw(st.lists(st.booleans(), min_size=len(sizes), max_size=len(sizes)))
    hw = data.draw(OFFSETS)
    assert deletable_prefix(uppers, sizes, ok, hw) == naive_deletable(uppers, sizes, ok, hw)


@given(st.integers(0, 2**64))
def test_file_name__round_trips_through_its_offset(offset: int) -> None:
    """FMT-4 / FMT-5: a 20-digit (at least) zero-padded name parses back to its offset."""
    prefix = file_name_prefix(offset)
    assert prefix == f"{offset:020d}"
    assert offset_from_file_name(prefix + ".index") == offset


@given(st.one_of(st.text(max_size=30), st.from_regex(r"[0-9+\-]{0,22}\.[a-z]{0,9}")))
def test_offset_from_file_name__matches_decimal_prefix_rule(name: str) -> None:
    """FMT-5 / ERR-48: a non-decimal prefix (including a sign) is rejected with None."""
    assert offset_from_file_name(name) == naive_offset_from_name(name)


@given(caches(), st.integers(0, 14), st.integers(0, 45))
def test_epoch_assign__matches_epo3_consequences(cache: tuple[EpochEntry, ...], epoch: int,
                                                 start: int) -> None:
    """Spec: KL-EPOCH-1 (EPO-2, EPO-3)."""
    assert epochs.assign(cache, epoch, start) == naive_assign(cache, epoch, start)


@given(caches(), st.integers(-1, 14), st.integers(0, 60))
def test_end_offset_for__matches_epo4_read_literally(cache: tuple[EpochEntry, ...], req: int,
                                                     leo: int) -> None:
    """Spec: KL-EPOCH-2 (EPO-4)."""
    assert epochs.end_offset_for(cache, req, leo) == naive_end_offset(cache, req, leo)


@given(caches(), st.integers(-2, 45))
def test_epoch_truncations_and_lookup__match_epo6_to_epo8(cache: tuple[EpochEntry, ...],
                                                          offset: int) -> None:
    """Spec: KL-EPOCH-3, KL-EPOCH-4, KL-EPOCH-5 (EPO-6, EPO-7, EPO-8)."""
    from_end = cache if offset < 0 else tuple(e for e in cache if e.start_offset < offset)
    assert epochs.truncate_from_end(cache, offset) == from_end
    assert epochs.truncate_from_start(cache, offset) == naive_truncate_from_start(cache, offset)
    assert epochs.epoch_for_offset(cache, offset) == naive_epoch_for_offset(cache, offset)


@given(st.integers(-(2**63), 2**63 - 1))
def test_varint_size__matches_byte_by_byte_encoding(n: int) -> None:
    """FMT-48: zig-zag then base-128, one byte per 7 bits (1 to 10 bytes for a long)."""
    assert zigzag(n) == (n << 1) ^ (n >> 63)
    assert varint_size(n) == naive_varint_size(n)
