"""Deliberately broken implementations for issue #10: one crash-recovery defect each.

The six categories the issue measured (none was caught by `kafkalog check` before crashes were in
it): recovery letting an offset error escape, recovery index entries pointing at the wrong batch,
a torn last batch kept, epoch 0 skipped by recovery, a checkpoint written in place, orphan index
files kept; plus kafkalog's strict promise broken the way Kafka breaks it (recovery not durable,
GAP-4). Each patches one attribute of `kafkalog.impl`, shaped like `conformance/broken.py`'s
registry (`Broken` entries), so the checker can install them by name; `patched(name)` is a plain
context manager for in-process explorers (benchmarks/crash_explore.py, tests/crash/).

Patches are process-wide: never run a broken and a real log at the same time in one process.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kafkalog.impl.fs import FileSystem, PathLike
from kafkalog.impl.log_loader import LogLoader
from kafkalog.impl.log_segment import INDEX_SUFFIXES, LOG_FILE_SUFFIX, LogSegment
from kafkalog.model.errors import CorruptRecordError, InvalidRecordError
from kafkalog.model.values import INT32_MAX, NO_TIMESTAMP

from .broken import Broken
from .errors import UnknownBrokenImplError

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

    def recover(self: LogSegment, epoch_cache: Any = None) -> int:
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
    original = broken.owner.__dict__[broken.attribute]
    setattr(broken.owner, broken.attribute, broken.replacement)
    try:
        yield broken
    finally:
        setattr(broken.owner, broken.attribute, original)
