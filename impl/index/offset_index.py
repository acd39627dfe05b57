"""`OffsetIndex`: the `.index` file, a sparse map from offsets to positions in the `.log`.

Each entry is 8 bytes, big-endian (FMT-10): int32 relative offset (offset - base offset), int32
byte position of the indexed batch in the segment's `.log`. Entry n occupies [8n, 8n + 8).
Example, base offset 100, batches ending at offsets 103 and 110 starting at positions 0 and 4171:

    00000003 00000000 0000000a 0000104b      -> (103, 0), (110, 4171)

Keys strictly increase; `lookup` returns the largest entry <= target, or (base_offset, 0).
Crash policy: see AbstractIndex (derived data, rebuilt by recovery).
"""

from __future__ import annotations

import operator
import struct
import sys
from array import array
from bisect import bisect_right
from itertools import repeat
from typing import NamedTuple

from kafkalog.impl.index.abstract_index import (
    SMALL_CHECK_ENTRIES,
    AbstractIndex,
    Column,
    check_chunks,
    entries_struct,
    non_decreasing,
    strictly_increasing,
)
from kafkalog.impl.records.batch_scan import compiled_pack_offset_entries
from kafkalog.impl.records.batch_scan import index_first_disorder as _COMPILED_DISORDER
from kafkalog.impl.records.batch_scan import index_floor_span as _COMPILED_FLOOR_SPAN
from kafkalog.model.errors import (
    CorruptIndexError,
    IllegalArgumentError,
    InvalidOffsetError,
    KafkaStorageError,
)
from kafkalog.model.values import INT32_MAX

# Lookups cache at most 8 MiB of keys: enough for the 1,310,720 entries of Kafka's default 10 MiB
# segment.index.bytes (a 1 << 20 cap halved lookup speed there), fixed whatever the index size.
KEYS_CACHE_MAX_ENTRIES = 1 << 21
_TWO_ENTRIES = struct.Struct(">iiii").unpack_from
_POSITION = struct.Struct(">i").unpack_from


class OffsetPosition(NamedTuple):
    """An absolute offset and a byte position in the `.log`."""

    offset: int
    position: int


def py_pack_entries(offsets: list[int], positions: list[int], base: int) -> bytes | None:
    """The 8-byte entries (offset - base, position; big-endian int32s, FMT-10) of a run whose
    offsets strictly increase from `base` on, within int32; None otherwise. The reference of the
    compiled `pack_offset_entries` (impl/records/_scan_rows.c)."""
    n = len(offsets)
    if n == 0 or n != len(positions) or offsets[0] < base or offsets[-1] - base > INT32_MAX:
        return None
    if n > 1 and not strictly_increasing(offsets):
        return None
    try:
        packed = array("i", bytes(8 * n))
        packed[0::2] = array("i", map(operator.sub, offsets, repeat(base, n)))
        packed[1::2] = array("i", positions)
    except OverflowError:
        return None
    if sys.byteorder == "little":
        packed.byteswap()  # the file is big-endian (FMT-10)
    return packed.tobytes()


class OffsetIndex(AbstractIndex):
    """The offset index of one segment (FMT-10..18)."""

    ENTRY = struct.Struct(">ii")
    _OFFSETS = Column(struct.Struct(">i"), 0, True)
    _POSITIONS = Column(struct.Struct(">i"), 4, False)

    _last_offset: int
    # The relative offsets of the entries, built on the first lookup and kept in step by
    # `append`; any other change of the entries drops it. A C `bisect` over it replaces ~20
    # Python-level `unpack_from` probes per lookup. `floor_span` (translate_offset, on every
    # read) needs it only on the pure-Python path: the compiled one searches the mapping.
    _keys: array | None = None

    def _after_entries_changed(self) -> None:
        self._last_offset = self.last_entry.offset
        self._keys = None

    def _relative_keys(self) -> array | None:
        """The entries' relative offsets (O(n) on first use after a change, then cached); None
        above KEYS_CACHE_MAX_ENTRIES, where lookups search the mapping instead, so the cache never
        grows with a huge index (4 bytes an entry)."""
        keys = self._keys
        if keys is None:
            if self._entries > KEYS_CACHE_MAX_ENTRIES:
                return None
            raw = array("i", self._buf()[: self._entries * 8] if self._entries else b"")
            if sys.byteorder == "little":
                raw.byteswap()  # the file is big-endian (FMT-10)
            keys = self._keys = raw[0::2]
        return keys

    # --- reads ---

    def _entry(self, slot: int) -> OffsetPosition:
        rel, position = self._parse(slot)
        return OffsetPosition(self.base_offset + rel, position)

    @property
    def last_offset(self) -> int:
        """The last entry's offset, or base_offset when empty."""
        return self._last_offset

    @property
    def last_entry(self) -> OffsetPosition:
        """The last entry, or (base_offset, 0) when empty."""
        with self._lock:
            if self._entries == 0:
                return OffsetPosition(self.base_offset, 0)
            return self._entry(self._entries - 1)

    def entry(self, n: int) -> OffsetPosition:
        """Entry n (ERR-6: IllegalArgumentError when n >= entries)."""
        with self._lock:
            rel, position = self._entry_or_raise(n)
            return OffsetPosition(self.base_offset + rel, position)

    def lookup(self, target_offset: int) -> OffsetPosition:
        """Largest entry with offset <= target, else (base_offset, 0). O(log n). Spec: FMT-13.

        Keys strictly increase (sanity_check), so the floor slot found by bisect over the cached
        keys is the one `_slot_range_for` finds over the mapping.
        """
        with self._lock:
            keys = self._relative_keys()
            if keys is None:
                slot = self._slot_range_for(target_offset, self._OFFSETS, True)
            else:
                slot = bisect_right(keys, target_offset - self.base_offset) - 1
            if slot < 0:
                # A closed index raises even when empty: Kafka's lookup reads `mmap()`, which
                # closeHandler set to null.
                self._ensure_open()
                return OffsetPosition(self.base_offset, 0)
            rel, position = self.ENTRY.unpack_from(self._buf(), slot * 8)  # `_entry`, inlined
            return OffsetPosition(self.base_offset + rel, position)

    def floor_span(self, target_offset: int) -> tuple[int, int]:
        """`lookup(target).position`, and the next entry's position (-1 when there is none).

        `translate_offset`'s hot path (every read): one bisect and one unpack of the two
        entries, no entry object. Per the index, the first batch with last offset >= target
        starts in [first, second] (the next entry's key exceeds the target), so the caller can
        size its header read to that span; it is a hint only, never a bound on the search.
        """
        with self._lock:
            if _COMPILED_FLOOR_SPAN is not None:  # a C bisect over the mapping, no keys cache
                if self._closed:
                    raise KafkaStorageError("index is closed", where=self.path)
                return _COMPILED_FLOOR_SPAN(self._mmap, self._entries,  # type: ignore[no-any-return]
                                            target_offset - self.base_offset)
            keys = self._keys
            if keys is None:
                keys = self._relative_keys()
            if keys is None:
                slot = self._slot_range_for(target_offset, self._OFFSETS, True)
            else:
                slot = bisect_right(keys, target_offset - self.base_offset) - 1
            if self._closed:  # `_buf`, inlined: a closed index raises, even when empty
                raise KafkaStorageError("index is closed", where=self.path)
            if slot < 0:
                return 0, (self._first_position() if self._entries else -1)
            if slot + 1 < self._entries:
                _, position, _, next_position = _TWO_ENTRIES(self._mmap, slot * 8)
                return position, next_position
            return _POSITION(self._buf(), slot * 8 + 4)[0], -1

    def _first_position(self) -> int:
        return int(_POSITION(self._buf(), 4)[0])

    def fetch_upper_bound_offset(self, fetch_offset: OffsetPosition,
                                 fetch_size: int) -> OffsetPosition | None:
        """The entry with the smallest position >= fetch position + size, or None. FMT-16."""
        with self._lock:
            slot = self._slot_range_for(fetch_offset.position + fetch_size, self._POSITIONS,
                                       False)
            return None if slot == -1 else self._entry(slot)

    # --- writes ---

    def append(self, offset: int, position: int) -> None:
        """Add (offset, position). Spec: FMT-14 (ERR-2, ERR-3, ERR-4, ERR-5)."""
        with self._lock:
            self._ensure_open()
            if self.is_full():
                raise IllegalArgumentError(
                    f"attempt to append to a full index (size = {self._entries})",
                    where=self.path)
            if self._entries != 0 and offset <= self._last_offset:
                raise InvalidOffsetError(
                    f"attempt to append an offset ({offset}) to position {self._entries} no "
                    f"larger than the last offset appended ({self._last_offset}) to {self.path}",
                    where=self.path)
            rel = self.relative_offset(offset)
            self.ENTRY.pack_into(self._buf(), self._entries * 8, rel, position)
            if self._on_store is not None:
                self._on_store(self._entries * 8, 8)
            self._entries += 1
            self._last_offset = offset
            if self._keys is not None:
                self._keys.append(rel)

    def append_entries(self, offsets: list[int], positions: list[int]) -> bool:
        """Add (offsets[i], positions[i]) for every i in one store, or nothing and return False.

        The bulk form of `append` for `LogSegment.append` (a 1 MiB append of 16 KiB batches adds
        63 entries): one check of the whole run, one slice write into the mapping, one journal
        record for a crash-recording mapping. False (nothing changed) whenever `append` would
        raise for some entry (closed, full, an offset not above the last or outside the relative
        range, a position outside int32), so the caller replays per entry and gets `append`'s
        exact error at the exact entry. Spec: FMT-14.
        """
        n = len(offsets)
        if n == 0 or n != len(positions):
            return n == 0 and not positions
        with self._lock:
            first, base = offsets[0], self.base_offset
            if (self._closed or self._entries + n > self._max_entries
                    or (self._entries and first <= self._last_offset)):
                return False
            # The packers check the rest: offsets strictly increasing within the relative range,
            # positions within int32 (where `append` would raise).
            packed = None if compiled_pack_offset_entries is None else \
                compiled_pack_offset_entries(offsets, positions, base)
            if packed is None:
                packed = py_pack_entries(offsets, positions, base)
                if packed is None:
                    return False
            start = self._entries * 8
            self._buf()[start : start + 8 * n] = packed
            if self._on_store is not None:
                self._on_store(start, 8 * n)
            self._entries += n
            self._last_offset = offsets[-1]
            if self._keys is not None:
                self._keys.extend(map(operator.sub, offsets, repeat(base, n)))
            return True

    def truncate_to(self, offset: int) -> None:
        """Remove every entry with offset >= `offset` (FMT-15's three cases; BUG-1)."""
        with self._lock:
            slot = self._slot_range_for(offset, self._OFFSETS, True)
            if slot < 0:
                new_entries = 0
            elif self._parse(slot)[0] == offset - self.base_offset:
                new_entries = slot  # the entry at exactly `offset` goes too (KAFKA-588)
            else:
                new_entries = slot + 1
            self._truncate_to_entries(new_entries)

    # --- checks ---

    def sanity_check(self) -> None:
        """CorruptIndexError unless the file is a valid offset index (FMT-18, ERR-10).

        Kafka's two O(1) checks, plus (kafkalog) an O(n) scan that the keys strictly increase
        and positions never decrease, so garbage and zero-filled untrimmed files are rejected
        and rebuilt rather than trusted. Every file Kafka writes passes the scan.
        """
        with self._lock:
            if self._entries != 0 and self._last_offset < self.base_offset:
                raise CorruptIndexError(
                    f"corrupt index found, index file has non-zero size but the last offset is "
                    f"{self._last_offset} which is less than the base offset "
                    f"{self.base_offset}", where=self.path)
            if self._length % 8 != 0:
                raise CorruptIndexError(
                    f"index file is corrupt, found {self._length} bytes which is neither "
                    f"positive nor a multiple of 8", where=self.path)
            problem = self._first_disorder()
            if problem is not None:
                raise CorruptIndexError(problem, where=self.path)

    def _first_disorder(self) -> str | None:
        """The first entry out of order, scanned in chunks (`check_chunks`) so memory stays
        O(chunk) however large the mapped file is (a hostile or preallocated 2 GiB index).
        The compiled twin (`index_first_disorder`) answers "in order" at memory speed; this
        scan names the culprit otherwise."""
        n = self._entries
        if n and _COMPILED_DISORDER is not None and _COMPILED_DISORDER(self._buf(), n, False) < 0:
            return None
        if 0 < n <= SMALL_CHECK_ENTRIES:  # the common case in one unpack; else the scan below
            fields = entries_struct("ii", n).unpack_from(self._buf())
            rels, positions = fields[0::2], fields[1::2]
            if (rels[0] >= 0 and positions[0] >= 0 and all(map(operator.lt, rels, rels[1:]))
                    and all(map(operator.le, positions, positions[1:]))):
                return None
        prev_rel, prev_pos = -1, -1
        buf = self._buf() if n else b""
        for start, end in check_chunks(n):
            raw = array("i", buf[start * 8 : end * 8])
            if sys.byteorder == "little":
                raw.byteswap()  # the file is big-endian (FMT-10)
            rels, positions = raw[0::2].tolist(), raw[1::2].tolist()
            if (rels[0] > prev_rel and positions[0] >= max(prev_pos, 0)
                    and strictly_increasing(rels) and non_decreasing(positions)):
                prev_rel, prev_pos = rels[-1], positions[-1]
                continue  # the common case, checked in C; the loop below names the culprit
            for n, (rel, pos) in enumerate(zip(rels, positions, strict=True), start=start):
                if rel <= prev_rel or pos < prev_pos or pos < 0:
                    return (f"entry {n} ({rel}, {pos}) does not follow ({prev_rel}, {prev_pos}): "
                            f"offsets must increase and positions must not decrease")
                prev_rel, prev_pos = rel, pos
        return None

    def check(self) -> None:
        """O(n) own invariants; AssertionError on violation (programmer error)."""
        with self._lock:
            if not 0 <= self._entries <= self._max_entries:
                raise AssertionError(f"{self!r}: entries outside [0, max_entries]")
            if self._last_offset != self.last_entry.offset:
                raise AssertionError(f"{self!r}: cached last offset {self._last_offset} is stale")
            problem = self._first_disorder()
            if problem is not None:
                raise AssertionError(f"{self!r}: {problem}")
