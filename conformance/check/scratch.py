"""Scratch directories for the logs under test, and the guarantee that none outlives its run.

Every directory a checker makes for a log (the live log, crash images, sweep and fuzz
workspaces) comes from `new_scratch` and goes through `remove_scratch`. Each owner removes its own
on the paths it knows; `scratch_scope` is the net under them: the entry points (replay, an adapter
session, a campaign run, a fuzz case) run inside one, and when it ends, however it ends (a typed
error, an untyped one, an interrupt), every directory its thread made inside it and did not
remove is removed. Directories are kept per thread, so a scope never touches another thread's
live logs, and scopes nest.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: Scratch directories made and not removed yet, with the thread that made each.
_LIVE: dict[Path, int] = {}
_LOCK = threading.Lock()


def scratch_dir() -> str | None:
    """Where the logs under test live: tmpfs when the machine has one.

    Lockstep runs open, fsync and delete thousands of small files while shrinking; on tmpfs an
    fsync costs nothing, which makes runs several times faster. Durability itself is the subject
    of the crash tests, not of lockstep runs. KAFKALOG_SCRATCH overrides the choice.
    """
    chosen = os.environ.get("KAFKALOG_SCRATCH")
    if chosen:
        return chosen
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def new_scratch(prefix: str = "kafkalog-conformance-", parent: str | None = None) -> Path:
    """A new empty directory under `parent` (default: `scratch_dir()`), registered for removal."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent or scratch_dir()))
    with _LOCK:
        _LIVE[path] = threading.get_ident()
    return path


def remove_scratch(path: Path) -> None:
    """Remove a scratch directory and everything in it (a missing one is fine)."""
    shutil.rmtree(path, ignore_errors=True)
    with _LOCK:
        _LIVE.pop(path, None)


@contextmanager
def scratch_scope() -> Iterator[None]:
    """Every scratch directory this thread makes inside the block is gone when it ends."""
    me = threading.get_ident()
    with _LOCK:
        before = set(_LIVE)
    try:
        yield
    finally:
        with _LOCK:
            left = [p for p, owner in _LIVE.items() if owner == me and p not in before]
        for path in left:
            remove_scratch(path)
