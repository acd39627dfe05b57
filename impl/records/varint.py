"""Zig-zag varints and varlongs as Kafka's `ByteUtils` writes them (protobuf encoding).

Spec: FMT-48. A value is zig-zag mapped (n >= 0 -> 2n, n < 0 -> -2n - 1) and written as unsigned
base-128 groups, least significant first, the high bit of each byte meaning "more follows".
A varint holds an int32 (at most 5 bytes), a varlong an int64 (at most 10 bytes).
"""

from __future__ import annotations

from kafkalog.model.errors import CorruptRecordError, IllegalArgumentError

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
MAX_VARINT_BYTES = 5
MAX_VARLONG_BYTES = 10


def _zigzag(value: int, bits: int) -> int:
    return (value << 1) ^ (value >> (bits - 1))


def _unzigzag(raw: int) -> int:
    return (raw >> 1) ^ -(raw & 1)


def _encode_unsigned(raw: int) -> bytes:
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def encode_varint(value: int) -> bytes:
    """The zig-zag varint bytes of an int32; IllegalArgumentError outside the int32 range."""
    if not INT32_MIN <= value <= INT32_MAX:
        raise IllegalArgumentError(f"varint value {value} is outside the int32 range")
    return _encode_unsigned(_zigzag(value, 32) & 0xFFFFFFFF)


def encode_varlong(value: int) -> bytes:
    """The zig-zag varlong bytes of an int64; IllegalArgumentError outside the int64 range."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise IllegalArgumentError(f"varlong value {value} is outside the int64 range")
    return _encode_unsigned(_zigzag(value, 64) & 0xFFFFFFFFFFFFFFFF)


# The encodings of the small values records are made of (deltas, lengths, -1 for null), built
# once: the record builder looks them up instead of running the byte loop for every field.
# Index = the zig-zag raw value; 4,096 short bytes objects (about 140 KiB).
_SMALL_RAW = 1 << 12
_SMALL = tuple(_encode_unsigned(raw) for raw in range(_SMALL_RAW))
_SMALL_LIMIT = _SMALL_RAW >> 1  # values in [-2048, 2048) have raw values below _SMALL_RAW


def varint_bytes(value: int) -> bytes:
    """`encode_varint(value)`, from a table for values in [-2048, 2048) (the common ones)."""
    if -_SMALL_LIMIT <= value < _SMALL_LIMIT:
        return _SMALL[value << 1 if value >= 0 else (-value << 1) - 1]
    return encode_varint(value)


def varlong_bytes(value: int) -> bytes:
    """`encode_varlong(value)`, from the same table for values in [-2048, 2048)."""
    if -_SMALL_LIMIT <= value < _SMALL_LIMIT:
        return _SMALL[value << 1 if value >= 0 else (-value << 1) - 1]
    return encode_varlong(value)


def size_of_varint(value: int) -> int:
    """Bytes `encode_varint(value)` takes (1..5)."""
    raw = _zigzag(value, 32) & 0xFFFFFFFF
    return max(1, (raw.bit_length() + 6) // 7)


def size_of_varlong(value: int) -> int:
    """Bytes `encode_varlong(value)` takes (1..10)."""
    raw = _zigzag(value, 64) & 0xFFFFFFFFFFFFFFFF
    return max(1, (raw.bit_length() + 6) // 7)


def _decode(
    buf: bytes | memoryview, pos: int, max_bytes: int, where: str | None
) -> tuple[int, int]:
    raw = 0
    shift = 0
    end = len(buf)
    for i in range(max_bytes):
        if pos + i >= end:
            raise CorruptRecordError("varint runs past the end of the buffer", where=where)
        b = buf[pos + i]
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            return raw, pos + i + 1
        shift += 7
    raise CorruptRecordError(f"varint longer than {max_bytes} bytes", where=where)


def decode_varint(
    buf: bytes | memoryview, pos: int, where: str | None = None
) -> tuple[int, int]:
    """(int32 value, next position); CorruptRecordError when too long or truncated."""
    if pos < len(buf) and (b := buf[pos]) < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1  # one-byte fast path: most lengths and deltas
    raw, nxt = _decode(buf, pos, MAX_VARINT_BYTES, where)
    # Kafka reads 5 groups into an int, so bits above 32 are dropped; mirror that.
    return _unzigzag(raw & 0xFFFFFFFF), nxt


def decode_varlong(
    buf: bytes | memoryview, pos: int, where: str | None = None
) -> tuple[int, int]:
    """(int64 value, next position); CorruptRecordError when too long or truncated."""
    if pos < len(buf) and (b := buf[pos]) < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    raw, nxt = _decode(buf, pos, MAX_VARLONG_BYTES, where)
    return _unzigzag(raw & 0xFFFFFFFFFFFFFFFF), nxt
