"""nafka (a small Kafka broker in pure Python over SQLite, PyPI) as a broker process, by PID.

nafka 0.1 needs kafka-python 2 (`kafka-python>=2,<3`), and kafkalog's wire adapter needs
kafka-python 3, so nafka cannot share the project's environment: the first start creates a
virtual environment of its own from PyPI alone (`pip install nafka==0.1 kafka-python==2.3.3`,
both pinned) in a cache folder keyed by a digest of what is installed and the interpreter's
version, and later starts reuse it. `$KAFKALOG_NAFKA_PYTHON` names an interpreter that imports
nafka instead (it must have nafka 0.1: the trace headers record the pinned version).

nafka's code uses two standard-library calls newer than this project's Python 3.11:
`sqlite3.connect(autocommit=True)` (3.12) and `asyncio.Server.close_clients()` (3.13). Under an
older interpreter the launcher below supplies them, and nothing else: the first as
`isolation_level=None` (no implicit transactions: nafka opens and commits its own with BEGIN
IMMEDIATE / COMMIT, which behave the same in both modes), the second as a no-op (on SIGTERM
nafka then exits without closing open client sockets first, which the exit closes anyway).
Under 3.13 the launcher changes nothing.

`NafkaBroker` runs it (`nafka.server.main`, as `python -m nafka` does) on a free loopback port
with its SQLite file in a fresh temporary folder, and stops exactly the process it started:
SIGTERM (nafka closes its listener and store and exits), SIGKILL after a grace period. nafka
offers one version of each API (Produce v8, Fetch v6, ListOffsets v5, Metadata v8, the group
APIs) and no CreateTopics, DeleteTopics, DeleteRecords, OffsetForLeaderEpoch, InitProducerId or
transaction API: Metadata names any topic asked for, so the adapter runs on the topics it
"auto-creates" and leaves out the rest, one line each (adapter.py, `broker_limits`).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from kafkalog.conformance.broker.process import (
    ServerBroker,
    await_listening,
)
from kafkalog.conformance.errors import BrokerUnavailableError

NAFKA_VERSION = "0.1"
#: The newest kafka-python nafka 0.1 accepts (it asks for >=2,<3), pinned.
KAFKA_PYTHON_VERSION = "2.3.3"
_REQUIREMENTS = (f"nafka=={NAFKA_VERSION}", f"kafka-python=={KAFKA_PYTHON_VERSION}")
_OVERRIDE = "KAFKALOG_NAFKA_PYTHON"
_WHERE = "nafka"
#: pip's words when PyPI (or the index it is pointed at) has no such release for it.
_REFUSED = re.compile(r"No matching distribution found for (nafka|kafka-python)"
                      r"|Could not find a version that satisfies the requirement "
                      r"(nafka|kafka-python)|403 Client Error|403 Forbidden")

#: Runs nafka's own `main` (what `python -m nafka` runs) with the two standard-library calls
#: newer than the interpreter supplied (the module docstring says why and how).
LAUNCHER = """
import asyncio, sqlite3, sys
if sys.version_info < (3, 12):
    _connect = sqlite3.connect
    def _connect_autocommit(*args, autocommit=None, **kwargs):
        if autocommit is True:
            kwargs.setdefault("isolation_level", None)
        return _connect(*args, **kwargs)
    sqlite3.connect = _connect_autocommit
if not hasattr(asyncio.Server, "close_clients"):
    asyncio.Server.close_clients = lambda self: None
from importlib.metadata import version
print("nafka", version("nafka"), flush=True)
from nafka.server import main
sys.exit(main())
"""


class PackageNotServedError(BrokerUnavailableError):
    """PyPI does not serve the pinned nafka (or the kafka-python it needs), so nothing can be
    installed until it does or an interpreter that imports nafka is given."""


def cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "kafkalog" / "nafka"


def _cached_python() -> Path:
    interpreter = f"{sys.version_info.major}.{sys.version_info.minor}"
    digest = hashlib.sha256(f"{' '.join(_REQUIREMENTS)} python{interpreter}".encode())
    return cache_dir() / digest.hexdigest()[:16] / "bin" / "python"


def nafka_unavailable() -> str | None:
    """Why nafka cannot be started here (a given interpreter that is not one), or None."""
    override = os.environ.get(_OVERRIDE)
    if override and not os.access(override, os.X_OK):
        return f"${_OVERRIDE} ({override}) is not an executable file"
    return None


def nafka_python(timeout_s: float = 300.0) -> Path:
    """$KAFKALOG_NAFKA_PYTHON, or the interpreter of nafka's own virtual environment, created
    from PyPI once and then cached. Raises BrokerUnavailableError when that fails."""
    why = nafka_unavailable()
    if why is not None:
        raise BrokerUnavailableError(why, where=_WHERE)
    override = os.environ.get(_OVERRIDE)
    if override:
        return Path(override)
    python = _cached_python()
    if not python.is_file():
        _install(python.parent.parent, timeout_s)
    return python


def _install(venv: Path, timeout_s: float) -> None:
    """A virtual environment with the pinned packages, made in a scratch folder beside `venv`
    and renamed into place: one that dies half-way is never trusted by later starts."""
    venv.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="install-", dir=venv.parent))
    try:
        _run([sys.executable, "-m", "venv", str(scratch)], timeout_s)
        _run([str(scratch / "bin" / "python"), "-m", "pip", "install", "--quiet",
              "--disable-pip-version-check", *_REQUIREMENTS], timeout_s)
        scratch.replace(venv)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run(argv: list[str], timeout_s: float) -> None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s,
                              check=False, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise BrokerUnavailableError(f"{' '.join(argv[-3:])} did not finish in {timeout_s:.0f} "
                                     "s", where=_WHERE) from None
    if done.returncode != 0:
        raise install_failure(done.stdout + done.stderr)


def install_failure(output: str) -> BrokerUnavailableError:
    """The typed error for a failed install, from pip's (or venv's) output, in one line."""
    text = " ".join(output.split())
    if _REFUSED.search(text):
        return PackageNotServedError(
            f"PyPI does not serve {' and '.join(_REQUIREMENTS)}; set {_OVERRIDE} to a Python "
            "that imports nafka 0.1", where=_WHERE)
    return BrokerUnavailableError(f"installing {' '.join(_REQUIREMENTS)} failed: "
                                  f"{text[-300:]}", where=_WHERE)


class NafkaBroker(ServerBroker):
    """One nafka process on a free loopback port; a context manager that stops it by PID, also
    when starting fails."""

    def __init__(self, log_path: Path, start_timeout_s: float = 30.0) -> None:
        python = nafka_python()
        self._prepare(log_path, "kafkalog-nafka-")
        with self._stopped_on_failure():
            self._spawn([str(python), "-c", LAUNCHER, "--port", str(self.port),
                         "--file", str(self._dir / "nafka.sqlite")])
            self._await_listening(start_timeout_s)
            self.version = self._reported_version()

    def _await_listening(self, timeout_s: float) -> None:
        assert self._proc is not None
        await_listening(self._proc, self.port, timeout_s, "nafka", self.log_path, _WHERE)

    def _reported_version(self) -> str:
        """The version the launcher printed first; the trace headers name the pinned one, so
        an interpreter with another nafka is refused."""
        try:
            first = self.log_path.read_text("utf-8", "replace").split("\n", 1)[0].split()
        except OSError:
            first = []
        found = first[1] if len(first) == 2 and first[0] == "nafka" else "unknown"
        if found != NAFKA_VERSION:
            raise BrokerUnavailableError(f"the interpreter runs nafka {found}, not the pinned "
                                         f"{NAFKA_VERSION}", where=_WHERE)
        return found
