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
"""

from __future__ import annotations

import struct
from enum import IntEnum

import cramjam
from kafkalog.model.errors import CorruptRecordError, IllegalArgumentError

XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
XERIAL_BLOCK_SIZE = 32 * 1024  # the xerial library's default block size, as the Java client uses


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


def _xerial_decode(data: memoryview, where: str | None) -> bytes:
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
        out += bytes(cramjam.snappy.decompress_raw(data[pos : pos + block_len]))
        pos += block_len
    return bytes(out)


def _snappy_decode(data: memoryview, where: str | None) -> bytes:
    if bytes(data[:8]) == XERIAL_HEADER[:8]:
        return _xerial_decode(data, where)
    return bytes(cramjam.snappy.decompress_raw(data))


def decompress(codec: CompressionType, data: bytes | memoryview, where: str | None = None) -> bytes:
    """The uncompressed bytes of a batch's records section."""
    view = memoryview(data)
    try:
        if codec is CompressionType.NONE:
            return bytes(view)
        if codec is CompressionType.GZIP:
            return bytes(cramjam.gzip.decompress(view))
        if codec is CompressionType.SNAPPY:
            return _snappy_decode(view, where)
        if codec is CompressionType.LZ4:
            return bytes(cramjam.lz4.decompress(view))
        return bytes(cramjam.zstd.decompress(view))
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
