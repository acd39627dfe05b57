"""The adapter under hostile input: every line gets exactly one reply,
the reply names the request whenever its id is readable, and the adapter stays usable."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from kafkalog.conformance.adapter.json_codec import FEATURES
from kafkalog.conformance.adapter.server import Server, serve
from kafkalog.conformance.check.impl_sut import ImplSut
from kafkalog.conformance.check.sut import ModelSut

HANDSHAKE = b'{"id":1,"action":"handshake","args":{"protocol_version":1}}\n'
APPEND = (b'{"id":%d,"action":"append_as_leader","args":{"records":[{"key":null,'
          b'"value":"eA==","timestamp":0}],"leader_epoch":0}}\n')


def serve_bytes(data: bytes, factory: Any = ModelSut) -> list[dict[str, Any]]:
    """Feed raw bytes to `serve` as its stdin; return the parsed replies."""
    out = io.StringIO()
    serve(factory, "test", frozenset(FEATURES), stdin=io.BytesIO(data), stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_serve__invalid_utf8_line__one_error_reply_and_the_next_line_still_answered() -> None:
    """A line that is not UTF-8 costs one ProtocolError reply; no earlier or later reply is lost."""
    replies = serve_bytes(HANDSHAKE + b'{"id":2,"action":"open"}\n' + b"\xff\xfe{}\n"
                          + APPEND % 3 + b'{"id":4,"action":"state"}\n')
    assert [r["id"] for r in replies] == [1, 2, None, 3, 4]
    assert replies[2]["error"]["code"] == "ProtocolError" and "UTF-8" in \
        replies[2]["error"]["message"]
    assert "ok" in replies[3] and "ok" in replies[4]


@pytest.mark.parametrize("line", [
    b'{"id":7,"action":"state","bogus":1}',
    b'{"id":7,"action":"state","args":[]}',
    b'{"id":7,"action":5}',
    b'{"id":7,"action":"append_as_leader","args":{"leader_epoch":"x"}}',
])
def test_serve__bad_request_with_readable_id__error_reply_echoes_the_id(line: bytes) -> None:
    """Spec: the reply id is the request's id whenever that id is a readable integer."""
    replies = serve_bytes(HANDSHAKE + b'{"id":2,"action":"open"}\n' + line + b"\n")
    assert replies[-1]["id"] == 7 and "error" in replies[-1]


@pytest.mark.parametrize("version", ["1.0", "true", '"1"', "null"])
def test_handshake__protocol_version_not_the_integer_1__refused(version: str) -> None:
    """protocol_version must be the JSON integer 1 (1.0 and true compare equal in Python)."""
    line = b'{"id":1,"action":"handshake","args":{"protocol_version":%s}}\n' % version.encode()
    (reply,) = serve_bytes(line)
    assert reply["id"] == 1 and reply["error"]["code"] == "ProtocolError"


@pytest.mark.parametrize("line", [
    b'{"id":3,"args":' + b"[" * 50_000 + b"]" * 50_000 + b"}",
    b'{"id":3,"action":"flush","args":{"offset":' + b"9" * 5000 + b"}}",
])
def test_serve__deep_nesting_or_huge_integer__protocol_error_not_a_crash(line: bytes) -> None:
    """json's RecursionError and digit-limit ValueError become a ProtocolError reply."""
    replies = serve_bytes(HANDSHAKE + line + b"\n" + b'{"id":4,"action":"open"}\n')
    assert replies[1]["error"]["code"] == "ProtocolError" and replies[2] == {"id": 4, "ok": None}


class CloseFails(ModelSut):
    """A log whose close raises an untyped error, as a broken implementation might."""

    def close(self) -> None:
        raise OverflowError("close failed")


def test_open__old_log_close_raises__new_log_replaces_it() -> None:
    """A log that cannot be closed is dropped, so the adapter is never left unusable."""
    server = Server(CloseFails, "test", frozenset(FEATURES))
    assert "ok" in server.handle_line(HANDSHAKE.decode(), 1)
    assert server.handle_line('{"id":2,"action":"open"}', 2) == {"id": 2, "ok": None}
    assert server.handle_line('{"id":3,"action":"open"}', 3) == {"id": 3, "ok": None}
    assert "ok" in server.handle_line((APPEND % 4).decode(), 4)


def test_serve_impl__open_with_clock_beyond_long__refused_and_adapter_still_usable() -> None:
    """Spec: KL-BOUND-1: now_ms 2**80 is refused at open; append, roll and reopen then work."""
    replies = serve_bytes(
        HANDSHAKE + b'{"id":2,"action":"open","args":{"now_ms":%d}}\n' % 2**80
        + b'{"id":3,"action":"open","args":{"now_ms":9223372036854775807}}\n' + APPEND % 4
        + b'{"id":5,"action":"roll"}\n{"id":6,"action":"close_and_reopen"}\n'
        + b'{"id":7,"action":"open"}\n{"id":8,"action":"close"}\n', factory=ImplSut)
    assert replies[1]["id"] == 2 and "IllegalArgumentError" in replies[1]["error"]["message"]
    assert all("ok" in r for r in replies[2:]), replies


def test_impl_sut__set_mtime_beyond_platform__typed_error_not_overflow(tmp_path: Any) -> None:
    """fs.set_mtime_ms turns the platform's OverflowError into IllegalArgumentError."""
    from kafkalog.impl.fs.file_system import FileSystem
    from kafkalog.model.errors import IllegalArgumentError

    path = tmp_path / "f"
    path.write_bytes(b"")
    with pytest.raises(IllegalArgumentError):
        FileSystem().set_mtime_ms(path, 2**80)
