"""kafka-wire (a Kafka-compatible broker in one Go binary) as a broker process, stopped by PID.

The binary comes from the Go module proxy alone: `go install` of its `cmd/kafka-wire` at one
pinned version (`KAFKA_WIRE_VERSION`) into a cache folder keyed by a digest of what is
installed, so later starts reuse it. `$KAFKALOG_KAFKA_WIRE_BIN` names a binary built elsewhere
instead, and must report that same version (`kafka-wire version`): the version the trace
headers record is the pinned one.

`KafkaWireBroker` runs it on a free loopback port with its data in a fresh temporary folder,
everything that could act behind the checker's back switched off (the HTTP admin listener, the
free-disk guard, age retention), and stops exactly the process it started: SIGTERM (it drains
and exits), SIGKILL after a grace period. kafka-wire serves no InitProducerId, transaction API,
DeleteRecords or OffsetForLeaderEpoch, and ListOffsets only up to v5; the wire adapter leaves
out what needs them, one line each (adapter.py, `broker_limits`).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from kafkalog.conformance.broker.process import (
    ServerBroker,
    await_listening,
    reported_version,
)
from kafkalog.conformance.errors import BrokerUnavailableError

KAFKA_WIRE_MODULE = "github.com/csnyder256/kafka-wire"
KAFKA_WIRE_VERSION = "v0.1.0"
_PACKAGE = f"{KAFKA_WIRE_MODULE}/cmd/kafka-wire@{KAFKA_WIRE_VERSION}"
# The release's own build stamps its version this way; a plain `go install` would say "dev".
_LDFLAGS = f"-X main.version={KAFKA_WIRE_VERSION}"
_OVERRIDE = "KAFKALOG_KAFKA_WIRE_BIN"
#: The proxy's refusal of kafka-wire itself (the go command also asks for the longer path
#: cmd/kafka-wire as a module), not of one of its dependencies: a 403, or, when a copy from
#: elsewhere sits in the module cache, the checksum database's 404 (it knows only what the
#: proxy served).
_REFUSED = re.compile(rf"{re.escape(KAFKA_WIRE_MODULE)}(/\S*)?/@v/\S*: 403 Forbidden"
                      rf"|verifying module: {re.escape(KAFKA_WIRE_MODULE)}@\S+: .*404 Not Found")
_WHERE = "kafka-wire"

#: Its environment (every setting has a KAFKA_WIRE_<PATH> variable): off is everything that
#: would change the log on the broker's own clock or disk state (KL-WIRE-5), or clash.
BROKER_ENV = {
    "KAFKA_WIRE_ADMIN_ENABLED": "false",  # an HTTP listener on a fixed port otherwise
    "KAFKA_WIRE_STORAGE_DISKFREEMIN": "0",  # pauses appends when the disk fills up otherwise
    "KAFKA_WIRE_STORAGE_RETENTIONAGE": "0",  # the checker's records carry old timestamps
    "KAFKA_WIRE_STORAGE_FSYNCMODE": "none",  # durability across crashes is not checked here
    "KAFKA_WIRE_LOG_LEVEL": "debug",  # the log tail the adapter quotes then names each request
}


class ModuleNotServedError(BrokerUnavailableError):
    """The Go module proxy refuses the pinned kafka-wire release (it answers 403 for a module
    it will not serve), so nothing can be installed until it does or a binary is given."""


def cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "kafkalog" / "kafka-wire"


def _cached_binary() -> Path:
    digest = hashlib.sha256(f"{_PACKAGE} {_LDFLAGS}".encode()).hexdigest()[:16]
    return cache_dir() / digest / "kafka-wire"


def kafka_wire_unavailable() -> str | None:
    """Why kafka-wire cannot be started here (no Go and no binary), or None."""
    override = os.environ.get(_OVERRIDE)
    if override and not os.access(override, os.X_OK):
        return f"${_OVERRIDE} ({override}) is not an executable file"
    if override:
        return None
    if shutil.which("go") is None and not _cached_binary().is_file():
        return f"kafka-wire needs Go to `go install {_PACKAGE}` (install Go 1.26 or newer)"
    return None


def kafka_wire_binary(timeout_s: float = 900.0) -> Path:
    """$KAFKALOG_KAFKA_WIRE_BIN, or the pinned release installed once from the Go module proxy
    and then cached. Raises BrokerUnavailableError when Go is missing or the install fails."""
    why = kafka_wire_unavailable()
    if why is not None:
        raise BrokerUnavailableError(why, where=_WHERE)
    override = os.environ.get(_OVERRIDE)
    if override:
        return Path(override)
    binary = _cached_binary()
    if not binary.is_file():
        _go_install(binary, timeout_s)
    return binary


def _go_install(binary: Path, timeout_s: float) -> None:
    """`go install` into a scratch GOBIN beside `binary`, then one rename: a build that dies
    half-way never leaves a binary that later starts would trust."""
    binary.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="install-", dir=binary.parent))
    # `go install PKG@VERSION` builds outside any main module, where an inherited -mod flag
    # only makes it fail.
    env = {**os.environ, "GOBIN": str(scratch), "GOFLAGS": "-buildvcs=false"}
    try:
        done = subprocess.run(["go", "install", f"-ldflags={_LDFLAGS}", _PACKAGE], env=env,
                              capture_output=True, text=True, timeout=timeout_s, check=False)
        built = scratch / "kafka-wire"
        if done.returncode != 0 or not built.is_file():
            raise _install_failure(done.stdout + done.stderr)
        built.replace(binary)
    except subprocess.TimeoutExpired:
        raise BrokerUnavailableError(f"go install {_PACKAGE} did not finish in "
                                     f"{timeout_s:.0f} s", where=_WHERE) from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _install_failure(output: str) -> BrokerUnavailableError:
    """The typed error for a failed `go install`, from its output."""
    text = " ".join(output.split())
    if _REFUSED.search(text):
        return ModuleNotServedError(
            f"the Go module proxy does not serve {KAFKA_WIRE_MODULE}@{KAFKA_WIRE_VERSION}; set "
            f"{_OVERRIDE} to a kafka-wire binary built from that release",
            where=_WHERE)
    return BrokerUnavailableError(f"go install {_PACKAGE} failed: {text[-300:]}", where=_WHERE)


def kafka_wire_version(binary: Path) -> str:
    """The version the binary reports (`kafka-wire version`), or "unknown"."""
    return reported_version(binary, "version", "kafka-wire")


class KafkaWireBroker(ServerBroker):
    """One kafka-wire process on a free loopback port; a context manager that stops it by
    PID, also when starting fails."""

    def __init__(self, log_path: Path, start_timeout_s: float = 30.0) -> None:
        binary = kafka_wire_binary()
        self.version = kafka_wire_version(binary)
        if self.version != KAFKA_WIRE_VERSION:  # the trace headers name the pinned version
            raise BrokerUnavailableError(f"{binary} reports version {self.version}, not the "
                                         f"pinned {KAFKA_WIRE_VERSION}", where=_WHERE)
        self._prepare(log_path, "kafkalog-kafka-wire-")
        with self._stopped_on_failure():
            self._spawn([str(binary), "serve", "--kafka-listen", self.address,
                         "--data-dir", str(self._dir / "data")],
                        env={**os.environ, **BROKER_ENV})
            self._await_listening(start_timeout_s)

    def _await_listening(self, timeout_s: float) -> None:
        assert self._proc is not None
        await_listening(self._proc, self.port, timeout_s, "kafka-wire", self.log_path, _WHERE)
