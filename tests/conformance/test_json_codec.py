"""The JSON codec of values, actions and errors (conformance/adapter/json_codec.py)."""

from __future__ import annotations

import json

import pytest
from kafkalog.conformance.adapter.json_codec import (
    ACTIONS,
    decode,
    decode_args,
    decode_error,
    decode_result,
    encode,
    encode_args,
    encode_error,
)
from kafkalog.conformance.errors import UnknownActionError, WireFormatError
from kafkalog.model import values as v
from kafkalog.model.errors import (
    OffsetOutOfRangeError,
    UnexpectedAppendOffsetError,
)

RECORD = v.Record(b"k", b"test", 1_700_000_000_000, (v.Header("h", None), v.Header("g", b"\x00")))
VALUES = [
    (v.Record, RECORD),
    (v.Record, v.Record(None, None, -1)),
    (v.BatchSpec, v.BatchSpec(5, 2, (RECORD,), v.TimestampType.LOG_APPEND_TIME, 123)),
    (v.LogConfig, v.LogConfig(segment_bytes=400, retention_bytes=700)),
    (v.LogAppendInfo, v.LogAppendInfo(0, 3, 10, 2, -1, 288, 4)),
    (v.FetchDataInfo, v.FetchDataInfo(
        v.LogOffsetMetadata(3, 0, 144), 72,
        (v.BatchView(3, 3, 1, 9, 72, 144, (RECORD,)),), True)),
    (v.EpochEndOffset, v.EpochEndOffset(1, 13)),
    (v.TimestampAndOffset, v.TimestampAndOffset(-1, 4, None)),
    (v.LogStateView, v.LogStateView(0, 1, 2, 2, (v.SegmentView(0, 144, 2),),
                                    (v.EpochEntry(0, 0),), (7,))),
    (v.LogOffsetMetadata | None, None),
    (tuple[v.Record, ...], (RECORD, RECORD)),
]


@pytest.mark.parametrize(("hint", "value"), VALUES, ids=lambda x: type(x).__name__)
def test_decode_of_encode__round_trips_through_json_text(hint: object, value: object) -> None:
    """Every value survives encode -> JSON text -> decode unchanged."""
    assert decode(hint, json.loads(json.dumps(encode(value)))) == value


def test_encode__bytes_are_padded_base64_and_enums_their_value() -> None:
    """b"test" is "dGVzdA==", CreateTime is "CreateTime" (specs/adapter-protocol.md, Values)."""
    data = encode(v.BatchSpec(0, 0, (v.Record(None, b"test", 5),)))
    assert data["records"][0]["value"] == "dGVzdA=="
    assert data["timestamp_type"] == "CreateTime"
    assert "last_offset" not in data  # properties never go on the wire


@pytest.mark.parametrize(
    ("hint", "data", "where"),
    [
        (v.Record, {"key": None, "value": None}, "value"),  # missing timestamp
        (v.Record, {"key": None, "value": None, "timestamp": 1, "extra": 1}, "value"),
        (v.Record, {"key": None, "value": "not base64!", "timestamp": 1}, "value.value"),
        (v.Record, {"key": None, "value": None, "timestamp": True}, "value.timestamp"),
        (v.Record, {"key": None, "value": None, "timestamp": "1"}, "value.timestamp"),
        (v.BatchSpec, {"base_offset": 0, "partition_leader_epoch": 0, "records": {}},
         "value.records"),
        (v.BatchSpec, {"base_offset": 0, "partition_leader_epoch": 0, "records": [],
                       "timestamp_type": "Sometime"}, "value.timestamp_type"),
    ],
)
def test_decode__bad_json__raises_wire_format_error_naming_the_path(
    hint: object, data: object, where: str
) -> None:
    """Strict decoding: missing, unknown or mistyped fields name where they are."""
    with pytest.raises(WireFormatError) as raised:
        decode(hint, data)
    assert raised.value.where == where


def test_decode_args__nested_error__names_the_element() -> None:
    """A bad record deep in the args names `args.records[1].timestamp`."""
    good = encode(RECORD)
    bad = dict(good, timestamp=None)
    with pytest.raises(WireFormatError) as raised:
        decode_args("append_as_leader", {"records": [good, bad], "leader_epoch": 0})
    assert raised.value.where == "args.records[1].timestamp"


def test_decode_args__defaults_fill_omitted_optional_arguments() -> None:
    """`roll` without args means expected_next_offset=None; a required one missing is an error."""
    assert decode_args("roll", {}) == {"expected_next_offset": None}
    with pytest.raises(WireFormatError, match="missing argument 'offset'"):
        decode_args("truncate_to", {})
    with pytest.raises(WireFormatError, match="unknown argument"):
        decode_args("truncate_to", {"offset": 1, "force": True})


def test_action_names__outside_the_vocabulary__raise_unknown_action() -> None:
    """An unknown action is UnknownActionError, an adapter-level error."""
    with pytest.raises(UnknownActionError):
        decode_args("compaction", {})


def test_encode_args__covers_every_parameter_of_every_action() -> None:
    """docs/design.md's 17 actions plus `crash` (protocol 2) and `clean` (feature `clean`),
    every argument encoded."""
    assert len(ACTIONS) == 19 and ACTIONS["crash"].feature == "crash"
    assert ACTIONS["clean"].feature == "clean"
    encoded = encode_args("append_as_follower", {"batches": ()})
    assert encoded == {"batches": [], "leader_epoch": None}


def test_errors__round_trip_with_their_code_and_extra_offsets() -> None:
    """Errors travel as {code, message}; UnexpectedAppendOffsetError keeps its offsets."""
    error = decode_error(encode_error(UnexpectedAppendOffsetError("below LEO", 3, 5)))
    assert isinstance(error, UnexpectedAppendOffsetError)
    assert (error.first_offset, error.last_offset) == (3, 5)
    assert isinstance(decode_error(encode_error(OffsetOutOfRangeError("x"))), OffsetOutOfRangeError)
    with pytest.raises(WireFormatError, match="unknown error code"):
        decode_error({"code": "NoSuchError", "message": ""})


def test_decode_result__types_the_ok_value_by_action() -> None:
    """`end_offset_for_epoch` decodes to EpochEndOffset or None, `state` to LogStateView."""
    found = decode_result("end_offset_for_epoch", {"epoch": 1, "end_offset": 4})
    assert found == v.EpochEndOffset(1, 4)
    assert decode_result("end_offset_for_epoch", None) is None
    with pytest.raises(WireFormatError):
        decode_result("truncate_to", 1)  # a bool result, not an int
