"""Batch-level one-pass scans of v2 batches: the pure-Python reference and the active choice.

Recovery (`segment.recovery`) and checked reads (`MemoryRecords.ensure_valid_batches`) walk
every batch of a buffer doing the same few things per batch; done batch by batch in Python that
costs microseconds per 16 KiB batch. These scans do it for a whole buffer in one call. Offset
lookups (`translate_offset`, on every read) get the same treatment at a smaller scale: the
header walk of one chunk (`find_batch_header`) and, compiled only, the floor search over an
offset index's mapping (`index_floor_span`); so do the append path's header pass
(`memory_records.scan_headers`), its summary of the facts (`facts_summary.py_facts_summary`),
its offset stamps (`log.validator.py_stamp_headers`), the rows producer state reads
(`producer.rebuild.py_producer_rows`), its index decisions and packed entries
(`segment.indexing.py_index_decisions`, `offset_index.py_pack_entries`), the cleaner's record walk
(`record_walk.py_record_walk`) and the leader's
vectored write (`fs.file_system.py_write_stamped`), whose Python references live beside their
callers.

Two implementations return exactly the same values: this module's pure-Python functions (the
reference, and the fallback) and the compiled `kafkalog.impl.records._scan`
(`impl/records/_scan.c`), built by
`pip install` when a C compiler is there (an optional extension: a failed build installs
without it). `KAFKALOG_PURE_PYTHON=1` in the environment selects the Python ones; `ACTIVE` names
the one in use (`kafkalog doctor` and `kafkalog bench` print it).

The contract both keep: a scan never raises for bad bytes. It stops *before* the first batch it
cannot vouch for and says why (`stop`): STOP_END (the buffer ended on a batch boundary),
STOP_MORE (the buffer ends inside a batch, or inside a header) or STOP_SLOW (a batch that the
caller's per-batch path must handle: it raises the typed error, makes the cut, or does the rare
bookkeeping, exactly as it always did). So every error type and every cut position is the
per-batch path's by construction.
"""

from __future__ import annotations

import os
import struct

from crc32c import crc32c

STOP_END, STOP_MORE, STOP_SLOW = 0, 1, 2

_HEADER = 61  # a v2 batch header (FMT-45)
_LOG_OVERHEAD = 12
_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)
# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, [attributes], lastOffsetDelta,
# [baseTimestamp], maxTimestamp, producerId: one unpack per batch.
_FIELDS = struct.Struct(">qiibI2xi8xqq")
# baseOffset, batchLength, [epoch], magic, crc, [attributes], lastOffsetDelta: scan_valid's.
_VALID_FIELDS = struct.Struct(">qi4xbI2xi")
_OI_ENTRY = struct.Struct(">ii")
_TI_ENTRY = struct.Struct(">qi")

RecoveryScan = tuple[int, int, int, int, int, bytes, bytes, bytes, list[int], int]
ValidScan = tuple[int, int, int, int]


def py_scan_recovery(buf: memoryview | bytes, position: int, base_offset: int, interval: int,
                     last_index_entry: int, max_ts: int, max_off: int, oi_entries: int,
                     oi_max: int, oi_last: int, ti_entries: int, ti_max: int, ti_last_ts: int,
                     ti_last_off: int, epoch_check: bool, latest_epoch: int | None
                     ) -> RecoveryScan:
    """`LogSegment.recover`'s per-batch work (SEG-15) over the whole v2 batches of `buf`.

    `buf` holds the segment's bytes from file position `position`. The state in: the index
    interval and the position of the last index entry, the max timestamp so far and its
    offset, each index's entry count, capacity and last entry (offset index: last offset; time
    index: last timestamp and offset), and whether to check epochs against `latest_epoch`
    (None: the cache is empty). Stops (STOP_SLOW) before a batch that is invalid, outside the
    segment's offset range, at the int64 limit, carries a new leader epoch, or whose index
    entries the index classes would refuse or need to grow for.

    Returns (bytes consumed, stop, last_index_entry, max_ts, max_off, the new offset-index
    entries and time-index entries in file format, one flag byte per offset entry saying
    whether a time entry was appended with it, the positions of batches with a producer id,
    the next offset after the last batch or -1). O(batches) plus the CRCs.
    """
    n, rel, stop, unpack = len(buf), 0, STOP_END, _FIELDS.unpack_from
    oi, ti, flags, producers = bytearray(), bytearray(), bytearray(), []
    v2_end = -1
    while True:
        # The header check inline: this loop runs for every batch recovery walks.
        if n - rel < _HEADER:
            stop = STOP_END if rel == n else STOP_MORE
            break
        base, length, epoch, magic, crc, delta, batch_max_ts, producer_id = unpack(buf, rel)
        size = length + _LOG_OVERHEAD
        if size < _HEADER or magic != 2:
            stop = STOP_SLOW
            break
        if size > n - rel:
            stop = STOP_MORE
            break
        if crc32c(buf[rel + 21 : rel + size]) != crc:
            stop = STOP_SLOW
            break
        last = base + delta
        if not _INT64_MIN <= last < _INT64_MAX or not 0 <= last - base_offset <= _INT32_MAX:
            stop = STOP_SLOW
            break
        if epoch_check and epoch >= 0 and (latest_epoch is None or epoch > latest_epoch):
            stop = STOP_SLOW
            break
        pos = position + rel
        new_max_ts, new_max_off = (batch_max_ts, last) if batch_max_ts > max_ts else (max_ts,
                                                                                       max_off)
        if pos - last_index_entry > interval:
            if (oi_entries >= oi_max or ti_entries >= ti_max - 1
                    or (oi_entries != 0 and last <= oi_last)
                    or (ti_entries != 0 and (new_max_off < ti_last_off
                                             or new_max_ts < ti_last_ts))
                    or (new_max_ts > ti_last_ts
                        and not 0 <= new_max_off - base_offset <= _INT32_MAX)):
                stop = STOP_SLOW
                break
            oi += _OI_ENTRY.pack(last - base_offset, pos)
            oi_entries, oi_last = oi_entries + 1, last
            if new_max_ts > ti_last_ts:
                ti += _TI_ENTRY.pack(new_max_ts, new_max_off - base_offset)
                ti_entries, ti_last_ts, ti_last_off = ti_entries + 1, new_max_ts, new_max_off
                flags.append(1)
            else:
                flags.append(0)
            last_index_entry = pos
        max_ts, max_off, v2_end = new_max_ts, new_max_off, last + 1
        if producer_id >= 0:
            producers.append(pos)
        rel += size
    return (rel, stop, last_index_entry, max_ts, max_off, bytes(oi), bytes(ti), bytes(flags),
            producers, v2_end)


def py_scan_valid(buf: memoryview | bytes) -> ValidScan:
    """The whole batches of `buf` that pass `RecordBatch.is_valid`, from the start.

    Returns (bytes consumed, stop, batches, the next offset after the last one or -1); stops
    (STOP_SLOW) before an invalid batch, and after the walk when a next offset would pass the
    int64 limit (the caller reads that one from the batch). The header check is inline: this loop
    runs for every batch of every checked read on the pure-Python path.
    """
    unpack, n, rel, count, next_offset, overflow = _VALID_FIELDS.unpack_from, len(buf), 0, 0, \
        -1, False
    while True:
        if n - rel < _HEADER:
            stop = STOP_END if rel == n else STOP_MORE
            break
        base, length, magic, crc, delta = unpack(buf, rel)
        size = length + _LOG_OVERHEAD
        if size < _HEADER or magic != 2:
            stop = STOP_SLOW
            break
        if size > n - rel:
            stop = STOP_MORE
            break
        if crc32c(buf[rel + 21 : rel + size]) != crc:
            stop = STOP_SLOW
            break
        last = base + delta
        if _INT64_MIN <= last < _INT64_MAX:
            next_offset = last + 1
        else:
            overflow = True
        count += 1
        rel += size
    return rel, STOP_SLOW if overflow else stop, count, next_offset


# --- offset lookups (SEG-9, FMT-54) ---

_V2_LAST_OFFSET_END = 27  # a v2 header up to and including lastOffsetDelta (FMT-45)
# base offset, size field, magic and lastOffsetDelta of a v2 header in one unpack
_V2_HEADER_TO_LAST_DELTA = struct.Struct(">qi4xB6xi").unpack_from


def py_find_batch_header(chunk: bytes, position: int, stop: int, target: int,
                         result_type: type) -> object:
    """`search_for_offset_with_size`'s walk over the v2 headers of one chunk read at `position`.

    `stop` is the file's logical size. Returns `result_type(last_offset, position, size)` for
    the first batch whose last offset >= `target`; None at a torn tail (a batch running past
    `stop`, FMT-52); an int >= 0, the position to read more from, when the chunk ends before a
    header's lastOffsetDelta; `~position` (< 0) for a batch the per-batch path must decide
    (legacy magic, a size below the v2 header, a last offset or a target beyond int64). Reads
    headers only, never a whole batch.
    """
    if not _INT64_MIN <= target <= _INT64_MAX:
        return ~position  # never on a read; the compiled twin works in int64
    rel, n = 0, len(chunk)
    while rel + _V2_LAST_OFFSET_END <= n:
        base_offset, length, magic, last_delta = _V2_HEADER_TO_LAST_DELTA(chunk, rel)
        size = _LOG_OVERHEAD + length
        if magic < 2 or size < _HEADER:
            return ~position  # legacy magic (0, 1) and short sizes: `batches` decides
        if position + size > stop:
            return None
        last_offset = base_offset + last_delta
        if not _INT64_MIN <= last_offset <= _INT64_MAX:
            return ~position
        if last_offset >= target:
            return result_type(last_offset, position, size)
        position += size
        rel += size
    return position


def _select() -> tuple[str, object]:
    if os.environ.get("KAFKALOG_PURE_PYTHON", "") not in ("", "0"):
        return "pure Python (KAFKALOG_PURE_PYTHON=1)", None
    try:
        from kafkalog.impl.records import _scan  # type: ignore[attr-defined]
    except ImportError:
        return "pure Python (the C extension kafkalog.impl.records._scan is not built)", None
    return f"C extension kafkalog.impl.records._scan (CRC-32C: {_scan.CRC_IMPLEMENTATION})", _scan


ACTIVE, _compiled = _select()
#: True when the compiled scans are in use.
COMPILED = _compiled is not None
scan_recovery = py_scan_recovery if _compiled is None else _compiled.scan_recovery  # type: ignore[attr-defined]
scan_valid = py_scan_valid if _compiled is None else _compiled.scan_valid  # type: ignore[attr-defined]
find_batch_header = (py_find_batch_header if _compiled is None
                     else _compiled.find_batch_header)  # type: ignore[attr-defined]
# Compiled twins whose Python reference lives with its caller, or None on the pure-Python path:
# the floor search over an offset index's mapping (Python: OffsetIndex's bisect over its cached
# keys, faster in Python than probing the mapping) and the append path's header pass
# (`memory_records.py_scan_headers`).
index_floor_span = None if _compiled is None else _compiled.index_floor_span  # type: ignore[attr-defined]
compiled_scan_headers = None if _compiled is None else _compiled.scan_headers  # type: ignore[attr-defined]
# The load's order scan of an index (references: OffsetIndex/TimeIndex._first_disorder).
index_first_disorder = (None if _compiled is None
                        else _compiled.index_first_disorder)  # type: ignore[attr-defined]
# The append path's other twins (references: log.validator.py_stamp_headers,
# segment.indexing.py_index_decisions). These may also return None where the reference needs
# integers beyond int64: the caller then runs the reference.
compiled_stamp_headers = None if _compiled is None else _compiled.stamp_headers  # type: ignore[attr-defined]
compiled_index_decisions = (None if _compiled is None
                            else _compiled.index_decisions)  # type: ignore[attr-defined]
# References: producer.rebuild.py_producer_rows, offset_index.py_pack_entries,
# fs.file_system.py_write_stamped (a system call: the compiled one releases the GIL like
# os.pwritev).
compiled_producer_rows = None if _compiled is None else _compiled.producer_rows  # type: ignore[attr-defined]
compiled_pack_offset_entries = (None if _compiled is None
                                else _compiled.pack_offset_entries)  # type: ignore[attr-defined]
compiled_write_stamped = None if _compiled is None else _compiled.write_stamped  # type: ignore[attr-defined]
# Reference: facts_summary.py_facts_summary.
compiled_facts_summary = None if _compiled is None else _compiled.facts_summary  # type: ignore[attr-defined]
