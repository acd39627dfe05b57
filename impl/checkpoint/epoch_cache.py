"""`LeaderEpochCache`: which leader epoch started at which offset (LeaderEpochFileCache, EPO-1..10).

The cache is a list of `EpochEntry(epoch, start_offset)` strictly increasing in both fields
(LOG-2 (7)), mirrored in the partition's `leader-epoch-checkpoint` (FMT-39), e.g. entries
(0, 0), (3, 120) are stored as the lines ``0 / 2 / 0 0 / 3 120``.

Crash policy: every change is written through `CheckpointFile.write` (tmp + fsync + rename + dir
fsync), so the file always holds a complete old or new list. Kafka flushes truncations
asynchronously (EPO-10); kafkalog writes them synchronously (docs/design.md "Async work"), and the
loader still re-applies both truncations after a crash (REC-13, REC-15). The one exception is the
strict loader during an unclean load (`defer_writes`): it writes the final list once, at its end.
"""

from __future__ import annotations

import bisect
import threading

from kafkalog.impl.checkpoint.checkpoint_file import LeaderEpochCheckpointFile
from kafkalog.model.errors import IllegalArgumentError
from kafkalog.model.values import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, EpochEntry


class LeaderEpochCache:
    """The in-memory epoch list plus its checkpoint; all methods are thread-safe.

    `checkpoint=None` gives an unbacked cache (used by read-only inspection and tests).
    """

    def __init__(self, checkpoint: LeaderEpochCheckpointFile | None) -> None:
        self._checkpoint = checkpoint
        self._lock = threading.RLock()
        self._entries: list[EpochEntry] = []
        self._writes_deferred = False  # see defer_writes
        self._write_pending = False  # a change made while deferred, not written yet
        if checkpoint is not None:
            # EPO-1: loading replays `assign`, so a non-monotonic file is normalised the same way.
            for entry in checkpoint.read():
                self._assign(entry.epoch, entry.start_offset)

    # --- updates --------------------------------------------------------------------------

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that `epoch` starts at `start_offset`; writes the checkpoint when it changed.

        Spec: EPO-2, EPO-3. Raises IllegalArgumentError for a negative epoch or offset (ERR-27).
        """
        with self._lock:
            if self._assign(epoch, start_offset):
                self._flush()

    def assign_all(self, entries: list[EpochEntry]) -> None:
        """Apply several entries in order and write the checkpoint once (EPO-3)."""
        with self._lock:
            changed = [self._assign(e.epoch, e.start_offset) for e in entries]
            if any(changed):
                self._flush()

    def _assign(self, epoch: int, start_offset: int) -> bool:
        if epoch < 0 or start_offset < 0:
            raise IllegalArgumentError(
                f"Received invalid partition leader epoch entry EpochEntry(epoch={epoch}, "
                f"startOffset={start_offset})"
            )
        entries = self._entries
        if entries and entries[-1].epoch == epoch and start_offset >= entries[-1].start_offset:
            return False  # an epoch's start offset never moves forward
        while entries and (entries[-1].epoch >= epoch or entries[-1].start_offset >= start_offset):
            entries.pop()
        entries.append(EpochEntry(epoch, start_offset))
        return True

    def replace_entries(self, entries: list[EpochEntry]) -> None:
        """Set the whole list (written as any change is, EPO-3); the loader's re-derivation
        (KL-CRASH-6) starts again from an earlier list with it."""
        with self._lock:
            self._entries = []
            for entry in entries:
                self._assign(entry.epoch, entry.start_offset)
            self._flush()

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop entries starting at or after `end_offset` (EPO-6); -1 does nothing."""
        with self._lock:
            entries = self._entries
            if end_offset < 0 or not entries or entries[-1].start_offset < end_offset:
                return
            while entries and entries[-1].start_offset >= end_offset:
                entries.pop()
            self._flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop entries starting at or before `start_offset`, keeping the last one moved up to it.

        Spec: EPO-7 (the cut is exclusive: the epoch in force at `start_offset` survives).
        """
        with self._lock:
            removed: EpochEntry | None = None
            while self._entries and self._entries[0].start_offset <= start_offset:
                removed = self._entries.pop(0)
            if removed is None:
                return
            self._entries.insert(0, EpochEntry(removed.epoch, start_offset))
            self._flush()

    def clear_and_flush(self) -> None:
        """Forget every entry and write the empty list synchronously (EPO-9), deferred or not:
        the loader's REC-9 path needs it on disk before it creates the new segment."""
        with self._lock:
            self._entries.clear()
            self._write()

    def defer_writes(self, deferred: bool) -> None:
        """While deferred, changes stay in memory until `flush` or the end of the deferral,
        which writes them if `flush` has not (an unclean load changes the list
        several times and then writes it once, GAP-4). Only for the loader: every load
        re-derives the entries above the recovery point, so a crash before that write loads
        the same state as one after it."""
        with self._lock:
            self._writes_deferred = deferred
            if not deferred and self._write_pending:
                self._write()

    def clear(self) -> None:
        """Forget every entry without writing (EPO-9)."""
        with self._lock:
            self._entries.clear()

    def flush(self) -> None:
        """Write the current entries (used on close and at the end of an unclean load)."""
        with self._lock:
            self._write()

    def _flush(self) -> None:
        if self._writes_deferred:
            self._write_pending = True
        else:
            self._write()

    def _write(self) -> None:
        self._write_pending = False
        if self._checkpoint is not None:
            self._checkpoint.write_if_dir_exists(list(self._entries))

    # --- queries --------------------------------------------------------------------------

    def epoch_entries(self) -> tuple[EpochEntry, ...]:
        with self._lock:
            return tuple(self._entries)

    def is_empty(self) -> bool:
        with self._lock:
            return not self._entries

    @property
    def latest_entry(self) -> EpochEntry | None:
        with self._lock:
            return self._entries[-1] if self._entries else None

    @property
    def latest_epoch(self) -> int | None:
        entry = self.latest_entry
        return None if entry is None else entry.epoch

    @property
    def earliest_entry(self) -> EpochEntry | None:
        with self._lock:
            return self._entries[0] if self._entries else None

    def epoch_entry(self, epoch: int) -> EpochEntry | None:
        with self._lock:
            return next((e for e in self._entries if e.epoch == epoch), None)

    def previous_epoch(self, epoch: int | None = None) -> int | None:
        """The largest epoch below `epoch` (below the latest when omitted), EPO-9."""
        with self._lock:
            if epoch is None:
                return self._entries[-2].epoch if len(self._entries) >= 2 else None
            lower = [e.epoch for e in self._entries if e.epoch < epoch]
            return lower[-1] if lower else None

    def previous_entry(self, epoch: int) -> EpochEntry | None:
        """The entry with the largest epoch below `epoch` (EPO-9)."""
        with self._lock:
            lower = [e for e in self._entries if e.epoch < epoch]
            return lower[-1] if lower else None

    def next_epoch(self, epoch: int) -> int | None:
        with self._lock:
            return next((e.epoch for e in self._entries if e.epoch > epoch), None)

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch in force at `offset`, or None before the first entry (EPO-8)."""
        with self._lock:
            starts = [e.start_offset for e in self._entries]
            slot = bisect.bisect_right(starts, offset) - 1
            return self._entries[slot].epoch if slot >= 0 else None

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, exclusive end offset) for a follower's OffsetsForLeaderEpoch request.

        Spec: EPO-4 (undefined -> (-1, -1); latest -> LEO; otherwise the largest known epoch
        <= requested, ending where the next higher epoch starts).
        """
        with self._lock:
            if requested_epoch == UNDEFINED_EPOCH:
                return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
            if self._entries and requested_epoch == self._entries[-1].epoch:
                return requested_epoch, log_end_offset
            higher = next((e for e in self._entries if e.epoch > requested_epoch), None)
            if higher is None:
                return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
            floor = [e for e in self._entries if e.epoch <= requested_epoch]
            if not floor:
                return requested_epoch, higher.start_offset
            return floor[-1].epoch, higher.start_offset

    def check(self) -> None:
        """Assert LOG-2 (7): epochs and start offsets strictly increase. O(n)."""
        with self._lock:
            for prev, cur in zip(self._entries, self._entries[1:], strict=False):
                assert prev.epoch < cur.epoch, f"epochs not increasing: {prev}, {cur}"
                assert prev.start_offset < cur.start_offset, f"offsets not rising: {prev}, {cur}"


class EpochsFromRecoveryPoint:
    """The epoch cache as an unclean load's recovery pass sees it (RCV-10 narrowed, KL-CRASH-6).

    A batch adds an entry only at or above the checkpointed recovery point: the entries below
    it describe flushed data and were written before those batches (EPO-2 writes synchronously),
    while a flushed batch may carry an epoch that a lower epoch replaced later (EPO-3). Kafka
    walks the whole segment holding the recovery point, so such a batch comes back into the
    cache and a reload after a clean load differs from the clean load (CRP-12). The loader uses
    the plain cache (Kafka's walk) when no entry is left below the recovery point.
    """

    def __init__(self, cache: LeaderEpochCache, recovery_point: int) -> None:
        self._cache = cache
        self._recovery_point = recovery_point

    @property
    def latest_epoch(self) -> int | None:
        return self._cache.latest_epoch

    def assign(self, epoch: int, start_offset: int) -> None:
        if start_offset >= self._recovery_point:
            self._cache.assign(epoch, start_offset)
