"""`LogSegment`: one `.log` file plus its lazily created `.index` and `.timeindex` (SEG-1..24).

Files of the segment with base offset 42 (FMT-4, FMT-6)::

    00000000000000000042.log        record batches, back to back (FMT-45)
    00000000000000000042.index      8-byte entries (relative offset, position), preallocated
    00000000000000000042.timeindex  12-byte entries (timestamp, relative offset), preallocated

Every offset stored here lies in [base, base + Int.MAX] (SEG-2). Index entries are written per
batch once more than `index_interval_bytes` accumulated since the last one (SEG-3 [TRUNK]): the key
is the batch's last offset and the value its start position.

Crash policy: appends write the `.log` bytes before touching the indexes, so a crash leaves at worst
a torn `.log` tail and stale index entries; `recover()` (SEG-15) CRC-checks every batch,
truncates at the first invalid one and rebuilds both indexes, and the loader runs it for every
segment at or after the recovery point after an unclean shutdown (REC-8).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.index.lazy_index import LazyIndex
from kafkalog.impl.index.transaction_index import TransactionIndex
from kafkalog.impl.records.file_records import FileRecords
from kafkalog.impl.records.memory_records import BatchFacts, MemoryRecords, batch_facts
from kafkalog.impl.records.record_batch import HEADER_SIZE_UP_TO_MAGIC, MAGIC_OFFSET
from kafkalog.impl.segment.check import check_segment_unless_unchanged, next_offset_from
from kafkalog.impl.segment.files import (
    DELETED_FILE_SUFFIX as DELETED_FILE_SUFFIX,  # with the other suffixes
)
from kafkalog.impl.segment.files import SegmentFiles
from kafkalog.impl.segment.indexing import (
    append_unit,
    check_index_capacity,
    index_decisions,
    per_append_decisions,
)
from kafkalog.impl.segment.recovery import RecoveredBatches, walk_batches
from kafkalog.impl.time import Time
from kafkalog.model.errors import (
    CorruptRecordError,
    IllegalArgumentError,
    InvalidFileNameError,
    LogSegmentOffsetOverflowError,
)
from kafkalog.model.values import (
    INT32_MAX,
    NO_TIMESTAMP,
    AbortedTransaction,
    LogConfig,
    LogOffsetMetadata,
)

LOG_FILE_SUFFIX = ".log"
INDEX_FILE_SUFFIX = ".index"
TIME_INDEX_FILE_SUFFIX = ".timeindex"
TXN_INDEX_FILE_SUFFIX = ".txnindex"
CLEANED_FILE_SUFFIX = ".cleaned"
SWAP_FILE_SUFFIX = ".swap"
INDEX_SUFFIXES = (INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX)
EMPTY_RECORDS = MemoryRecords(b"")
_UNKNOWN = (NO_TIMESTAMP, -1)  # SEG-1 maxTimestampAndOffsetSoFar before first use


def filename_prefix_from_offset(offset: int) -> str:
    """FMT-4: the decimal offset zero-padded to 20 digits."""
    return f"{offset:020d}"


def offset_from_file_name(name: str) -> int:
    """FMT-5: the offset before the first dot; InvalidFileNameError (ERR-48) names the file."""
    prefix = name.split(".", 1)[0]
    # ASCII digits only (str.isdigit also takes "²", which int() rejects), within Long.MAX.
    if len(prefix) != 20 or not (prefix.isascii() and prefix.isdigit()) \
            or int(prefix) > 2**63 - 1:
        raise InvalidFileNameError(f"not a 20-digit offset file name: {name!r}", where=name)
    return int(prefix)


def segment_file(dir_path: Path, base_offset: int, suffix: str, extra: str = "") -> Path:
    """`<dir>/<20-digit base><suffix><extra>`, e.g. `.../00000000000000000042.log.deleted`."""
    return dir_path / f"{filename_prefix_from_offset(base_offset)}{suffix}{extra}"


def roll_jitter_ms(config: LogConfig, base_offset: int) -> int:
    """SEG-8, drawn deterministically (docs/design.md): base % min(jitter, segment_ms), or 0."""
    if config.segment_jitter_ms <= 0:
        return 0
    return base_offset % min(config.segment_jitter_ms, config.segment_ms)


@dataclass(frozen=True)
class FetchDataInfo:
    """What a read returns (impl): where it starts, a zero-copy slice, and SEG-10 step 6."""

    fetch_offset_metadata: LogOffsetMetadata
    records: MemoryRecords  # a zero-copy view of the bytes read from `.log` (may end mid-batch)
    first_entry_incomplete: bool = False
    # TXN-14/TXN-15: present (possibly empty) for TXN_COMMITTED reads, else None.
    aborted_transactions: tuple[AbortedTransaction, ...] | None = None


@dataclass(frozen=True)
class RollParams:
    """The inputs of `should_roll` (SEG-6)."""

    max_segment_ms: int
    max_segment_bytes: int
    max_timestamp_in_messages: int
    max_offset_in_messages: int
    messages_size: int
    now: int


class LogSegment(SegmentFiles):
    """One segment; not thread-safe on its own (the log's writer lock serialises mutations)."""

    def __init__(
        self,
        fs: FileSystem,
        log: FileRecords,
        offset_index: LazyIndex,
        time_index: LazyIndex,
        base_offset: int,
        index_interval_bytes: int,
        roll_jitter: int,
        time: Time,
        max_index_size: int,
    ) -> None:
        self.fs = fs
        self.log = log
        self._offset_index = offset_index
        self._time_index = time_index
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.roll_jitter_ms = roll_jitter
        self.time = time
        self.max_index_size = max_index_size
        self.created = time.milliseconds()
        self.rolling_based_timestamp: int | None = None
        self._max_ts_and_offset: tuple[int, int] = _UNKNOWN
        self.bytes_since_last_index_entry = 0
        self.last_modified_ms = log.last_modified_ms()
        # PSF-8: `.txnindex`, created by the first aborted transaction; follows suffix renames.
        self.txn_index = TransactionIndex(fs, lambda: self.txn_index_file, base_offset)
        # What the last `recover()` walk saw, for the loader's later passes (PSR-7).
        self.recovered_batches: RecoveredBatches | None = None
        # Memos of impl/segment/check.py: the last check (fingerprint, next offset), file versions.
        self.last_check: tuple[Hashable, int] | None = None
        self.versions_seen: tuple[Hashable, ...] | None = None

    @classmethod
    def open(
        cls,
        fs: FileSystem,
        dir_path: Path | str,
        base_offset: int,
        config: LogConfig,
        time: Time,
        *,
        file_already_exists: bool = False,
        file_suffix: str = "",
    ) -> LogSegment:
        """Open or create the segment's files with `file_suffix` appended (SEG-24)."""
        d = Path(dir_path)
        log = FileRecords.open(
            fs, segment_file(d, base_offset, LOG_FILE_SUFFIX, file_suffix),
            file_already_exists=file_already_exists,
        )
        oi = LazyIndex.for_offset(
            fs, segment_file(d, base_offset, INDEX_FILE_SUFFIX, file_suffix), base_offset,
            config.segment_index_bytes,
        )
        ti = LazyIndex.for_time(
            fs, segment_file(d, base_offset, TIME_INDEX_FILE_SUFFIX, file_suffix), base_offset,
            config.segment_index_bytes,
        )
        segment = cls(
            fs, log, oi, ti, base_offset, config.index_interval_bytes,
            roll_jitter_ms(config, base_offset), time, config.segment_index_bytes,
        )
        if not file_already_exists:
            # The file system's clock is the log's (SEG-19): a new `.log` carries the time it
            # was created, so a load after a crash reads it, not the host's wall clock.
            segment.last_modified_ms = time.milliseconds()
            log.set_last_modified_ms(segment.last_modified_ms)
        return segment

    # --- accessors --------------------------------------------------------------------------

    @property
    def offset_index(self) -> Any:
        return self._offset_index.get()

    @property
    def time_index(self) -> Any:
        return self._time_index.get()

    @property
    def offset_index_file(self) -> Path:
        return Path(self._offset_index.path)

    @property
    def time_index_file(self) -> Path:
        return Path(self._time_index.path)

    @property
    def txn_index_file(self) -> Path:
        log_path = Path(self.log.path)
        return log_path.with_name(log_path.name.replace(LOG_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX, 1))

    def size(self) -> int:
        """Bytes in `.log`."""
        return self.log.size_in_bytes

    @property
    def max_timestamp_and_offset_so_far(self) -> tuple[int, int]:
        """(max batch timestamp, its batch's last offset); lazily read from the time index."""
        if self._max_ts_and_offset == _UNKNOWN:
            entry = self.time_index.last_entry
            self._max_ts_and_offset = (entry.timestamp, entry.offset)
        return self._max_ts_and_offset

    def max_timestamp_so_far(self) -> int:
        return self.max_timestamp_and_offset_so_far[0]

    def shallow_offset_of_max_timestamp_so_far(self) -> int:
        return self.max_timestamp_and_offset_so_far[1]

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        """SEG-2/FMT-11: whether `offset` fits in [base, base + Int.MAX]."""
        return 0 <= offset - self.base_offset <= INT32_MAX

    def _ensure_offset_in_range(self, offset: int) -> None:
        if not self.can_convert_to_relative_offset(offset):
            raise LogSegmentOffsetOverflowError(
                f"Detected offset overflow at offset {offset} in segment with base offset "
                f"{self.base_offset}",
                where=str(self.log.path),
            )

    # --- append -----------------------------------------------------------------------------

    def append(self, largest_offset: int, records: Any, per_batch: bool = True,
               reported: int | None = None) -> None:
        """Append whole batches (a MemoryRecords) ending at `largest_offset`; SEG-3 [TRUNK].

        One write of the given bytes, then index bookkeeping per batch from header fields only;
        with `per_batch` False one decision for the whole append, its max timestamp paired with
        `reported`, the offset the append's result names (SEG-4, KL-VERSION-2, KL-VERSION-4).
        Raises LogSegmentOffsetOverflowError (ERR-14) before writing anything.
        """
        self.recovered_batches = None
        if records.size_in_bytes == 0:
            return
        position = self.log.size_in_bytes
        self._ensure_offset_in_range(largest_offset)
        batches = batch_facts(records)  # carried by the append path, else read from headers
        self._check_index_capacity(batches if per_batch else append_unit(batches))
        if position == 0:
            self.rolling_based_timestamp = batches[0][5]
        self.log.append(records)
        self.last_modified_ms = self.time.milliseconds()
        max_ts, max_off = self.max_timestamp_and_offset_so_far
        # SEG-3's decisions on header facts alone, then the entries in one bulk store each.
        if per_batch:
            offsets, positions, timed, since, max_ts, max_off = index_decisions(
                batches, position, self.index_interval_bytes, self.bytes_since_last_index_entry,
                max_ts, max_off)
        else:
            offsets, positions, timed, since, max_ts, max_off = per_append_decisions(
                batches, position, self.index_interval_bytes, self.bytes_since_last_index_entry,
                max_ts, max_off, reported)
        if offsets:
            self._append_index_entries(offsets, positions, timed, position, batches)
        if (max_ts, max_off) != self._max_ts_and_offset:
            self._max_ts_and_offset = (max_ts, max_off)
        self.bytes_since_last_index_entry = since

    def _append_index_entries(self, offsets: list[int], positions: list[int],
                              timed: list[tuple[int, int]], start: int,
                              batches: list[BatchFacts]) -> None:
        """Write SEG-3's entries: the offset index in one bulk store, then the time index's.

        When the bulk store or the time-index entries could fail (an index the checks above do
        not vouch for), the per-batch loop runs instead, so the same error surfaces after the
        same entries: offset and time index appended alternately, as Kafka does.
        """
        ti = self.time_index
        if len(offsets) == 1:  # one entry (small appends): the plain calls cost less
            self.offset_index.append(offsets[0], positions[0])
            if timed:
                ti.maybe_append(*timed[0])
            return
        if ti.accepts(timed) and self.offset_index.append_entries(offsets, positions):
            ti.append_accepted(timed)
            return
        self._append_index_entries_per_batch(start, batches)

    def _append_index_entries_per_batch(self, position: int, batches: list[BatchFacts]) -> None:
        """SEG-3 batch by batch, alternating the two indexes (the bulk path's slow twin)."""
        max_ts, max_off = self.max_timestamp_and_offset_so_far
        interval, since = self.index_interval_bytes, self.bytes_since_last_index_entry
        append_offset, append_time = self.offset_index.append, self.time_index.maybe_append
        called_ts, called_off = None, None
        try:
            for _, size, base, delta, _, batch_max_ts, _, _ in batches:
                if batch_max_ts > max_ts:
                    max_ts, max_off = batch_max_ts, base + delta
                    self._max_ts_and_offset = (max_ts, max_off)
                if since > interval:
                    append_offset(base + delta, position)
                    if max_ts != called_ts or max_off != called_off:
                        append_time(max_ts, max_off)
                        called_ts, called_off = max_ts, max_off
                    since = 0
                position += size
                since += size
        finally:
            self.bytes_since_last_index_entry = since

    def _check_index_capacity(self, batches: list[BatchFacts]) -> None:
        """Raise before writing if this append's index entries would overflow an index.

        Kafka writes the bytes first and fails in the index (SEG-5); kafkalog replays the index
        decisions of SEG-3 on header fields first so an error leaves no state change (the
        model's KL-APPEND-9). Raises IllegalArgumentError (ERR-3, ERR-7) naming the index.
        """
        oi, ti = self.offset_index, self.time_index
        n = len(batches)
        if oi.entries + n <= oi.max_entries and ti.entries + n < ti.max_entries:
            return  # room for an entry per batch: skip building the error location (a Path)
        check_index_capacity(
            batches, self.index_interval_bytes, self.bytes_since_last_index_entry,
            self.max_timestamp_so_far(), (oi.entries, oi.max_entries),
            (ti.entries, ti.max_entries, ti.last_entry.timestamp),
            where=str(self.offset_index_file),
        )

    # --- lookups and reads ------------------------------------------------------------------

    def translate_offset(self, offset: int, starting_file_position: int = 0) -> Any:
        """The first batch with last offset >= `offset` as LogOffsetPosition, or None (SEG-9).

        O(log n) index lookup over the mmap, then a shallow scan of at most one index interval.
        """
        position, expected = self._offset_index.get().floor_span(offset)
        if starting_file_position > position:
            position = starting_file_position
        return self.log.search_for_offset_with_size(offset, position, expected)

    def read(
        self,
        start_offset: int,
        max_size: int,
        max_position: int | None = -1,
        min_one_message: bool = False,
    ) -> FetchDataInfo | None:
        """Read from the batch containing `start_offset` (SEG-10 [TRUNK CHG-1], SEG-11).

        `max_position=-1` means the segment's size; `None` means no bound known (empty records).
        Returns None when no batch in this segment has last offset >= `start_offset`.
        Raises IllegalArgumentError for a negative `max_size` (ERR-15).
        """
        if max_size < 0:
            raise IllegalArgumentError(f"Invalid max size {max_size} for log read from segment")
        position_info = self.translate_offset(start_offset)
        if position_info is None:
            return None
        start_position = position_info.position
        adjusted = max(max_size, position_info.size) if min_one_message else max_size
        if max_position == -1:
            max_position = self.size()
        if adjusted == 0 or max_position is None:
            batch_base = self._batch_base_offset_at(start_position)
            return FetchDataInfo(LogOffsetMetadata(batch_base, self.base_offset, start_position),
                                 EMPTY_RECORDS)
        fetch_size = max(0, min(max_position - start_position, adjusted))
        records = self.log.slice_records(start_position, fetch_size)
        # CHG-1's base offset from the bytes just read when they hold a v2 header (no second
        # read of that header); otherwise from the file, as for an empty read.
        head = records.buffer
        if len(head) >= HEADER_SIZE_UP_TO_MAGIC and head[MAGIC_OFFSET] >= 2:
            batch_base = int.from_bytes(head[:8], "big", signed=True)
        else:
            batch_base = self._batch_base_offset_at(start_position)
        return FetchDataInfo(
            LogOffsetMetadata(batch_base, self.base_offset, start_position), records,
            adjusted < position_info.size,
        )

    def _batch_base_offset_at(self, position: int) -> int:
        """The base offset of the batch starting at `position` (CHG-1) from its header alone."""
        header = self.log.read_bytes(position, HEADER_SIZE_UP_TO_MAGIC)
        if len(header) == HEADER_SIZE_UP_TO_MAGIC and header[MAGIC_OFFSET] >= 2:
            return int.from_bytes(header[:8], "big", signed=True)  # one 17-byte read for v2
        for batch in self.log.batches(position):  # legacy: the view knows its base offset
            return int(batch.base_offset)
        raise CorruptRecordError("no batch at a position the index pointed to",
                                 where=f"{self.log.path}:{position}")

    def read_next_offset(self) -> int:
        """The offset after the last batch, or the base offset when empty (SEG-12): a walk
        from the last index entry (on headers where it can, impl/segment/check.py)."""
        start = self.offset_index.last_offset
        return next_offset_from(self, self.offset_index.lookup(start).position)

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int) -> Any:
        """The first record at or after `timestamp` with offset >= `starting_offset` (SEG-18)."""
        entry = self.time_index.lookup(timestamp)
        position = self.offset_index.lookup(max(entry.offset, starting_offset)).position
        return self.log.search_for_timestamp(timestamp, position, starting_offset)

    def largest_timestamp(self) -> int:
        """Max record timestamp if known, else the `.log` last-modified time (SEG-19)."""
        max_ts = self.max_timestamp_so_far()
        return max_ts if max_ts >= 0 else self.last_modified_ms

    def largest_record_timestamp(self) -> int | None:
        max_ts = self.max_timestamp_so_far()
        return max_ts if max_ts >= 0 else None

    def read_largest_timestamp(self) -> tuple[int, int]:
        """Larger of the time index's last entry and the batches after it (SEG-14)."""
        last = self.time_index.last_entry
        position = self.offset_index.lookup(last.offset).position
        found = self.log.largest_timestamp_after(position)
        ts, off = found[0], found[1]
        return (ts, off) if ts > last.timestamp else (last.timestamp, last.offset)

    def get_first_batch_timestamp(self) -> int:
        self._load_first_batch_timestamp()
        rbt = self.rolling_based_timestamp
        return rbt if rbt is not None and rbt >= 0 else 2**63 - 1

    def _load_first_batch_timestamp(self) -> None:
        if self.rolling_based_timestamp is None:
            for batch in self.log.batches(0):
                self.rolling_based_timestamp = int(batch.max_timestamp)
                break

    # --- rolling ----------------------------------------------------------------------------

    def time_waited_for_roll(self, now: int, message_timestamp: int) -> int:
        """Message time since the first batch, else wall time since creation (SEG-7)."""
        self._load_first_batch_timestamp()
        rbt = self.rolling_based_timestamp
        if rbt is not None and rbt >= 0:
            return message_timestamp - rbt
        return now - self.created

    def should_roll(self, p: RollParams) -> bool:
        """SEG-6: size, time (with jitter, never for an empty segment), full index, overflow."""
        size = self.size()
        reached_time_limit = size > 0 and self.time_waited_for_roll(
            p.now, p.max_timestamp_in_messages
        ) > p.max_segment_ms - self.roll_jitter_ms
        return (
            size > p.max_segment_bytes - p.messages_size
            or reached_time_limit
            or self.offset_index.is_full()
            or self.time_index.is_full()
            or not self.can_convert_to_relative_offset(p.max_offset_in_messages)
        )

    def on_become_inactive_segment(self) -> None:
        """On roll: final time-index entry, trim both indexes and the `.log` (SEG-16)."""
        max_ts, max_off = self.max_timestamp_and_offset_so_far
        self.time_index.maybe_append(max_ts, max_off, skip_full_check=True)
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()
        self.log.trim()

    def resize_indexes(self, size: int) -> None:
        """Kafka's `resizeIndexes`: give both indexes `size` bytes of capacity again (REC-12,
        SEG-13), but never less than their entries take (KL-CRASH-5).

        Recovery rebuilds an index without the `segment_index_bytes` bound, and it can hold
        more entries than fit: the live segment indexed from a counter that a load or a
        truncation reset, recovery counts from the segment's start. Kafka's `resize` would throw
        there (`MappedByteBuffer.position` beyond the new limit), so a log whose active segment
        was rebuilt that way could not be loaded or truncated again. Kept whole, the index reads
        full and the next append rolls (SEG-6).
        """
        for index in (self.offset_index, self.time_index):
            index.resize(max(size, index.size_in_bytes()))

    # --- truncation and recovery ------------------------------------------------------------

    def truncate_to(self, offset: int, before_cut: Callable[[], None] | None = None) -> int:
        """Remove everything with offset >= `offset`; returns bytes removed (SEG-13, SEG-14).
        `before_cut` (optional) runs once the cut position is known, before anything is cut
        (the loader's KL-CRASH-14 steps)."""
        self.recovered_batches = None
        mapping = self.translate_offset(offset)
        if mapping is not None and before_cut is not None:
            before_cut()
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.resize_indexes(self.max_index_size)
        self.txn_index.truncate_to(offset)  # PSF-10
        removed = 0 if mapping is None else self.log.truncate_to(mapping.position)
        if removed:
            self.last_modified_ms = self.time.milliseconds()
        if self.log.size_in_bytes == 0:
            self.created = self.time.milliseconds()
            self.rolling_based_timestamp = None
        self.bytes_since_last_index_entry = 0
        if self.max_timestamp_so_far() >= 0:
            self._max_ts_and_offset = self.read_largest_timestamp()
        return int(removed)

    def recover(self, epoch_cache: Any = None,
                before_cut: Callable[[], None] | None = None) -> int:
        """CRC-check every batch, rebuild both indexes and epochs; truncate at the first bad one.

        Spec: SEG-15. Returns the bytes truncated. LogSegmentOffsetOverflowError and
        InvalidOffsetError propagate to the loader (REC-8). `before_cut` (optional) runs
        after the walk found a cut and before the `.log` is truncated (KL-CRASH-14: the loader
        removes the later segments durably first).
        """
        self.offset_index.reset()
        self.time_index.reset()
        self.txn_index.reset()  # PSF-10: rebuilt by the loader from replayed markers (PSR-7)
        self._max_ts_and_offset = _UNKNOWN
        # One pass, a chunk at a time (impl/segment/recovery.py); it also remembers the
        # producer batches, so the loader's .txnindex and producer-state passes need not walk
        # the segment again.
        valid_bytes, max_ts, max_off, seen = walk_batches(self, epoch_cache)
        truncated = self.log.size_in_bytes - valid_bytes
        if truncated > 0:
            if before_cut is not None:
                before_cut()
            self.log.truncate_to(valid_bytes)
            self.last_modified_ms = self.time.milliseconds()
        self.offset_index.trim_to_valid_size()
        self.time_index.maybe_append(max_ts, max_off, skip_full_check=True)
        self.time_index.trim_to_valid_size()
        seen.size = self.log.size_in_bytes
        self.recovered_batches = seen
        return truncated

    def _batches_checked(self) -> Iterator[Any]:
        for batch in self.log.batches(0):
            batch.ensure_valid()  # names `file@position` itself, and only when it raises
            yield batch

    @staticmethod
    def _maybe_assign_epoch(batch: Any, epoch_cache: Any) -> None:
        if epoch_cache is None or batch.magic < 2 or batch.partition_leader_epoch < 0:
            return
        latest = epoch_cache.latest_epoch
        if latest is None or batch.partition_leader_epoch > latest:
            epoch_cache.assign(batch.partition_leader_epoch, batch.base_offset)

    def sanity_check(self, time_index_file_newly_created: bool) -> None:
        """SEG-22: shrink a freshly created time index (KAFKA-4734); a missing `.index` raises.

        Offset/time-index content checks are skipped like Kafka (KAFKA-7283); the loader calls
        `check_indexes` when it wants them. Raises FileNotFoundError when `.index` is missing.
        """
        if not self.fs.exists(self.offset_index_file):
            raise FileNotFoundError(str(self.offset_index_file))
        if time_index_file_newly_created:
            self.time_index.resize(0)

    def check_indexes(self) -> None:
        """Both indexes' own sanity checks (FMT-18, FMT-25); raises CorruptIndexError."""
        self.offset_index.sanity_check()
        self.time_index.sanity_check()
        self.txn_index.sanity_check()

    def has_overflow(self) -> bool:
        """SEG-20: the segment holds an offset that does not fit relative to its base."""
        next_offset = self.read_next_offset()
        return next_offset > self.base_offset and not self.can_convert_to_relative_offset(
            next_offset - 1
        )

    # --- files ------------------------------------------------------------------------------

    def close(self) -> None:
        """Final time-index entry, close (trim) both indexes, flush and trim `.log` (SEG-17)."""
        if self._max_ts_and_offset != _UNKNOWN:
            try:
                ts, off = self._max_ts_and_offset
                self.time_index.maybe_append(ts, off, skip_full_check=True)
            except Exception:  # SEG-17: swallowed like Kafka; the entry is an optimisation
                pass
        self._offset_index.close()
        self._time_index.close()
        self.log.set_last_modified_ms(self.last_modified_ms)
        self.log.close()

    def close_handlers(self) -> None:
        """Release file handles and maps without writing (LOC-13)."""
        self._offset_index.close_handler()
        self._time_index.close_handler()
        self.log.close_handlers()

    def check(self) -> int:
        """Assert this segment's invariants in O(n) (SEG-2; impl/segment/check.py); returns the
        offset after its last batch (the base offset when empty)."""
        return check_segment_unless_unchanged(self)

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size()})"
