"""Deliberately broken implementations for issue #10: one crash-recovery defect each.

The six categories the issue measured (none was caught by `kafkalog check` before crashes were in
it): recovery letting an offset error escape, recovery index entries pointing at the wrong batch,
a torn last batch kept, epoch 0 skipped by recovery, a checkpoint written in place, orphan index
files kept; plus kafkalog's strict promise broken the way Kafka breaks it (recovery not durable,
GAP-4). Each patches one attribute of `kafkalog.impl`, shaped like `broken/catalogue.py`'s
registry (`Broken` entries), so the checker can install them by name; `patched(name)` is a plain
context manager for in-process explorers (benchmarks/crash_explore.py, tests/crash/).

Patches are process-wide: never run a broken and a real log at the same time in one process.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kafkalog.conformance.broken.base import defining_class
from kafkalog.conformance.broken.catalogue import Broken
from kafkalog.conformance.errors import UnknownBrokenImplError
from kafkalog.impl.checkpoint.checkpoint_file import (
    RECOVERY_POINT_CHECKPOINT_FILENAME,
    OffsetCheckpointFile,
)
from kafkalog.impl.fs.file_system import FileSystem, PathLike
from kafkalog.impl.load.log_dir import LogDir
from kafkalog.impl.load.log_loader import LoadedLog, LogLoader
from kafkalog.impl.log.local_log import LocalLog
from kafkalog.impl.log.log import Log
from kafkalog.impl.segment.log_segment import (
    DELETED_FILE_SUFFIX,
    INDEX_SUFFIXES,
    LOG_FILE_SUFFIX,
    LogSegment,
)
from kafkalog.impl.verify import verifier as verify
from kafkalog.model.errors import CorruptRecordError, InvalidRecordError
from kafkalog.model.values import INT32_MAX, NO_TIMESTAMP, LogOffsetMetadata

_INT64_MAX = 2**63 - 1
_UNKNOWN = (NO_TIMESTAMP, -1)


def _recover_letting_offset_errors_escape(self: LogLoader) -> None:
    """RCV-6 / CBUG-4 (KAFKA-905) undone: an InvalidOffsetError from the index rebuild is not
    turned into "empty the segment", so one out-of-order offset stops the whole load."""
    unflushed = self.segments.values(self.recovery_point_checkpoint, _INT64_MAX)
    if unflushed:
        self.epoch_cache.truncate_from_end(self.recovery_point_checkpoint)
    for i, segment in enumerate(unflushed):
        truncated = self._recover_segment(segment)  # the except clause is gone
        if truncated > 0:
            for later in unflushed[i + 1:]:
                self.segments.remove(later.base_offset)
                later.delete_if_exists()
            return


def _recover_variant(*, index_after_batch: bool, keep_torn_tail: bool) -> Any:
    """LogSegment.recover (SEG-15) with one of two defects switched on."""

    def recover(self: LogSegment, epoch_cache: Any = None, before_cut: Any = None) -> int:
        self.offset_index.reset()
        self.time_index.reset()
        valid_bytes = last_index_entry = 0
        self._max_ts_and_offset = _UNKNOWN
        max_ts, max_off = _UNKNOWN
        try:
            for batch in self._batches_checked():
                last_offset = batch.last_offset
                if not 0 <= last_offset - self.base_offset <= INT32_MAX:
                    self._ensure_offset_in_range(last_offset)
                if batch.max_timestamp > max_ts:
                    max_ts, max_off = batch.max_timestamp, last_offset
                    self._max_ts_and_offset = (max_ts, max_off)
                if valid_bytes - last_index_entry > self.index_interval_bytes:
                    # FMT-14: the entry names the batch at `position`; the broken one names the
                    # position after it, i.e. the next batch.
                    at = valid_bytes + batch.size_in_bytes if index_after_batch else valid_bytes
                    self.offset_index.append(last_offset, at)
                    self.time_index.maybe_append(max_ts, max_off)
                    last_index_entry = valid_bytes
                valid_bytes += batch.size_in_bytes
                self._maybe_assign_epoch(batch, epoch_cache)
        except (CorruptRecordError, InvalidRecordError):
            pass
        truncated = self.log.size_in_bytes - valid_bytes
        if truncated > 0 and not keep_torn_tail:  # RCV-6 step 4: cut the torn tail
            if before_cut is not None:
                before_cut()  # the loader's KL-CRASH-14 step, as the real recover runs it
            self.log.truncate_to(valid_bytes)
        self.offset_index.trim_to_valid_size()
        self.time_index.maybe_append(max_ts, max_off, skip_full_check=True)
        self.time_index.trim_to_valid_size()
        return truncated

    return recover


def _assign_epoch_skipping_zero(batch: Any, epoch_cache: Any) -> None:
    """RCV-10 with `if not epoch`: recovery never re-adds epoch 0 (a falsy-zero slip)."""
    if epoch_cache is None or batch.magic < 2 or batch.partition_leader_epoch <= 0:
        return
    latest = epoch_cache.latest_epoch
    if latest is None or batch.partition_leader_epoch > latest:
        epoch_cache.assign(batch.partition_leader_epoch, batch.base_offset)


def _write_in_place(self: FileSystem, path: PathLike, data: bytes) -> None:
    """DUR-13 / FMT-36 / CBUG-7 undone: truncate and rewrite the file itself, then fsync; a
    crash in between leaves an empty or partial checkpoint (CRP-8)."""
    handle = self.open_file(path, create=True)
    try:
        handle.truncate(0)
        handle.pwrite(data, 0)
        handle.fsync()
    finally:
        handle.close()


_REAL_DELETE = LogLoader._delete


def _delete_keeping_orphan_indexes(self: LogLoader, path: Path) -> None:
    """RCV-5 step 1 (KAFKA-670) undone: an index file whose `.log` is gone survives the load."""
    name = path.name
    if name.endswith(INDEX_SUFFIXES):
        log_name = name.rsplit(".", 1)[0] + LOG_FILE_SUFFIX
        if not self.fs.exists(path.with_name(log_name)):
            return
    _REAL_DELETE(self, path)


def _recovery_not_made_durable(self: LogLoader) -> None:
    """GAP-4 / DUR-25 (Kafka's own behaviour, a bug under kafkalog's strict promise): recovery
    serves page-cache data and its own cuts without fsyncing them, so a power loss after the
    load can take back records it already served."""


# --- issue #10's defects 1-5 put back (each fixed in impl/; the explorer catches them) --------


def _load_cut_keeping_later_segments(self: LogLoader, base: int) -> None:
    """Defect 1 (GAP-5): an index-rebuild cut at load keeps every later segment."""


def _no_checkpoint_after_truncation(self: Log) -> None:
    """Defect 2 (DUR-26, CBUG-5): no recovery-point checkpoint after a truncation."""


def _truncate_like_kafka(self: LocalLog, target_offset: int) -> list[LogSegment]:
    """Defect 3 (GAP-1, GAP-2, DUR-23): later segments renamed lowest first with no directory
    fsync, the cut segment not fsynced: a power loss brings truncated batches back."""
    deletable = [s for s in self.segments if s.base_offset > target_offset]
    for segment in deletable:
        self.segments.remove(segment.base_offset)
        segment.change_file_suffixes("", DELETED_FILE_SUFFIX)
    with self._pending_lock:
        self._pending_deletions.update(s.base_offset for s in deletable)
        self._pending_segments.extend(deletable)
    self.time.scheduler.schedule("delete-file", lambda: self._delete_pending(deletable),
                                 self.config.file_delete_delay_ms)
    self.segments.active_segment().truncate_to(target_offset)
    self.update_log_end_offset(target_offset)
    return deletable


def _load_trimming_end_first(self: LogLoader) -> LoadedLog:
    """Defect 4 (CRP-12): Kafka's trim order after loading, LEO first then log start; with
    log start = LEO reloads alternate between an entry at the LEO and none."""
    self._complete_swaps(self._remove_temp_files_and_collect_swap_files())
    self._load_segment_files()
    if self.dir.name.endswith("-delete"):
        return self._load_deleted_dir()
    recovery_point, next_offset = self._recover_log()
    active = self.segments.active_segment()
    active.offset_index.resize(self.config.segment_index_bytes)
    active.time_index.resize(self.config.segment_index_bytes)
    self.epoch_cache.truncate_from_end(next_offset)  # the order of LogLoader.java:218-224
    self.epoch_cache.truncate_from_start(self.log_start_offset_checkpoint)
    first = self.segments.first_segment_base_offset()
    log_start = max(self.log_start_offset_checkpoint, first if first is not None else 0)
    self._make_recovery_durable()
    return LoadedLog(self.segments, log_start, recovery_point,
                     LogOffsetMetadata(next_offset, active.base_offset, active.size()),
                     tuple(self._recovered), self._truncated_bytes)


def _epoch_findings_ignoring_log_start(entries: Any, scans: Any, path: str,
                                       log_start_offset: int = 0) -> Any:
    """Defect 5 (EPO-7): verify flags `epoch_missing` for batches below the log start."""
    return _REAL_EPOCH_FINDINGS(entries, scans, path, 0)


_REAL_EPOCH_FINDINGS = verify._batch_epoch_findings


def _load_persisting_recovery_point_ahead(self: LogDir, layout: Any, checkpoints: Any) -> None:
    """Defect 4's kind (CRP-12, RCV-8: load twice != load once): an unclean load serves the
    checkpointed recovery point (RCV-8) but persists the recovered LEO as the recovery point,
    so the next load trusts everything this one recovered and serves another state. Every
    single load is a member of the model's set; only a second load shows it (KL-CRASH-7)."""
    _REAL_LOAD_ALL(self, layout, checkpoints)
    if not self.had_clean_shutdown:
        OffsetCheckpointFile(self.fs, self.path / RECOVERY_POINT_CHECKPOINT_FILENAME).write(
            {(tp.topic, tp.partition): log.state().log_end_offset
             for tp, log in self.logs.items()})


_REAL_LOAD_ALL = LogDir._load_all


BROKEN_CRASH: dict[str, Broken] = {
    b.name: b
    for b in (
        Broken("recovery_offset_error_escapes", "CBUG-4", "RCV-6",
               "recovery lets an InvalidOffsetError from the index rebuild escape the load",
               LogLoader, "_recover_unflushed_segments", _recover_letting_offset_errors_escape),
        Broken("recovery_index_wrong_batch", "CBUG-3", "RCV-6",
               "recovery's offset-index entries point at the batch after the one they name",
               LogSegment, "recover",
               _recover_variant(index_after_batch=True, keep_torn_tail=False)),
        Broken("recovery_keeps_torn_tail", "CBUG-2", "RCV-6",
               "recovery keeps the torn bytes after the last valid batch",
               LogSegment, "recover",
               _recover_variant(index_after_batch=False, keep_torn_tail=True)),
        Broken("recovery_skips_epoch_zero", "GAP-13", "RCV-10",
               "recovery never re-adds leader epoch 0 to the epoch cache",
               LogSegment, "_maybe_assign_epoch", staticmethod(_assign_epoch_skipping_zero)),
        Broken("checkpoint_written_in_place", "CBUG-7", "DUR-13",
               "checkpoints are truncated and rewritten in place instead of tmp + rename",
               FileSystem, "write_atomically", _write_in_place),
        Broken("orphan_index_kept", "CBUG-3", "RCV-5",
               "the loader keeps index files whose .log is gone",
               LogLoader, "_delete", _delete_keeping_orphan_indexes),
        Broken("recovery_not_durable", "GAP-4", "CRP-13",
               "recovery neither fsyncs what it accepted nor rewrites the epoch checkpoint",
               LogLoader, "_make_recovery_durable", _recovery_not_made_durable),
        Broken("load_cut_keeps_later_segments", "GAP-5", "RCV-5",
               "issue #10 defect 1: an index-rebuild cut at load keeps the later segments",
               LogLoader, "_drop_segments_after", _load_cut_keeping_later_segments),
        Broken("no_checkpoint_after_truncation", "CBUG-5", "DUR-26",
               "issue #10 defect 2: truncation does not rewrite the recovery-point checkpoint",
               Log, "_truncated", _no_checkpoint_after_truncation),
        Broken("truncation_not_durable", "GAP-1", "CRP-15",
               "issue #10 defect 3: truncation renames and cuts without any fsync (Kafka's way)",
               LocalLog, "truncate_to", _truncate_like_kafka),
        Broken("epoch_trim_end_first", "EPO-7", "CRP-12",
               "issue #10 defect 4: the load trims epochs at the LEO before the log start",
               LogLoader, "load", _load_trimming_end_first),
        Broken("recovery_point_persisted_ahead", "CBUG-18", "CRP-12",
               "recovery not idempotent: an unclean load persists the LEO as the recovery "
               "point while serving the checkpointed one, so a reload skips its recovery",
               LogDir, "_load_all", _load_persisting_recovery_point_ahead),
        Broken("verify_epoch_missing_below_log_start", "EPO-7", "EPO-1",
               "issue #10 defect 5: verify reports epoch_missing below the log start",
               verify, "_batch_epoch_findings", _epoch_findings_ignoring_log_start),  # type: ignore[arg-type]
    )
}


@contextmanager
def patched(name: str) -> Iterator[Broken]:
    """Install crash bug `name` for the duration of the block (not reference-counted)."""
    try:
        broken = BROKEN_CRASH[name]
    except KeyError:
        known = ", ".join(sorted(BROKEN_CRASH))
        raise UnknownBrokenImplError(
            f"unknown crash broken implementation {name!r} (known: {known})") from None
    home = defining_class(broken)
    original = vars(home)[broken.attribute]
    setattr(home, broken.attribute, broken.replacement)
    try:
        yield broken
    finally:
        setattr(home, broken.attribute, original)
