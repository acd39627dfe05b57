"""`LogLoader`: turn one partition directory into segments and offsets, recovering if needed.

Runs REC-1..19 in Kafka's order: delete `.deleted`/`.cleaned` leftovers and complete or discard
`.swap` files (REC-2..5); open every `.log`, deleting orphan index files and rebuilding missing or
corrupt indexes (REC-6); after an unclean shutdown re-validate every segment from the recovery
point, truncating at the first invalid batch and dropping everything after it (REC-8); handle a
log start offset above the data (REC-9); resize the active segment's indexes (REC-12); trim the
epoch cache to [log start, LEO) (REC-13, REC-15).

Plan, then act: each step decides from the directory listing which files to delete or rename and
then applies that decision; every effect goes through the `FileSystem` seam. Crash policy: every
step is idempotent, so a crash during loading is repaired by the next load (the clean-shutdown
marker is consumed before loading, FMT-43, so that load runs as unclean).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from kafkalog.impl.checkpoint.epoch_cache import EpochsFromRecoveryPoint, LeaderEpochCache
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.producer.snapshot import SNAPSHOT_SUFFIX
from kafkalog.impl.producer.transaction_recovery import recover_txn_index
from kafkalog.impl.records.file_records import FileRecords
from kafkalog.impl.segment.log_segment import (
    CLEANED_FILE_SUFFIX,
    DELETED_FILE_SUFFIX,
    INDEX_SUFFIXES,
    LOG_FILE_SUFFIX,
    SWAP_FILE_SUFFIX,
    TIME_INDEX_FILE_SUFFIX,
    LogSegment,
    offset_from_file_name,
    segment_file,
)
from kafkalog.impl.segment.log_segments import LogSegments
from kafkalog.impl.time import Time
from kafkalog.model.errors import (
    CorruptIndexError,
    InvalidFileNameError,
    InvalidOffsetError,
    KafkaStorageError,
)
from kafkalog.model.values import EpochEntry, LogConfig, LogOffsetMetadata

_INT64_MAX = 2**63 - 1
_BATCH_LENGTH_END = 12  # a batch's base offset (8 bytes) and length (4 bytes), FMT-1


@dataclass
class LoadedLog:
    """REC-17: what loading produced, for `LocalLog` and `Log` construction."""

    segments: LogSegments
    log_start_offset: int
    recovery_point: int
    next_offset_metadata: LogOffsetMetadata
    recovered_segments: tuple[int, ...] = ()  # base offsets whose indexes were rebuilt
    truncated_bytes: int = 0  # bytes cut from torn or corrupt tails during recovery
    # REC-9: segments renamed `.deleted` because the LEO was below the log-start checkpoint;
    # `Log.open` schedules their removal (LDR removeAndDeleteSegmentsAsync, KL-RELOAD-3).
    dropped_segments: tuple[LogSegment, ...] = ()
    # KL-ALLOW-5, only with `LogLoader.defer_cut_deletion`: the segments recovery's cut renamed
    # `.deleted` instead of deleting them; `Log.open` schedules their removal the same way.
    deferred_segments: tuple[LogSegment, ...] = ()


class LogLoader:
    """Loads one partition directory (REC-1 inputs); `load()` may be called once."""

    #: KL-ALLOW-5: kafkalog deletes the segments after recovery's cut at once (strict). True is
    #: Kafka's `removeAndDeleteSegmentsAsync`: renamed `.deleted` now, removed after
    #: `file_delete_delay_ms` (conformance/broken/variants.py runs the checker against it).
    defer_cut_deletion = False

    def __init__(
        self,
        fs: FileSystem,
        dir_path: Path,
        config: LogConfig,
        time: Time,
        epoch_cache: LeaderEpochCache,
        *,
        log_start_offset_checkpoint: int = 0,
        recovery_point_checkpoint: int = 0,
        had_clean_shutdown: bool = False,
    ) -> None:
        self.fs = fs
        self.dir = Path(dir_path)
        self.config = config
        self.time = time
        self.epoch_cache = epoch_cache
        self.log_start_offset_checkpoint = log_start_offset_checkpoint
        self.recovery_point_checkpoint = recovery_point_checkpoint
        self.had_clean_shutdown = had_clean_shutdown
        self.segments = LogSegments()
        self._recovered: list[int] = []
        self._truncated_bytes = 0
        self._dropped: list[LogSegment] = []
        self._deferred: list[LogSegment] = []
        self._dir_changed = False  # a delete, rename or new segment to make durable (GAP-4)
        self._load_cut: int | None = None  # base of the first segment the index rebuild cut
        # KL-CRASH-6: recovered batches below this offset add no epoch entry (None: any may).
        self._epochs_from: int | None = None

    def load(self) -> LoadedLog:
        """Run REC-2..17 and return the loaded segments and offsets."""
        # Strict: an unclean load writes the epoch checkpoint once, in `_make_recovery_durable`,
        # not on every change. A loader without that step (Kafka's way, GAP-4: the
        # kafka_durability and recovery_not_durable variants patch it out) keeps writing every
        # change as it happens, so its file-system operations, and its crash images, stay Kafka's.
        self.epoch_cache.defer_writes(
            not self.had_clean_shutdown
            and type(self)._make_recovery_durable is _STRICT_DURABILITY_STEP)
        try:
            loaded = self._load()
        except BaseException:
            with suppress(Exception):  # the load's own error is the one to report
                self.epoch_cache.defer_writes(False)
            raise
        self.epoch_cache.defer_writes(False)
        return loaded

    def _load(self) -> LoadedLog:
        swap_files = self._remove_temp_files_and_collect_swap_files()
        self._complete_swaps(swap_files)
        self._load_segment_files()
        if self.dir.name.endswith("-delete"):
            return self._load_deleted_dir()  # REC-7
        recovery_point, next_offset = self._recover_log()
        active = self.segments.active_segment()
        active.resize_indexes(self.config.segment_index_bytes)  # REC-12
        log_start = self._loaded_log_start()
        # REC-15 then REC-13: Kafka trims at the LEO first, so with log start = LEO an entry at
        # the LEO survives one load and is gone after the next (CRP-12);
        # trimming the start first makes every load agree. kafkalog trims at the loaded log
        # start, not at its checkpoint (REC-15): after a crash inside a full truncation or a
        # retention pass the checkpoint may be older than the segments, and Kafka then keeps
        # an epoch entry below the log start (KL-CRASH-6, KL-INV-10).
        self.epoch_cache.truncate_from_start(log_start)
        self.epoch_cache.truncate_from_end(next_offset)
        self._make_recovery_durable()
        return LoadedLog(
            self.segments, log_start, recovery_point,
            LogOffsetMetadata(next_offset, active.base_offset, active.size()),
            tuple(self._recovered), self._truncated_bytes, tuple(self._dropped),
            tuple(self._deferred),
        )

    # --- durability of the loader's own edits (strict, beyond Kafka's DUR-25) ---------------

    def _delete(self, path: Path) -> None:
        if self.fs.delete_if_exists(path):
            self._dir_changed = True

    def _rename(self, src: Path, dst: Path) -> None:
        self.fs.rename(src, dst)
        self._dir_changed = True

    def _make_recovery_durable(self) -> None:
        """GAP-4, CRP-12 (strict): fsync every segment recovery cut or rebuilt, rewrite the
        epoch checkpoint after an unclean load, and fsync the directory after any delete or
        rename, so a power loss after loading cannot undo the loader's edits and the next load
        sees what this one served. The recovery point is not
        raised (RCV-8): the value stays what Kafka computes."""
        present = {s.base_offset: s for s in self.segments}
        for base in dict.fromkeys(self._recovered):
            segment = present.get(base)
            if segment is not None:
                segment.flush()
        if not self.had_clean_shutdown:
            # The cache served may be one the page cache held but the disk did not (a process
            # crash before the checkpoint's rename was durable): write it through (GAP-4).
            self.epoch_cache.flush()
        if self._dir_changed or self._recovered:
            self.fs.fsync_dir(self.dir)

    # --- REC-2..5: temporary files and swaps ------------------------------------------------

    def _regular_files(self) -> list[str]:
        return self.fs.list_files(self.dir)

    def _remove_temp_files_and_collect_swap_files(self) -> list[str]:
        """REC-2: delete `.deleted`, `.cleaned` and swaps made obsolete by an incomplete split."""
        swaps, cleaned = [], []
        min_cleaned = _INT64_MAX
        for name in self._regular_files():
            if name.endswith(DELETED_FILE_SUFFIX):
                if not name.endswith(".checkpoint" + DELETED_FILE_SUFFIX):
                    self._delete(self.dir / name)
            elif name.endswith(CLEANED_FILE_SUFFIX):
                min_cleaned = min(min_cleaned, offset_from_file_name(name))
                cleaned.append(name)
            elif name.endswith(SWAP_FILE_SUFFIX):
                swaps.append(name)
        valid, discarded = [], False
        for name in swaps:
            if offset_from_file_name(name) >= min_cleaned:
                self._delete(self.dir / name)  # KAFKA-6264: incomplete split
                discarded = True
            else:
                valid.append(name)
        if discarded and self._strict_order():
            # KL-CRASH-14 (strict): the `.swap` deletions durable before the `.cleaned` ones.
            # A power loss that kept a `.cleaned` deletion and lost a `.swap` one would leave
            # the incomplete split's `.swap` without the `.cleaned` that marks it incomplete,
            # and the next load would swap it in (REC-3).
            self.fs.fsync_dir(self.dir)
        for name in cleaned:
            self._delete(self.dir / name)
        return valid

    def _complete_swaps(self, swap_files: list[str]) -> None:
        """REC-3..5: delete what the swapped-in segments replace, then drop the `.swap` suffix."""
        min_swap, max_swap = _INT64_MAX, -1
        for name in swap_files:
            if name.endswith(LOG_FILE_SUFFIX + SWAP_FILE_SUFFIX):
                base = offset_from_file_name(name)
                min_swap = min(min_swap, base)
                max_swap = max(max_swap, self._next_offset_of_log(self.dir / name, base))
        if max_swap >= 0:
            self._sync_swap_files(swap_files)
            if self._strict_order():
                # KL-CRASH-15 (strict): an empty swapped-in segment's range [base, base) would
                # delete nothing, and an old `.txnindex` it has no copy of would stay under its
                # name (Kafka's CLN-59: the renames overwrite only the files it has). While its
                # `.log.swap` is there no index of it is plain yet (the `.log` goes first,
                # durably), so every plain file at its base is an old segment's.
                max_swap = max(max_swap, min_swap + 1)
            for name in self._regular_files():
                if name.endswith(SWAP_FILE_SUFFIX) or name.endswith(SNAPSHOT_SUFFIX):
                    # kafkalog keeps producer snapshots in the range (Kafka deletes every file
                    # with an offset there): a swap rewrites segments, not the producer state
                    # as of an offset, and a lost snapshot costs the next load a rebuild.
                    continue
                try:
                    offset = offset_from_file_name(name)
                except InvalidFileNameError:  # REC-4: names without an offset are skipped
                    continue
                if min_swap <= offset < max_swap:
                    self._delete(self.dir / name)
        self._drop_swap_suffixes(swap_files)

    def _drop_swap_suffixes(self, swap_files: list[str]) -> None:
        """Rename the `.swap` files to their plain names. KL-CRASH-14, KL-CRASH-15 (strict): the
        `.log` renames durable before the indexes'; a power loss that kept an index's rename
        and lost its `.log`'s would make the next load complete the swap again and delete that
        index (it is plain and in the swap's range: Kafka's `swap_index_lost`, GAP-2)."""
        strict = self._strict_order()
        logs = [n for n in swap_files
                if strict and n.endswith(LOG_FILE_SUFFIX + SWAP_FILE_SUFFIX)]
        for name in logs:
            self._rename(self.dir / name, self.dir / name[: -len(SWAP_FILE_SUFFIX)])
        if logs:
            self.fs.fsync_dir(self.dir)
        for name in swap_files:  # Kafka's way: every rename in listing order, none synced
            if name not in logs:
                self._rename(self.dir / name, self.dir / name[: -len(SWAP_FILE_SUFFIX)])

    def _sync_swap_files(self, swap_files: list[str]) -> None:
        """Strict, beyond Kafka (which renames without a sync): the segments a swap replaces
        may be durable while the `.swap` copies are still in the page cache (a process crash
        after the renames to `.swap`), so the copies' data is made durable before anything
        they replace is deleted; a power loss after this load then keeps the swapped-in data
        rather than empty files under the old names (KL-CRASH-1). The indexes too: an empty
        index passes the load's sanity check, so a lost one would not be rebuilt."""
        for name in swap_files:
            handle = self.fs.open_file(self.dir / name)
            try:
                handle.fsync()
            finally:
                handle.close()

    def _next_offset_of_log(self, path: Path, base_offset: int) -> int:
        """SEG-12 by a plain scan, so no index file is created for a swap segment."""
        records = FileRecords.open(self.fs, path, file_already_exists=True, writable=False)
        try:
            next_offset = base_offset
            for batch in records.batches():
                next_offset = batch.next_offset
            return next_offset
        finally:
            records.close()

    # --- REC-6: segment files ---------------------------------------------------------------

    def _load_segment_files(self) -> None:
        """Open every `.log`; delete orphan indexes; rebuild missing or corrupt indexes."""
        names = self._regular_files()
        present = set(names)
        for name in names:
            if name.endswith(INDEX_SUFFIXES):
                base = offset_from_file_name(name)
                log_name = segment_file(self.dir, base, LOG_FILE_SUFFIX).name
                if log_name not in present:
                    self._delete(self.dir / name)  # KAFKA-670 orphan
            elif name.endswith(LOG_FILE_SUFFIX):
                base = offset_from_file_name(name)
                if self._load_cut is not None and not self.fs.exists(self.dir / name):
                    continue  # removed before a cut below it (`_cut_first`)
                time_index_new = (
                    segment_file(self.dir, base, TIME_INDEX_FILE_SUFFIX).name not in present
                )
                segment = LogSegment.open(
                    self.fs, self.dir, base, self.config, self.time, file_already_exists=True
                )
                if self._rebuilt_by_recovery_pass(base):
                    self.segments.add(segment)
                    continue
                try:
                    segment.sanity_check(time_index_new)
                    self._check_index_shape(segment)
                except (FileNotFoundError, CorruptIndexError):
                    cut = self._cut_first(base) if self._strict_order() else None
                    if self._recover_or_empty(segment, epochs=False, before_cut=cut) > 0 and \
                            self._load_cut is None:
                        self._load_cut = base
                self.segments.add(segment)
        if self._load_cut is not None:
            self._drop_segments_after(self._load_cut)

    def _rebuilt_by_recovery_pass(self, base: int) -> bool:
        """Whether the segment at `base` may skip the load-time index checks and rebuild
        (strict mode only): an unclean load's recovery pass rebuilds every segment
        from the one holding the recovery point on, or deletes it after an earlier cut, so
        checking or rebuilding one above it first is work the pass redoes. The observable
        result is the same (KL-CRASH-5, KL-CRASH-7, GAP-5): a rebuild's
        cut would drop the later segments, and the pass's cut of the same segment drops the
        same ones. Only when the segment loaded just before also lies above the recovery
        point: the producer snapshots the load-time `.txnindex` rebuild writes then all lie
        above the pass's first segment, whose rebuild deletes them (PSR-4) before anything
        reads them, so the snapshot files, too, are what the pass alone leaves. Kafka's way
        (`defer_cut_deletion`) keeps the load-time rebuild: its cut deletes at once while the
        pass's renames `.deleted`."""
        if self.had_clean_shutdown or self.defer_cut_deletion:
            return False
        below = self.segments.last_segment()
        return below is not None and below.base_offset > self.recovery_point_checkpoint

    def _strict_order(self) -> bool:
        """Whether the load orders its edits so a crash inside it changes nothing (KL-CRASH-14):
        a cut removes the later segments before it truncates, obsolete `.swap` deletions are
        durable before the `.cleaned` ones. The strict loader only; Kafka's ways
        (`defer_cut_deletion`, the durability step patched out, conformance/broken) keep Kafka's
        order."""
        return (not self.defer_cut_deletion
                and type(self)._make_recovery_durable is _STRICT_DURABILITY_STEP)

    def _cut_first(self, base: int) -> Callable[[], None]:
        """KL-CRASH-14 (strict, REC-8/RCV-6, CRP-12): what a cut of the segment at `base` runs
        before truncating it: every later segment goes and the directory is fsynced. Truncating
        first (Kafka's order) lets a crash between the truncation and the removals leave a
        now-valid cut segment beside the later ones, and the next load then serves them past a
        hole. Removed first, a crash leaves the segment still torn, and the next load cuts it
        again: the same log. The load-time rebuild walks the names in order, so the segments
        above `base` it has not opened yet go by name (`_load_segment_files` skips them)."""

        def cut() -> None:
            self._drop_segments_after(base)
            self.fs.fsync_dir(self.dir)

        return cut

    def _drop_segments_after(self, base: int) -> None:
        """GAP-5 (strict): an index rebuild that cut a torn or corrupt
        tail ends the log there, exactly like a cut by recovery (RCV-6): every later segment
        goes, or the log would have a hole. Those the load-time rebuild has not opened yet go
        by name (KL-CRASH-14: `_cut_first` runs this before the cut)."""
        for later in self.segments.values():
            if later.base_offset > base:
                self.segments.remove(later.base_offset)
                self._truncated_bytes += later.size()
                later.delete_if_exists()
                self._dir_changed = True
        for name in self._regular_files():
            if name.endswith((LOG_FILE_SUFFIX, *INDEX_SUFFIXES)) and \
                    offset_from_file_name(name) > base:
                if name.endswith(LOG_FILE_SUFFIX):
                    self._truncated_bytes += self.fs.file_size(self.dir / name)
                self._delete(self.dir / name)

    @staticmethod
    def _check_index_shape(segment: LogSegment) -> None:
        """Beyond Kafka's checks (KAFKA-7283): reject garbage or zero-filled indexes cheaply.

        FMT-18/25 plus O(1) probes: the first and last offset-index entries must increase and
        point inside `.log`, and the time index must not go backwards. Raises CorruptIndexError.
        """
        segment.check_indexes()
        oi = segment.offset_index
        n = oi.entries
        if n:
            first, last = oi.entry(0), oi.entry(n - 1)
            if (n > 1 and last.offset <= first.offset) or not 0 <= last.position < max(
                segment.size(), 1
            ) or first.position < 0:
                raise CorruptIndexError(
                    f"offset index entries out of order or beyond the log ({first}..{last})",
                    where=str(segment.offset_index_file),
                )
        ti = segment.time_index
        m = ti.entries
        if m > 1 and ti.entry(m - 1).offset < ti.entry(0).offset:
            raise CorruptIndexError(
                "time index offsets go backwards", where=str(segment.time_index_file)
            )

    def _recover_segment(self, segment: LogSegment, epochs: bool = True,
                         before_cut: Callable[[], None] | None = None) -> int:
        """REC-11: rebuild indexes and (with `epochs`) epochs, truncating at the first invalid
        batch (after `before_cut`, KL-CRASH-14)."""
        cache: LeaderEpochCache | EpochsFromRecoveryPoint | None = None
        if epochs:
            cache = (self.epoch_cache if self._epochs_from is None
                     else EpochsFromRecoveryPoint(self.epoch_cache, self._epochs_from))
        truncated = segment.recover(cache, before_cut)
        loaded = [s for s in self.segments.values() if s.base_offset != segment.base_offset]
        recover_txn_index(self.fs, self.dir, self.config, self.time, loaded, segment,
                          self._loaded_log_start())  # PSR-7, TXN-11
        self._recovered.append(segment.base_offset)
        self._truncated_bytes += truncated
        return truncated

    def _recover_or_empty(self, segment: LogSegment, epochs: bool = True,
                          before_cut: Callable[[], None] | None = None) -> int:
        """Recover a segment; offsets going back (InvalidOffsetError) or an I/O error empty it
        (RCV-6, KAFKA-905). Both the recovery pass and the load-time index rebuild come here:
        the rebuild path must not let the error stop the load either (KAFKA-3919, CBUG-11).

        The rebuild path passes `epochs=False` (kafkalog, KL-CRASH-5): Kafka hands it the
        epoch cache too, so rebuilding a segment below the recovery point whose index a crash
        took away (a retention pass cut short) re-adds that segment's old epochs over newer
        entries. The recovery pass re-derives the epochs above the recovery point anyway."""
        try:
            return self._recover_segment(segment, epochs, before_cut)
        except (InvalidOffsetError, KafkaStorageError):
            cut = before_cut

            def cut_and_spoil() -> None:
                assert cut is not None
                cut()
                mapping = segment.translate_offset(segment.base_offset)
                if mapping is not None and mapping.position == 0:  # the whole .log goes
                    self._spoil_first_batch(segment)

            truncated = segment.truncate_to(segment.base_offset,
                                            None if cut is None else cut_and_spoil)
            self._truncated_bytes += truncated
            self._recovered.append(segment.base_offset)
            return truncated

    def _spoil_first_batch(self, segment: LogSegment) -> None:
        """KL-CRASH-14 (strict), before a segment is emptied in place (RCV-6, KAFKA-905): zero
        its first batch's offset and length fields and fsync. The segment holds CRC-valid
        batches (their offsets go back), so a power loss that tore the truncation could keep
        a valid prefix of them, and the next load would serve it instead of the empty segment.
        With the head spoiled durably first, any such image fails at position 0 and the next
        load empties the segment again; a tear of this write keeps the old bytes (the same
        load again) or spoils them."""
        path = segment_file(self.dir, segment.base_offset, LOG_FILE_SUFFIX)
        handle = self.fs.open_file(path)
        try:
            handle.pwrite(bytes(_BATCH_LENGTH_END), 0)
            handle.fsync()
        finally:
            handle.close()

    # --- REC-7..10: recovery ----------------------------------------------------------------

    def _load_deleted_dir(self) -> LoadedLog:
        if self.segments.is_empty():
            self.segments.add(LogSegment.open(self.fs, self.dir, 0, self.config, self.time))
        active = self.segments.active_segment()
        end = LogOffsetMetadata(0, active.base_offset, active.size())
        return LoadedLog(self.segments, 0, 0, end)

    def _recover_log(self) -> tuple[int, int]:
        """REC-8: (recovery point, next offset)."""
        if not self.had_clean_shutdown:
            self._recover_unflushed_segments()
        leo = self._delete_segments_if_log_start_greater_than_log_end()
        if self.segments.is_empty():
            self.segments.add(LogSegment.open(
                self.fs, self.dir, self.log_start_offset_checkpoint, self.config, self.time
            ))
            self._dir_changed = True
        if self.had_clean_shutdown and leo is not None:
            return leo, leo
        end = leo if leo is not None else self.segments.active_segment().read_next_offset()
        return min(self.recovery_point_checkpoint, end), end

    def _recover_unflushed_segments(self) -> None:
        """Recover from the segment holding the recovery point on; stop at the first cut."""
        unflushed = self.segments.values(self.recovery_point_checkpoint, _INT64_MAX)
        if unflushed:
            # CRP-12 (kafkalog, KL-CRASH-6): recovery re-derives the entries from the recovery
            # point on from the batches at or above it (`EpochsFromRecoveryPoint`), so those
            # entries are dropped first; otherwise what recovery adds depends on what the
            # previous load's trims left, and reloads alternate. Entries below the recovery
            # point describe flushed data and stay (a clean load keeps them too), unless the
            # recovered log ends below it (`_rederive_epochs_below_end`).
            read = self.epoch_cache.epoch_entries()
            self.epoch_cache.truncate_from_end(self.recovery_point_checkpoint)
            before = self.epoch_cache.epoch_entries()
            # With no entry left below the recovery point (a log-start advance trimmed them and
            # a crash undid the advance, GAP-12), every recovered batch may add one (RCV-10).
            # An empty cache is the log's own (an assign of a lower epoch removed the higher
            # entries, EPO-3): a clean load walks nothing, so neither does this one below it.
            walk_all = bool(read) and not before
            self._epochs_from = None if walk_all else self.recovery_point_checkpoint
            self._recover_segments_in_order(unflushed)
            self._rederive_epochs_below_end(before, unflushed[0].base_offset)

    def _loaded_log_start(self) -> int:
        """The log start this load ends with, max(checkpoint, first segment base); recovery's
        producer-state pass starts there too (PSR-7), where Kafka passes the checkpoint.

        kafkalog (KL-CRASH-11): the checkpoint may read below the first segment (FMT-40 writes
        none when the log start is the first base). Started there, the pass reads the snapshot
        at the log start, which the log's own rebuild then deletes (PSR-4 drops snapshots at or
        below the log start), so a transaction begun below the log start is indexed with its
        first offset (or another producer's lower last stable offset) by this load and without
        it by the next: loading twice would not be loading once (KL-CRASH-7).
        """
        first = self.segments.first_segment_base_offset()
        return max(self.log_start_offset_checkpoint, first if first is not None else 0)

    def _recover_segments_in_order(self, unflushed: list[LogSegment]) -> None:
        for i, segment in enumerate(unflushed):
            cut = self._cut_first(segment.base_offset) if self._strict_order() else None
            truncated = self._recover_or_empty(segment, before_cut=cut)
            if truncated > 0:
                for later in unflushed[i + 1 :]:
                    if not self.segments.contains(later.base_offset):
                        continue  # removed before the cut (`_cut_first`)
                    self.segments.remove(later.base_offset)
                    self._truncated_bytes += later.size()
                    if self.defer_cut_deletion:  # Kafka's way (KL-ALLOW-5)
                        later.change_file_suffixes("", DELETED_FILE_SUFFIX)
                        self._deferred.append(later)
                    else:
                        later.delete_if_exists()
                    self._dir_changed = True
                return

    def _rederive_epochs_below_end(self, before: tuple[EpochEntry, ...], first: int) -> None:
        """KL-CRASH-6 (kafkalog; Kafka differs, RCV-10): when the recovered log ends below the
        checkpointed recovery point (a crash inside a truncation leaves both checkpoints above
        the data it kept), the entries below the recovery point need not describe the recovered
        batches, and the pass above let none of them add one: the cache is cut at the recovered
        end and every recovered batch may add an entry, RCV-10's walk. Rare, so this
        second walk reads only the epochs."""
        active = self.segments.active_segment()
        if self.recovery_point_checkpoint <= active.base_offset:
            return  # the recovered end, at or above the active base, is not below it
        end = active.read_next_offset()
        if end >= self.recovery_point_checkpoint:
            return
        self.epoch_cache.replace_entries([e for e in before if e.start_offset < end])
        for segment in self.segments.values():
            if segment.base_offset >= first:
                for batch in segment.log.batches():
                    segment._maybe_assign_epoch(batch, self.epoch_cache)

    def _delete_segments_if_log_start_greater_than_log_end(self) -> int | None:
        """REC-9 (KAFKA-8306): data entirely below the checkpointed log start is dropped.

        As Kafka's removeAndDeleteSegmentsAsync: every segment leaves the map and its files are
        renamed `.deleted` now; `Log.open` schedules their removal after file_delete_delay_ms.
        Strict (beyond Kafka): the renames are made durable before the empty segment at the
        checkpoint is created, so a power loss never leaves the old segments beside the new one
        (which would end the log at the checkpoint and keep them).
        """
        last = self.segments.last_segment()
        if last is None:
            return None
        log_end = last.read_next_offset()
        if log_end >= self.log_start_offset_checkpoint:
            return log_end
        for segment in self.segments.values():
            self.segments.remove(segment.base_offset)
            if not segment.has_suffix(DELETED_FILE_SUFFIX):
                segment.change_file_suffixes("", DELETED_FILE_SUFFIX)
            self._dropped.append(segment)
            self._dir_changed = True
        self.fs.fsync_dir(self.dir)
        self.epoch_cache.clear_and_flush()
        return None


#: The strict durability step as defined here; `load` compares with it to tell a variant that
#: patched the step out (conformance/broken) from the strict loader.
_STRICT_DURABILITY_STEP = LogLoader._make_recovery_durable
