"""What a pass keeps of each batch, on Kafka's bytes (CLN-25..CLN-46).

`OffsetMap` is the dedupe map (exact keys; Kafka hashes them with MD5, CLN-25), `TxnTracker`
is Kafka's `CleanedTransactionMetadata`, and `filter_batch` returns the bytes to write for one
source batch: the original bytes (verbatim), a rebuilt batch, a 61-byte empty batch, or nothing.

A data batch is decided from its record walk (`record_walk.walk_batch`: keys, offsets and spans
without `Record` objects, which decoding was most of a pass) and a rebuilt batch copies the kept
records' keys, values and headers from it; control batches and batches the walk declines take
the decoded records instead. Both give the same bytes: `_retained_walked` is `_retain_record`
for a whole walk (conformance/broken/cleaner.py breaks the two alike).
"""

from __future__ import annotations

import heapq
import struct
from dataclasses import dataclass, field

from crc32c import crc32c
from kafkalog.impl.records.compression import CompressionType, compress
from kafkalog.impl.records.memory_records import encode_record
from kafkalog.impl.records.record_batch import (
    DELETE_HORIZON_FLAG_MASK,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    Record,
    RecordBatch,
)
from kafkalog.impl.records.record_walk import RecordWalk, walk_batch
from kafkalog.impl.records.varint import varint_bytes, varlong_bytes
from kafkalog.model.values import NO_TIMESTAMP, AbortedTxnEntry, TimestampType

_BEFORE_CRC = struct.Struct(">qiib")  # base offset, length, leader epoch, magic (FMT-45)
_AFTER_CRC = struct.Struct(">hiqqqhii")  # attributes .. record count
_MARKER_TYPE = struct.Struct(">hh")  # control record key: version, type (0 ABORT, 1 COMMIT)


@dataclass
class OffsetMap:
    """CLN-25..CLN-28: key -> newest offset in [first dirty, end); `latest_offset` = end - 1."""

    capacity: int | None = None  # None: never full (kafkalog's choice, KL-ALLOW-7)
    offsets: dict[bytes, int] = field(default_factory=dict)
    latest_offset: int = -1

    def full(self) -> bool:
        return self.capacity is not None and len(self.offsets) >= self.capacity

    def get(self, key: bytes) -> int:
        return self.offsets.get(key, -1)


@dataclass
class TxnTracker:
    """CLN-36..CLN-40: pending aborted transactions by first offset, the ongoing aborted ones
    (with whether their data was seen) and the producers with a committed transaction open."""

    pending: list[tuple[int, int, AbortedTxnEntry]] = field(default_factory=list)
    aborted: dict[int, tuple[AbortedTxnEntry, bool]] = field(default_factory=dict)
    committed: set[int] = field(default_factory=set)
    _tie: int = 0

    def add(self, entries: list[AbortedTxnEntry]) -> None:
        for entry in entries:
            self._tie += 1
            heapq.heappush(self.pending, (entry.first_offset, self._tie, entry))

    def _consume(self, last_offset: int) -> None:
        while self.pending and self.pending[0][0] <= last_offset:
            entry = heapq.heappop(self.pending)[2]
            self.aborted.setdefault(entry.producer_id, (entry, False))

    def on_data(self, batch: RecordBatch) -> bool:
        """CLN-37: True iff the batch is aborted transactional data (discardable)."""
        self._consume(batch.last_offset)
        if not batch.is_transactional:
            return False
        pid = batch.producer_id
        if pid in self.aborted:
            self.aborted[pid] = (self.aborted[pid][0], True)
            return True
        self.committed.add(pid)
        return False

    def on_control(self, batch: RecordBatch,
                   records: list[Record]) -> tuple[bool, AbortedTxnEntry | None]:
        """CLN-38: (discardable, the `.txnindex` entry a kept ABORT carries)."""
        self._consume(batch.last_offset)
        if not records or records[0].key is None:
            return True, None
        commit = _MARKER_TYPE.unpack_from(records[0].key)[1] == 1
        pid = batch.producer_id
        if commit:
            discardable = pid not in self.committed
            self.committed.discard(pid)
            return discardable, None
        current = self.aborted.pop(pid, None)
        if current is not None and current[1]:
            return False, current[0]
        return True, None


@dataclass(frozen=True)
class PassFacts:
    """What a pass freezes: the map, its clock, the retention, the producers, the bound."""

    offset_map: OffsetMap
    now_ms: int
    delete_retention_ms: int
    active_producers: dict[int, tuple[int, int]]  # pid -> (last data offset or -1, epoch)
    first_uncleanable: int
    keep_round_last: bool  # CLN-42, CLN-72 (3.9.2 and 4.0+)


def _is_last_of_producer(batch: RecordBatch, facts: PassFacts) -> bool:
    last = facts.active_producers.get(batch.producer_id)
    if last is None:
        return False
    if last[0] >= 0:
        return batch.last_offset == last[0]
    return batch.is_control_batch and batch.producer_epoch == last[1]


def _horizon(batch: RecordBatch) -> int | None:
    return batch.base_timestamp if batch.has_delete_horizon else None


def _retain_record(batch: RecordBatch, record: Record, facts: PassFacts) -> bool:
    """CLN-31 steps 3-5."""
    if record.offset > facts.offset_map.latest_offset:
        return True
    if record.key is None:
        return False
    horizon = _horizon(batch)
    keeps_deletes = horizon is None or facts.now_ms < horizon
    return record.offset >= facts.offset_map.get(record.key) and (
        record.value is not None or keeps_deletes)


def _walk(batch: RecordBatch) -> RecordWalk | None:
    """The walk a batch is filtered from, or None to filter its decoded records: a control
    batch (one marker, which the tracker reads as a Record) and a batch the walk declines
    (`records()` then raises the typed error)."""
    if batch.is_control_batch:
        return None
    return walk_batch(batch)


def _retained_walked(batch: RecordBatch, walk: RecordWalk, facts: PassFacts) -> list[int]:
    """`_retain_record` for every record of a walk at once: the indexes it keeps."""
    offset_map = facts.offset_map
    latest, get = offset_map.latest_offset, offset_map.offsets.get
    horizon = _horizon(batch)
    keeps_deletes = horizon is None or facts.now_ms < horizon
    nulls = walk.null_values
    return [i for i, (offset, key) in enumerate(zip(walk.offsets, walk.keys, strict=True))
            if offset > latest or (key is not None and offset >= get(key, -1)
                                    and (keeps_deletes or not nulls[i]))]


def _retained(batch: RecordBatch, records: list[Record], walk: RecordWalk | None,
              facts: PassFacts) -> list[int]:
    """CLN-31 steps 3-5: the indexes of the records kept (all of a control batch's)."""
    if walk is not None:
        return _retained_walked(batch, walk, facts)
    return [i for i, r in enumerate(records)
            if batch.is_control_batch or _retain_record(batch, r, facts)]


def _has_tombstone(records: list[Record], walk: RecordWalk | None, kept: list[int]) -> bool:
    if walk is not None:
        nulls = walk.null_values
        return any(nulls[i] for i in kept)
    return any(records[i].value is None for i in kept)


def _count(records: list[Record], walk: RecordWalk | None) -> int:
    return len(records) if walk is None else len(walk.offsets)


def _header(batch: RecordBatch, attributes: int, base_ts: int, max_ts: int, count: int,
            body: bytes) -> bytes:
    out = bytearray(RECORD_BATCH_OVERHEAD + len(body))
    _BEFORE_CRC.pack_into(out, 0, batch.base_offset, len(out) - LOG_OVERHEAD,
                          batch.partition_leader_epoch, 2)
    _AFTER_CRC.pack_into(out, 21, attributes, batch.last_offset_delta, base_ts, max_ts,
                         batch.producer_id, batch.producer_epoch, batch.base_sequence, count)
    out[RECORD_BATCH_OVERHEAD:] = body
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[21:]))
    return bytes(out)


def empty_batch(batch: RecordBatch) -> bytes:
    """CLN-43: 61 bytes, no records, uncompressed, base timestamp -1, no horizon."""
    attributes = batch.attributes & ~DELETE_HORIZON_FLAG_MASK & ~0x07
    return _header(batch, attributes, NO_TIMESTAMP, batch.max_timestamp, 0, b"")


def rebuilt_batch(batch: RecordBatch, kept: list[Record], horizon: int | None) -> bytes:
    """CLN-46: the kept records at their offsets, same offsets and producer fields, codec
    kept, max timestamp recomputed (create time), base timestamp the horizon or the first's."""
    base_ts = horizon if horizon is not None else kept[0].timestamp
    body = b"".join(encode_record(r.to_value(), r.offset - batch.base_offset,
                                  r.timestamp - base_ts) for r in kept)
    return _rebuilt_from_body(batch, body, base_ts, [r.timestamp for r in kept], horizon)


def _rebuilt_from_body(batch: RecordBatch, body: bytes, base_ts: int, timestamps: list[int],
                       horizon: int | None) -> bytes:
    """`rebuilt_batch` once its uncompressed records section is written."""
    codec = batch.compression_type
    if codec is not CompressionType.NONE:
        body = compress(codec, body)
    attributes = batch.attributes | (DELETE_HORIZON_FLAG_MASK if horizon is not None else 0)
    max_ts = batch.max_timestamp
    if batch.timestamp_type is TimestampType.CREATE_TIME:
        max_ts = max(timestamps)
    return _header(batch, attributes, base_ts, max_ts, len(timestamps), body)


def _walked_timestamps(batch: RecordBatch, walk: RecordWalk, kept: list[int]) -> list[int]:
    """The kept records' timestamps as `records()` reports them (under LogAppendTime, the
    batch's max timestamp)."""
    if batch.timestamp_type is TimestampType.LOG_APPEND_TIME:
        return [batch.max_timestamp] * len(kept)
    base_ts, deltas = batch.base_timestamp, walk.timestamp_deltas
    return [base_ts + deltas[i] for i in kept]


def rebuilt_walked(batch: RecordBatch, walk: RecordWalk, kept: list[int],
                   horizon: int | None) -> bytes:
    """`rebuilt_batch` of the records at `kept` from a canonical walk: each one's length,
    attributes and deltas written as `encode_record` writes them, its key, value and headers
    (already in `encode_record`'s form) copied."""
    timestamps = _walked_timestamps(batch, walk, kept)
    base_ts = horizon if horizon is not None else timestamps[0]
    base, data = batch.base_offset, walk.data
    offsets, tails, ends = walk.offsets, walk.tails, walk.ends
    parts: list[bytes | memoryview] = []
    for i, timestamp in zip(kept, timestamps, strict=True):
        head = b"\x00" + varlong_bytes(timestamp - base_ts) + varint_bytes(offsets[i] - base)
        tail = data[tails[i]:ends[i]]
        parts += (varint_bytes(len(head) + len(tail)), head, tail)
    return _rebuilt_from_body(batch, b"".join(parts), base_ts, timestamps, horizon)


def _rebuilt(batch: RecordBatch, records: list[Record], walk: RecordWalk | None,
             kept: list[int], horizon: int | None) -> bytes:
    """CLN-46's batch of the records at `kept`: from the walk where its tails can be copied,
    else from the decoded records (`records()` succeeds wherever the walk did)."""
    if walk is not None and walk.canonical:
        return rebuilt_walked(batch, walk, kept, horizon)
    if walk is not None:
        records = list(batch.records())
    return rebuilt_batch(batch, [records[i] for i in kept], horizon)


def filter_batch(batch: RecordBatch, facts: PassFacts,
                 tracker: TxnTracker) -> tuple[bytes | None, AbortedTxnEntry | None]:
    """CLN-30..CLN-45 for one source batch: (bytes to write or None, kept ABORT's entry)."""
    walk = _walk(batch)
    records = list(batch.records()) if walk is None else []
    entry = None
    if batch.is_control_batch:
        can_discard, entry = tracker.on_control(batch, records)
        horizon = _horizon(batch)
        discard = can_discard and horizon is not None and horizon <= facts.now_ms
    else:
        can_discard = tracker.on_data(batch)
        discard = can_discard
    retain_empty = (batch.producer_id >= 0 and _is_last_of_producer(batch, facts)) or (
        facts.keep_round_last and batch.next_offset == facts.first_uncleanable)
    if discard and not retain_empty:
        return None, entry
    kept = [] if discard else _retained(batch, records, walk, facts)
    if not kept:
        return (empty_batch(batch) if retain_empty else None), entry
    tombstone = _has_tombstone(records, walk, kept)
    needs_horizon = (tombstone or (can_discard and batch.is_control_batch)) \
        and not batch.has_delete_horizon
    if len(kept) == _count(records, walk) and not needs_horizon:
        return bytes(batch.buffer[: batch.size_in_bytes]), entry
    horizon = facts.now_ms + facts.delete_retention_ms if needs_horizon else _horizon(batch)
    return _rebuilt(batch, records, walk, kept, horizon), entry
