"""A segment's four files as a unit: flush, rename (`.deleted`, `.cleaned`, `.swap`) and delete.

A mixin of `impl/segment/log_segment.py`'s `LogSegment`, kept apart so the segment's
read/append/recover
logic stays readable; the methods use the segment's attributes, declared below.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.index.lazy_index import LazyIndex
from kafkalog.impl.index.transaction_index import TransactionIndex
from kafkalog.impl.records.file_records import FileRecords

DELETED_FILE_SUFFIX = ".deleted"


class SegmentFiles:
    """The `.log`, `.index`, `.timeindex` and `.txnindex` of one segment, moved together."""

    log: FileRecords
    fs: FileSystem
    last_modified_ms: int
    txn_index: TransactionIndex
    _offset_index: LazyIndex
    _time_index: LazyIndex
    # The segment's own properties (LogSegment): the indexes, loaded on first use, and the paths.
    offset_index: Any
    time_index: Any
    offset_index_file: Path
    time_index_file: Path
    txn_index_file: Path


    def flush(self) -> None:
        """fsync `.log` and both indexes; stamp the last-modified time on the file.

        Like Kafka this loads (so creates) lazy index files: flushing an empty active segment on
        shutdown leaves its `.index`/`.timeindex` on disk for the next load (KAFKA-13603).
        """
        self.log.flush()
        self.log.set_last_modified_ms(self.last_modified_ms)
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def change_file_suffixes(self, old_suffix: str, new_suffix: str) -> None:
        """Rename all four files, replacing `old_suffix` with `new_suffix` (FMT-7, BUG-49).

        Strict (beyond Kafka's `LogSegment.changeFileSuffixes`, GAP-2; KL-CRASH-3): a removal
        (to `.deleted`) makes the `.log`'s rename durable before it renames the indexes. A
        power loss may otherwise keep an index's rename and lose the `.log`'s, leaving a live
        `.log` without its index below the recovery point, which the load rebuilds with a
        temporary producer-state manager that deletes the snapshots above the segment and
        writes one at its end (`LogLoader.recoverSegment`, PSR-7): producer state of a segment
        the load would otherwise never touch. With the `.log` gone first,
        a crash leaves the whole segment or orphan indexes, which the load deletes (RCV-3).
        """

        def renamed(path: Path) -> Path:
            name = path.name
            if old_suffix and name.endswith(old_suffix):
                name = name[: -len(old_suffix)]
            return path.with_name(name + new_suffix)

        txn = self.txn_index_file  # derived from the `.log` name: taken before it changes
        log_path = Path(self.log.path)
        self.log.rename_to(renamed(log_path))
        if new_suffix == DELETED_FILE_SUFFIX:
            self.fs.fsync_dir(log_path.parent)
        self._offset_index.rename_to(renamed(self.offset_index_file))
        self._time_index.rename_to(renamed(self.time_index_file))
        if self.fs.exists(txn):
            self.fs.rename(txn, renamed(txn))

    def has_suffix(self, suffix: str) -> bool:
        return str(self.log.path).endswith(suffix)

    def delete_if_exists(self) -> None:
        """Delete `.log`, both indexes and a txn index; any may already be gone (SEG-23)."""
        self.log.delete_if_exists()
        self._offset_index.delete_if_exists()
        self._time_index.delete_if_exists()
        txn = self.txn_index_file
        if self.fs.exists(txn):
            self.fs.delete(txn)
        self.txn_index.forget()
