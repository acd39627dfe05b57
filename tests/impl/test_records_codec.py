"""The v2 record-batch codec: varints, sizes, CRC, stamping, shallow iteration and bad input."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafkalog.impl.records.compression import XERIAL_HEADER, CompressionType, compress, decompress
from kafkalog.impl.records.memory_records import MemoryRecords, encode_record
from kafkalog.impl.records.record_batch import RECORD_BATCH_OVERHEAD, RecordBatch
from kafkalog.impl.records.varint import (
    decode_varint,
    decode_varlong,
    encode_varint,
    encode_varlong,
    size_of_varint,
    size_of_varlong,
)
from kafkalog.model.errors import CorruptRecordError, IllegalArgumentError, IllegalStateError
from kafkalog.model.values import BatchSpec, Header, Record, TimestampType

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)


def one_batch(records: MemoryRecords) -> RecordBatch:
    batches = list(records.batches())
    assert len(batches) == 1
    return batches[0]


# --- varints (FMT-48) ---

@pytest.mark.parametrize("value, hexbytes", [
    (0, "00"), (-1, "01"), (1, "02"), (63, "7e"), (-64, "7f"), (64, "8001"), (-65, "8101"),
    (2**31 - 1, "feffffff0f"), (-(2**31), "ffffffff0f"),
])
def test_encode_varint__matches_protobuf_zigzag_bytes(value: int, hexbytes: str) -> None:
    """Spec: FMT-48."""
    assert encode_varint(value).hex() == hexbytes
    assert decode_varint(bytes.fromhex(hexbytes), 0) == (value, len(hexbytes) // 2)


def test_encode_varlong__int64_extremes_take_ten_bytes() -> None:
    """Spec: FMT-48."""
    assert encode_varlong(2**63 - 1).hex() == "feffffffffffffffff01"
    assert encode_varlong(-(2**63)).hex() == "ffffffffffffffffff01"
    assert decode_varlong(encode_varlong(-(2**63)), 0) == (-(2**63), 10)


@given(INT32)
def test_varint__round_trips_and_size_matches(value: int) -> None:
    """Spec: FMT-48."""
    data = encode_varint(value)
    assert len(data) == size_of_varint(value)
    assert decode_varint(b"\x99" + data, 1) == (value, 1 + len(data))


@given(INT64)
def test_varlong__round_trips_and_size_matches(value: int) -> None:
    """Spec: FMT-48."""
    data = encode_varlong(value)
    assert len(data) == size_of_varlong(value)
    assert decode_varlong(data, 0) == (value, len(data))


def test_varint__out_of_range_encode__raises_illegal_argument() -> None:
    with pytest.raises(IllegalArgumentError):
        encode_varint(2**31)
    with pytest.raises(IllegalArgumentError):
        encode_varlong(-(2**63) - 1)


@pytest.mark.parametrize("data", [b"\x80\x80\x80\x80\x80\x01", b"\x80\x80", b""])
def test_decode_varint__too_long_or_truncated__raises_corrupt_record(data: bytes) -> None:
    """A varint past 5 bytes or past the buffer is corrupt data, never an untyped error."""
    with pytest.raises(CorruptRecordError):
        decode_varint(data, 0, where="test@0")


# --- sizes (FMT-49, FMT-50) ---

@pytest.mark.parametrize("value, record_size, batch_size", [
    (b"a", 8, 69), (b"test", 11, 72), (bytes(10), 17, 78), (bytes(99), 108, 169),
    (bytes(100), 109, 170),
])
def test_with_records__one_record_batch_sizes(value: bytes, record_size: int,
                                              batch_size: int) -> None:
    """FMT-50 (a 99-byte value gives 108/169; a 100-byte value takes a 2-byte length: 170)."""
    assert len(encode_record(Record(None, value, 0), 0, 0)) == record_size
    records = MemoryRecords.with_records([Record(None, value, 0)])
    assert records.size_in_bytes == batch_size == one_batch(records).size_in_bytes


def test_with_records__header_fields_are_kafkas_defaults() -> None:
    """Base timestamp = first record's, producer fields -1, offsets from base. FMT-45."""
    recs = [Record(b"k", b"v1", 1000), Record(None, None, 1500), Record(b"k2", b"v3", 1200)]
    batch = one_batch(MemoryRecords.with_records(recs, base_offset=7, partition_leader_epoch=3))
    assert (batch.base_offset, batch.last_offset, batch.next_offset) == (7, 9, 10)
    assert (batch.magic, batch.attributes, batch.partition_leader_epoch) == (2, 0, 3)
    assert (batch.base_timestamp, batch.max_timestamp) == (1000, 1500)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (-1, -1, -1)
    assert batch.record_count == 3 and batch.compression_type is CompressionType.NONE
    assert batch.timestamp_type is TimestampType.CREATE_TIME
    assert not batch.is_transactional and not batch.is_control_batch
    assert [(r.offset, r.timestamp, r.key, r.value) for r in batch.records()] == [
        (7, 1000, b"k", b"v1"), (8, 1500, None, None), (9, 1200, b"k2", b"v3")]
    assert batch.offset_of_max_timestamp() == 8


def test_with_records__headers_round_trip() -> None:
    """Header keys are UTF-8 strings, values nullable. Spec: FMT-49."""
    rec = Record(b"k", b"v", 5, (Header("h\u00e9", b"x"), Header("n", None)))
    (got,) = one_batch(MemoryRecords.with_records([rec])).records()
    assert got.to_value() == rec


def test_with_records__log_append_time__stamps_max_and_every_record() -> None:
    """With LogAppendTime, max timestamp = the clock and records read as it. FMT-45, LOG-48."""
    recs = [Record(None, b"a", 10), Record(None, b"b", 20)]
    batch = one_batch(MemoryRecords.with_records(
        recs, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=999))
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME and batch.attributes == 8
    assert batch.max_timestamp == 999 and batch.base_timestamp == 10
    assert [r.timestamp for r in batch.records()] == [999, 999]
    assert batch.offset_of_max_timestamp() == 0


def test_with_records__empty__gives_empty_buffer() -> None:
    assert MemoryRecords.with_records([]).size_in_bytes == 0


@pytest.mark.parametrize("ts", [-2, -100])
def test_with_records__negative_timestamp__raises_illegal_argument(ts: int) -> None:
    """ERR-49: a base timestamp below 0 other than NO_TIMESTAMP (-1)."""
    with pytest.raises(IllegalArgumentError):
        MemoryRecords.with_records([Record(None, b"x", ts)])


def test_from_batch_specs__concatenates_stamped_batches() -> None:
    specs = [BatchSpec(0, 1, (Record(None, b"a", 1), Record(None, b"b", 2))),
             BatchSpec(5, 2, (Record(None, b"c", 3),))]
    batches = list(MemoryRecords.from_batch_specs(specs).batches())
    assert [(b.base_offset, b.last_offset, b.partition_leader_epoch) for b in batches] == [
        (0, 1, 1), (5, 5, 2)]
    assert [b.position for b in batches] == [0, batches[0].size_in_bytes]


# --- CRC and stamping (FMT-46, FMT-47) ---

def test_crc__is_crc32c_from_attributes_to_end() -> None:
    """Spec: FMT-46."""
    from crc32c import crc32c

    data = MemoryRecords.with_records([Record(None, b"test", 0)]).to_bytes()
    assert struct.unpack_from(">I", data, 17)[0] == crc32c(data[21:])


@pytest.mark.parametrize("position", [21, 30, 61, 71])
def test_ensure_valid__flipped_byte_under_crc__raises_with_position(position: int) -> None:
    """ERR-20: a corrupted byte in [21, end) fails the CRC; the error names where."""
    data = bytearray(MemoryRecords.with_records([Record(None, b"test", 0)]).buffer)
    data[position] ^= 0xFF
    batch = RecordBatch(data, position=4096, source="seg.log")
    assert not batch.is_valid()
    with pytest.raises(CorruptRecordError) as err:
        batch.ensure_valid()
    assert err.value.where == "seg.log@4096"


def test_ensure_valid__batch_smaller_than_header__raises() -> None:
    """ERR-20: size < 61."""
    data = bytearray(MemoryRecords.with_records([Record(None, b"test", 0)]).buffer)
    struct.pack_into(">i", data, 8, 40)
    with pytest.raises(CorruptRecordError):
        RecordBatch(data).ensure_valid()


def test_stamping_base_offset_and_epoch__keeps_crc_valid() -> None:
    """Both fields lie outside the CRC, so the leader stamps them in place. FMT-47."""
    records = MemoryRecords.with_records([Record(None, b"a", 1), Record(None, b"b", 2)])
    batch = one_batch(records)
    crc = batch.crc
    batch.set_base_offset(1000)
    batch.set_partition_leader_epoch(7)
    assert (batch.base_offset, batch.last_offset, batch.partition_leader_epoch) == (1000, 1001, 7)
    assert batch.crc == crc and batch.is_valid()
    batch.set_last_offset(50)
    assert (batch.base_offset, batch.last_offset) == (49, 50)


def test_set_max_timestamp__recomputes_crc() -> None:
    """Attributes and max timestamp are under the CRC. Spec: FMT-47."""
    batch = one_batch(MemoryRecords.with_records([Record(None, b"a", 1)]))
    crc = batch.crc
    batch.set_max_timestamp(TimestampType.LOG_APPEND_TIME, 12345)
    assert batch.is_valid() and batch.crc != crc
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME and batch.max_timestamp == 12345


def test_stamping_read_only_buffer__raises_illegal_state() -> None:
    batch = RecordBatch(MemoryRecords.with_records([Record(None, b"a", 1)]).to_bytes())
    with pytest.raises(IllegalStateError):
        batch.set_partition_leader_epoch(1)


# --- shallow iteration (FMT-52) ---

def test_batches__torn_tail__ends_iteration_silently() -> None:
    """A partial header or partial batch after whole batches is not an error. FMT-52."""
    one = MemoryRecords.with_records([Record(None, b"test", 0)]).to_bytes()
    two = one + one
    for cut in (0, 5, 17, 18, 30, len(one) - 1):
        torn = MemoryRecords(two + one[:cut])
        assert len(list(torn.batches())) == 2
        assert torn.valid_bytes() == len(two)


@pytest.mark.parametrize("size_field", [0, 13, -1])
def test_batches__size_field_below_14__raises_corrupt_record(size_field: int) -> None:
    """ERR-19 (a zero-filled preallocated tail included)."""
    good = MemoryRecords.with_records([Record(None, b"test", 0)]).to_bytes()
    bad = bytearray(good + bytes(30))
    struct.pack_into(">i", bad, len(good) + 8, size_field)
    batches = MemoryRecords(bad).batches()
    next(batches)
    with pytest.raises(CorruptRecordError) as err:
        next(batches)
    assert err.value.where == f"<memory>@{len(good)}"


# --- malformed record bytes ---

def _rebatch(body: bytes, count: int, attributes: int = 0) -> RecordBatch:
    """A header around arbitrary record bytes, with a valid CRC."""
    from crc32c import crc32c

    out = bytearray(RECORD_BATCH_OVERHEAD) + body
    struct.pack_into(">qiib", out, 0, 0, len(out) - 12, -1, 2)
    struct.pack_into(">hiqqqhii", out, 21, attributes, count - 1, 0, 0, -1, -1, -1, count)
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return RecordBatch(out, position=0, source="x.log")


@pytest.mark.parametrize("body", [
    b"\x7f",  # a record length running past the batch
    bytes.fromhex("0c") + bytes.fromhex("00 00 00 01 08 74657374 00"),  # length mismatch
    bytes.fromhex("0e 00 00 00 01 08 74657374 02 02 ff"),  # header key not UTF-8
])
def test_records__malformed_record_bytes__raise_corrupt_record(body: bytes) -> None:
    batch = _rebatch(body, 1)
    assert batch.is_valid()
    with pytest.raises(CorruptRecordError):
        list(batch.records())


def test_records__unknown_codec__raises_corrupt_record() -> None:
    batch = _rebatch(b"", 0, attributes=5)
    with pytest.raises(CorruptRecordError):
        list(batch.records())


def test_records__bytes_left_after_record_count__raise_corrupt_record() -> None:
    body = encode_record(Record(None, b"a", 0), 0, 0) * 2
    with pytest.raises(CorruptRecordError):
        list(_rebatch(body, 1).records())


# --- compression ---

@pytest.mark.parametrize("codec", list(CompressionType))
def test_with_records__every_codec__round_trips(codec: CompressionType) -> None:
    recs = [Record(b"k%d" % i, b"value-%d" % i * 50, 1000 + i) for i in range(200)]
    batch = one_batch(MemoryRecords.with_records(recs, base_offset=3, compression=codec))
    assert batch.is_valid() and batch.compression_type is codec
    assert [r.to_value() for r in batch.records()] == recs
    assert [r.offset for r in batch.records()] == list(range(3, 203))


def test_snappy__uses_xerial_framing_and_reads_raw_blocks_too() -> None:
    """The Java client frames snappy the xerial way; raw snappy is accepted on read."""
    import cramjam

    data = b"kafka" * 20000
    framed = compress(CompressionType.SNAPPY, data)
    assert framed.startswith(XERIAL_HEADER)
    assert decompress(CompressionType.SNAPPY, framed) == data
    assert decompress(CompressionType.SNAPPY, bytes(cramjam.snappy.compress_raw(data))) == data


@pytest.mark.parametrize("codec", [CompressionType.GZIP, CompressionType.SNAPPY,
                                   CompressionType.LZ4, CompressionType.ZSTD])
def test_decompress__garbage__raises_corrupt_record(codec: CompressionType) -> None:
    with pytest.raises(CorruptRecordError):
        decompress(codec, XERIAL_HEADER[:8] + b"\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x09"
                   + b"garbage!!" if codec is CompressionType.SNAPPY else b"garbage!!",
                   where="x.log@0")
