"""The `producer_state` feature in the adapter protocol: version-1 adapters see the messages
they always did.

Spec: KL-PROD-1, KL-PROD-2 (the producer table in `state`, producer arguments of appends).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import jsonschema
from kafkalog.conformance.adapter.json_codec import FEATURES, decode, encode, encode_args
from kafkalog.conformance.adapter.server import serve
from kafkalog.conformance.check.sut import ModelSut
from kafkalog.conformance.check.view_checks import masked_to
from kafkalog.conformance.gen.configs import CONFIG_FAMILIES
from kafkalog.model import values as v

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "specs" / "adapter-protocol.schema.json").read_text())
RECORD = v.Record(None, b"test", 5)


def test_append_args__without_producer__are_the_version_1_arguments() -> None:
    """Default producer arguments are omitted; given ones are sent."""
    assert set(encode_args("append_as_leader", {"records": (RECORD,), "leader_epoch": 0})) == {
        "records", "leader_epoch"}
    args = encode_args("append_as_leader", {"records": (RECORD,), "leader_epoch": 0,
                                            "producer_id": 7, "producer_epoch": 0,
                                            "base_sequence": 3})
    assert (args["producer_id"], args["producer_epoch"], args["base_sequence"]) == (7, 0, 3)
    assert "is_transactional" not in args


def test_values__without_producer_fields__encode_as_in_version_1() -> None:
    """BatchSpec, LogConfig and LogStateView keep their version-1 keys at the defaults."""
    assert "producer_id" not in encode(v.BatchSpec(0, 0, (RECORD,)))
    assert "producer_id_expiration_ms" not in encode(v.LogConfig())
    assert encode(CONFIG_FAMILIES["producers"])["producer_id_expiration_ms"] == 20_000
    view = v.LogStateView(0, 0, 0, 0, (v.SegmentView(0, 0, 0),), ())
    assert "producers" not in encode(view)
    assert decode(v.LogStateView, encode(view)) == view


def test_state_without_producers__masks_the_models_table() -> None:
    """An adapter that reports no producer table is not compared on it."""
    model = v.LogStateView(0, 0, 0, 0, (), (), (), producers=(), producer_snapshots=(3,))
    v1 = v.LogStateView(0, 0, 0, 0, (), ())
    assert masked_to(model, v1) == v1
    partial = v.LogStateView(0, 0, 0, 0, (), (), (), producers=())
    assert masked_to(model, partial) == partial


def test_serve__producer_append_and_state__validate_against_the_schema() -> None:
    """A served session with producer arguments and the producer table is schema-valid."""
    requests = [
        {"id": 1, "action": "handshake", "args": {"protocol_version": 1}},
        {"id": 2, "action": "open", "args": {"config": encode(CONFIG_FAMILIES["producers"]),
                                             "now_ms": 0, "log_start_offset": 0}},
        {"id": 3, "action": "append_as_leader", "args": {
            "records": [encode(RECORD)], "leader_epoch": 0, "producer_id": 9,
            "producer_epoch": 1, "base_sequence": 0}},
        {"id": 4, "action": "append_as_leader", "args": {
            "records": [encode(RECORD)], "leader_epoch": 0, "producer_id": 9,
            "producer_epoch": 1, "base_sequence": 5}},
        {"id": 5, "action": "state"},
    ]
    out = io.StringIO()
    text = "".join(json.dumps(r) + "\n" for r in requests)
    serve(ModelSut, "model", frozenset(FEATURES), stdin=io.StringIO(text), stdout=out)
    replies = [json.loads(line) for line in out.getvalue().splitlines()]
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for message in requests + replies:
        validator.validate(message)
    assert "producer_state" in replies[0]["ok"]["features"]
    assert replies[3]["error"]["code"] == "OutOfOrderSequenceError"
    state = replies[4]["ok"]
    jsonschema.validate(state, {"$ref": "#/$defs/result.state", "$defs": SCHEMA["$defs"]})
    assert state["producers"][0]["producer_id"] == 9


def test_serve__without_the_feature__acts_as_a_version_1_adapter() -> None:
    """A server not listing producer_state declines producer arguments and reports no table."""
    requests = [
        {"id": 1, "action": "handshake", "args": {"protocol_version": 1}},
        {"id": 2, "action": "open", "args": {"config": encode(v.LogConfig()), "now_ms": 0,
                                             "log_start_offset": 0}},
        {"id": 3, "action": "append_as_leader", "args": {
            "records": [encode(RECORD)], "leader_epoch": 0, "producer_id": 9,
            "producer_epoch": 1, "base_sequence": 0}},
        {"id": 4, "action": "state"},
    ]
    out = io.StringIO()
    text = "".join(json.dumps(r) + "\n" for r in requests)
    features = frozenset(FEATURES) - {"producer_state"}
    serve(ModelSut, "model", features, stdin=io.StringIO(text), stdout=out)
    replies = [json.loads(line) for line in out.getvalue().splitlines()]
    assert "producer_state" not in replies[0]["ok"]["features"]
    assert "unsupported" in replies[2]
    assert "producers" not in replies[3]["ok"] and "producer_snapshots" not in replies[3]["ok"]


def test_serve__markers_and_read_committed__validate_against_the_schema() -> None:
    """Spec: KL-TXN-1, KL-TXN-9 — a served transactions session is schema-valid and carries the
    marker, the aborted list and the LSO; without the feature it answers as before."""
    marker = {"producer_id": 9, "producer_epoch": 0, "commit": False, "coordinator_epoch": 1,
              "leader_epoch": 0}
    requests = [
        {"id": 1, "action": "handshake", "args": {"protocol_version": 1}},
        {"id": 2, "action": "open", "args": {"config": encode(CONFIG_FAMILIES["transactions"]),
                                             "now_ms": 0, "log_start_offset": 0}},
        {"id": 3, "action": "append_as_leader", "args": {
            "records": [encode(RECORD)], "leader_epoch": 0, "producer_id": 9,
            "producer_epoch": 0, "base_sequence": 0, "is_transactional": True}},
        {"id": 4, "action": "append_marker", "args": marker},
        {"id": 5, "action": "update_high_watermark", "args": {"offset": 2}},
        {"id": 6, "action": "read", "args": {"start_offset": 0, "max_bytes": 1000,
                                             "isolation": "txn_committed",
                                             "min_one_message": False}},
        {"id": 7, "action": "state"},
    ]
    text = "".join(json.dumps(r) + "\n" for r in requests)
    validator = jsonschema.Draft202012Validator(SCHEMA)
    out = io.StringIO()
    serve(ModelSut, "model", frozenset(FEATURES), stdin=io.StringIO(text), stdout=out)
    replies = [json.loads(line) for line in out.getvalue().splitlines()]
    for message in requests + replies:
        validator.validate(message)
    read = replies[5]["ok"]
    assert read["aborted_transactions"] == [{"producer_id": 9, "first_offset": 0}]
    assert read["batches"][1]["is_control"] is True
    state = replies[6]["ok"]
    assert state["last_stable_offset"] == 2 and state["aborted_txns"][0]["last_offset"] == 1
    out = io.StringIO()
    serve(ModelSut, "model", frozenset(FEATURES) - {"transactions"},
          stdin=io.StringIO(text), stdout=out)
    old = [json.loads(line) for line in out.getvalue().splitlines()]
    assert "unsupported" in old[2] and "unsupported" in old[3] and "unsupported" in old[5]
    assert "last_stable_offset" not in old[6]["ok"] and "aborted_txns" not in old[6]["ok"]
