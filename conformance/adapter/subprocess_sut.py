"""The subprocess adapter: drive any implementation over the JSON-lines protocol on stdin/stdout.

`AdapterProcess` owns one child process and speaks the protocol (handshake, one request and one
reply per line, a per-request timeout). `SubprocessSut` is one log inside that process, opened
with `open`; the machine opens a fresh log per example on the same process, because starting a
process for each of the hundreds of examples a shrink tries would dominate the run time.

Everything that goes wrong with the process (it will not start, exits, answers garbage, a wrong
id, nothing within the timeout) raises an `AdapterError` subclass, never a log error.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shlex
import signal
import subprocess
import tempfile
import threading
from typing import IO, Any

from kafkalog.conformance.adapter.json_codec import (
    ACTIONS,
    ADAPTER_FEATURES,
    FEATURES,
    Json,
    decode,
    decode_error,
    decode_result,
    encode,
    encode_args,
)
from kafkalog.conformance.adapter.protocol import (
    PROTOCOL_ERROR_CODES,
    PROTOCOL_VERSION,
    VERSION_2_FEATURES,
    dumps,
    parse_response,
)
from kafkalog.conformance.check.sut import UnsupportedError
from kafkalog.conformance.errors import (
    AdapterCrashedError,
    AdapterError,
    AdapterTimeoutError,
    ProtocolError,
    UnexpectedException,
    WireFormatError,
)
from kafkalog.model import values as v

from kafkalog import __version__

_EOF = object()
_LIVE: set[AdapterProcess] = set()  # started and not yet closed (kill_all's list)


_KEPT: dict[str, AdapterProcess] = {}  # command -> the process kept across runs (kept_process)


def kill_all(spare_kept: bool = False) -> int:
    """Close every adapter process still open in this interpreter; returns how many there were.

    A run cut short by a hard time limit may skip its own cleanup; a long-lived campaign worker
    calls this after each run so hung adapters do not pile up. `spare_kept` leaves the kept
    processes (kept_process) alone: a run that ended normally left them idle and in step.
    """
    kept = {id(process) for process in _KEPT.values()}
    leftover = [p for p in _LIVE if not (spare_kept and id(p) in kept)]
    for process in leftover:
        process.close()
    return len(leftover)


def kept_process(command: str) -> AdapterProcess:
    """The process of `command` kept across runs of this interpreter, started again once dead.

    A cold JVM adapter runs a 40-step run in about 1 s, a warm one in about 0.13 s, so a campaign
    worker that started one per run spent most of its time warming JVMs up. The protocol lets one
    process serve any number of logs (each `open` closes the previous log), so a run on a kept
    process sees a fresh log just as on a new one.
    """
    process = _KEPT.get(command)
    if process is None or not process.alive:
        if process is not None:
            process.close()
        process = _KEPT[command] = AdapterProcess(command)
    return process


def drop_kept(command: str) -> None:
    """Close and forget the kept process of `command` (its state is in doubt after an error)."""
    process = _KEPT.pop(command, None)
    if process is not None:
        process.close()


def default_timeout_s() -> float:
    """Seconds to wait for each reply: 10, or KAFKALOG_ADAPTER_TIMEOUT_S when set."""
    raw = os.environ.get("KAFKALOG_ADAPTER_TIMEOUT_S", "")
    try:
        return float(raw) if raw else 10.0
    except ValueError:
        return 10.0


class AdapterProcess:
    """One adapter process: start, handshake, request/response with a timeout, stop."""

    def __init__(self, command: str, timeout_s: float | None = None) -> None:
        self.command = command
        self.timeout_s = default_timeout_s() if timeout_s is None else timeout_s
        self._next_id = 0
        # Kept open for the process's lifetime (closed in close()), so no `with` block.
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115
        try:
            self._proc = subprocess.Popen(
                shlex.split(command),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                text=True,
                encoding="utf-8",
                bufsize=1,
                # Its own process group, so close() also kills what a wrapper script started.
                start_new_session=True,
            )
        except OSError as error:
            raise AdapterCrashedError(f"cannot start adapter: {error}", where=command) from None
        _LIVE.add(self)
        self._lines: queue.Queue[object] = queue.Queue()
        self._reader = threading.Thread(target=self._read_lines, daemon=True)
        self._reader.start()
        try:
            self.implementation, self.features = self._handshake()
        except BaseException:
            self.close()  # the caller never gets the object, so nothing else would
            raise

    def _read_lines(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self._lines.put(line)
        self._lines.put(_EOF)

    def _handshake(self) -> tuple[str, frozenset[str]]:
        """Ask for version 2. A version-1 adapter either answers with version 1 (accepted as a
        version-1 session) or refuses with ProtocolError (asked again for version 1), so
        version-1 adapters keep working, without crashes (specs/adapter-protocol.md)."""
        try:
            return self._handshake_version(PROTOCOL_VERSION)
        except ProtocolError as error:
            if "adapter rejected the request: ProtocolError" not in str(error):
                raise
            return self._handshake_version(1)

    def _handshake_version(self, wanted: int) -> tuple[str, frozenset[str]]:
        body = self.request("handshake", {"protocol_version": wanted,
                                          "client": f"kafkalog {__version__}"})
        if not isinstance(body, dict):
            raise ProtocolError("handshake reply must be an object", where=self.command)
        version = body.get("protocol_version")
        if isinstance(version, bool) or version not in (1, wanted):
            raise ProtocolError(
                f"adapter speaks protocol {version!r}, this client asked for {wanted}",
                where=self.command,
            )
        self.protocol_version = version
        name, features = body.get("implementation"), body.get("features")
        if not isinstance(name, str) or not isinstance(features, list):
            raise ProtocolError("handshake needs implementation and features", where=self.command)
        unknown = set(features) - set(FEATURES) - set(ADAPTER_FEATURES)
        if version == 1:
            unknown |= set(features) & VERSION_2_FEATURES
        if not {"core", "black_box"} & set(features) or unknown:
            raise ProtocolError(
                f"features must include 'core' (or 'black_box') and only {list(FEATURES)}; "
                f"got {features}",
                where=self.command,
            )
        return name, frozenset(features)

    def stderr_tail(self, limit: int = 400) -> str:
        """The last bytes the adapter wrote to stderr, for error messages."""
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")[-limit:].strip()

    def _crashed(self, what: str) -> AdapterCrashedError:
        try:
            code: int | None = self._proc.wait(timeout=1)  # it closed stdout: it is exiting
        except subprocess.TimeoutExpired:
            code = None
        tail = self.stderr_tail()
        detail = f"; stderr: {tail}" if tail else ""
        message = f"adapter {what} (exit status {code}){detail}"
        return AdapterCrashedError(message, where=self.command)

    def send(self, line: str) -> None:
        """Write one raw line (tests use this to send malformed requests)."""
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(line + "\n")
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise self._crashed("closed its stdin") from None

    def receive(self, where: str) -> str:
        """Read one raw reply line, waiting at most `timeout_s`."""
        try:
            line = self._lines.get(timeout=self.timeout_s)
        except queue.Empty:
            self._kill_group()  # it may be hung for good; a late reply would desynchronise
            raise AdapterTimeoutError(
                f"no reply within {self.timeout_s:g} s", where=f"{self.command}: {where}"
            ) from None
        if line is _EOF:
            self._lines.put(_EOF)  # every later read also sees the end
            raise self._crashed(f"exited before answering {where}")
        assert isinstance(line, str)
        return line

    def request(self, action: str, args: dict[str, Json]) -> Json:
        """Send one request and return the `ok` body; raises for error and unsupported replies.

        A typed log error is raised as itself, an `UnexpectedException` reply as that error, an
        `unsupported` reply as UnsupportedError, and anything malformed as an AdapterError.
        """
        self._next_id += 1
        ident = self._next_id
        where = f"request {ident} ({action})"
        self.send(dumps({"id": ident, "action": action, "args": args}))
        response = parse_response(self.receive(where), where=f"{self.command}: reply to {where}")
        if response.id != ident:
            raise ProtocolError(f"reply id {response.id} does not match request {ident}",
                                where=self.command)
        if response.kind == "ok":
            return response.body
        if response.kind == "unsupported":
            message = response.body.get("message", "") if isinstance(response.body, dict) else ""
            raise UnsupportedError(f"{action}: {message}")
        return self._raise_error(response.body, where)

    def _raise_error(self, body: Json, where: str) -> Json:
        code = body.get("code") if isinstance(body, dict) else None
        message = body.get("message", "") if isinstance(body, dict) else ""
        if code in PROTOCOL_ERROR_CODES:
            raise ProtocolError(f"adapter rejected the request: {code}: {message}", where=where)
        if code == UnexpectedException.__name__:
            raise UnexpectedException(str(message))
        try:
            raise decode_error(body, where=f"{self.command}: {where}.error")
        except WireFormatError as error:
            raise ProtocolError(str(error)) from None

    def close(self) -> None:
        """Close stdin, wait briefly for a clean exit, then kill its process group; never raises."""
        _LIVE.discard(self)
        try:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
            self._proc.wait(timeout=1)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self._kill_group()  # children of a wrapper outlive a clean exit of the leader
        self._stderr.close()

    def _kill_group(self) -> None:
        """SIGKILL the adapter's process group (it leads its own session) and reap the leader."""
        with contextlib.suppress(OSError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            self._proc.wait(timeout=5)

    @property
    def alive(self) -> bool:
        return self._proc.poll() is None


class SubprocessSut:
    """One log opened inside an `AdapterProcess`; the vocabulary is forwarded request by request."""

    def __init__(
        self,
        process: AdapterProcess,
        config: v.LogConfig,
        now_ms: int = 0,
        log_start_offset: int = 0,
    ) -> None:
        self._process = process
        self.name = process.implementation
        self.features = process.features
        process.request(
            "open",
            {"config": encode(config), "now_ms": now_ms, "log_start_offset": log_start_offset},
        )

    def _call(self, action: str, **args: Any) -> Any:
        where = f"{self._process.command}: reply to {action}"
        body = self._process.request(action, encode_args(action, args))
        try:
            return decode_result(action, body, where=where)
        except WireFormatError as error:
            raise ProtocolError(f"bad result of {action}: {error}") from None

    def __getattr__(self, action: str) -> Any:
        # The vocabulary is forwarded generically: every action is one request whose arguments
        # and result are typed by json_codec.ACTIONS, so there is nothing action-specific to
        # write here.
        if action not in ACTIONS:
            raise AttributeError(action)
        return lambda **args: self._call(action, **args)

    def state(self) -> v.LogStateView:
        body = self._process.request("state", {})
        try:
            return decode(v.LogStateView, body, "state")  # type: ignore[no-any-return]
        except WireFormatError as error:
            raise ProtocolError(f"bad state: {error}") from None

    def _problems(self, action: str) -> list[str]:
        if action not in self.features:
            return []
        body = self._process.request(action, {})
        if not isinstance(body, list) or not all(isinstance(p, str) for p in body):
            raise ProtocolError(f"{action} must answer a list of strings", where=self.name)
        return list(body)

    def check(self) -> list[str]:
        return self._problems("check")

    def verify(self) -> list[str]:
        return self._problems("verify")

    def close(self) -> None:
        """Close the log in the adapter; the process stays up for the next `open`."""
        if self._process.alive:
            with contextlib.suppress(AdapterError):  # best effort: the verdict is decided
                self._process.request("close", {})
