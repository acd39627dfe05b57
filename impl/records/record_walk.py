"""The cleaner's record walk: a batch's records read without building `Record` objects.

A cleaning pass reads every record twice (the offset map's build, then the filter), and decoding
them into `RecordBatch.records()`'s `Record` objects was most of a pass. The walk returns what
the cleaner looks at, per record and in parallel lists: the absolute offset, the timestamp
delta, the key, whether the value is null, and where the record's key starts (its *tail*: key,
value and headers) and where it ends in the records section, so a rebuilt batch can copy tails
instead of re-encoding them.

Two twins return exactly the same values (the batch_scan contract, `KAFKALOG_PURE_PYTHON=1`
selects this one): `py_record_walk` here, the reference, and the compiled `record_walk` of
`kafkalog.impl.records._scan` (impl/records/_scan_walk.c). Neither raises for bad bytes: where
`records()` would raise, and where an offset leaves int64 (the compiled twin's range), both
return None and the caller decodes the batch with `records()`, which raises the typed error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from kafkalog.impl.records import batch_scan
from kafkalog.impl.records.record_batch import RecordBatch
from kafkalog.impl.records.varint import decode_varint, decode_varlong, varint_bytes
from kafkalog.model.errors import CorruptRecordError

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
# The smallest record: size, attributes, timestamp delta, offset delta, key, value and header
# count of one byte each. A section shorter than count * 7 cannot hold count records.
_MIN_RECORD = 7

# offsets, timestamp deltas, keys, null values (one byte per record, 1 = null), tails, ends,
# canonical (every tail is what `encode_record` writes for its fields).
WalkResult = tuple[list[int], list[int], list[bytes | None], bytes, list[int], list[int], bool]
WalkFunction = Callable[[bytes | memoryview, int, int], WalkResult | None]


class RecordWalk(NamedTuple):
    """A walked batch: its uncompressed records section and the walk's lists over it."""

    data: bytes | memoryview
    offsets: list[int]
    timestamp_deltas: list[int]
    keys: list[bytes | None]
    null_values: bytes
    tails: list[int]
    ends: list[int]
    canonical: bool


class _Declined(Exception):
    """The walk cannot vouch for the section: the caller's `records()` decides."""


def _field(data: bytes, pos: int) -> tuple[int, int, bool]:
    """`record_batch._read_bytes`' checks at `pos`: (length or -1 for null, position after,
    canonical: the length is what `encode_record` writes for the field)."""
    length, start = decode_varint(data, pos)
    canonical = start == pos + 1 or data[pos:start] == varint_bytes(length)  # one byte: minimal
    if length < 0:
        return -1, start, canonical and length == -1
    if start + length > len(data):
        raise _Declined
    return length, start + length, canonical


def _headers(data: bytes, pos: int) -> tuple[int, bool]:
    """`record_batch._read_headers`' checks: (position after the headers, canonical)."""
    count, after = decode_varint(data, pos)
    if count < 0:
        raise _Declined
    canonical = data[pos:after] == varint_bytes(count)
    for _ in range(count):
        length, key_end, key_canonical = _field(data, after)
        if length < 0:
            raise _Declined
        try:
            data[key_end - length:key_end].decode("utf-8")
        except UnicodeDecodeError:
            raise _Declined from None
        _, after, value_canonical = _field(data, key_end)
        canonical = canonical and key_canonical and value_canonical
    return after, canonical


def _record(data: bytes, pos: int) -> tuple[int, int, bytes | None, bool, int, int, bool]:
    """`record_batch._read_record`'s reads and checks at `pos`: (timestamp delta, offset delta,
    key, null value, tail, end, canonical tail)."""
    size, body = decode_varint(data, pos)
    end = body + size
    if size < 0 or end > len(data):
        raise _Declined
    ts_delta, p = decode_varlong(data, body + 1)  # attributes: unused
    offset_delta, tail = decode_varint(data, p)
    key_length, key_end, key_canonical = _field(data, tail)
    value_length, p, value_canonical = _field(data, key_end)
    if p < len(data) and data[p] == 0:  # no headers, the common case, without the call
        p, headers_canonical = p + 1, True
    else:
        p, headers_canonical = _headers(data, p)
    if p != end:
        raise _Declined
    key = None if key_length < 0 else data[key_end - key_length:key_end]
    return (ts_delta, offset_delta, key, value_length < 0, tail, end,
            key_canonical and value_canonical and headers_canonical)


def py_record_walk(data: bytes | memoryview, count: int, base_offset: int) -> WalkResult | None:
    """The `count` records of an uncompressed v2 records section, read as `records()` reads
    them, offsets made absolute with `base_offset`; None where `records()` would raise or an
    offset leaves int64. See the module docstring for what each list holds."""
    buf = bytes(data)
    count = max(count, 0)  # records() reads range(count) records
    if not _INT64_MIN <= base_offset <= _INT64_MAX or count > len(buf) // _MIN_RECORD:
        return None
    offsets, stamps, keys, tails, ends = [], [], [], [], []
    nulls = bytearray(count)
    canonical, pos = True, 0
    try:
        for i in range(count):
            ts_delta, offset_delta, key, null, tail, pos, tail_canonical = _record(buf, pos)
            offset = base_offset + offset_delta
            if not _INT64_MIN <= offset <= _INT64_MAX:
                return None
            offsets.append(offset)
            stamps.append(ts_delta)
            keys.append(key)
            nulls[i] = null
            tails.append(tail)
            ends.append(pos)
            canonical = canonical and tail_canonical
    except (_Declined, CorruptRecordError):
        return None
    if pos != len(buf):
        return None
    return offsets, stamps, keys, bytes(nulls), tails, ends, canonical


def _select() -> WalkFunction:
    """The compiled twin when the extension has it (a build older than the walk does not)."""
    walk: WalkFunction | None = getattr(batch_scan._compiled, "record_walk", None)
    return py_record_walk if walk is None else walk


#: The walk in use: the compiled twin unless batch_scan chose the pure-Python scans.
record_walk = _select()
#: Which twin `record_walk` is (`batch_scan.ACTIVE` names the scans it follows).
ACTIVE = "pure Python" if record_walk is py_record_walk else "C extension"


def walk_batch(batch: RecordBatch) -> RecordWalk | None:
    """`batch`'s walk, decompressing first as `records()` does (and raising what it raises for
    an unknown codec or corrupt compressed bytes); None where `records()` must decide."""
    data = batch.records_section()
    result = record_walk(data, batch.record_count, batch.base_offset)
    return None if result is None else RecordWalk(data, *result)
