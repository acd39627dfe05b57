"""Byte compatibility with an independent parser: kafka-python's record codec.

kafka-python is installed without python-snappy, so for snappy the tests hand it raw-block
functions from cramjam; kafka-python's own code still parses the xerial framing.
"""

from __future__ import annotations

import struct
import types

import cramjam
import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka import codec as kafka_codec
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords as KafkaMemoryRecords
from kafkalog.impl.records.compression import CompressionType
from kafkalog.impl.records.legacy_records import LegacyRecordBatch
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.model.values import Header, Record, TimestampType

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # kafka-python internals

RECORDS = [
    Record(b"key-1", b"value-1", 1_700_000_000_000, (Header("trace", b"abc"),)),
    Record(None, b"x" * 300, 1_700_000_000_005),
    Record(b"k3", None, 1_699_999_999_000, (Header("a", None), Header("b", b""))),
]


@pytest.fixture(autouse=True)
def snappy_for_kafka_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """Raw snappy blocks for kafka-python (its xerial framing code is used as is)."""
    shim = types.SimpleNamespace(
        decompress=lambda data: bytes(cramjam.snappy.decompress_raw(bytes(data))),
        compress=lambda data: bytes(cramjam.snappy.compress_raw(bytes(data))))
    monkeypatch.setattr(kafka_codec, "snappy", shim)


def kafka_python_read(data: bytes) -> list[tuple[object, ...]]:
    """Every record as kafka-python reads it, asserting each batch's CRC."""
    parsed = KafkaMemoryRecords(data)
    out = []
    while (batch := parsed.next_batch()) is not None:
        assert batch.validate_crc()
        for r in batch:
            out.append((r.offset, r.timestamp, r.key, r.value,
                        tuple((k, v) for k, v in (r.headers or []))))
    return out


def ours_read(data: bytes) -> list[tuple[object, ...]]:
    out = []
    for batch in MemoryRecords(data).batches():
        batch.ensure_valid()
        out.extend((r.offset, r.timestamp, r.key, r.value,
                    tuple((h.key, h.value) for h in r.headers)) for r in batch.records())
    return out


def kafka_python_batch(records: list[Record], codec: int) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 20)
    for i, r in enumerate(records):
        builder.append(i, timestamp=r.timestamp, key=r.key, value=r.value,
                       headers=[(h.key, h.value) for h in r.headers])
    return bytes(builder.build())


def test_with_records__uncompressed__is_byte_identical_to_kafka_python_builder() -> None:
    """Same varints, layout and CRC as a third-party producer. FMT-45..50.

    kafka-python's builder writes partition leader epoch 0 where Kafka's writes -1 (the field is
    outside the CRC), so ours is built with epoch 0 for the comparison.
    """
    ours = MemoryRecords.with_records(RECORDS, partition_leader_epoch=0).to_bytes()
    assert ours == kafka_python_batch(RECORDS, 0)


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.GZIP,
                                   CompressionType.SNAPPY])
def test_with_records__parses_with_kafka_python_with_valid_crc(codec: CompressionType) -> None:
    data = MemoryRecords.with_records(RECORDS, base_offset=42, partition_leader_epoch=5,
                                      compression=codec).to_bytes()
    assert kafka_python_read(data) == ours_read(data)
    assert [row[0] for row in ours_read(data)] == [42, 43, 44]


def test_log_append_time_batch__both_parsers_report_the_append_time() -> None:
    data = MemoryRecords.with_records(RECORDS, timestamp_type=TimestampType.LOG_APPEND_TIME,
                                      log_append_time=1_800_000_000_000).to_bytes()
    assert {row[1] for row in kafka_python_read(data)} == {1_800_000_000_000}
    assert kafka_python_read(data) == ours_read(data)


@pytest.mark.parametrize("codec", [0, 1, 2])
def test_kafka_python_builder_output__parses_with_our_codec(codec: int) -> None:
    """Batches a third-party producer builds read back identically (gzip, xerial snappy)."""
    data = kafka_python_batch(RECORDS, codec)
    (batch,) = MemoryRecords(data).batches()
    assert batch.is_valid() and int(batch.compression_type) == codec
    assert [r.to_value() for r in batch.records()] == RECORDS
    assert ours_read(data) == kafka_python_read(data)


def test_stamped_kafka_python_batch__stays_valid_for_kafka_python() -> None:
    """The leader stamps base offset and epoch only; the CRC is untouched. FMT-47."""
    records = MemoryRecords(bytearray(kafka_python_batch(RECORDS, 1)))
    (batch,) = records.batches()
    batch.set_base_offset(1000)
    batch.set_partition_leader_epoch(9)
    assert [row[0] for row in kafka_python_read(records.to_bytes())] == [1000, 1001, 1002]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [0, 1, 2])
def test_legacy_message_sets__read_like_kafka_python(magic: int, codec: int) -> None:
    """v0/v1 (FMT-51) are read behind RecordBatch's properties; gzip/snappy wrappers too."""
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 20)
    for i in range(3):
        builder.append(i, timestamp=1000 + i if magic else None, key=b"k%d" % i,
                       value=b"v%d" % i)
    data = bytearray(builder.build())
    if codec:
        # A broker stores a wrapper at its last inner offset (outside the CRC); do the same.
        struct.pack_into(">q", data, 0, 2)
    batches = list(MemoryRecords(data).batches())
    assert all(isinstance(b, LegacyRecordBatch) and b.is_valid() for b in batches)
    assert batches[0].magic == magic
    ours = [(r.offset, r.timestamp, r.key, r.value) for b in batches for r in b.records()]
    # kafka-python reports a v0 timestamp as None; Kafka's NO_TIMESTAMP is -1.
    theirs = [(o, -1 if ts is None else ts, k, v)
              for o, ts, k, v, _ in kafka_python_read(bytes(data))]
    assert ours == theirs
    assert [r[0] for r in ours] == [0, 1, 2]
    assert batches[0].base_offset == 0 and batches[-1].last_offset == 2
    assert sum(b.record_count for b in batches) == 3


def test_legacy_message__flipped_byte__fails_its_crc32() -> None:
    builder = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    builder.append(0, timestamp=5, key=None, value=b"hello")
    data = bytearray(builder.build())
    assert len(data) == 39  # FMT-51: 12 + 22 + 5
    data[-1] ^= 1
    (batch,) = MemoryRecords(data).batches()
    assert not batch.is_valid()


HEADERS = st.lists(st.builds(Header, st.text(max_size=8), st.none() | st.binary(max_size=8)),
                   max_size=3).map(tuple)
RECORD = st.builds(Record, st.none() | st.binary(max_size=20), st.none() | st.binary(max_size=200),
                   st.integers(-1, 2**41), HEADERS)


@given(st.lists(RECORD, min_size=1, max_size=20), st.integers(0, 2**40),
       st.integers(-1, 2**31 - 1), st.sampled_from([CompressionType.NONE, CompressionType.GZIP]))
def test_with_records__any_records__read_back_equal_by_both_parsers(
        records: list[Record], base_offset: int, epoch: int, codec: CompressionType) -> None:
    """Property: our bytes decode to the input with our codec and with kafka-python's."""
    data = MemoryRecords.with_records(records, base_offset, epoch, compression=codec).to_bytes()
    (batch,) = MemoryRecords(data).batches()
    assert batch.is_valid() and batch.partition_leader_epoch == epoch
    assert [r.to_value() for r in batch.records()] == records
    assert batch.max_timestamp == max(r.timestamp for r in records)
    assert kafka_python_read(data) == ours_read(data)
