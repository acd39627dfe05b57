"""The batch walk of `LogSegment.recover` (SEG-15): one pass, a buffer at a time.

Recovery CRC-checks every batch of the segment, rebuilds the offset and time indexes, feeds new
leader epochs to the epoch cache and stops at the first invalid batch. The walk reads the
`.log` in 1 MiB chunks and lets `batch_scan.scan_recovery` do the common batches of each chunk
in one call; it stops before any batch it cannot vouch for, and that one batch goes through
`_one_batch`, the per-batch code recovery always ran (errors, cuts, epoch assignment, index
growth), after which the chunk walk resumes. So the cut position, every index entry, the
epochs and every error type are the per-batch path's.

The walk also remembers what the two later passes over the same batches need (PSR-7: the
`.txnindex` rebuild and producer-state recovery): the positions of the batches that carry a
producer id and the next offset after the last v2 batch. Those passes then read only those
batches instead of walking the segment twice more (`RecoveredBatches`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from kafkalog.impl.records.batch_scan import STOP_END, STOP_MORE, STOP_SLOW, scan_recovery
from kafkalog.impl.records.record_batch import LOG_OVERHEAD
from kafkalog.model.errors import CorruptRecordError, InvalidRecordError, KafkaStorageError
from kafkalog.model.values import INT32_MAX, NO_TIMESTAMP

_CHUNK = 1024 * 1024  # as FileRecords.batches: larger fresh buffers cost page faults
_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)
MAX_REMEMBERED = 1 << 16  # producer-batch positions kept per segment (~2 MiB at most)


@dataclass
class RecoveredBatches:
    """What one recovery walk saw, valid for the segment's `.log` while its size is `size`.

    At most MAX_REMEMBERED producer batches are remembered (memory stays bounded for a huge
    segment of small idempotent batches); past that the later passes walk the segment as
    before, which is what their per-batch producer work costs anyway.
    """

    size: int  # the .log size after recovery's cut
    producer_positions: list[int] = field(default_factory=list)  # batches with a producer id
    v2_end: int = -1  # the last v2 batch's last offset + 1, or -1 when there is none
    complete: bool = True  # False once more than MAX_REMEMBERED producer batches were seen

    def remember(self, positions: list[int]) -> None:
        if self.complete:
            self.producer_positions += positions
            if len(self.producer_positions) > MAX_REMEMBERED:
                self.complete, self.producer_positions = False, []

    def describes(self, segment: Any) -> bool:
        """True while the segment still holds exactly the bytes this walk read, all noted."""
        return self.complete and segment.size() == self.size


@dataclass
class _Walk:
    """The walk's running state (the locals of the per-batch loop), and the index entries the
    scans produced that are not written yet, with the indexes' state as if they were."""

    valid_bytes: int = 0  # bytes of valid batches so far: the next batch's position
    last_index_entry: int = 0
    max_ts: int = NO_TIMESTAMP
    max_off: int = -1
    seen: RecoveredBatches = field(default_factory=lambda: RecoveredBatches(0))
    oi_raw: bytearray = field(default_factory=bytearray)  # pending offset-index entries
    ti_raw: bytearray = field(default_factory=bytearray)  # pending time-index entries
    flags: bytearray = field(default_factory=bytearray)  # per offset entry: with a time entry?
    index_state: list[int] = field(default_factory=list)  # see `_sync`
    latest_epoch: int | None = None  # the epoch cache's latest epoch, as of `_sync`
    scannable: bool = True  # every offset the scan is given fits an int64 (see `_sync`)


def walk_batches(segment: Any, epoch_cache: Any) -> tuple[int, int, int, RecoveredBatches]:
    """SEG-15 steps 1-4 over `segment` (indexes already reset): (valid bytes, max timestamp,
    its offset, what the later passes need). Stops silently at the first invalid batch;
    LogSegmentOffsetOverflowError and the indexes' InvalidOffsetError propagate (REC-8)."""
    walk = _Walk()
    # SEG-15 step 4: the first invalid batch ends recovery silently.
    with suppress(CorruptRecordError, InvalidRecordError):
        _walk(segment, epoch_cache, walk)
    return walk.valid_bytes, walk.max_ts, walk.max_off, walk.seen


def _walk(segment: Any, epoch_cache: Any, walk: _Walk) -> None:
    log = segment.log
    size, want = log.size_in_bytes, _CHUNK
    buffer = memoryview(bytearray(min(size, _CHUNK)))  # reused: no fresh allocation per chunk
    _sync(segment, epoch_cache, walk)
    try:
        while walk.valid_bytes < size:
            pos = walk.valid_bytes
            n = min(want, size - pos)
            if n > len(buffer):
                buffer = memoryview(bytearray(n))  # one batch larger than a chunk
            chunk = buffer[:n]
            if log.read_into(chunk, pos) < n:
                raise KafkaStorageError("file shrank while being read", where=log.path)
            want = _CHUNK
            consumed, stop = _scan_chunk(segment, epoch_cache, walk, chunk, pos)
            if stop == STOP_END or (stop == STOP_MORE and consumed > 0):
                continue
            if stop == STOP_MORE and pos + len(chunk) < size:
                # The batch at `pos` is larger than the chunk: read it whole, if the file has it.
                need = LOG_OVERHEAD + int.from_bytes(chunk[8:12], "big", signed=True)
                if pos + need <= size:
                    want = need
                    continue
            _flush(segment, walk)
            if not _one_batch(segment, epoch_cache, walk):
                return  # a torn tail (FMT-52): nothing more to recover
            _sync(segment, epoch_cache, walk)
    finally:
        _flush(segment, walk)  # what the per-batch walk would have written before it stopped


def _sync(segment: Any, epoch_cache: Any, walk: _Walk) -> None:
    """Read the state the scan checks against (the indexes' last entries and room, the latest
    epoch) at the start and after per-batch work, the only other writer of that state."""
    oi, ti = segment.offset_index, segment.time_index
    last = ti.last_entry
    walk.index_state = [oi.entries, oi.max_entries, oi.last_offset, ti.entries, ti.max_entries,
                        last.timestamp, last.offset]
    walk.latest_epoch = None if epoch_cache is None else epoch_cache.latest_epoch
    # Offsets past the int64 limit (a segment based just below it, hostile bytes) are left to
    # the per-batch path's integers: a scan call could not take them.
    walk.scannable = all(_INT64_MIN <= v <= _INT64_MAX
                         for v in (oi.last_offset, last.offset, walk.max_off))


def _scan_chunk(segment: Any, epoch_cache: Any, walk: _Walk, chunk: memoryview,
                pos: int) -> tuple[int, int]:
    """The common batches of `chunk` in one `scan_recovery` call; (bytes consumed, stop)."""
    if not walk.scannable:
        return 0, STOP_SLOW
    oi_entries, oi_max, oi_last, ti_entries, ti_max, ti_last_ts, ti_last_off = walk.index_state
    (consumed, stop, walk.last_index_entry, max_ts, max_off, oi_raw, ti_raw, flags, producers,
     v2_end) = scan_recovery(
        chunk, pos, segment.base_offset, segment.index_interval_bytes, walk.last_index_entry,
        walk.max_ts, walk.max_off, oi_entries, oi_max, oi_last, ti_entries, ti_max, ti_last_ts,
        ti_last_off, epoch_cache is not None, walk.latest_epoch)
    if not consumed:
        return consumed, stop
    walk.valid_bytes += consumed
    if max_ts != walk.max_ts or max_off != walk.max_off:
        walk.max_ts, walk.max_off = max_ts, max_off
        segment._max_ts_and_offset = (max_ts, max_off)
    if producers:
        walk.seen.remember(producers)
    walk.seen.v2_end = v2_end
    if flags:
        walk.oi_raw += oi_raw
        walk.ti_raw += ti_raw
        walk.flags += flags
        state = walk.index_state
        state[0] += len(flags)
        state[2] = segment.base_offset + int.from_bytes(oi_raw[-8:-4], "big", signed=True)
        if ti_raw:
            state[3] += len(ti_raw) // 12
            state[5] = int.from_bytes(ti_raw[-12:-4], "big", signed=True)
            state[6] = segment.base_offset + int.from_bytes(ti_raw[-4:], "big", signed=True)
    return consumed, stop


def _flush(segment: Any, walk: _Walk) -> None:
    """Write the pending index entries; on a recording file system one store per entry, in the
    order the per-batch walk stores them (FLT-7), else one write per index."""
    if not walk.flags:
        return
    oi, ti = segment.offset_index, segment.time_index
    oi_raw, ti_raw, flags = bytes(walk.oi_raw), bytes(walk.ti_raw), bytes(walk.flags)
    walk.oi_raw.clear()
    walk.ti_raw.clear()
    walk.flags.clear()
    if not (oi.journals_stores or ti.journals_stores):
        oi.append_checked_entries(oi_raw)
        ti.append_checked_entries(ti_raw)
        return
    t = 0
    for k, with_time_entry in enumerate(flags):
        oi.append_checked_entries(oi_raw[8 * k : 8 * k + 8])
        if with_time_entry:
            ti.append_checked_entries(ti_raw[12 * t : 12 * t + 12])
            t += 1


def _one_batch(segment: Any, epoch_cache: Any, walk: _Walk) -> bool:
    """The per-batch recovery step for the batch at `walk.valid_bytes`; False at a torn tail.

    Raises what the per-batch walk raised: CorruptRecordError for an invalid batch or size
    field, LogSegmentOffsetOverflowError, the indexes' errors.
    """
    batch = next(iter(segment.log.batches(walk.valid_bytes)), None)
    if batch is None:
        return False
    batch.ensure_valid()  # names `file@position` itself, and only when it raises
    base_offset, offset_index, time_index = segment.base_offset, segment.offset_index, \
        segment.time_index
    last_offset = batch.last_offset
    if not 0 <= last_offset - base_offset <= INT32_MAX:
        segment._ensure_offset_in_range(last_offset)  # raises
    batch_max_ts = batch.max_timestamp
    if batch_max_ts > walk.max_ts:
        walk.max_ts, walk.max_off = batch_max_ts, last_offset
        segment._max_ts_and_offset = (walk.max_ts, walk.max_off)
    if walk.valid_bytes - walk.last_index_entry > segment.index_interval_bytes:
        _grow_if_full(offset_index)
        _grow_if_full(time_index)
        offset_index.append(last_offset, walk.valid_bytes)
        time_index.maybe_append(walk.max_ts, walk.max_off)
        walk.last_index_entry = walk.valid_bytes
    if batch.magic >= 2:
        walk.seen.v2_end = last_offset + 1
        if batch.producer_id >= 0 or last_offset >= _INT64_MAX:
            walk.seen.remember([walk.valid_bytes])
    walk.valid_bytes += batch.size_in_bytes
    segment._maybe_assign_epoch(batch, epoch_cache)
    return True


def _grow_if_full(index: Any) -> None:
    """Double a full index while recovery rebuilds it (KL-CRASH-5).

    The rebuilt entries need not fit segment_index_bytes: the live segment indexed from a
    counter a load or a truncation reset, so recovery (counting from the segment start) can
    index more batches than the live segment did. Kafka then throws ERR-3/ERR-7 and cannot
    load the log; kafkalog rebuilds every entry (the model's unbounded rebuild) and trims
    afterwards; the resizes to full capacity that follow keep them
    (`LogSegment.resize_indexes`).
    """
    if index.is_full():
        index.resize(max(2 * index.length(), 2 * index.entry_size()))


def recovered_batches_of(segment: Any) -> RecoveredBatches | None:
    """The last recovery walk's facts about `segment`, if they still describe its `.log`."""
    seen = getattr(segment, "recovered_batches", None)
    return seen if seen is not None and seen.describes(segment) else None


def batches_at(log: Any, positions: list[int]) -> Iterator[Any]:
    """The batches of `log` (a FileRecords) starting at `positions` (ascending), in order.

    Positions close together share one chunked walk; a gap above a chunk starts a new one, so
    a few producer batches in a large segment cost a few small reads.
    """
    walk: Iterator[Any] | None = None
    previous = -_CHUNK - 1
    for position in positions:
        if walk is None or position - previous > _CHUNK:
            walk = log.batches(position)
        for batch in walk:
            if batch.position == position:
                yield batch
                break
            assert batch.position < position, f"no batch starts at {position} in {log.path}"
        previous = position
