"""Framing of the JSON-lines adapter protocol (specs/adapter-protocol.md), shared by both ends.

One JSON object per line, UTF-8, `\\n`-terminated. Requests are `{"id", "action", "args"}`;
responses are `{"id", "ok"}`, `{"id", "error": {"code", "message"}}` or
`{"id", "unsupported": {"message"}}`. Both the client (`subprocess_sut.py`) and the server
(`server.py`) parse with these functions so they reject the same malformed messages.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kafkalog.conformance.adapter.json_codec import ACTIONS, SESSION_ACTIONS, Json
from kafkalog.conformance.errors import ProtocolError

PROTOCOL_VERSION = 2
#: Versions this checker and `serve-adapter` speak. Version 2 adds the `crash` action behind the
#: `crash` / `crash_kill` features; a version-1 peer never sees either.
PROTOCOL_VERSIONS = (1, 2)
VERSION_2_FEATURES = frozenset({"crash", "crash_kill"})

#: Error codes an adapter uses for requests it could not parse; they are adapter failures.
PROTOCOL_ERROR_CODES = frozenset({"ProtocolError", "UnknownActionError", "WireFormatError"})


@dataclass(frozen=True)
class Request:
    """One parsed request line."""

    id: int
    action: str
    args: dict[str, Json]


@dataclass(frozen=True)
class Response:
    """One parsed response line: exactly one of `ok` (with `has_ok`), `error`, `unsupported`."""

    id: int | None
    kind: str  # "ok" | "error" | "unsupported"
    body: Json


def dumps(message: dict[str, Any]) -> str:
    """A message as one line of compact JSON (no trailing newline)."""
    return json.dumps(message, separators=(",", ":"), sort_keys=False)


def _load_object(line: str, where: str) -> dict[str, Json]:
    try:
        message = json.loads(line)
    except json.JSONDecodeError as error:
        raise ProtocolError(f"not JSON: {error.msg} at column {error.colno}", where=where) from None
    except (ValueError, RecursionError) as error:
        # json raises these for integers past Python's digit limit and for very deep nesting.
        raise ProtocolError(f"not readable JSON: {type(error).__name__}: {str(error)[:120]}",
                            where=where) from None
    if not isinstance(message, dict):
        raise ProtocolError("a message must be a JSON object", where=where)
    return message


def parse_request(line: str, where: str = "request") -> Request:
    """Parse and validate a request line; raises ProtocolError naming the problem."""
    message = _load_object(line, where)
    missing = [key for key in ("id", "action") if key not in message]
    if missing:
        raise ProtocolError(f"request without {', '.join(missing)}", where=where)
    ident, action, args = message["id"], message["action"], message.get("args", {})
    if isinstance(ident, bool) or not isinstance(ident, int):
        raise ProtocolError(f"request id must be an integer, got {ident!r}", where=where)
    if not isinstance(action, str):
        raise ProtocolError(f"action must be a string, got {action!r}", where=where)
    if not isinstance(args, dict):
        raise ProtocolError("args must be an object", where=f"{where} id={ident}")
    unknown = set(message) - {"id", "action", "args"}
    if unknown:
        raise ProtocolError(f"unknown request field(s) {sorted(unknown)}", where=where)
    return Request(ident, action, args)


def readable_request_id(line: str) -> int | None:
    """The integer `id` of a request line that is a JSON object, even when the rest is invalid,
    so an error reply can still name the request it answers; None when there is none."""
    try:
        message = _load_object(line, "request")
    except ProtocolError:
        return None
    ident = message.get("id")
    return ident if type(ident) is int else None


def parse_response(line: str, where: str = "response") -> Response:
    """Parse and validate a response line; raises ProtocolError naming the problem."""
    message = _load_object(line, where)
    if "id" not in message:
        raise ProtocolError("response without id", where=where)
    ident = message["id"]
    if ident is not None and (isinstance(ident, bool) or not isinstance(ident, int)):
        raise ProtocolError(f"response id must be an integer or null, got {ident!r}", where=where)
    kinds = [kind for kind in ("ok", "error", "unsupported") if kind in message]
    if len(kinds) != 1:
        raise ProtocolError(
            "a response needs exactly one of ok, error, unsupported", where=f"{where} id={ident}"
        )
    unknown = set(message) - {"id", kinds[0]}
    if unknown:
        raise ProtocolError(f"unknown response field(s) {sorted(unknown)}", where=where)
    return Response(ident, kinds[0], message[kinds[0]])


def is_known_action(action: str) -> bool:
    """True for the log actions and the session requests of the protocol."""
    return action in ACTIONS or action in SESSION_ACTIONS
