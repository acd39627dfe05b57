"""Hostile files for the hostile-input tests and the fuzz suite: legacy wrappers, bombs, sparse
indexes, and a small cleanly closed log directory to mutate."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import cramjam
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.load.log_dir import LogDir, TopicPartition
from kafkalog.impl.records.compression import CompressionType, compress
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.time import MockTime
from kafkalog.model.values import LogConfig, Record

TP = TopicPartition("t", 0)
CONFIG = LogConfig(segment_bytes=600, index_interval_bytes=50)


def build_log_dir(root: Path, count: int = 20) -> Path:
    """A cleanly closed log dir with partition t-0 over a few segments; returns the root."""
    root.mkdir(parents=True, exist_ok=True)
    log_dir = LogDir.open(FileSystem(), root, CONFIG, MockTime(1_000))
    log = log_dir.get_or_create_log(TP)
    for i in range(count):
        log.append_as_leader(MemoryRecords.with_records([Record(b"k", b"v%03d" % i, 1_000 + i)]),
                             leader_epoch=i // 7)
    log.update_high_watermark(count)
    log_dir.close()
    return root


def build_every_codec_dir(root: Path) -> Path:
    """A cleanly closed log dir for fuzzing: `t-0` (leader appends, several segments), one
    partition per codec written by follower appends (`gzip-0`, `snappy-0`, `lz4-0`, `zstd-0`),
    and `legacy-0` holding v0 and v1 messages and gzip/snappy/lz4 wrappers. Every file type the
    log reads is present: `.log`, `.index`, `.timeindex`, `leader-epoch-checkpoint`, the three
    root checkpoints and the clean-shutdown marker."""
    build_log_dir(root, count=12)
    log_dir = LogDir.open(FileSystem(), root, CONFIG, MockTime(2_000))
    for codec in (CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4,
                  CompressionType.ZSTD):
        log = log_dir.get_or_create_log(TopicPartition(codec.name.lower(), 0))
        for base in range(0, 9, 3):
            records = [Record(b"k%d" % i, b"value-%d" % i * 5, 2_000 + i) for i in range(3)]
            log.append_as_follower(MemoryRecords.with_records(
                records, base_offset=base, partition_leader_epoch=base // 3, compression=codec))
        log.update_high_watermark(9)
    legacy = log_dir.get_or_create_log(TopicPartition("legacy", 0))
    legacy_dir = legacy.dir
    log_dir.close()
    (legacy_dir / "00000000000000000000.log").write_bytes(legacy_segment())
    for suffix in (".index", ".timeindex"):
        (legacy_dir / f"00000000000000000000{suffix}").write_bytes(b"")
    return root


def legacy_segment() -> bytes:
    """v0 and v1 plain messages, then v1 wrappers in gzip, snappy (xerial) and lz4 (FMT-51)."""
    out = legacy_message(0, b"plain-v0", magic=0) + legacy_message(1, b"plain-v1")
    offset = 2
    for codec in (CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4):
        inner = b"".join(legacy_message(i, b"inner-%d" % i) for i in range(3))
        offset += 3
        out += legacy_message(offset - 1, compress(codec, inner), attributes=int(codec))
    return out


def legacy_message(offset: int, value: bytes | None, *, magic: int = 1, attributes: int = 0,
                   timestamp: int = 1_000) -> bytes:
    """One v0/v1 message (FMT-51): CRC-32 over magic..end, null key."""
    ts = struct.pack(">q", timestamp) if magic == 1 else b""
    value_field = struct.pack(">i", -1) if value is None else struct.pack(">i", len(value)) + value
    body = struct.pack(">bb", magic, attributes) + ts + struct.pack(">i", -1) + value_field
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(message)) + message


def gzip_stream(total: int, chunk: int = 4 << 20) -> bytes:
    """A gzip stream of `total` zero bytes, built as concatenated members (as Java's
    GZIPInputStream reads them): 1.5 GiB costs 384 copies of one 4 KB member, not 1.5 GiB of
    compression work."""
    def member(size: int) -> bytes:
        compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
        return compressor.compress(bytes(size)) + compressor.flush()

    whole, rest = divmod(total, chunk)
    return member(chunk) * whole + (member(rest) if rest or not whole else b"")


def legacy_gzip_bomb(offset: int, inflated: int) -> bytes:
    """A v1 gzip wrapper whose value inflates to `inflated` zero bytes."""
    return legacy_message(offset, gzip_stream(inflated), attributes=1)


def v2_bomb(inflated: int, codec: int = 4) -> bytes:
    """A v2 batch (zstd by default) whose records section inflates to `inflated` zero bytes."""
    if codec == 1:
        body = gzip_stream(inflated)
    else:
        module = {2: None, 3: cramjam.lz4, 4: cramjam.zstd}[codec]
        assert module is not None
        compressor = module.Compressor()
        zeros = bytes(4 << 20)
        for _ in range(inflated // len(zeros)):
            compressor.compress(zeros)
        body = bytes(compressor.finish())
    batch = bytearray(MemoryRecords.with_records([Record(None, b"x", 0)]).to_bytes()[:61] + body)
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    struct.pack_into(">h", batch, 21, codec)  # attributes: the codec
    from crc32c import crc32c

    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    return bytes(batch)


def sparse_file(path: Path, size: int, head: bytes = b"") -> Path:
    """A sparse file of `size` bytes starting with `head` (the rest a hole)."""
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)
    return path
