"""`TimeIndex`: the `.timeindex` file, a sparse map from timestamps to offsets.

Each entry is 12 bytes, big-endian (FMT-19): int64 timestamp, int32 relative offset. An entry
(T, O) means T is the largest timestamp seen in records up to and including the batch whose last
offset is O. Example, base offset 100, entries (1700000000000, 103) and (1700000000500, 110):

    0000018bcfe56800 00000003 0000018bcfe569f4 0000000a

Timestamps strictly increase, offsets never decrease. The last slot is reserved for the entry
written on roll/close with `skip_full_check=True` (FMT-21). Crash policy: see AbstractIndex.
"""

from __future__ import annotations

import operator
import struct
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
from kafkalog.impl.records.batch_scan import index_first_disorder as _COMPILED_DISORDER
from kafkalog.model.errors import (
    CorruptIndexError,
    IllegalArgumentError,
    IllegalStateError,
    InvalidOffsetError,
)
from kafkalog.model.values import NO_TIMESTAMP


class TimestampOffset(NamedTuple):
    """A (timestamp, offset) pair: a time-index entry, or `largest_timestamp_after`'s answer."""

    timestamp: int
    offset: int


class TimeIndex(AbstractIndex):
    """The time index of one segment (FMT-19..25)."""

    ENTRY = struct.Struct(">qi")
    _TIMESTAMPS = Column(struct.Struct(">q"), 0, False)
    _OFFSETS = Column(struct.Struct(">i"), 8, True)

    _last_entry: TimestampOffset

    def _after_entries_changed(self) -> None:
        self._last_entry = self._last_entry_from_file()

    def _last_entry_from_file(self) -> TimestampOffset:
        with self._lock:
            if self._entries == 0:
                return TimestampOffset(NO_TIMESTAMP, self.base_offset)
            return self._entry(self._entries - 1)

    def resize(self, new_size: int) -> bool:
        """FMT-24: a resize re-reads the last entry from the file."""
        with self._lock:
            changed = super().resize(new_size)
            self._last_entry = self._last_entry_from_file()
            return changed

    # --- reads ---

    def _entry(self, slot: int) -> TimestampOffset:
        ts, rel = self._parse(slot)
        return TimestampOffset(ts, self.base_offset + rel)

    def is_full(self) -> bool:
        """True when only the reserved last slot is left (FMT-21)."""
        return self._entries >= self._max_entries - 1

    @property
    def last_entry(self) -> TimestampOffset:
        """The last entry, or (NO_TIMESTAMP, base_offset) when empty (FMT-20)."""
        return self._last_entry

    @property
    def last_offset(self) -> int:
        return self._last_entry.offset

    def entry(self, n: int) -> TimestampOffset:
        """Entry n (ERR-6: IllegalArgumentError when n >= entries)."""
        with self._lock:
            ts, rel = self._entry_or_raise(n)
            return TimestampOffset(ts, self.base_offset + rel)

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """Largest entry with timestamp <= target, else (NO_TIMESTAMP, base_offset). FMT-23."""
        with self._lock:
            self._ensure_open()  # even when empty, as Kafka's lookup reads the nulled `mmap()`
            slot = self._slot_range_for(target_timestamp, self._TIMESTAMPS, True)
            if slot == -1:
                return TimestampOffset(NO_TIMESTAMP, self.base_offset)
            return self._entry(slot)

    # --- writes ---

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Append (timestamp, offset) if the timestamp is new (FMT-22; ERR-2, ERR-7..9)."""
        with self._lock:
            self._ensure_open()
            if not skip_full_check and self.is_full():
                raise IllegalArgumentError(
                    f"attempt to append to a full time index (size = {self._entries})",
                    where=self.path)
            last = self._last_entry
            if self._entries != 0 and offset < last.offset:
                raise InvalidOffsetError(
                    f"attempt to append an offset ({offset}) to slot {self._entries} no larger "
                    f"than the last offset appended ({last.offset}) to {self.path}",
                    where=self.path)
            if self._entries != 0 and timestamp < last.timestamp:
                raise IllegalStateError(
                    f"attempt to append a timestamp ({timestamp}) to slot {self._entries} no "
                    f"larger than the last timestamp appended ({last.timestamp}) to {self.path}",
                    where=self.path)
            # An equal timestamp adds nothing: the entry would not change any lookup.
            if timestamp > last.timestamp:
                if self._entries >= self._max_entries:
                    raise IllegalArgumentError(
                        f"time index has no room for entry {self._entries}", where=self.path)
                rel = self.relative_offset(offset)
                self.ENTRY.pack_into(self._buf(), self._entries * 12, timestamp, rel)
                if self._on_store is not None:
                    self._on_store(self._entries * 12, 12)
                self._entries += 1
                self._last_entry = TimestampOffset(timestamp, offset)

    def accepts(self, entries: list[tuple[int, int]]) -> bool:
        """Whether `maybe_append(ts, offset)` for each entry in turn would raise nothing.

        Lets `LogSegment.append` store its offset-index entries in bulk before these: it does
        so only when no time-index call can fail in between. A dry run of maybe_append's checks
        (ERR-2, ERR-7..9), O(len(entries)), nothing changed.
        """
        with self._lock:
            if self._closed:
                return False
            count, last = self._entries, self._last_entry
            for timestamp, offset in entries:
                if count >= self._max_entries - 1:  # is_full (FMT-21)
                    return False
                if count != 0 and (offset < last.offset or timestamp < last.timestamp):
                    return False
                if timestamp > last.timestamp:
                    if self._to_relative(offset) is None:
                        return False
                    count, last = count + 1, TimestampOffset(timestamp, offset)
            return True

    def append_accepted(self, entries: list[tuple[int, int]]) -> None:
        """`maybe_append` of each entry in turn, stored in one write; only for entries that
        `accepts` approved (LogSegment.append checks first). Spec: FMT-22."""
        with self._lock:
            last_ts = self._last_entry.timestamp
            new = []
            for timestamp, offset in entries:
                if timestamp > last_ts:  # an equal timestamp adds nothing (FMT-22)
                    new += (timestamp, offset - self.base_offset)
                    last_ts = timestamp
            if not new:
                return
            start, size = self._entries * 12, 6 * len(new)
            struct.pack_into(">" + "qi" * (len(new) // 2), self._buf(), start, *new)
            if self._on_store is not None:
                self._on_store(start, size)
            self._entries += len(new) // 2
            self._last_entry = TimestampOffset(new[-2], new[-1] + self.base_offset)

    def truncate_to(self, offset: int) -> None:
        """Remove every entry with offset >= `offset`, searching the offset column. FMT-24."""
        with self._lock:
            slot = self._slot_range_for(offset, self._OFFSETS, True)
            if slot < 0:
                new_entries = 0
            elif self._parse(slot)[1] == offset - self.base_offset:
                new_entries = slot
            else:
                new_entries = slot + 1
            self._truncate_to_entries(new_entries)

    # --- checks ---

    def sanity_check(self) -> None:
        """CorruptIndexError unless the file is a valid time index (FMT-25, ERR-11).

        Kafka's three O(1) checks plus (kafkalog) an O(n) scan: timestamps strictly increase,
        offsets never decrease and none is below the base, so garbage is rebuilt.
        """
        with self._lock:
            last = self._last_entry
            if self._entries != 0 and last.timestamp < self._entry(0).timestamp:
                raise CorruptIndexError(
                    f"corrupt time index found, time index file has non-zero size but the last "
                    f"timestamp is {last.timestamp} which is less than the first timestamp "
                    f"{self._entry(0).timestamp}", where=self.path)
            if self._entries != 0 and last.offset < self.base_offset:
                raise CorruptIndexError(
                    f"corrupt time index found, time index file has non-zero size but the last "
                    f"offset is {last.offset} which is less than the first offset "
                    f"{self.base_offset}", where=self.path)
            if self._length % 12 != 0:
                raise CorruptIndexError(
                    f"time index file is corrupt, found {self._length} bytes which is neither "
                    f"positive nor a multiple of 12", where=self.path)
            problem = self._first_disorder()
            if problem is not None:
                raise CorruptIndexError(problem, where=self.path)

    def _first_disorder(self) -> str | None:
        """The first entry out of order, scanned in chunks (`check_chunks`) so memory stays
        O(chunk) however large the mapped file is (a hostile or preallocated 2 GiB index).
        The compiled twin (`index_first_disorder`) answers "in order" at memory speed; this
        scan names the culprit otherwise."""
        n = self._entries
        if n and _COMPILED_DISORDER is not None and _COMPILED_DISORDER(self._buf(), n, True) < 0:
            return None
        if 0 < n <= SMALL_CHECK_ENTRIES:  # the common case in one unpack; else the scan below
            fields = entries_struct("qi", n).unpack_from(self._buf())
            timestamps, rels = fields[0::2], fields[1::2]
            if (rels[0] >= 0 and all(map(operator.lt, timestamps, timestamps[1:]))
                    and all(map(operator.le, rels, rels[1:]))):
                return None
        prev_ts: int | None = None
        prev_rel = 0
        buf = self._buf() if n else b""
        for start, end in check_chunks(n):
            chunk = bytes(buf[start * 12 : end * 12])
            timestamps, rels = (list(column) for column in
                                zip(*self.ENTRY.iter_unpack(chunk), strict=True))
            if ((prev_ts is None or timestamps[0] > prev_ts) and rels[0] >= prev_rel
                    and strictly_increasing(timestamps) and non_decreasing(rels)):
                prev_ts, prev_rel = timestamps[-1], rels[-1]
                continue  # the common case, checked in C; the loop below names the culprit
            for n, (ts, rel) in enumerate(zip(timestamps, rels, strict=True), start=start):
                if (prev_ts is not None and ts <= prev_ts) or rel < prev_rel:
                    return (f"entry {n} ({ts}, {rel}) does not follow ({prev_ts}, {prev_rel}): "
                            f"timestamps must increase and offsets must not decrease")
                prev_ts, prev_rel = ts, rel
        return None

    def check(self) -> None:
        """O(n) own invariants; AssertionError on violation (programmer error)."""
        with self._lock:
            if not 0 <= self._entries <= self._max_entries:
                raise AssertionError(f"{self!r}: entries outside [0, max_entries]")
            if self._last_entry != self._last_entry_from_file():
                raise AssertionError(f"{self!r}: cached last entry {self._last_entry} is stale")
            problem = self._first_disorder()
            if problem is not None:
                raise AssertionError(f"{self!r}: {problem}")
