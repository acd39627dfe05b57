"""Reading producer facts from batches, and `rebuild_producer_state` (PSR-5, PSR-6).

Split from `producer_state_manager` (the manager itself). Control batches are parsed for their
end-transaction marker (PSF-11) so replay follows Kafka's TXN-3 bookkeeping (the
transaction index and the last stable offset build on it).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from typing import Any

from kafkalog.impl.producer.producer_state_manager import (
    EndTxnMarker,
    ProducerBatch,
    ProducerStateManager,
)
from kafkalog.impl.records.batch_scan import compiled_producer_rows
from kafkalog.impl.records.memory_records import BatchFacts, MemoryRecords, ScannedRecords
from kafkalog.impl.segment.recovery import batches_at, recovered_batches_of
from kafkalog.model.errors import IllegalArgumentError, InvalidRecordError
from kafkalog.model.values import ProducerBatchView, ProducerView

# attributes at +21, then (past lastOffsetDelta and both timestamps) producerId, producerEpoch
# and baseSequence at +43 (FMT-45)
_ATTRIBUTES_AND_PRODUCER = struct.Struct(">h20xqhi")
_TRANSACTIONAL = 0x10
_CONTROL = 0x20
_MARKER_KEY = struct.Struct(">hh")  # version, type (PSF-11)
_MARKER_VALUE = struct.Struct(">hi")  # version, coordinator epoch
_ABORT, _COMMIT = 0, 1


def _marker_of(batch: Any) -> EndTxnMarker | None:
    """PSF-11: the end-transaction marker in a control batch's first record (None if empty or
    not a COMMIT/ABORT record). Raises InvalidRecordError for a malformed key or value (PSE-5).
    """
    for record in batch.records():
        key, value = record.key or b"", record.value or b""
        if len(key) < 4 or _MARKER_KEY.unpack_from(key)[0] < 0:
            raise InvalidRecordError("Invalid control record key", where=batch.where())
        kind = _MARKER_KEY.unpack_from(key)[1]
        if kind not in (_ABORT, _COMMIT):  # TXN-4: EndTransactionMarker.deserialize
            raise IllegalArgumentError(
                f"Invalid control record type for end transaction marker {kind}",
                where=batch.where())
        if len(value) < 6 or _MARKER_VALUE.unpack_from(value)[0] < 0:
            raise InvalidRecordError("Invalid end transaction marker value", where=batch.where())
        return EndTxnMarker(kind == _ABORT, _MARKER_VALUE.unpack_from(value)[1],
                            record.timestamp)
    return None


def producer_batch_of(b: Any) -> ProducerBatch:
    """The producer facts of one stored v2 batch (markers parsed, PSF-11)."""
    return _from_batch(b)


def _from_batch(b: Any) -> ProducerBatch:
    control = b.is_control_batch
    return ProducerBatch(b.producer_id, b.producer_epoch, b.base_sequence, b.base_offset,
                         b.last_offset, b.max_timestamp, b.is_transactional, control,
                         _marker_of(b) if control and b.producer_id >= 0 else None)


def producer_batches(records: MemoryRecords) -> list[ProducerBatch]:
    """The producer facts of the v2 batches of an append that producer state reads: those with
    a producer id, and control batches (legacy batches carry none; PST-6)."""
    if isinstance(records, ScannedRecords):
        # Producer fields lie after the leader's stamps: no stamped copy is needed to read them.
        buf, facts = records.after_stamps, records.facts
        rows = None if compiled_producer_rows is None else compiled_producer_rows(buf, facts)
        if rows is None:
            rows = py_producer_rows(buf, facts)
        out = []
        unpack = _ATTRIBUTES_AND_PRODUCER.unpack_from
        for row in rows:
            pos, _, base, delta, _, max_ts, _, _ = facts[row]
            attributes, pid, epoch, seq = unpack(buf, pos + 21)  # one unpack per batch
            if attributes & _CONTROL:  # a marker's batch object needs its stamped offsets
                batch = MemoryRecords(records.buffer[pos:]).batches()
                out.append(_from_batch(next(iter(batch))))
            else:
                out.append(ProducerBatch(pid, epoch, seq, base, base + delta, max_ts,
                                         bool(attributes & _TRANSACTIONAL)))
        return out
    return [_from_batch(b) for b in records.batches()
            if b.magic >= 2 and (b.producer_id >= 0 or b.is_control_batch)]


def py_producer_rows(buf: Any, facts: list[BatchFacts]) -> list[int]:
    """The indexes of `facts` whose batch producer state reads: a control batch, or one with a
    producer id (PST-6). Most appends have none (plain producers send id -1). The reference of
    the compiled `producer_rows` (impl/records/_scan_rows.c)."""
    unpack = _ATTRIBUTES_AND_PRODUCER.unpack_from
    rows = []
    for row, fact in enumerate(facts):
        attributes, pid, _, _ = unpack(buf, fact[0] + 21)
        if attributes & _CONTROL or pid >= 0:
            rows.append(row)
    return rows


def _segment_producer_batches(segment: Any, start: int, end: int) -> Iterator[ProducerBatch]:
    """PSR-5 step 3: batches read from `start`, stopping before the first whose last offset is
    at or above `end`; only v2 batches feed producer state (PST-6).

    After a recovery walk of the segment only the batches it found with a producer id (or a
    last offset at the int64 limit) are read: the others add nothing to producer state."""
    seen = recovered_batches_of(segment)
    source = (segment.log.batches(0) if seen is None
              else batches_at(segment.log, seen.producer_positions))
    for b in source:
        last = b.last_offset
        if last >= end:
            return
        if last >= start and b.magic >= 2:
            yield _from_batch(b)


def rebuild_producer_state(psm: ProducerStateManager, segments: Sequence[Any], log_start: int,
                           last_offset: int, now_ms: int, clean_shutdown: bool) -> None:
    """PSR-5 `rebuildProducerState` over `segments` (LogSegment objects, ascending)."""
    bases = [s.base_offset for s in segments]
    to_snapshot = {*bases[-2:], last_offset}
    if clean_shutdown and psm.latest_snapshot_offset() is None:
        for offset in [*bases[-2:], last_offset]:  # the shortcut: empty snapshots, no scan
            psm.update_map_end_offset(offset)
            psm.take_snapshot()
        return
    empty_before = psm.is_empty() and psm.last_map_offset >= last_offset
    psm.truncate_and_reload(log_start, last_offset, now_ms)
    if last_offset > psm.last_map_offset and not empty_before:
        map_end = psm.last_map_offset
        for i, segment in enumerate(segments):
            upper = bases[i + 1] if i + 1 < len(bases) else None
            if upper is not None and upper <= map_end:
                continue
            if segment.base_offset >= last_offset:
                break
            start = max(segment.base_offset, psm.last_map_offset, log_start)
            psm.update_map_end_offset(start)
            if segment.base_offset in to_snapshot:
                psm.take_snapshot()
            psm.load_producers_from_batches(_segment_producer_batches(segment, start, last_offset))
    psm.update_map_end_offset(last_offset)
    psm.take_snapshot()


def producer_views(psm: ProducerStateManager) -> tuple[ProducerView, ...]:
    """The table as `LogStateView.producers` shows it: sorted by id, batches oldest first."""
    return tuple(
        ProducerView(e.producer_id, e.producer_epoch, e.coordinator_epoch, e.last_timestamp,
                     e.current_txn_first_offset,
                     tuple(ProducerBatchView(b.first_seq, b.last_seq, b.first_offset,
                                             b.last_offset, b.timestamp) for b in e.batches))
        for _, e in sorted(psm.producers.items())
    )


def recover_producer_state(psm_factory: Any, segments: Sequence[Any], log_start_checkpoint: int,
                           recovery_point: int, now_ms: int) -> None:
    """PSR-7 after an unclean shutdown, for every segment from the one holding the recovery
    point: a temporary manager over the same directory rebuilds up to the segment's base
    (deleting snapshots above it), replays the segment batch by batch as `LogSegment.recover`
    does (one append per batch, map end after each) and snapshots at its end. The loader has
    already cut torn tails, so the batches read are the valid ones. `psm_factory()` makes a
    manager over the partition directory (listing its snapshots)."""
    floor = max((i for i, s in enumerate(segments) if s.base_offset <= recovery_point),
                default=0)
    for segment in segments[floor:]:
        temp = psm_factory()
        rebuild_producer_state(temp, segments, log_start_checkpoint, segment.base_offset,
                               now_ms, clean_shutdown=False)
        for batch in _segment_producer_batches(segment, segment.base_offset, 2**63 - 1):
            temp.load_producers_from_batches((batch,))
            temp.update_map_end_offset(batch.last_offset + 1)
        temp.update_map_end_offset(segment.read_next_offset())
        temp.take_snapshot()
    for segment in segments:
        segment.recovered_batches = None  # the walks' facts have served their last pass
