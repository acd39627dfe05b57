"""`Log`: Kafka's UnifiedLog for one partition: appends, reads, HW, log start, retention, epochs.

A `Log` owns a partition directory (see `local_log` and `log_segment` for its files) and keeps
three offsets that the owning log directory checkpoints at its root (FMT-40): the log start offset
(LSO), the high watermark (HW) and the recovery point, with LSO <= HW <= LEO and recovery point
<= LEO (LOG-2). Leader epochs live in `leader-epoch-checkpoint` (FMT-39).

Concurrency: one writer lock serialises every mutation; `read` takes no lock and is bounded by the
published LEO or HW metadata, so it never sees bytes beyond them (LOG-27, LOC-4).

Crash policy: appends are not durable until `flush`; the recovery point marks what is. After an
unclean shutdown `LogLoader` re-validates every segment from the recovery point on (REC-8).
`close()` is the clean path: flush, final index entries, trims, epoch checkpoint.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from kafkalog.impl.bounds import (
    require_end_offset_fits,
    require_int32,
    require_int64,
    validate_config,
)
from kafkalog.impl.checkpoint.checkpoint_file import LeaderEpochCheckpointFile
from kafkalog.impl.checkpoint.epoch_cache import LeaderEpochCache
from kafkalog.impl.cleaner.config import is_compacted
from kafkalog.impl.cleaner.plan import require_keys
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.load.log_loader import LogLoader
from kafkalog.impl.log.deletion import LogDeletion
from kafkalog.impl.log.high_watermark import LogHighWatermark
from kafkalog.impl.log.local_log import LocalLog
from kafkalog.impl.log.producers import LogProducers
from kafkalog.impl.log.timestamps import LogTimestamps
from kafkalog.impl.log.transactions import (
    aborted_txn_entries,
    index_aborted,
    last_stable_offset_metadata,
)
from kafkalog.impl.log.validator import (
    analyze_and_validate,
    assign_offsets,
    assign_offsets_scanned,
    reported_max_timestamp_offset,
)
from kafkalog.impl.producer.producer_state_manager import (
    AppendOrigin,
    ProducerStateManager,
    check_client_batches,
)
from kafkalog.impl.producer.rebuild import producer_batches, producer_views
from kafkalog.impl.records.facts_summary import facts_summary
from kafkalog.impl.records.memory_records import (
    BatchFacts,
    MemoryRecords,
    ScannedRecords,
    batch_facts,
)
from kafkalog.impl.segment.check import next_offset_unless_unchanged
from kafkalog.impl.segment.indexing import append_unit
from kafkalog.impl.segment.log_segment import (
    FetchDataInfo,
    LogSegment,
    RollParams,
    check_index_capacity,
)
from kafkalog.impl.time import Time
from kafkalog.impl.versions import (
    check_profile,
    follower_skips_newer_epochs,
    index_entry_per_batch,
)
from kafkalog.model.errors import (
    IllegalArgumentError,
    LogSegmentOffsetOverflowError,
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
    UnexpectedAppendOffsetError,
)
from kafkalog.model.values import (
    INT32_MAX,
    NO_TIMESTAMP,
    EpochEndOffset,
    Isolation,
    LogAppendInfo,
    LogConfig,
    LogOffsetMetadata,
    LogStateView,
    SegmentView,
)

EMPTY_APPEND = LogAppendInfo(-1, -1, NO_TIMESTAMP, -1, NO_TIMESTAMP, 0, 0)


@dataclass(frozen=True)
class LogOffsets:
    """What a log directory checkpoints for this partition at its root (FMT-40)."""

    log_start_offset: int
    recovery_point: int
    high_watermark: int


class Log(LogHighWatermark, LogProducers, LogDeletion, LogTimestamps):
    """One partition's log; see the module docstring for files, locking and crash policy."""

    def __init__(
        self,
        local_log: LocalLog,
        epoch_cache: LeaderEpochCache,
        log_start_offset: int,
        time: Time,
    ) -> None:
        self.local_log = local_log
        self.leader_epoch_cache = epoch_cache
        self.time = time
        self.config = local_log.config
        self.lock = threading.RLock()
        # Guards only the HW metadata reference, never held across I/O, so a reader caching the
        # materialised HW (LOG-11) never waits for an append or a roll holding `lock`.
        self._hw_lock = threading.Lock()
        self._log_start_offset = log_start_offset
        # LOG-1: the HW starts as message-only metadata at the LSO.
        self._hw_metadata = LogOffsetMetadata(log_start_offset)
        self._closed = False
        # Called after a truncation cut something; `LogDir` installs one that rewrites the
        # recovery-point checkpoint, as Kafka's LogManager.truncateTo does (DUR-26, CBUG-5).
        self.on_truncated: Callable[[], None] | None = None
        # TXN-8: the cached first unstable offset (None = no open or unreplicated transaction).
        self._first_unstable_offset: int | None = None
        # PST-1: producer state; `open` loads it from the snapshots (PSR-3, PSR-5).
        self.producer_state = ProducerStateManager(
            local_log.fs, local_log.dir, time, self.config.producer_id_expiration_ms,
            self.config.file_delete_delay_ms)
        self._schedule_producer_expiration()
        self._update_log_start_offset(log_start_offset)  # LOG-3 step 1
        first = local_log.segments.first_segment_base_offset()
        self._log_start_offset = max(log_start_offset, first if first is not None else 0)

    @classmethod
    def open(
        cls,
        fs: FileSystem,
        dir_path: Path | str,
        config: LogConfig,
        time: Time,
        *,
        log_start_offset: int = 0,
        recovery_point: int = 0,
        high_watermark: int | None = None,
        had_clean_shutdown: bool = False,
    ) -> Log:
        """Load (and if needed recover) the partition directory, then set the HW (LOG-3, LOG-4).

        Creates the directory when missing. Raises IllegalArgumentError for a config Kafka
        refuses (KL-STATE-2), KafkaStorageError / LogDirError on I/O failures,
        CorruptCheckpointError for a malformed `leader-epoch-checkpoint`.
        """
        validate_config(config)
        check_profile(config.kafka_version)
        require_int64(log_start_offset, "log start offset", "Log.open")
        d = Path(dir_path)
        fs.mkdir(d)
        epoch_cache = LeaderEpochCache(
            LeaderEpochCheckpointFile(fs, LeaderEpochCheckpointFile.new_file(d))
        )
        loaded = LogLoader(
            fs, d, config, time, epoch_cache,
            log_start_offset_checkpoint=log_start_offset,
            recovery_point_checkpoint=recovery_point,
            had_clean_shutdown=had_clean_shutdown,
        ).load()
        local = LocalLog(
            fs, d, config, loaded.segments, loaded.recovery_point, loaded.next_offset_metadata, time
        )
        # REC-9, KL-RELOAD-3; and recovery's cut when it defers like Kafka (KL-ALLOW-5).
        local.schedule_deletion([*loaded.dropped_segments, *loaded.deferred_segments])
        log = cls(local, epoch_cache, loaded.log_start_offset, time)
        dropped = tuple(s.base_offset for s in loaded.dropped_segments)
        log._load_producer_state(had_clean_shutdown, log_start_offset, recovery_point, dropped)
        log.update_high_watermark(high_watermark if high_watermark is not None else 0)
        return log

    # --- offsets ----------------------------------------------------------------------------

    @property
    def dir(self) -> Path:
        return self.local_log.dir

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.local_log.log_end_offset

    @property
    def log_end_offset_metadata(self) -> LogOffsetMetadata:
        return self.local_log.next_offset_metadata

    @property
    def recovery_point(self) -> int:
        return self.local_log.recovery_point

    @property
    def high_watermark(self) -> int:
        return self._hw_metadata.message_offset

    @property
    def segments(self) -> list[LogSegment]:
        return self.local_log.segments.values()

    def offsets(self) -> LogOffsets:
        return LogOffsets(self.log_start_offset, self.recovery_point, self.high_watermark)

    def _update_log_start_offset(self, offset: int) -> None:
        """Set the LSO, raising the HW and the recovery point to it if lower (LOG-3, LOG-29)."""
        self._log_start_offset = offset
        if self.high_watermark < offset:
            self.update_high_watermark(offset)
        if self.local_log.recovery_point < offset:
            self.local_log.update_recovery_point(offset)

    # --- log start offset -------------------------------------------------------------------

    def maybe_increment_log_start_offset(self, new_log_start_offset: int) -> bool:
        """Raise the LSO (DeleteRecords/retention) without deleting segments (LOG-29, LOG-30).

        Raises OffsetOutOfRangeError above the HW (ERR-30), LogClosedError after close.
        """
        require_int64(new_log_start_offset, "log start offset", "maybe_increment_log_start_offset")
        with self.lock:
            if new_log_start_offset > self.high_watermark:
                raise OffsetOutOfRangeError(
                    f"Cannot increment the log start offset to {new_log_start_offset} of partition "
                    f"{self.dir.name} since it is larger than the high watermark "
                    f"{self.high_watermark}"
                )
            self.local_log.check_if_memory_mapped_buffer_closed()
            if new_log_start_offset <= self._log_start_offset:
                return False
            # Strict (GAP-9): the recovery point follows the log start up only over flushed
            # data, so a checkpoint of it never vouches for bytes that were not fsynced.
            if self.local_log.recovery_point < new_log_start_offset:
                self._flush_to(min(new_log_start_offset, self.log_end_offset), including=False)
            self._update_log_start_offset(new_log_start_offset)
            self.leader_epoch_cache.truncate_from_start(new_log_start_offset)
            self.producer_state.on_log_start_offset_incremented(new_log_start_offset)  # PSR-12
            self._maybe_increment_first_unstable_offset()  # UL:1018
            return True

    # --- append -----------------------------------------------------------------------------

    def append_as_leader(self, records: MemoryRecords, leader_epoch: int,
                         origin: AppendOrigin = AppendOrigin.CLIENT) -> LogAppendInfo:
        """Validate client batches, assign offsets from the LEO, stamp the epoch (LOG-14..24).
        AppendOrigin.COORDINATOR writes end-transaction markers (TXN-2): control batches allowed, no
        sequence checks or deduplication, coordinator epochs fenced (PST-21).

        Raises InvalidRecordError (base offset != 0; a keyless record on a compacted log),
        RecordTooLargeError, CorruptRecordError, RecordBatchTooLargeError, LogClosedError.
        """
        require_int32(leader_epoch, "leader epoch", "append_as_leader")
        analysis = analyze_and_validate(
            records, leader=True, max_message_bytes=self.config.max_message_bytes,
            where=self.dir.name,
        )
        if analysis.valid_bytes <= 0:
            return EMPTY_APPEND
        if is_compacted(self.config):  # KL-CLEAN-12; no parse or copy on a delete-only log
            require_keys(MemoryRecords(records.buffer[: analysis.valid_bytes]).batches())
        with self.lock:
            self.local_log.check_if_memory_mapped_buffer_closed()
            # The caller's buffer is never modified: the stamps go beside it or into a copy.
            if analysis.facts is not None:
                valid, info = assign_offsets_scanned(
                    records.buffer[: analysis.valid_bytes], analysis.facts, self.log_end_offset,
                    leader_epoch, self.config.message_timestamp_type, self.time.milliseconds(),
                )
                info = reported_max_timestamp_offset(valid, info, origin is AppendOrigin.CLIENT,
                                                     self.config)
                return self._append_validated(valid, info, origin)
            copy = bytearray(records.buffer[: analysis.valid_bytes])
            records_copy = MemoryRecords(copy)
            info = assign_offsets(
                records_copy, self.log_end_offset, leader_epoch,
                self.config.message_timestamp_type, self.time.milliseconds(),
            )
            info = reported_max_timestamp_offset(records_copy, info,
                                                 origin is AppendOrigin.CLIENT, self.config)
            return self._append_validated(records_copy, info, origin)

    def append_as_follower(
        self, records: MemoryRecords, leader_epoch: int | None = None
    ) -> LogAppendInfo:
        """Append replicated batches with their own offsets (LOG-14, LOG-15a, LOG-19,
        KL-VERSION-5).

        Raises OffsetsOutOfOrderError, UnexpectedAppendOffsetError, CorruptRecordError,
        RecordBatchTooLargeError, LogClosedError.
        """
        if not follower_skips_newer_epochs(self.config.kafka_version):
            leader_epoch = None  # KL-VERSION-5: before 4.0 the follower keeps every batch
        if leader_epoch is not None:
            require_int32(leader_epoch, "leader epoch", "append_as_follower")
        analysis = analyze_and_validate(
            records, leader=False, max_message_bytes=self.config.max_message_bytes,
            where=self.dir.name, leader_epoch=leader_epoch,
        )
        if analysis.valid_bytes <= 0:
            return EMPTY_APPEND
        with self.lock:
            self.local_log.check_if_memory_mapped_buffer_closed()
            if analysis.first_offset < self.log_end_offset:
                raise UnexpectedAppendOffsetError(
                    f"Unexpected offset in append to {self.dir.name}. First offset "
                    f"{analysis.first_offset} is less than the next offset "
                    f"{self.log_end_offset}.",
                    analysis.first_offset, analysis.last_offset,
                )
            prefix = records.buffer[: analysis.valid_bytes]
            valid = (MemoryRecords(prefix) if analysis.facts is None
                     else ScannedRecords(prefix, analysis.facts))
            info = analysis.follower_info()
            return self._append_validated(valid, info, AppendOrigin.REPLICATION)

    def _append_validated(self, valid: MemoryRecords, info: LogAppendInfo,
                          origin: AppendOrigin) -> LogAppendInfo:
        """LOG-20..24 and PST-7 under the lock: checks, producer validation, roll, write,
        publish LEO, epochs, HW, producer state. A client duplicate (PST-10) rolls and stamps
        the epoch cache like Kafka but writes nothing and reports the original offsets.

        Every check runs before anything changes (docs/design.md: an error leaves no state
        change), so the epochs are validated first and assigned after the write; Kafka assigns
        them before its segment-size check, which only differs when that check fails.
        """
        facts = batch_facts(valid)
        producer = producer_batches(valid)
        if origin is AppendOrigin.CLIENT:
            check_client_batches(producer, self.dir.name)
        if isinstance(valid, ScannedRecords):  # plain v2 batches only
            starts = _epoch_starts_of_facts(facts)
        else:  # legacy batches carry no epoch (LOG-24 assigns v2 epochs only)
            starts = _epoch_starts([(b.partition_leader_epoch, b.base_offset)
                                    for b in valid.batches() if b.magic >= 2])
        require_end_offset_fits(info.last_offset, "append")
        for epoch, base in starts:
            if epoch < 0:
                raise IllegalArgumentError(
                    f"Received invalid partition leader epoch entry EpochEntry(epoch="
                    f"{epoch}, startOffset={base})"
                )
        size = len(valid)
        if size > self.config.segment_bytes:
            raise RecordBatchTooLargeError(
                f"Message batch size is {size} bytes in append to partition {self.dir.name} which "
                f"exceeds the maximum configured segment size of {self.config.segment_bytes}."
            )
        infos, duplicate = self.producer_state.analyze(producer, origin)
        self._maybe_roll(size, info, facts)
        if duplicate is not None:
            for epoch, base in starts:
                self.leader_epoch_cache.assign(epoch, base)
            return replace(info, first_offset=duplicate.first_offset,
                           last_offset=duplicate.last_offset, log_append_time=duplicate.timestamp)
        scanned = (valid if isinstance(valid, ScannedRecords)
                   else ScannedRecords(valid.buffer, facts))
        # A client append's reported offset pairs with its max timestamp (KL-VERSION-2, 4).
        self.local_log.append(info.last_offset, scanned, info.offset_of_max_timestamp
                              if origin is AppendOrigin.CLIENT else None)
        for epoch, base in starts:
            self.leader_epoch_cache.assign(epoch, base)
        self._update_high_watermark_with_log_end_offset()  # PST-9 step 2
        self.producer_state.apply(  # PST-9 steps 3-5, TXN-10, TXN-11
            infos, info.last_offset + 1,
            lambda txn, lso: index_aborted(self.local_log, txn, lso))
        self._maybe_increment_first_unstable_offset()  # PST-9 step 6
        return info

    def _maybe_roll(
        self, messages_size: int, info: LogAppendInfo, batches: list[BatchFacts]
    ) -> LogSegment:
        """Roll when the active segment is full, old, or cannot hold the offsets (LOG-22)."""
        active = self.local_log.segments.active_segment()
        params = RollParams(
            self.config.segment_ms, self.config.segment_bytes, info.max_timestamp,
            info.last_offset, messages_size, self.time.milliseconds(),
        )
        if not active.should_roll(params):
            self._ensure_fits(active.base_offset, info.last_offset)
            return active
        # KAFKA-6530: v2 rolls at the exact first offset; else KAFKA-4451's lower bound.
        first = info.first_offset
        roll_offset = first if first >= 0 else info.last_offset - INT32_MAX
        new_base = max(roll_offset, self.log_end_offset)
        self._ensure_fits(new_base, info.last_offset)
        self._ensure_fresh_indexes_fit(new_base, batches)
        return self._roll(roll_offset)

    def _ensure_fresh_indexes_fit(self, base_offset: int, batches: list[BatchFacts]) -> None:
        """The new segment's empty indexes must hold this append's entries (KL-APPEND-9)."""
        if not index_entry_per_batch(self.config.kafka_version):
            batches = append_unit(batches)  # KL-VERSION-4: one decision for the append
        size = self.config.segment_index_bytes
        check_index_capacity(
            batches, self.config.index_interval_bytes, 0, NO_TIMESTAMP, (0, size // 8),
            (0, size // 12, NO_TIMESTAMP), where=f"{self.dir}/{base_offset:020d}.index",
        )

    def _ensure_fits(self, base_offset: int, last_offset: int) -> None:
        """Raise the segment's overflow error before rolling or writing (KL-APPEND-9, ERR-14).

        Kafka rolls first and fails in the segment append, leaving the roll behind.
        """
        if not 0 <= last_offset - base_offset <= INT32_MAX:
            raise LogSegmentOffsetOverflowError(
                f"Detected offset overflow at offset {last_offset} in segment with base offset "
                f"{base_offset}",
                where=str(self.dir),
            )

    # --- read -------------------------------------------------------------------------------

    def read(
        self,
        start_offset: int,
        max_bytes: int,
        isolation: Isolation = Isolation.LOG_END,
        min_one_message: bool = False,
    ) -> FetchDataInfo:
        """Read batches from `start_offset` up to the isolation bound (LOG-27, LOG-28, LOC-4).

        Raises OffsetOutOfRangeError below the LSO (ERR-31), above the LEO or below the first
        segment (ERR-32); IllegalArgumentError for a negative `max_bytes` (ERR-15).
        """
        require_int64(start_offset, "start offset", "read")
        require_int32(max_bytes, "max bytes", "read")
        if start_offset < self._log_start_offset:
            raise OffsetOutOfRangeError(
                f"Received request for offset {start_offset} for partition {self.dir.name}, but "
                f"we only have log segments starting from offset: {self._log_start_offset}."
            )
        if isolation is Isolation.HIGH_WATERMARK:
            bound = self.fetch_high_watermark_metadata()
        elif isolation is Isolation.TXN_COMMITTED:
            hw = self.fetch_high_watermark_metadata()
            bound = last_stable_offset_metadata(self.local_log, self._first_unstable_offset, hw)
        else:
            bound = self.log_end_offset_metadata
        return self.local_log.read(start_offset, max_bytes, min_one_message, bound,
                                   isolation is Isolation.TXN_COMMITTED)

    # --- roll and flush ---------------------------------------------------------------------

    def roll(self, expected_next_offset: int | None = None) -> int:
        """Start a new active segment; returns its base offset (LOG-25, LOC-6)."""
        if expected_next_offset is not None:
            require_int64(expected_next_offset, "expected next offset", "roll")
        with self.lock:
            return self._roll(expected_next_offset).base_offset

    def _roll(self, expected_next_offset: int | None) -> LogSegment:
        new_segment = self.local_log.roll(expected_next_offset)
        # PSR-1: the snapshot named after the new base (fsynced: kafkalog's roll flush is
        # synchronous, and Kafka's flush task fsyncs the snapshot first).
        self.producer_state.update_map_end_offset(new_segment.base_offset)
        self.producer_state.take_snapshot(sync=True)
        self._update_high_watermark_with_log_end_offset()
        # kafkalog flushes synchronously at the roll (docs/design.md "Async work"), clamped to
        # LEO; LocalLog.roll already fsynced everything below the new base (strict, GAP-5).
        self.local_log.mark_flushed(min(new_segment.base_offset, self.log_end_offset))
        return new_segment

    def flush(self, offset: int | None = None) -> int:
        """fsync up to `offset` (exclusive) or the whole log; returns the recovery point (LOG-26).

        Raises IllegalArgumentError when `offset` is outside [0, LEO].
        """
        if offset is not None:
            require_int64(offset, "flush offset", "flush")
        with self.lock:
            if offset is None:
                self._flush_to(self.log_end_offset, including=True)
            else:
                if not 0 <= offset <= self.log_end_offset:
                    raise IllegalArgumentError(
                        f"flush offset {offset} outside [0, LEO = {self.log_end_offset}]"
                    )
                self._flush_to(offset, including=False)
            return self.recovery_point

    def _flush_to(self, offset: int, *, including: bool) -> None:
        flush_offset = offset + 1 if including else offset
        if flush_offset > self.local_log.recovery_point:
            self.local_log.flush(flush_offset)
            self.local_log.mark_flushed(offset)

    # --- epochs -----------------------------------------------------------------------------

    def maybe_assign_epoch_start_offset(self, epoch: int, start_offset: int) -> None:
        """LOG-50: record (epoch, start offset), e.g. (new epoch, LEO) on becoming leader."""
        require_int32(epoch, "epoch", "assign_epoch")
        require_int64(start_offset, "start offset", "assign_epoch")
        with self.lock:
            self.leader_epoch_cache.assign(epoch, start_offset)

    assign_epoch = maybe_assign_epoch_start_offset

    def end_offset_for_epoch(self, epoch: int) -> EpochEndOffset | None:
        """LOG-51 / EPO-4: where `epoch` ends, or None when undefined."""
        require_int32(epoch, "epoch", "end_offset_for_epoch")
        found_epoch, offset = self.leader_epoch_cache.end_offset_for(epoch, self.log_end_offset)
        if offset == -1:
            return None
        return EpochEndOffset(found_epoch, offset)

    @property
    def latest_epoch(self) -> int | None:
        return self.leader_epoch_cache.latest_epoch

    # --- lifecycle and observation ----------------------------------------------------------

    def close(self) -> LogOffsets:
        """Clean close: flush everything, close segments, write the epoch checkpoint (FMT-44).

        Returns the offsets the log directory writes to its root checkpoints.
        """
        with self.lock:
            if self._closed:
                return self.offsets()
            self._flush_to(self.log_end_offset, including=True)
            self.producer_state.take_snapshot(sync=True)  # PSR-1 close (UL:649)
            # KAFKA-13603's intent: the active segment's index files exist after a clean close,
            # also when a roll put its base above the LEO (outside the flushed range).
            self.local_log.segments.active_segment().flush()
            self.leader_epoch_cache.flush()
            self.local_log.close()
            self._closed = True
            return self.offsets()

    def close_handlers(self) -> None:
        """Drop handles without writing, as after a crash or an offline dir (LOC-13)."""
        with self.lock:
            self.local_log.close_handlers()
            self._closed = True

    def state(self) -> LogStateView:
        """The observable state conformance compares after every step."""
        with self.lock:
            return LogStateView(
                log_start_offset=self._log_start_offset,
                high_watermark=self.high_watermark,
                log_end_offset=self.log_end_offset,
                recovery_point=self.recovery_point,
                segments=tuple(
                    SegmentView(s.base_offset, s.size(), next_offset_unless_unchanged(s))
                    for s in self.local_log.segments
                ),
                epoch_entries=self.leader_epoch_cache.epoch_entries(),
                pending_deletions=self.local_log.pending_deletions(),
                producers=producer_views(self.producer_state),
                producer_snapshots=self.producer_state.snapshot_offsets(),
                last_stable_offset=self.last_stable_offset,
                aborted_txns=aborted_txn_entries(self.local_log),
            )

    def check(self) -> None:
        """Assert LOG-2 in O(n): LSO <= HW <= LEO, recovery point <= LEO, segments, epochs."""
        with self.lock:
            lso, hw, leo = self._log_start_offset, self.high_watermark, self.log_end_offset
            assert 0 <= lso <= hw <= leo, f"LSO {lso} <= HW {hw} <= LEO {leo} violated"
            stable = self.last_stable_offset
            assert lso <= stable <= hw, f"log start {lso} <= last stable {stable} <= HW violated"
            first = self.local_log.segments.first_segment_base_offset()
            assert first is not None and lso >= first, f"LSO {lso} below first segment {first}"
            self.local_log.check()
            self.leader_epoch_cache.check()
            self.producer_state.check(leo)

    def __repr__(self) -> str:
        return (f"Log({self.dir}, lso={self.log_start_offset}, hw={self.high_watermark}, "
                f"leo={self.log_end_offset})")


def _epoch_starts_of_facts(facts: list[BatchFacts]) -> list[tuple[int, int]]:
    """`_epoch_starts` of the facts' (epoch, base offset) pairs. One epoch over non-decreasing
    bases, as every leader append stamps, gives its first pair: decided on the summary."""
    s = facts_summary(facts)
    if s is None:
        return []
    if s.min_epoch == s.max_epoch and s.bases_non_decreasing:
        return [(facts[0][4], facts[0][2])]
    return _epoch_starts([(f[4], f[2]) for f in facts])


def _epoch_starts(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The (epoch, base offset) pairs of an append's v2 batches whose cache `assign` can matter.

    After assign(e, b) the cache's latest entry is (e, s) with s <= b, so assigning the same
    epoch again at a base >= b is a no-op (EPO-2: an epoch's start never moves forward): only
    epoch changes (and bases going backwards) are kept. The first negative epoch is kept too.
    """
    out: list[tuple[int, int]] = []
    prev_epoch: int | None = None
    prev_base = 0
    for epoch, base in pairs:
        if epoch != prev_epoch or base < prev_base:
            out.append((epoch, base))
        prev_epoch, prev_base = epoch, base
    return out
