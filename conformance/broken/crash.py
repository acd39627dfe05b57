"""Deliberately broken implementations: one crash-recovery defect each.

The six categories the issue measured (none was caught by `kafkalog check` before crashes were in
it): recovery letting an offset error escape, recovery index entries pointing at the wrong batch,
a torn last batch kept, epoch 0 skipped by recovery, a checkpoint written in place, orphan index
files kept; plus kafkalog's strict promise broken the way Kafka breaks it (recovery not durable,
GAP-4). Each is a `Broken` entry stated against the current code (base.py), so the checker
installs them by name (registry.py); `patched(name)` is a plain context manager for in-process
explorers (benchmarks/crash_explore.py, tests/crash/).

Patches are process-wide: never run a broken and a real log at the same time in one process.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kafkalog.conformance.broken.base import Broken, Patch, diff, installed
from kafkalog.conformance.errors import UnknownBrokenImplError
from kafkalog.impl.checkpoint.checkpoint_file import (
    RECOVERY_POINT_CHECKPOINT_FILENAME,
    OffsetCheckpointFile,
)
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.load.log_dir import LogDir
from kafkalog.impl.load.log_loader import LogLoader
from kafkalog.impl.log.local_log import LocalLog
from kafkalog.impl.log.log import Log
from kafkalog.impl.records.batch_scan import py_scan_recovery
from kafkalog.impl.segment import recovery
from kafkalog.impl.segment.log_segment import INDEX_SUFFIXES, LOG_FILE_SUFFIX, LogSegment
from kafkalog.impl.verify import verifier as verify

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


# --- Crash-recovery defects 1-5 put back (each fixed in impl/; the explorer catches them) ----


def _load_cut_keeping_later_segments(self: LogLoader, base: int) -> None:
    """Defect 1 (GAP-5): an index-rebuild cut at load keeps every later segment."""


def _no_checkpoint_after_truncation(self: Log) -> None:
    """Defect 2 (DUR-26, CBUG-5): no recovery-point checkpoint after a truncation."""


_REAL_EPOCH_FINDINGS = verify._batch_epoch_findings


def _epoch_findings_ignoring_log_start(entries: Any, scans: Any, path: str,
                                       log_start_offset: int = 0) -> Any:
    """Defect 5 (EPO-7): verify flags `epoch_missing` for batches below the log start."""
    return _REAL_EPOCH_FINDINGS(entries, scans, path, 0)


_REAL_LOAD_ALL = LogDir._load_all


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


BROKEN_CRASH: dict[str, Broken] = {
    b.name: b
    for b in (
        Broken("recovery_offset_error_escapes", "CBUG-4", "RCV-6",
               "recovery lets an InvalidOffsetError from the index rebuild escape the load",
               LogLoader, "_recover_segments_in_order",
               diff(("self._recover_or_empty(segment, before_cut=cut)",
                     "self._recover_segment(segment, True, cut)"))),
        # The walk indexes in two places: the chunk scan's Python twin (the compiled one has
        # the same rule) and the per-batch step; the bug is in both.
        Broken("recovery_index_wrong_batch", "CBUG-3", "RCV-6",
               "recovery's offset-index entries point at the batch after the one they name",
               recovery, "_one_batch",
               diff(("offset_index.append(last_offset, walk.valid_bytes)",
                     "offset_index.append(last_offset, walk.valid_bytes + batch.size_in_bytes)")),
               also=(Patch(recovery, "scan_recovery",
                           diff(("oi += _OI_ENTRY.pack(last - base_offset, pos)",
                                 "oi += _OI_ENTRY.pack(last - base_offset, pos + size)"),
                                source=py_scan_recovery)),)),
        Broken("recovery_keeps_torn_tail", "CBUG-2", "RCV-6",
               "recovery keeps the torn bytes after the last valid batch",
               LogSegment, "recover",
               diff(("        if truncated > 0:\n"
                     "            if before_cut is not None:\n"
                     "                before_cut()\n"
                     "            self.log.truncate_to(valid_bytes)\n"
                     "            self.last_modified_ms = self.time.milliseconds()\n", ""))),
        Broken("recovery_skips_epoch_zero", "GAP-13", "RCV-10",
               "recovery never re-adds leader epoch 0 to the epoch cache",
               LogSegment, "_maybe_assign_epoch",
               diff(("batch.partition_leader_epoch < 0:", "batch.partition_leader_epoch <= 0:"))),
        Broken("checkpoint_written_in_place", "CBUG-7", "DUR-13",
               "checkpoints are truncated and rewritten in place instead of tmp + rename",
               FileSystem, "write_atomically",
               diff(("tmp = target.with_name(target.name + \".tmp\")", "tmp = target"),
                    ("        self.rename(tmp, target)\n        self.fsync_dir(target.parent)\n",
                     ""))),
        Broken("orphan_index_kept", "CBUG-3", "RCV-5",
               "the loader keeps index files whose .log is gone",
               LogLoader, "_delete", _delete_keeping_orphan_indexes),
        Broken("recovery_not_durable", "GAP-4", "CRP-13",
               "recovery neither fsyncs what it accepted nor rewrites the epoch checkpoint",
               LogLoader, "_make_recovery_durable", _recovery_not_made_durable),
        Broken("load_cut_keeps_later_segments", "GAP-5", "RCV-5",
               "defect 1: an index-rebuild cut at load keeps the later segments",
               LogLoader, "_drop_segments_after", _load_cut_keeping_later_segments),
        Broken("no_checkpoint_after_truncation", "CBUG-5", "DUR-26",
               "defect 2: truncation does not rewrite the recovery-point checkpoint",
               Log, "_truncated", _no_checkpoint_after_truncation),
        # Defect 3 (GAP-1, GAP-2, DUR-23): the later segments renamed lowest first with no
        # directory fsync, the cut segment not fsynced: a power loss brings truncated batches
        # back. kafka_durability.py installs the same change.
        Broken("truncation_not_durable", "GAP-1", "CRP-15",
               "defect 3: truncation renames and cuts without any fsync (Kafka's way)",
               LocalLog, "truncate_to",
               diff(("self.remove_and_delete_segments(deletable[::-1], async_delete=True)\n",
                     "for segment in deletable:\n"
                     "            self.segments.remove(segment.base_offset)\n"
                     "            segment.change_file_suffixes(\"\", DELETED_FILE_SUFFIX)\n"
                     "        self.schedule_deletion(deletable)\n"),
                    ("        active.flush()\n", ""))),
        # Defect 4 (CRP-12): Kafka's trim order after loading, LEO first then log start; with
        # log start = LEO reloads alternate between an entry at the LEO and none.
        Broken("epoch_trim_end_first", "EPO-7", "CRP-12",
               "defect 4: the load trims epochs at the LEO before the log start",
               LogLoader, "_load",
               diff(("        self.epoch_cache.truncate_from_start(log_start)\n"
                     "        self.epoch_cache.truncate_from_end(next_offset)\n",
                     "        self.epoch_cache.truncate_from_end(next_offset)\n"
                     "        self.epoch_cache.truncate_from_start(log_start)\n"))),
        Broken("recovery_point_persisted_ahead", "CBUG-18", "CRP-12",
               "recovery not idempotent: an unclean load persists the LEO as the recovery "
               "point while serving the checkpointed one, so a reload skips its recovery",
               LogDir, "_load_all", _load_persisting_recovery_point_ahead),
        Broken("verify_epoch_missing_below_log_start", "EPO-7", "EPO-1",
               "defect 5: verify reports epoch_missing below the log start",
               verify, "_batch_epoch_findings", _epoch_findings_ignoring_log_start),
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
    with installed(broken):
        yield broken
