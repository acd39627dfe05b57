"""`verify` checks of `.txnindex` files (PSF-8..PSF-10, TXN-11).

Read-only. Each finding is `(is_problem, kind, path, message, rule)`, as in producer.py.
Checked per segment: whole 34-byte entries (a trailing partial entry is a note: Kafka ignores
it), version byte 0, marker offsets strictly increasing and inside [segment base, segment end),
first offset <= marker offset, last stable offset <= marker + 1, and that the marker offset holds
an ABORT control batch of the entry's producer.
"""

from __future__ import annotations

import struct
from pathlib import Path

from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.index.transaction_index import ENTRY_SIZE, decode_entries
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.model.errors import CorruptIndexError, KafkalogError

TxnFinding = tuple[bool, str, str, str, str]
_MARKER_KEY = struct.Struct(">hh")


def _abort_markers(fs: FileSystem, log_path: Path) -> dict[int, int]:
    """Offset -> producer id of every ABORT control batch in a `.log` (PSF-11, PSF-12)."""
    out: dict[int, int] = {}
    try:
        for batch in MemoryRecords(fs.read_file(log_path)).batches():
            if batch.magic < 2 or not batch.is_control_batch:
                continue
            for record in batch.records():
                key = record.key or b""
                if len(key) >= 4 and _MARKER_KEY.unpack_from(key)[1] == 0:
                    out[batch.base_offset] = batch.producer_id
                break
    except KafkalogError:
        pass  # a torn or corrupt `.log` is reported by the segment scan itself
    return out


def check_txn_index(fs: FileSystem, partition_dir: Path, base: int,
                    segment_end: int) -> list[TxnFinding]:
    """The findings for `<base>.txnindex`, if the file exists (PSF-9: it may not)."""
    path = partition_dir / f"{base:020d}.txnindex"
    if not fs.exists(path):
        return []
    where = str(path)
    data = fs.read_file(path)
    out: list[TxnFinding] = []
    if len(data) % ENTRY_SIZE:
        out.append((False, "txn_index_partial_entry", where,
                    f"{len(data) % ENTRY_SIZE} trailing bytes after the last whole 34-byte "
                    "entry; Kafka ignores them", "PSF-9"))
    try:
        entries = decode_entries(data, where)
    except CorruptIndexError as error:
        return [*out, (True, "corrupt_txn_index", where, error.message, "PSF-9")]
    aborts = _abort_markers(fs, partition_dir / f"{base:020d}.log") if entries else {}
    previous = None
    for i, e in enumerate(entries):
        at = f"entry {i} ({e.producer_id}, {e.first_offset}, {e.last_offset}, " \
             f"{e.last_stable_offset})"
        if e.last_offset < base:
            out.append((True, "txn_index_below_base", where,
                        f"{at}: marker below the segment base {base}; the loader recovers the "
                        "segment", "PSF-10"))
        elif e.last_offset >= segment_end:
            out.append((True, "txn_index_beyond_segment", where,
                        f"{at}: marker at or beyond the segment's end {segment_end}", "PSF-10"))
        elif aborts.get(e.last_offset) != e.producer_id:
            out.append((True, "txn_index_no_abort_marker", where,
                        f"{at}: no ABORT marker of producer {e.producer_id} at "
                        f"{e.last_offset}", "TXN-11"))
        if previous is not None and e.last_offset <= previous:
            out.append((True, "txn_index_out_of_order", where,
                        f"{at}: marker offsets must increase (previous {previous})", "PSF-9"))
        if not e.first_offset <= e.last_offset or e.last_stable_offset > e.last_offset + 1:
            out.append((True, "txn_index_bad_entry", where,
                        f"{at}: needs first <= last and last stable <= last + 1", "TXN-10"))
        previous = e.last_offset
    return out
