"""The server end of the adapter protocol: `kafkalog serve-adapter` runs `serve` on stdin/stdout.

It is the working peer other implementers read: a loop that parses one request per line,
dispatches it to a `Sut` built by a factory (the in-process implementation by default) and writes
exactly one reply per request. Diagnostics go to stderr only, since stdout carries the protocol.
"""

from __future__ import annotations

import dataclasses
import sys
import traceback
from collections.abc import Callable
from typing import IO, Any

from kafkalog.conformance.adapter.json_codec import (
    ACTIONS,
    SESSION_ACTIONS,
    Json,
    decode,
    decode_args,
    encode,
    without_transactions,
)
from kafkalog.conformance.adapter.protocol import (
    PROTOCOL_VERSIONS,
    VERSION_2_FEATURES,
    Request,
    dumps,
    parse_request,
    readable_request_id,
)
from kafkalog.conformance.check.black_box import asks
from kafkalog.conformance.check.scratch import scratch_scope
from kafkalog.conformance.check.sut import Sut, UnsupportedError, execute
from kafkalog.conformance.errors import (
    ProtocolError,
    UnexpectedException,
    UnknownActionError,
    WireFormatError,
)
from kafkalog.model import values as v
from kafkalog.model.errors import KafkalogError

SutFactory = Callable[[v.LogConfig, int, int], Sut]


class Server:
    """Holds the open log (at most one) and answers requests."""

    def __init__(self, factory: SutFactory, implementation: str, features: frozenset[str]) -> None:
        self._factory = factory
        self._implementation = implementation
        self._features = features
        self._sut: Sut | None = None
        self.handshaken = False

    def handle_line(self, line: str, line_no: int) -> dict[str, Any]:
        """The reply to one request line (never raises for bad input)."""
        ident: int | None = None
        try:
            request = parse_request(line, where=f"stdin line {line_no}")
            ident = request.id
            return {"id": ident, **self._dispatch(request)}
        except (ProtocolError, UnknownActionError, WireFormatError) as error:
            ident = ident if ident is not None else readable_request_id(line)
            return {"id": ident, "error": {"code": error.code, "message": str(error)}}
        except KafkalogError as error:  # e.g. the log could not open its directory
            message = one_line(f"{error.code}: {error}")
            return {"id": ident, "error": {"code": "ProtocolError", "message": message}}
        except Exception as error:  # a bug in the adapter itself: its request still gets a reply
            traceback.print_exc(file=sys.stderr)
            ident = ident if ident is not None else readable_request_id(line)
            return {"id": ident, "error": {"code": "ProtocolError",
                                           "message": internal_error_message(error)}}

    def _dispatch(self, request: Request) -> dict[str, Json]:
        action = request.action
        if action not in ACTIONS and action not in SESSION_ACTIONS:
            raise UnknownActionError(f"unknown action {action!r}", where=f"request {request.id}")
        if action == "handshake":
            return {"ok": self._handshake(request.args)}
        if not self.handshaken:
            raise ProtocolError("the first request must be handshake",
                                where=f"request {request.id}")
        if action == "open":
            self._open(request.args)
            return {"ok": None}
        sut = self._sut
        if sut is None:
            raise ProtocolError(f"{action} before open", where=f"request {request.id}")
        if action in ACTIONS:
            return self._action(sut, action, request.args, request.id)
        try:
            return {"ok": self._session(sut, action)}
        except UnexpectedException as error:
            if action != "state":
                raise
            # The log was asked and answered with a failure (a broker whose ListOffsets fails,
            # KL-WIRE-3): a result the checker reports as a divergence of the step before, not
            # a request the adapter could not serve (specs/adapter-protocol.md, "Session").
            return {"error": {"code": error.code, "message": one_line(str(error))}}

    def _handshake(self, args: dict[str, Json]) -> Json:
        version = args.get("protocol_version")
        # An integer exactly: JSON's 1.0 and true compare equal to 1 in Python but are not it.
        if type(version) is not int or version not in PROTOCOL_VERSIONS:
            raise ProtocolError(
                f"unsupported protocol_version {version!r}; this adapter speaks "
                f"{' or '.join(map(str, PROTOCOL_VERSIONS))}"
            )
        self.handshaken = True
        if version == 1:  # a version-1 client knows nothing of crashes
            self._features = self._features - VERSION_2_FEATURES
        return {
            "protocol_version": version,
            "implementation": self._implementation,
            "features": sorted(self._features),
        }

    def _open(self, args: dict[str, Json]) -> None:
        config = decode(v.LogConfig, args.get("config", {}), "args.config")
        now_ms = decode(int, args.get("now_ms", 0), "args.now_ms")
        log_start_offset = decode(int, args.get("log_start_offset", 0), "args.log_start_offset")
        old, self._sut = self._sut, None
        if old is not None:
            try:
                old.close()
            except Exception:  # a broken log must not block opening a fresh one
                traceback.print_exc(file=sys.stderr)
        self._sut = self._factory(config, now_ms, log_start_offset)

    def _action(self, sut: Sut, action: str, raw: dict[str, Json], ident: int) -> dict[str, Json]:
        if not asks(self._features, action):
            return {"unsupported": {"message": f"{self._implementation} does not support {action}"}}
        args = decode_args(action, raw, where=f"request {ident} args")
        if "producer_state" not in self._features and _uses_producer_state(args):
            return {"unsupported": {"message": f"{self._implementation} does not support "
                                               "producer state (feature producer_state)"}}
        if "transactions" not in self._features and _uses_transactions(args):
            return {"unsupported": {"message": f"{self._implementation} does not support "
                                               "transactions (feature transactions)"}}
        try:
            result = execute(sut, action, args)
        except UnsupportedError as error:
            return {"unsupported": {"message": str(error)}}
        if result.ok:
            value = result.value
            if "transactions" not in self._features and isinstance(value, v.FetchDataInfo):
                value = without_transactions(value)  # answer as an adapter before the feature
            return {"ok": encode(value)}
        return {"error": {"code": result.code, "message": result.message}}

    def _session(self, sut: Sut, action: str) -> Json:
        if action == "state":
            state = sut.state()
            if "producer_state" not in self._features:  # answer as a version-1 adapter
                state = dataclasses.replace(state, producers=None, producer_snapshots=None,
                                            producer_snapshot_tables=None)
            if "transactions" not in self._features:
                state = dataclasses.replace(state, last_stable_offset=None, aborted_txns=None)
            return encode(state)
        if action == "check":
            return sut.check()
        if action == "verify":
            return sut.verify()
        assert action == "close", action
        sut.close()
        self._sut = None
        return None

    def shutdown(self) -> None:
        if self._sut is not None:
            self._sut.close()
            self._sut = None


def one_line(text: str) -> str:
    """`text` with every run of whitespace (newlines included) turned into one space."""
    return " ".join(text.split())


def internal_error_message(error: BaseException) -> str:
    """The one-line reply to a request the adapter failed on by a bug of its own."""
    return one_line(f"internal adapter error: {type(error).__name__}: {error} "
                    "(traceback on stderr)")


def _decoded(raw: str | bytes, line_no: int) -> str | dict[str, Any]:
    """A request line as text, or the error reply for a line that is not UTF-8.

    stdin is read as bytes and decoded line by line, so one bad line costs one error reply
    instead of the process (a strict text decoder raises outside the per-line handling).
    """
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        message = (f"request is not UTF-8: {error.reason} at byte {error.start} "
                   f"(stdin line {line_no})")
        ident = readable_request_id(raw.decode("utf-8", errors="replace"))
        return {"id": ident, "error": {"code": "ProtocolError", "message": message}}


def serve(
    factory: SutFactory,
    implementation: str,
    features: frozenset[str],
    stdin: IO[str] | IO[bytes] | None = None,
    stdout: IO[str] | None = None,
) -> int:
    """Answer requests until end of input; returns the process exit status (0)."""
    inp: IO[str] | IO[bytes] = stdin or sys.stdin.buffer
    out = stdout or sys.stdout
    server = Server(factory, implementation, features)
    # The open log's directory goes with the session, however it ends (end of input, an
    # interrupt, a close that fails).
    with scratch_scope():
        _serve_lines(server, inp, out)
    return 0


def _serve_lines(server: Server, inp: IO[str] | IO[bytes], out: IO[str]) -> None:
    """One reply per request line until end of input, then close the open log."""
    try:
        for line_no, raw in enumerate(inp, start=1):
            line = _decoded(raw, line_no)
            if isinstance(line, dict):
                out.write(dumps(line) + "\n")
                out.flush()
                continue
            if not line.strip():
                continue
            try:
                reply = server.handle_line(line, line_no)
            except Exception as error:  # a bug in the adapter itself: say so, keep serving
                traceback.print_exc(file=sys.stderr)
                # The id still answers the request it belongs to (specs/adapter-protocol.md).
                reply = {"id": readable_request_id(line),
                         "error": {"code": "ProtocolError",
                                   "message": internal_error_message(error)}}
            out.write(dumps(reply) + "\n")
            out.flush()
    finally:
        server.shutdown()


def _uses_producer_state(args: dict[str, Any]) -> bool:
    """True when a request carries producer arguments or producer fields in its batches."""
    if args.get("producer_id", -1) != -1 or args.get("is_transactional", False):
        return True
    return any(b.producer_id != -1 or b.is_transactional for b in args.get("batches", ()))


def _uses_transactions(args: dict[str, Any]) -> bool:
    """True for transactional or control batches and read_committed reads (feature
    transactions)."""
    if args.get("is_transactional", False) or args.get("isolation") is v.Isolation.TXN_COMMITTED:
        return True
    return any(b.is_transactional or b.is_control for b in args.get("batches", ()))

