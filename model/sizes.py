"""Byte sizes of the v2 record-batch encoding, computed without encoding anything (FMT-45..FMT-50).

The model must report exact sizes and positions, so these functions are the only place the byte
format leaks into it. A batch is `RECORD_BATCH_OVERHEAD` (61) header bytes plus its records.
"""

from __future__ import annotations

from .values import Header, Record

RECORD_BATCH_OVERHEAD = 61  # FMT-45: header bytes before the first record
LOG_OVERHEAD = 12  # FMT-45: base offset + length field


def zigzag(n: int) -> int:
    """FMT-48 zig-zag mapping: n >= 0 -> 2n, n < 0 -> -2n - 1.

    post: __return__ >= 0
    """
    return 2 * n if n >= 0 else -2 * n - 1


def varint_size(n: int) -> int:
    """Bytes of the signed (zig-zag) base-128 varint/varlong encoding of n (FMT-48).

    pre: -(2**63) <= n < 2**63
    post: 1 <= __return__ <= 10
    """
    value = zigzag(n)
    size = 1
    while value >= 0x80:
        value >>= 7
        size += 1
    return size


def _bytes_field_size(data: bytes | None) -> int:
    """A varint length (-1 for null) followed by the bytes themselves."""
    if data is None:
        return varint_size(-1)
    return varint_size(len(data)) + len(data)


def header_size(header: Header) -> int:
    """One record header: varint key length, UTF-8 key, varint value length, value (FMT-49)."""
    key = header.key.encode("utf-8")
    return varint_size(len(key)) + len(key) + _bytes_field_size(header.value)


def record_body_size(record: Record, offset_delta: int, base_timestamp: int) -> int:
    """Bytes after the record's `length` varint (FMT-49)."""
    return (
        1  # attributes
        + varint_size(record.timestamp - base_timestamp)
        + varint_size(offset_delta)
        + _bytes_field_size(record.key)
        + _bytes_field_size(record.value)
        + varint_size(len(record.headers))
        + sum(header_size(h) for h in record.headers)
    )


def record_size(record: Record, offset_delta: int, base_timestamp: int) -> int:
    """The whole record including its leading length varint (FMT-49, FMT-50: 11 for b"test").

    pre: offset_delta >= 0
    """
    body = record_body_size(record, offset_delta, base_timestamp)
    return varint_size(body) + body


def batch_size(records: tuple[Record, ...]) -> int:
    """An uncompressed v2 batch holding `records`: 61 + the sum of record sizes (FMT-50).

    The base timestamp is the first record's timestamp (KL-APPEND-2), so a 1-record batch with
    value b"test" and no key is 72 bytes.

    post: __return__ >= RECORD_BATCH_OVERHEAD
    """
    base_timestamp = records[0].timestamp if records else -1
    return RECORD_BATCH_OVERHEAD + sum(
        record_size(r, i, base_timestamp) for i, r in enumerate(records)
    )


def rebuilt_batch_size(records: tuple[Record, ...], offset_deltas: tuple[int, ...],
                       base_timestamp: int) -> int:
    """A v2 batch the cleaner rebuilt (CLN-46): records keep their offset deltas, timestamps are
    deltas from `base_timestamp` (the first kept record's, or the delete horizon, CLN-33).

    pre: len(records) == len(offset_deltas)
    post: __return__ >= RECORD_BATCH_OVERHEAD
    """
    return RECORD_BATCH_OVERHEAD + sum(
        record_size(r, d, base_timestamp) for r, d in zip(records, offset_deltas, strict=True)
    )
