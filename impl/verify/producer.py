"""`verify` checks of producer `.snapshot` files (PSF-1..PSF-5, PSR-1, PSR-3).

Read-only. Each finding is `(is_problem, kind, path, message, rule)`; `verifier.py` turns them
into its `Finding`s (kept apart so this module does not import the verifier).
"""

from __future__ import annotations

from pathlib import Path

from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.producer.snapshot import read_snapshot, snapshot_offset
from kafkalog.impl.verify.memo import SegmentMemo
from kafkalog.model.errors import CorruptSnapshotError

SnapshotFinding = tuple[bool, str, str, str, str]


def check_snapshots(fs: FileSystem, partition_dir: Path, log_end_offset: int,
                    memo: SegmentMemo | None = None) -> list[SnapshotFinding]:
    """Every `.snapshot` parses (version, size, CRC-32C); none holds state at or beyond its own
    offset (KAFKA-6683) or a producer twice; one above the LEO is a note (the load deletes it).
    `memo` (optional, memo.py) reuses the entries of files whose version did not change."""
    out: list[SnapshotFinding] = []
    directory = str(partition_dir)  # joined as strings: a Path per file costs a few µs each
    for name in fs.list_dir(partition_dir):
        offset = snapshot_offset(name)
        if offset is None:
            continue
        path = f"{directory}/{name}"
        if fs.is_dir(path):
            continue
        try:
            entries = (read_snapshot(fs, Path(path)) if memo is None
                       else memo.snapshot_entries(fs, path))
        except CorruptSnapshotError as error:
            out.append((True, "corrupt_snapshot", path, error.message, "PSF-5"))
            continue
        if offset > log_end_offset:
            out.append((False, "snapshot_above_log_end", path,
                        f"snapshot at {offset} above the log end offset {log_end_offset}; the "
                        "load deletes it", "PSR-3"))
        seen: set[int] = set()
        for e in entries:
            if e.producer_id in seen:
                out.append((True, "snapshot_duplicate_producer", path,
                            f"producer {e.producer_id} appears twice", "PSF-4"))
            seen.add(e.producer_id)
            if e.last_offset >= offset or e.current_txn_first_offset >= offset:
                out.append((True, "snapshot_beyond_offset", path,
                            f"producer {e.producer_id} has data at offset "
                            f"{max(e.last_offset, e.current_txn_first_offset)}, not below the "
                            f"snapshot's offset {offset}", "PSF-1"))
    return out
