"""A log that fails to report its state: the `state` reply's UnexpectedException
(specs/adapter-protocol.md, "Session") is a divergence of the step before, not an adapter error."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from kafkalog.conformance.adapter.json_codec import encode
from kafkalog.conformance.adapter.server import Server
from kafkalog.conformance.check.lockstep import DivergenceError
from kafkalog.conformance.check.runner import sut_factory
from kafkalog.conformance.check.session import Session
from kafkalog.conformance.errors import UnexpectedException
from kafkalog.conformance.gen.configs import CONFIG_FAMILIES
from kafkalog.model import errors as e
from kafkalog.model import values as v
from state_failing_adapter import FEATURES, StateFailsSut

ADAPTER = shlex.join([sys.executable, str(Path(__file__).with_name("state_failing_adapter.py"))])
CONFIG = CONFIG_FAMILIES["tiny"]
APPEND = {"records": (v.Record(None, b"test", v.NO_TIMESTAMP),), "leader_epoch": 0}


def _server_with_a_record(factory: type = StateFailsSut) -> Server:
    server = Server(factory, "state-fails", FEATURES)
    requests = [
        {"id": 1, "action": "handshake", "args": {"protocol_version": 2}},
        {"id": 2, "action": "open", "args": {"config": encode(CONFIG), "now_ms": 0,
                                             "log_start_offset": 0}},
        {"id": 3, "action": "append_as_leader", "args": {
            "records": [{"key": None, "value": "dGVzdA==", "timestamp": -1, "headers": []}],
            "leader_epoch": 0}},
    ]
    for line_no, request in enumerate(requests, start=1):
        assert "ok" in server.handle_line(json.dumps(request), line_no)
    return server


def test_server__state_raising_unexpected_exception__answers_that_code_under_the_request_id(
) -> None:
    """The implementation answered the state query with a failure: an error reply of code
    UnexpectedException with its one-line message, not a ProtocolError."""
    reply = _server_with_a_record().handle_line('{"id": 4, "action": "state"}', 4)
    assert reply == {"id": 4, "error": {
        "code": "UnexpectedException",
        "message": "ListOffsets EARLIEST: the broker dropped the connection "
                   "(SansIo(TryFromInt)) second line (broker)"}}


class CheckFails(StateFailsSut):
    def check(self) -> list[str]:
        raise UnexpectedException("check broke")


class StateTypedError(StateFailsSut):
    def state(self) -> v.LogStateView:
        raise e.KafkaStorageError("disk gone")


@pytest.mark.parametrize(("factory", "request_line"), [
    (CheckFails, '{"id": 4, "action": "check"}'),
    (StateTypedError, '{"id": 4, "action": "state"}'),
], ids=["check_unexpected", "state_typed_error"])
def test_server__other_session_failures__stay_protocol_errors(factory: type,
                                                              request_line: str) -> None:
    """Only `state`'s UnexpectedException is a result; any other session failure is still the
    adapter's (ProtocolError)."""
    reply = _server_with_a_record(factory).handle_line(request_line, 4)
    assert reply["id"] == 4 and reply["error"]["code"] == "ProtocolError"


def test_lockstep__over_an_adapter_whose_state_fails__diverges_with_kind_state() -> None:
    """Through the protocol (a serve-adapter process), the append the state query follows is
    recorded as a divergence of kind `state()`, not ended as an adapter error."""
    factory, features, process = sut_factory(ADAPTER, None)
    try:
        lockstep = Session(CONFIG, factory, features).start()
        with pytest.raises(DivergenceError) as raised:
            lockstep.step("append_as_leader", dict(APPEND))
    finally:
        process.close()
    divergence = raised.value
    assert divergence.signature.split("|")[:4] == ["append_as_leader", "ok", "ok", "state()"]
    assert divergence.step.divergence.startswith("state() raised UnexpectedException: ")
    assert "SansIo(TryFromInt)" in divergence.step.divergence
    assert lockstep.steps[-1] is divergence.step
