"""Proof against reality: what `Log` writes is what kafka-python (an independent codec) reads.

Segments written through `LogDir`/`Log` parse with kafka-python's `MemoryRecords` with valid CRCs,
and batches built by kafka-python's `DefaultRecordBatchBuilder` (as a Java or Python producer
would send them) go through `append_as_leader` unchanged except for the two fields a leader
stamps: the base offset (bytes 0-7) and the partition leader epoch (bytes 12-15), both outside the
CRC (FMT-45, FMT-47).
"""

from __future__ import annotations

import struct
import types
import warnings
from pathlib import Path

import cramjam
import pytest
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.load.log_dir import LogDir, TopicPartition
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.time import MockTime
from kafkalog.impl.verify.verifier import verify_log_dir
from kafkalog.model.values import Header, Isolation, LogConfig, Record, TimestampType

with warnings.catch_warnings():  # kafka-python's import-time DeprecationWarnings are not ours
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import codec as kafka_codec
    from kafka.record.default_records import DefaultRecordBatchBuilder
    from kafka.record.memory_records import MemoryRecords as KafkaMemoryRecords

TP = TopicPartition("interop", 0)
NOW = 1_700_000_000_000
# kafka-python's own codecs available here; lz4/zstd need packages this project does not install.
CODECS = {"none": 0, "gzip": 1, "snappy": 2}


@pytest.fixture(autouse=True)
def snappy_for_kafka_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """Raw snappy blocks from cramjam; kafka-python's xerial framing code is used as is."""
    shim = types.SimpleNamespace(
        decompress=lambda data: bytes(cramjam.snappy.decompress_raw(bytes(data))),
        compress=lambda data: bytes(cramjam.snappy.compress_raw(bytes(data))))
    monkeypatch.setattr(kafka_codec, "snappy", shim)


def kafka_python_batches(data: bytes) -> list:
    parsed, out = KafkaMemoryRecords(data), []
    while (batch := parsed.next_batch()) is not None:
        out.append(batch)
    return out


def builder_batch(codec: str, count: int, *, producer_id: int = -1) -> bytes:
    """A v2 batch exactly as kafka-python's producer builds it (offsets 0.., no epoch)."""
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=CODECS[codec], is_transactional=False,
        producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=0 if producer_id >= 0 else -1, batch_size=1 << 20)
    for i in range(count):
        key = None if i % 3 == 0 else f"key-{i}".encode()
        headers = [("h", f"{i}".encode())] if i % 2 else []
        builder.append(i, timestamp=NOW + 10 * i, key=key, value=b"payload-%d" % i * (i + 1),
                       headers=headers)
    return bytes(builder.build())


def segment_bytes(log_dir_path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted((log_dir_path / str(TP)).glob("*.log")))


def stored_batches(log_dir: LogDir) -> list[bytes]:
    """Every stored batch's bytes, read back through Log.read (zero-copy slice, copied here)."""
    log, out, offset = log_dir.log(TP), [], 0
    while offset < log.log_end_offset:
        fetched = log.read(offset, 1 << 20, Isolation.LOG_END, True).records
        batches = list(MemoryRecords(fetched.to_bytes()).batches())
        out += [bytes(b.buffer) for b in batches]
        offset = batches[-1].next_offset
    return out


@pytest.mark.parametrize("codec", list(CODECS))
def test_append_as_leader__kafka_python_builder_batch__stored_byte_compatible(
        tmp_path: Path, codec: str) -> None:
    """Spec: LOG-18, FMT-47: only base offset and leader epoch differ from the producer's bytes."""
    log_dir = LogDir.open(FileSystem(), tmp_path, LogConfig(), MockTime(NOW))
    log = log_dir.get_or_create_log(TP)
    log.append_as_leader(MemoryRecords.with_records([Record(None, b"first", NOW)] * 3),
                         leader_epoch=2)
    sent = [builder_batch(codec, 5), builder_batch(codec, 1, producer_id=42)]
    for batch in sent:
        log.append_as_leader(MemoryRecords(batch), leader_epoch=7)
    stored = stored_batches(log_dir)[1:]
    assert len(stored) == 2
    for expected_base, original, ours in zip((3, 8), sent, stored, strict=True):
        assert struct.unpack_from(">qi", ours, 0)[0] == expected_base
        assert struct.unpack_from(">i", ours, 12)[0] == 7
        assert ours[8:12] == original[8:12] and ours[16:] == original[16:]
    log_dir.close()


def test_log_written_segments__parse_with_kafka_python_valid_crc_same_records(
        tmp_path: Path) -> None:
    """Spec: FMT-45, FMT-46, FMT-49: leader, follower and LogAppendTime batches over several
    segments all parse with kafka-python, CRCs valid, offsets contiguous, fields equal."""
    config = LogConfig(segment_bytes=600, index_interval_bytes=128)
    topic_configs = {"append-time": LogConfig(segment_bytes=600,
                                              message_timestamp_type=TimestampType.LOG_APPEND_TIME)}
    log_dir = LogDir.open(FileSystem(), tmp_path, config, MockTime(NOW),
                          topic_configs=topic_configs)
    log = log_dir.get_or_create_log(TP)
    sent: list[Record] = []
    for i in range(12):
        batch = [Record(f"k{i}".encode() if i % 2 else None, b"v" * (i * 7),
                        NOW + i, (Header("n", str(i).encode()), Header("null", None)))
                 for _ in range(1 + i % 3)]
        log.append_as_leader(MemoryRecords.with_records(batch), leader_epoch=i // 4)
        sent += batch
    follower = builder_batch("gzip", 4)
    follower_records = MemoryRecords(bytearray(follower))
    next(iter(follower_records.batches())).set_base_offset(log.log_end_offset)
    log.append_as_follower(follower_records, leader_epoch=5)
    append_time = log_dir.get_or_create_log(TopicPartition("append-time", 0))
    append_time.append_as_leader(MemoryRecords.with_records(sent[:3]), leader_epoch=0)
    log_dir.close()
    assert [str(f) for f in verify_log_dir(FileSystem(), tmp_path, deep=True).problems] == []

    parsed = kafka_python_batches(segment_bytes(tmp_path))
    assert all(b.validate_crc() for b in parsed)
    records = [r for b in parsed for r in b]
    assert [r.offset for r in records] == list(range(len(sent) + 4))
    assert [(r.key, r.value, r.timestamp, list(r.headers)) for r in records[:len(sent)]] == [
        (s.key, s.value, s.timestamp, [(h.key, h.value) for h in s.headers]) for s in sent]
    assert [b.leader_epoch for b in parsed] == [i // 4 for i in range(12)] + [0]
    assert len(list((tmp_path / str(TP)).glob("*.log"))) > 1

    stamped = kafka_python_batches(
        (tmp_path / "append-time-0" / "00000000000000000000.log").read_bytes())
    assert [b.validate_crc() for b in stamped] == [True]
    assert stamped[0].timestamp_type == 1 and stamped[0].max_timestamp == NOW
