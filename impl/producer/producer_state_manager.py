"""`ProducerStateManager`: idempotent-producer state of one partition and its `.snapshot` files.

Kafka's PSM (PST-2..PST-23, PSR-1..PSR-12). `ProducerAppendInfo` and `ProducerStateEntry` live
in append.py and are re-exported here. Validation works on copies (`AppendInfo`), so a
rejected append leaves the stored state untouched (KAFKA-6683); `update` merges an accepted one.

Files: `<offset>.snapshot` (impl/producer/snapshot.py). Written by `take_snapshot` (roll: no fsync;
close and rebuilds: fsync), deleted synchronously by reloads and full truncation, renamed
`.snapshot.deleted` and removed `file.delete.delay.ms` later for segment deletion and truncation
(PSR-2, KAFKA-12964). Every effect goes through the `FileSystem` seam.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.producer.append import NUM_BATCHES_TO_RETAIN as NUM_BATCHES_TO_RETAIN
from kafkalog.impl.producer.append import AppendInfo as AppendInfo
from kafkalog.impl.producer.append import AppendOrigin as AppendOrigin
from kafkalog.impl.producer.append import BatchMetadata as BatchMetadata
from kafkalog.impl.producer.append import CompletedTxn as CompletedTxn
from kafkalog.impl.producer.append import EndTxnMarker as EndTxnMarker
from kafkalog.impl.producer.append import ProducerBatch as ProducerBatch
from kafkalog.impl.producer.append import ProducerStateEntry as ProducerStateEntry
from kafkalog.impl.producer.append import decrement_sequence as decrement_sequence
from kafkalog.impl.producer.append import increment_sequence as increment_sequence
from kafkalog.impl.producer.snapshot import (
    SnapshotEntry,
    java_hash_map_capacity,
    java_hash_map_order,
    read_snapshot,
    snapshot_file,
    snapshot_offset,
    write_snapshot,
)
from kafkalog.impl.time import Time
from kafkalog.model.errors import (
    CorruptSnapshotError,
    IllegalArgumentError,
    InvalidRecordError,
)

DELETED_SUFFIX = ".deleted"


class ProducerStateManager:
    """PSM of one partition directory (PST-2); see the module docstring."""

    def __init__(self, fs: FileSystem, dir_path: Path, time: Time, expiration_ms: int,
                 file_delete_delay_ms: int) -> None:
        self.fs = fs
        self.dir = Path(dir_path)
        self.time = time
        self.expiration_ms = expiration_ms
        self.file_delete_delay_ms = file_delete_delay_ms
        self.producers: dict[int, ProducerStateEntry] = {}
        self._max_size = 0  # the Java HashMap's table never shrinks (snapshot entry order)
        self.last_map_offset = 0
        self.last_snap_offset = 0
        self.snapshots: dict[int, Path] = self._list_snapshots()
        # PST-2: first offset -> producer id of open transactions, and of completed ones whose
        # marker is not yet below the HW (marker offset kept in `unreplicated_markers`).
        self.ongoing_txns: dict[int, int] = {}
        self.unreplicated_txns: dict[int, CompletedTxn] = {}

    # --- snapshots on disk ------------------------------------------------------------------

    def _list_snapshots(self) -> dict[int, Path]:
        """PSF-1: regular files named `<offset>.snapshot`, ascending."""
        found: dict[int, Path] = {}
        if not self.fs.is_dir(self.dir):
            return found
        for name in self.fs.list_files(self.dir):  # regular files only
            offset = snapshot_offset(name)
            if offset is not None:
                # one Path per snapshot: every unclean load lists ~2n times
                found[offset] = self.dir / name
        return dict(sorted(found.items()))

    def snapshot_offsets(self) -> tuple[int, ...]:
        return tuple(sorted(self.snapshots))

    def latest_snapshot_offset(self) -> int | None:
        return max(self.snapshots) if self.snapshots else None

    def snapshot_entries(self) -> list[SnapshotEntry]:
        """PSF-4: every producer with its newest batch, in Java HashMap iteration order."""
        order = java_hash_map_order(self.producers, java_hash_map_capacity(self._max_size))
        out = []
        for pid in order:
            e = self.producers[pid]
            newest = e.batches[-1] if e.batches else None
            out.append(SnapshotEntry(
                pid, e.producer_epoch, e.last_seq, e.last_data_offset,
                newest.offset_delta if newest else 0, e.last_timestamp, e.coordinator_epoch,
                e.current_txn_first_offset))
        return out

    def take_snapshot(self, sync: bool = True) -> Path | None:
        """PSR-1: write `<lastMapOffset>.snapshot` iff the map end moved past the last one."""
        if self.last_map_offset <= self.last_snap_offset:
            return None
        path = snapshot_file(self.dir, self.last_map_offset)
        write_snapshot(self.fs, path, self.snapshot_entries(), sync)
        self.snapshots[self.last_map_offset] = path
        self.snapshots = dict(sorted(self.snapshots.items()))
        self.last_snap_offset = self.last_map_offset
        return path

    def make_snapshots_durable(self) -> None:
        """kafkalog strict, beyond Kafka (KL-CRASH-7, KL-CRASH-11): after a load, fsync every
        snapshot file kept and then the directory. Recovery's temporary managers and the stray
        and out-of-range removals create and delete snapshot files without a directory fsync,
        and files a process crash left in the page cache may not be on disk: a power loss right
        after the load must leave exactly the files (and so the producer table) it served."""
        for path in self.snapshots.values():
            handle = self.fs.open_file(path, writable=True)
            try:
                handle.fsync()
            finally:
                handle.close()
        self.fs.fsync_dir(self.dir)

    def _delete_now(self, offset: int) -> None:
        path = self.snapshots.pop(offset, None) or snapshot_file(self.dir, offset)
        self.fs.delete_if_exists(path)

    def delete_snapshots_async(self, offsets: Iterable[int]) -> None:
        """PSR-2: rename `.snapshot.deleted` now, delete after file.delete.delay.ms."""
        for offset in offsets:
            path = self.snapshots.pop(offset, None)
            if path is None:
                continue
            doomed = path.with_name(path.name + DELETED_SUFFIX)
            try:
                self.fs.rename(path, doomed)
            except Exception:  # noqa: BLE001 - PSM:598: an already missing file is ignored
                if self.fs.exists(path):
                    raise
                continue

            def delete_later(p: Path = doomed) -> None:
                self.fs.delete_if_exists(p)

            self.time.scheduler.schedule("delete-producer-snapshot", delete_later,
                                         self.file_delete_delay_ms)

    def remove_stray_snapshots(self, segment_bases: Iterable[int]) -> None:
        """PSR-3: keep base snapshots and the largest stray at or above the largest base."""
        bases = set(segment_bases)
        self.snapshots = self._list_snapshots()
        strays = [o for o in self.snapshots if o not in bases]
        for offset in strays[:-1]:
            self._delete_now(offset)
        if strays and bases and strays[-1] < max(bases):
            self._delete_now(strays[-1])

    def _load_from_snapshot(self, log_start: int, now_ms: int) -> None:
        """PSR-4 step 2: newest usable snapshot, corrupt ones deleted, expired producers skipped."""
        while self.snapshots:
            offset = max(self.snapshots)
            try:
                entries = read_snapshot(self.fs, self.snapshots[offset])
            except CorruptSnapshotError:
                self._delete_now(offset)
                continue
            for s in entries:
                entry = ProducerStateEntry(s.producer_id, s.epoch, s.coordinator_epoch,
                                           s.timestamp, s.current_txn_first_offset)
                if s.last_offset >= 0:  # KAFKA-9144: no bogus batch for lastOffset -1
                    entry.batches.append(BatchMetadata(s.last_sequence, s.last_offset,
                                                       s.offset_delta, s.timestamp))
                if not self._is_expired(entry, now_ms):
                    self._put(entry)
                    if entry.current_txn_first_offset >= 0:  # PSR-4: message-only metadata
                        self.ongoing_txns[entry.current_txn_first_offset] = entry.producer_id
            self.last_snap_offset = self.last_map_offset = offset
            return
        self.last_snap_offset = self.last_map_offset = log_start

    # --- the table --------------------------------------------------------------------------

    def _put(self, entry: ProducerStateEntry) -> None:
        self.producers[entry.producer_id] = entry
        self._max_size = max(self._max_size, len(self.producers))

    def prepare_update(self, producer_id: int, origin: AppendOrigin) -> AppendInfo:
        current = self.producers.get(producer_id) or ProducerStateEntry(producer_id)
        return AppendInfo(current, origin)

    def update(self, info: AppendInfo) -> None:
        """PST-19: merge an accepted append into the stored entry (or insert it)."""
        new = info.updated
        current = self.producers.get(new.producer_id)
        if current is None:
            self._put(new)
            return
        current.maybe_update_epoch(new.producer_epoch)
        for meta in new.batches:
            current.add_batch_metadata(meta)
        current.coordinator_epoch = new.coordinator_epoch
        current.current_txn_first_offset = new.current_txn_first_offset
        current.last_timestamp = new.last_timestamp

    def _register_started(self, info: AppendInfo) -> None:
        """PST-19: transactions started by an append join `ongoing_txns`."""
        for first in info.started_txns:
            self.ongoing_txns[first] = info.updated.producer_id

    # --- transactions (TXN-6, TXN-7, TXN-10) --------------------------------------------------

    def last_stable_offset(self, txn: CompletedTxn) -> int:
        """TXN-10: the first open transaction of another producer, else marker + 1."""
        for first in sorted(self.ongoing_txns):
            if self.ongoing_txns[first] != txn.producer_id:
                return first
        return txn.last_offset + 1

    def complete_txn(self, txn: CompletedTxn) -> None:
        """TXN-6: ongoing -> unreplicated; IllegalArgumentError if it was not ongoing."""
        if self.ongoing_txns.pop(txn.first_offset, None) is None:
            raise IllegalArgumentError(
                f"Attempted to complete transaction {txn} on partition which was not started")
        self.unreplicated_txns[txn.first_offset] = txn

    def on_high_watermark_updated(self, hw: int) -> None:
        """TXN-7: unreplicated transactions whose marker is below the HW retire."""
        for first in [f for f, t in self.unreplicated_txns.items() if t.last_offset < hw]:
            del self.unreplicated_txns[first]

    def first_unstable_offset(self) -> int | None:
        """TXN-7: the smaller first key of the ongoing and unreplicated maps."""
        keys = [*self.ongoing_txns, *self.unreplicated_txns]
        return min(keys) if keys else None

    def update_map_end_offset(self, offset: int) -> None:
        self.last_map_offset = offset

    def _is_expired(self, entry: ProducerStateEntry, now_ms: int) -> bool:
        """PST-22."""
        return (entry.current_txn_first_offset < 0
                and now_ms - entry.last_timestamp >= self.expiration_ms)

    def remove_expired_producers(self, now_ms: int) -> None:
        """PST-22 removeExpiredProducers."""
        for pid in [p for p, e in self.producers.items() if self._is_expired(e, now_ms)]:
            del self.producers[pid]

    def is_empty(self) -> bool:
        """PSM.isEmpty: no producers and no unreplicated transactions."""
        return not self.producers and not self.unreplicated_txns

    def check(self, log_end_offset: int) -> None:
        """Assert PST-3 and PSR-1 in O(producers + snapshots): at most 5 cached
        batches with increasing last offsets below the LEO; snapshot offsets <= the map end."""
        assert self.last_snap_offset <= self.last_map_offset, (
            f"last snapshot offset {self.last_snap_offset} > map end {self.last_map_offset}")
        assert all(o <= self.last_map_offset for o in self.snapshots), (
            f"snapshots {sorted(self.snapshots)} above the map end {self.last_map_offset}")
        for pid, e in self.producers.items():
            lasts = [b.last_offset for b in e.batches]
            assert len(lasts) <= NUM_BATCHES_TO_RETAIN and lasts == sorted(set(lasts)), (
                f"producer {pid} caches {lasts}")
            assert all(o < log_end_offset for o in lasts), (
                f"producer {pid} caches offsets {lasts} at or above the LEO {log_end_offset}")

    # --- log-level events -------------------------------------------------------------------

    def on_log_start_offset_incremented(self, log_start: int) -> None:
        """PSR-12: producers kept; map end raised; last snapshot offset re-derived."""
        self.on_high_watermark_updated(log_start)  # PSR-12 step 1: same filter
        if self.last_map_offset < log_start:
            self.last_map_offset = log_start
        latest = self.latest_snapshot_offset()
        self.last_snap_offset = latest if latest is not None else log_start

    def truncate_and_reload(self, log_start: int, end: int, now_ms: int) -> None:
        """PSR-4."""
        for offset in [o for o in self.snapshots if o > end or o <= log_start]:
            self._delete_now(offset)
        if end != self.last_map_offset:
            self.producers.clear()
            self.ongoing_txns.clear()
            self.unreplicated_txns.clear()
            self._load_from_snapshot(log_start, now_ms)
        else:
            self.on_log_start_offset_incremented(log_start)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """PSR-11 step 2."""
        self.producers.clear()
        self.ongoing_txns.clear()
        self.unreplicated_txns.clear()
        for snap in list(self.snapshots):
            self._delete_now(snap)
        self.last_snap_offset = 0
        self.last_map_offset = offset

    def load_producers_from_batches(self, batches: Iterable[ProducerBatch]) -> None:
        """PSR-6: replay as replication (epochs may regress, no sequence checks)."""
        infos: dict[int, AppendInfo] = {}
        for batch in batches:
            if batch.producer_id < 0:
                continue
            info = infos.get(batch.producer_id)
            if info is None:
                info = infos[batch.producer_id] = self.prepare_update(
                    batch.producer_id, AppendOrigin.REPLICATION)
            info.append(batch)
        # SJ.loadProducersFromRecords collects into a Java HashMap and updates in its order,
        # which decides where new producers go in the snapshot's own HashMap order.
        for pid in java_hash_map_order(infos, java_hash_map_capacity(len(infos))):
            self.update(infos[pid])
            self._register_started(infos[pid])
        # PSR-6: completions after all updates, in batch order; they start out unreplicated.
        for txn in completed_in_order(infos):
            self.complete_txn(txn)

    # --- the append path (PST-7 steps 4-6, PST-9) ---------------------------------------------

    def analyze(self, batches: list[ProducerBatch], origin: AppendOrigin
                ) -> tuple[dict[int, AppendInfo], BatchMetadata | None]:
        """PST-8: per batch, the duplicate check (client) then validation on working copies.

        Returns the working copies to `apply` and, for a duplicate, the original batch's cached
        metadata. Raises InvalidProducerEpochError, OutOfOrderSequenceError; nothing changes.
        """
        infos: dict[int, AppendInfo] = {}
        for batch in batches:
            if batch.producer_id < 0:
                continue
            if origin is AppendOrigin.CLIENT:
                stored = self.producers.get(batch.producer_id)
                if stored is not None:
                    duplicate = stored.find_duplicate(batch.producer_epoch, batch.base_sequence,
                                                      batch.last_sequence)
                    if duplicate is not None:
                        return {}, duplicate
            info = infos.get(batch.producer_id)
            if info is None:
                info = infos[batch.producer_id] = self.prepare_update(batch.producer_id, origin)
            info.append(batch)
        return infos, None

    def apply(self, infos: dict[int, AppendInfo], end_offset: int,
              on_completed: Callable[[CompletedTxn, int], None] | None = None) -> None:
        """PST-9 steps 3-5: merge the working copies and register started transactions; for
        each completed transaction in batch order compute its last stable offset (TXN-10), hand
        it to `on_completed` (the txn index, TXN-11), complete it; then the map end."""
        for info in infos.values():
            self.update(info)
            self._register_started(info)
        for txn in completed_in_order(infos):
            lso = self.last_stable_offset(txn)
            if on_completed is not None:
                on_completed(txn, lso)
            self.complete_txn(txn)
        self.update_map_end_offset(end_offset)


def completed_in_order(infos: dict[int, AppendInfo]) -> list[CompletedTxn]:
    """The completed transactions of one append in batch (marker offset) order."""
    return sorted((t for i in infos.values() for t in i.completed_txns),
                  key=lambda t: t.last_offset)


def check_client_batches(batches: list[ProducerBatch], where: str) -> None:
    """PSE-5 (LogValidator): no control batches from clients; a client batch with a producer
    id must carry a sequence."""
    for batch in batches:
        if batch.is_control:
            raise InvalidRecordError("Clients are not allowed to write control records",
                                     where=where)
        if batch.producer_id >= 0 and batch.base_sequence < 0:
            raise InvalidRecordError(
                f"Invalid sequence number {batch.base_sequence} in record batch with producerId "
                f"{batch.producer_id}",
                where=where,
            )
