"""Compression codecs of record batches (attribute bits 0-2, FMT-45), via `cramjam`.

| id | codec  | stream format written by the Java client                          |
|----|--------|-------------------------------------------------------------------|
| 0  | none   |                                                                   |
| 1  | gzip   | RFC 1952 gzip stream                                              |
| 2  | snappy | xerial "blocking" framing: 16-byte header `82 'SNAPPY' 00`, int32 |
|    |        | version 1, int32 compat 1, then blocks of (int32 length, raw snappy)|
| 3  | lz4    | LZ4 frame format (v2 batches); magic 0 used a broken header checksum |
| 4  | zstd   | zstd frame                                                        |

Reading accepts xerial-framed and raw snappy (some non-Java clients write raw blocks). Any codec
failure is a CorruptRecordError naming where the batch is.

Inflation is bounded (a 1.5 MB gzip wrapper can inflate to 1.5 GiB): a batch's records
section may decompress to at most `MAX_INFLATED_BYTES` (32 x Kafka's default max.message.bytes,
about 32 MiB), else CorruptRecordError. The codecs write into a fixed-size buffer and stop when
it is full (`decompress_into`), so a bomb costs at most the bound in memory, never its full size.
The bound is fixed rather than taken from a log's own max.message.bytes: decompression happens
far from any config (verify, dump, reads), and 32 MiB covers Kafka's defaults with room.
"""

from __future__ import annotations

import struct
from enum import IntEnum

import cramjam
from kafkalog.model.errors import CorruptRecordError, IllegalArgumentError

XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
XERIAL_BLOCK_SIZE = 32 * 1024  # the xerial library's default block size, as the Java client uses
DEFAULT_MAX_MESSAGE_BYTES = 1048588  # CFG: Kafka's default max.message.bytes
MAX_INFLATION_RATIO = 32
MAX_INFLATED_BYTES = MAX_INFLATION_RATIO * DEFAULT_MAX_MESSAGE_BYTES
_FIRST_GUESS_RATIO = 8  # most batches inflate less than this: one small buffer, no mmap
_FULL = "failed to write whole buffer"  # cramjam's message when the output buffer is full


class CompressionType(IntEnum):
    """Kafka's CompressionType ids (attributes bits 0-2)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


def compression_type_of(codec_id: int, where: str | None = None) -> CompressionType:
    """The codec for an attributes value; CorruptRecordError for the unknown ids 5..7."""
    try:
        return CompressionType(codec_id)
    except ValueError:
        raise CorruptRecordError(f"unknown compression codec id {codec_id}", where=where) from None


def _too_large(codec: CompressionType, limit: int, where: str | None) -> CorruptRecordError:
    return CorruptRecordError(
        f"{codec.name.lower()} records section inflates beyond {limit} bytes (the decompression "
        f"bound, {MAX_INFLATION_RATIO} x max.message.bytes)", where=where)


def _xerial_decode(data: memoryview, limit: int, where: str | None) -> bytes:
    out = bytearray()
    pos = len(XERIAL_HEADER)
    end = len(data)
    while pos < end:
        if pos + 4 > end:
            raise CorruptRecordError("truncated xerial snappy block header", where=where)
        (block_len,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if block_len < 0 or pos + block_len > end:
            raise CorruptRecordError("xerial snappy block runs past the data", where=where)
        out += _raw_snappy(data[pos : pos + block_len], limit - len(out), where)
        pos += block_len
    return bytes(out)


def _raw_snappy(block: memoryview, limit: int, where: str | None) -> bytes:
    """A raw snappy block, whose header states its inflated length: checked before inflating."""
    if cramjam.snappy.decompress_raw_len(block) > limit:
        raise _too_large(CompressionType.SNAPPY, MAX_INFLATED_BYTES, where)
    return bytes(cramjam.snappy.decompress_raw(block))


def _bounded(codec: CompressionType, data: memoryview, limit: int, where: str | None) -> bytes:
    """Decompress into a buffer of at most `limit` bytes: a small guess first, then buffers four
    times larger up to the bound (a bomb costs a few re-inflations and `limit` bytes, never its
    full size)."""
    module = {CompressionType.GZIP: cramjam.gzip, CompressionType.LZ4: cramjam.lz4,
              CompressionType.ZSTD: cramjam.zstd}[codec]
    size = min(limit, max(64 * 1024, _FIRST_GUESS_RATIO * len(data)))
    while True:
        out = bytearray(size + 1)  # one spare byte tells "exactly full" from "more to come"
        try:
            n = module.decompress_into(data, out)
        except cramjam.DecompressionError as e:
            if _FULL not in str(e):
                raise
            if size >= limit:
                raise _too_large(codec, limit, where) from None
            del out
            size = min(limit, 4 * size)
            continue
        if n > limit:
            raise _too_large(codec, limit, where)
        del out[n:]
        return bytes(out)


def decompress(codec: CompressionType, data: bytes | memoryview, where: str | None = None,
               limit: int = MAX_INFLATED_BYTES) -> bytes:
    """The uncompressed bytes of a batch's records section, at most `limit` of them.

    Raises CorruptRecordError for corrupt input or when the output would exceed `limit`.
    """
    view = memoryview(data)
    try:
        if codec is CompressionType.NONE:
            return bytes(view)
        if codec is CompressionType.SNAPPY:
            if bytes(view[:8]) == XERIAL_HEADER[:8]:
                return _xerial_decode(view, limit, where)
            return _raw_snappy(view, limit, where)
        return _bounded(codec, view, limit, where)
    except cramjam.DecompressionError as e:
        message = f"{codec.name.lower()} decompression failed: {e}"
        raise CorruptRecordError(message, where=where) from e


def _xerial_encode(data: memoryview) -> bytes:
    out = bytearray(XERIAL_HEADER)
    for start in range(0, len(data), XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(data[start : start + XERIAL_BLOCK_SIZE]))
        out += struct.pack(">i", len(block)) + block
    return bytes(out)


def compress(codec: CompressionType, data: bytes | memoryview) -> bytes:
    """Compressed bytes as the Java producer writes them (snappy in xerial framing)."""
    view = memoryview(data)
    if codec is CompressionType.NONE:
        return bytes(view)
    if codec is CompressionType.GZIP:
        return bytes(cramjam.gzip.compress(view))
    if codec is CompressionType.SNAPPY:
        return _xerial_encode(view)
    if codec is CompressionType.LZ4:
        return bytes(cramjam.lz4.compress(view))
    if codec is CompressionType.ZSTD:
        return bytes(cramjam.zstd.compress(view))
    raise IllegalArgumentError(f"unknown compression codec {codec!r}")
