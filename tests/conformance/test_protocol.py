"""The adapter protocol's framing and server (specs/adapter-protocol.md, adapter/server.py)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from kafkalog.conformance.adapter.json_codec import FEATURES, encode
from kafkalog.conformance.adapter.protocol import parse_request, parse_response
from kafkalog.conformance.adapter.server import Server, serve
from kafkalog.conformance.check.sut import ModelSut
from kafkalog.conformance.errors import ProtocolError
from kafkalog.conformance.gen.configs import CONFIG_FAMILIES

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "specs" / "adapter-protocol.schema.json").read_text()
)
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
OPEN = {"config": encode(CONFIG_FAMILIES["tiny"]), "now_ms": 1_700_000_000_000,
        "log_start_offset": 0}


def session(lines: list[dict[str, Any] | str], features: frozenset[str] = frozenset(FEATURES)
            ) -> list[dict[str, Any]]:
    """Feed request lines to `serve` over in-memory streams; return the parsed replies."""
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    out = io.StringIO()
    serve(ModelSut, "model", features, stdin=io.StringIO(text), stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def handshake(ident: int = 1) -> dict[str, Any]:
    return {"id": ident, "action": "handshake", "args": {"protocol_version": 1}}


def test_serve__a_session__answers_each_request_once_in_order_and_validates_against_schema(
) -> None:
    """handshake, open, append, state: ok replies with ids in order, all schema-valid."""
    requests = [
        handshake(),
        {"id": 2, "action": "open", "args": OPEN},
        {"id": 3, "action": "append_as_leader", "args": {
            "records": [{"key": None, "value": "dGVzdA==", "timestamp": 1_700_000_000_000,
                         "headers": []}], "leader_epoch": 0}},
        {"id": 4, "action": "state"},
        {"id": 5, "action": "truncate_to", "args": {"offset": -1}},
    ]
    replies = session(requests)
    assert [r["id"] for r in replies] == [1, 2, 3, 4, 5]
    for message in requests + replies:
        VALIDATOR.validate(message)
    assert replies[0]["ok"]["protocol_version"] == 1
    assert replies[2]["ok"]["valid_bytes"] == 72
    assert replies[3]["ok"]["log_end_offset"] == 1
    state_schema = {"$ref": "#/$defs/result.state", "$defs": SCHEMA["$defs"]}
    jsonschema.validate(replies[3]["ok"], state_schema)
    assert replies[4]["error"]["code"] == "IllegalArgumentError"


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "JSON object"),
        ({"action": "state"}, "without id"),
        ({"id": "7", "action": "state"}, "must be an integer"),
        ({"id": 7, "action": "state", "args": [], }, "args must be an object"),
        ({"id": 7, "action": "compact"}, "unknown action"),
        ({"id": 7, "action": "truncate_to", "args": {}}, "missing argument"),
        ({"id": 7, "action": "truncate_to", "args": {"offset": "3"}}, "expected an integer"),
    ],
)
def test_serve__malformed_requests__get_a_protocol_level_error_and_serving_continues(
    line: dict[str, Any] | str, fragment: str
) -> None:
    """Bad requests get ProtocolError/UnknownActionError/WireFormatError; the next one works."""
    replies = session([handshake(), {"id": 2, "action": "open", "args": OPEN}, line,
                       {"id": 9, "action": "state"}])
    bad = replies[2]
    assert bad["error"]["code"] in {"ProtocolError", "UnknownActionError", "WireFormatError"}
    assert fragment in bad["error"]["message"]
    assert replies[3]["id"] == 9 and "ok" in replies[3]


def test_serve__actions_before_handshake_or_open__are_protocol_errors() -> None:
    """The first request must be handshake, and log actions need an open log."""
    replies = session([{"id": 1, "action": "state"}, handshake(2), {"id": 3, "action": "state"}])
    assert "handshake" in replies[0]["error"]["message"]
    assert "before open" in replies[2]["error"]["message"]


def test_serve__wrong_protocol_version__is_refused() -> None:
    """A client asking for version 3 (this adapter speaks 1 and 2) gets ProtocolError."""
    replies = session([{"id": 1, "action": "handshake", "args": {"protocol_version": 3}}])
    assert replies[0]["error"]["code"] == "ProtocolError"


def test_serve__an_action_outside_the_listed_features__is_answered_unsupported() -> None:
    """An adapter without leader_epochs answers end_offset_for_epoch with `unsupported`."""
    replies = session(
        [handshake(), {"id": 2, "action": "open", "args": OPEN},
         {"id": 3, "action": "end_offset_for_epoch", "args": {"epoch": 0}}],
        features=frozenset({"core"}),
    )
    assert replies[0]["ok"]["features"] == ["core"]
    assert "unsupported" in replies[2]
    VALIDATOR.validate(replies[2])


def test_server__an_untyped_exception_in_the_log__is_an_unexpected_exception_result() -> None:
    """A crash inside the log is a result (UnexpectedException), not an adapter failure."""

    class Exploding(ModelSut):
        def roll(self, expected_next_offset: int | None = None) -> int:
            raise ZeroDivisionError("boom")

    server = Server(Exploding, "exploding", frozenset(FEATURES))
    server.handle_line(json.dumps(handshake()), 1)
    server.handle_line(json.dumps({"id": 2, "action": "open", "args": OPEN}), 2)
    reply = server.handle_line(json.dumps({"id": 3, "action": "roll"}), 3)
    assert reply["error"]["code"] == "UnexpectedException"
    assert "ZeroDivisionError: boom" in reply["error"]["message"]


@pytest.mark.parametrize(
    "line",
    ['{"ok": 1}', '{"id": 1}', '{"id": 1, "ok": 1, "error": {}}', '{"id": 1, "ok": 1, "x": 2}',
     '{"id": true, "ok": 1}'],
)
def test_parse_response__malformed_replies__raise_protocol_error(line: str) -> None:
    """A reply needs an integer id and exactly one of ok, error, unsupported."""
    with pytest.raises(ProtocolError):
        parse_response(line)


def test_parse_request__a_valid_line__gives_id_action_and_args() -> None:
    """Args default to an empty object."""
    request = parse_request('{"id": 4, "action": "delete_old_segments"}')
    assert (request.id, request.action, request.args) == (4, "delete_old_segments", {})
