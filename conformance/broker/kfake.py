"""franz-go's kfake (an in-memory fake Kafka cluster in Go) as a broker process, stopped by PID.

brokers/kfake/ holds a small Go main that runs a one-broker kfake cluster on 127.0.0.1, prints
the bound `HOST:PORT` as one line and lives until its stdin closes or it is signalled. Its
go.mod pins kfake to one exact version (`KFAKE_VERSION`, read from that go.mod); the first
start builds it with `go build` (the Go module proxy serves kfake) into a cache folder keyed by
the sources' hash, and later starts reuse that binary.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

from kafkalog.conformance.broker.child import AddressPrintingBroker
from kafkalog.conformance.errors import BrokerUnavailableError

#: The folder holding go.mod, go.sum and main.go (a source checkout's brokers/kfake).
KFAKE_DIR = Path(os.environ.get("KAFKALOG_KFAKE_DIR",
                                Path(__file__).resolve().parents[2] / "brokers" / "kfake"))
_SOURCES = ("go.mod", "go.sum", "main.go")


def _required(module: str) -> str:
    """The version go.mod requires of `module`, or "unknown" when go.mod is missing."""
    try:
        text = (KFAKE_DIR / "go.mod").read_text()
    except OSError:
        return "unknown"
    found = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(\S+)", text, re.MULTILINE)
    return found.group(1) if found else "unknown"


#: The exact kfake the Go main is built with, and the franz-go release it compiles against
#: (kfake's own go.mod asks for an older one that lacks APIs it uses).
KFAKE_VERSION = _required("github.com/twmb/franz-go/pkg/kfake")
FRANZ_GO_VERSION = _required("github.com/twmb/franz-go")


def cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "kafkalog" / "kfake"


def kfake_unavailable() -> str | None:
    """Why kfake cannot be started here (no Go and no cached binary), or None."""
    if not (KFAKE_DIR / "go.mod").is_file():
        return f"{KFAKE_DIR / 'go.mod'} is missing (set KAFKALOG_KFAKE_DIR)"
    if shutil.which("go") is None and not _cached_binary().is_file():
        return "kfake needs Go to build brokers/kfake (install Go 1.26 or newer)"
    return None


def _cached_binary() -> Path:
    digest = hashlib.sha256()
    for name in _SOURCES:
        path = KFAKE_DIR / name
        digest.update(path.read_bytes() if path.is_file() else b"")
    return cache_dir() / digest.hexdigest()[:16] / "kfake"


def kfake_binary(timeout_s: float = 900.0) -> Path:
    """The built Go main, built once per version of its sources and then cached.

    Raises BrokerUnavailableError when Go is missing or the build fails.
    """
    why = kfake_unavailable()
    if why is not None:
        raise BrokerUnavailableError(why, where="brokers/kfake")
    binary = _cached_binary()
    if binary.is_file():
        return binary
    binary.parent.mkdir(parents=True, exist_ok=True)
    partial = binary.with_suffix(".partial")
    env = {**os.environ, "GOFLAGS": "-mod=mod"}
    try:
        done = subprocess.run(["go", "build", "-o", str(partial), "."], cwd=KFAKE_DIR, env=env,
                              capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise BrokerUnavailableError(f"go build did not finish in {timeout_s:.0f} s",
                                     where=str(KFAKE_DIR)) from None
    if done.returncode != 0 or not partial.is_file():
        last = " ".join((done.stdout + done.stderr).split())[-300:]
        raise BrokerUnavailableError(f"go build failed: {last}", where=str(KFAKE_DIR))
    partial.replace(binary)
    return binary


class KfakeBroker(AddressPrintingBroker):
    """One kfake cluster of one broker in a child process; a context manager that stops it."""

    name = "kfake"

    def __init__(self, log_path: Path, port: int = 0) -> None:
        super().__init__([str(kfake_binary()), "-port", str(port)], log_path)
