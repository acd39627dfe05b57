"""Scratch directories for the logs under test, and the guarantee that none outlives its run.

Every directory a checker makes for a log (the live log, crash images, sweep and fuzz
workspaces) comes from `new_scratch` and goes through `remove_scratch`. Each owner removes its own
on the paths it knows; `scratch_scope` is the net under them: the entry points (replay, an adapter
session, a campaign run, a fuzz case) run inside one, and when it ends, however it ends (a typed
error, an untyped one, an interrupt), every directory its thread made inside it and did not
remove is removed. Directories are kept per thread, so a scope never touches another thread's
live logs, and scopes nest.

None of that runs when a signal's default action ends the process (SIGTERM kills the interpreter
without unwinding, so the CLI turns it into KeyboardInterrupt) or when it cannot be caught at all
(SIGKILL). So each directory's name carries its owner's PID, and the first `new_scratch` of a
process under a parent reaps the directories there whose owner is gone (`reap_orphans`).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: Scratch directories made and not removed yet, with the thread that made each.
_LIVE: dict[Path, int] = {}
_LOCK = threading.Lock()
#: Parents this process has reaped already (once per process is enough: orphans only appear when
#: another process dies, and the next run anywhere picks them up).
_REAPED: set[str] = set()
#: `new_scratch`'s names: a kafkalog- prefix, then `pid<owner>-` and mkdtemp's suffix (which has no
#: dash). The `pid` marker keeps other kafkalog- directories that end in a number (a broker's
#: `kafkalog-kafka-<version>-`) from reading as owned by a process.
_OWNED = re.compile(r"kafkalog-(?:.*-)?pid([0-9]+)-[a-z0-9_]+")


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
    """A new empty directory under `parent` (default: `scratch_dir()`), registered for removal.

    Its name is `<prefix>pid<this process>-<random>`; the first call for a parent also reaps the
    directories under it whose owner has died (`reap_orphans`).
    """
    where = parent or scratch_dir() or tempfile.gettempdir()
    with _LOCK:
        first = where not in _REAPED
        _REAPED.add(where)
    if first:
        reap_orphans(where)
    path = Path(tempfile.mkdtemp(prefix=f"{prefix}pid{os.getpid()}-", dir=where))
    with _LOCK:
        _LIVE[path] = threading.get_ident()
    return path


def remove_scratch(path: Path) -> None:
    """Remove a scratch directory and everything in it (a missing one is fine)."""
    shutil.rmtree(path, ignore_errors=True)
    with _LOCK:
        _LIVE.pop(path, None)


def reap_orphans(parent: str | Path) -> list[Path]:
    """Remove the scratch directories under `parent` whose owning process no longer exists.

    Only names `new_scratch` makes count, and only this user's directories: a live PID (or one
    this user may not signal), a name without a PID (older versions made those) and anything
    that cannot be read or removed are left alone. The PIDs are this PID namespace's, so a
    parent shared between containers with their own namespaces must not be a scratch parent.
    Returns the directories removed.
    """
    uid = os.getuid() if hasattr(os, "getuid") else None
    removed: list[Path] = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return removed
    for entry in entries:
        match = _OWNED.fullmatch(entry.name)
        if match is None or not _dead(int(match.group(1))):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
            if uid is not None and entry.stat(follow_symlinks=False).st_uid != uid:
                continue
        except OSError:
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        if not os.path.lexists(entry.path):
            removed.append(Path(entry.path))
    return removed


def _dead(pid: int) -> bool:
    """Whether no process `pid` exists (a zombie still does; so does one we may not signal)."""
    if pid <= 0:  # 0 and negatives would signal process groups
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (OSError, OverflowError):
        return False
    return False


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
