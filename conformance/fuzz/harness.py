"""Run one hostile case in a sandbox and judge it against the reliability invariants.

The invariants (README, "Reliability"), each checked for every case:

1. **Typed failures only**: the log, `verify`, `dump`, the adapter and `replay` either succeed or
   raise a `KafkalogError`; any other exception (AssertionError from a `check()` included) is
   ungraceful.
2. **No hang**: each case finishes within `CASE_SECONDS` (a SIGALRM timer).
3. **Nothing outside the given directory is read or written**: every path the log touches goes
   through `GuardedFileSystem`, which records any whose directory resolves outside the sandbox
   root (symbolic links are the way out), and the canary directory beside the root is
   snapshotted before and after.
4. **verify and dump never write**: they run on a read-only `GuardedFileSystem` (any write call is
   a violation) and the directory's snapshot must not change.
5. **The adapter answers every line and stays usable**: one reply per non-blank line, the reply
   names the request's id when it is readable, no `UnexpectedException`, and a final handshake,
   open, append and state all succeed.
6. **Memory stays bounded**: `campaign` runs with RLIMIT_DATA (default 512 MiB, far above the
   ~32 MiB decompression bound and the O(chunk) index reads), so any MemoryError is ungraceful.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import shutil
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import FrameType
from typing import Any

from kafkalog.conformance.adapter.json_codec import FEATURES
from kafkalog.conformance.adapter.protocol import readable_request_id
from kafkalog.conformance.adapter.server import serve
from kafkalog.conformance.check.impl_sut import ImplSut
from kafkalog.conformance.check.scratch import new_scratch, remove_scratch
from kafkalog.conformance.fuzz.builders import CONFIG, build_every_codec_dir
from kafkalog.conformance.fuzz.mutators import FileMutation
from kafkalog.conformance.traces.replay import replay_trace
from kafkalog.conformance.traces.trace import loads_trace
from kafkalog.impl.fs.file_system import FileSystem, PathLike
from kafkalog.impl.load.log_dir import LogDir
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.time import MockTime
from kafkalog.impl.verify.dump import dump_path
from kafkalog.impl.verify.dump_text import render_text
from kafkalog.impl.verify.target import verify_path
from kafkalog.model.errors import KafkalogError
from kafkalog.model.values import Isolation, Record

CASE_SECONDS = 30.0


class Verdict(StrEnum):
    OK = "ok"  # the target succeeded
    TYPED = "typed"  # the target raised a KafkalogError (graceful)
    UNGRACEFUL = "ungraceful"  # an invariant above was broken


@dataclass
class CaseResult:
    """The verdict of one case, with what went wrong when it was ungraceful."""

    kind: str
    verdict: Verdict = Verdict.OK
    details: list[str] = field(default_factory=list)

    def typed(self) -> None:
        if self.verdict is Verdict.OK:
            self.verdict = Verdict.TYPED

    def broken(self, detail: str) -> None:
        self.verdict = Verdict.UNGRACEFUL
        self.details.append(detail)


class CaseTimeout(BaseException):
    """Raised by the alarm: a BaseException, so no `except Exception` in the code swallows it."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise CaseTimeout in the main thread after `seconds` (no-op off the main thread)."""
    def alarm(signum: int, frame: FrameType | None) -> None:
        raise CaseTimeout(f"case did not finish within {seconds} s")

    try:
        previous = signal.signal(signal.SIGALRM, alarm)
    except ValueError:  # not the main thread
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class GuardedFileSystem(FileSystem):
    """The real file system, recording accesses that leave `root` and (read-only) any write.

    A path is inside when its directory resolves inside `root`: the leaf itself is opened with
    O_NOFOLLOW by the seam, so only directory links could lead out.
    """

    def __init__(self, root: Path, read_only: bool) -> None:
        self.root = os.path.realpath(root)
        self.read_only = read_only
        self.violations: list[str] = []

    def _inside(self, path: PathLike, action: str) -> None:
        absolute = os.path.abspath(path)
        parent = os.path.realpath(os.path.dirname(absolute))
        resolved = os.path.join(parent, os.path.basename(absolute))
        if resolved != self.root and not resolved.startswith(self.root + os.sep):
            self.violations.append(f"{action} outside the directory: {path} -> {resolved}")

    def _write(self, path: PathLike, action: str) -> None:
        self._inside(path, action)
        if self.read_only:
            self.violations.append(f"{action} by a read-only tool: {path}")

    def open_file(self, path: PathLike, create: bool = False, writable: bool = True) -> Any:
        (self._write if writable or create else self._inside)(path, "open")
        return super().open_file(path, create, writable)

    def read_file(self, path: PathLike) -> bytes:
        self._inside(path, "read")
        return super().read_file(path)

    def list_dir(self, path: PathLike) -> list[str]:
        self._inside(path, "list")
        return super().list_dir(path)

    def list_files(self, path: PathLike) -> list[str]:
        self._inside(path, "list")
        return super().list_files(path)

    def mkdir(self, path: PathLike, parents: bool = True) -> None:
        self._write(path, "mkdir")
        super().mkdir(path, parents)

    def rename(self, src: PathLike, dst: PathLike) -> None:
        self._write(src, "rename")
        self._write(dst, "rename")
        super().rename(src, dst)

    def delete(self, path: PathLike) -> None:
        self._write(path, "delete")
        super().delete(path)

    def delete_if_exists(self, path: PathLike) -> bool:
        self._write(path, "delete")
        return super().delete_if_exists(path)

    def rmdir(self, path: PathLike) -> None:
        self._write(path, "rmdir")
        super().rmdir(path)

    def set_mtime_ms(self, path: PathLike, ms: int) -> None:
        self._write(path, "utime")
        super().set_mtime_ms(path, ms)

    def write_atomically(self, path: PathLike, data: bytes) -> None:
        self._write(path, "write")
        super().write_atomically(path, data)


def snapshot(root: Path) -> dict[str, tuple[Any, ...]]:
    """Every entry under `root` (links not followed): kind, size, mtime, and a content hash of
    files up to 1 MiB (larger ones are sparse extensions; size and mtime tell a change)."""
    out: dict[str, tuple[Any, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            digest = ""
            if os.path.isfile(path) and not os.path.islink(path) and st.st_size <= 1 << 20:
                with open(path, "rb") as f:
                    digest = hashlib.sha1(f.read()).hexdigest()
            out[os.path.relpath(path, root)] = (st.st_mode, st.st_size, st.st_mtime_ns, digest)
    return out


def guarded(result: CaseResult, what: str, action: Callable[[], object]) -> object:
    """Run one target call, turning its failure into the case's verdict."""
    try:
        return action()
    except KafkalogError:
        result.typed()
    except CaseTimeout as error:
        result.broken(f"{what}: {error}")
    except Exception as error:  # the point of the suite: any untyped failure is a finding
        result.broken(f"{what}: {type(error).__name__}: {str(error)[:200]}")
    return None


class Sandbox:
    """A pristine every-codec log directory, built once, copied for each case."""

    def __init__(self) -> None:
        # tmpfs when there is one: recovery fsyncs, which cost nothing there.
        self.home = new_scratch("kafkalog-fuzz-")
        self.pristine = build_every_codec_dir(self.home / "pristine")

    def fresh(self, n: int) -> tuple[Path, Path]:
        """(root, outside) for case `n`: a copy of the pristine dir and a canary dir beside it."""
        case = self.home / f"case-{n}"
        if case.exists():
            shutil.rmtree(case)
        root, outside = case / "logs", case / "outside"
        shutil.copytree(self.pristine, root, symlinks=True)
        outside.mkdir()
        (outside / "canary").write_bytes(b"must stay untouched\n")
        return root, outside

    def discard(self, n: int) -> None:
        shutil.rmtree(self.home / f"case-{n}", ignore_errors=True)

    def close(self) -> None:
        remove_scratch(self.home)


def run_file_case(sandbox: Sandbox, n: int, mutations: list[FileMutation],
                  deep: bool) -> CaseResult:
    """Damage a copy of the directory, then verify, dump and open it (invariants 1-4)."""
    result = CaseResult("files")
    root, outside = sandbox.fresh(n)
    try:
        with time_limit(CASE_SECONDS):
            try:
                touched = [m.apply(root, outside) for m in mutations]
            except OSError:  # a mutation that cannot apply here (e.g. a name clash): no case
                result.kind = "files-skipped"
                return result
            before, outside_before = snapshot(root), snapshot(outside)
            reader = GuardedFileSystem(root, read_only=True)
            guarded(result, "verify", lambda: verify_path(reader, root, deep))
            for path in {root, *(Path(t) for t in touched if t)}:
                # A path through (or naming) a directory link is the user's choice to follow,
                # so only paths whose directories resolve inside the root are dumped.
                parent, real_root = os.path.realpath(path.parent), os.path.realpath(root)
                inside = parent == real_root or parent.startswith(real_root + os.sep)
                if path.exists() and inside and not (path.is_symlink() and path.is_dir()):
                    guarded(result, f"dump {path.name}",
                            lambda p=path: list(render_text(dump_path(reader, p, deep))))
            if snapshot(root) != before:
                result.broken("verify or dump changed the directory")
            writer = GuardedFileSystem(root, read_only=False)
            guarded(result, "open", lambda: exercise_log_dir(writer, root))
            if snapshot(outside) != outside_before:
                result.broken("a file outside the directory changed")
            for violation in reader.violations + writer.violations:
                result.broken(violation)
    except CaseTimeout as error:
        result.broken(str(error))
    finally:
        sandbox.discard(n)
    return result


def exercise_log_dir(fs: FileSystem, root: Path) -> None:
    """Open (recovering), read, append, roll and close every partition.

    `Log.check()` is not asserted: after a clean shutdown, or below the recovery point, Kafka
    loads segments without re-validating them (REC-8), so damaged bytes legally stay there.
    """
    log_dir = LogDir.open(fs, root, CONFIG, MockTime(5_000))
    try:
        for log in log_dir.logs.values():
            log.read(log.log_start_offset, 4096, Isolation.LOG_END, True)
            log.fetch_offset_by_timestamp(0)
            log.append_as_leader(MemoryRecords.with_records([Record(None, b"v", 5_000)]), 99)
            log.roll()
    finally:
        log_dir.close()


# --- the adapter ---

TAIL = (b'{"id":900001,"action":"handshake","args":{"protocol_version":1}}',
        b'{"id":900002,"action":"open","args":{}}',
        b'{"id":900003,"action":"append_as_leader","args":{"records":[{"key":null,'
        b'"value":"eA==","timestamp":0}],"leader_epoch":0}}',
        b'{"id":900004,"action":"state"}')


def run_adapter_case(lines: list[bytes]) -> CaseResult:
    """Feed the lines, then a usable tail, to the real implementation's adapter (invariant 5)."""
    result = CaseResult("adapter")
    data = b"\n".join([*lines, *TAIL]) + b"\n"
    out = io.StringIO()
    try:
        with time_limit(CASE_SECONDS):
            serve(ImplSut, "fuzz", frozenset(FEATURES), stdin=io.BytesIO(data), stdout=out)
    except CaseTimeout as error:
        result.broken(str(error))
        return result
    except Exception as error:
        result.broken(f"serve raised {type(error).__name__}: {error}")
        return result
    replies = [json.loads(line) for line in out.getvalue().splitlines()]
    asked = [line for line in data.split(b"\n") if line.strip()]
    if len(replies) != len(asked):
        result.broken(f"{len(asked)} requests but {len(replies)} replies")
        return result
    for line, reply in zip(asked, replies, strict=True):
        error = reply.get("error") or {}
        if error.get("code") == "UnexpectedException" or "internal adapter error" in \
                str(error.get("message")):
            result.broken(f"untyped failure answering {line[:120]!r}: {error}")
        text = line.decode("utf-8", errors="replace")
        if readable_request_id(text) is not None and reply["id"] != readable_request_id(text):
            result.broken(f"reply id {reply['id']} for request {line[:80]!r}")
        if "error" in reply:
            result.typed()
    if not all("ok" in reply for reply in replies[-len(TAIL):]):
        result.broken(f"adapter unusable afterwards: {replies[-len(TAIL):]}")
    return result


# --- traces ---


def run_trace_case(text: str) -> CaseResult:
    """Parse and replay a damaged trace: TraceFormatError or a replay, never a traceback."""
    result = CaseResult("trace")
    try:
        with time_limit(CASE_SECONDS):
            trace = guarded(result, "parse", lambda: loads_trace(text, "<fuzz>"))
            if trace is None:
                return result
            # The real implementation, even when the header names a deliberately broken one.
            real = dataclasses.replace(trace, header=dataclasses.replace(trace.header,
                                                                         broken=None))
            replayed: Any = guarded(result, "replay", lambda: replay_trace(real))
            if replayed is None:
                return result
            if replayed.untyped:
                result.broken(f"replay could not start: {replayed.adapter_error}")
            elif replayed.adapter_error:
                result.typed()
            for step in replayed.steps:
                if step.divergence and step.divergence.startswith("harness error"):
                    result.broken(f"step {step.index} {step.call}: {step.divergence}")
                for side in (step.model, step.impl):
                    if side is not None and side.code == "UnexpectedException":
                        result.broken(f"step {step.index} {step.call}: {side.message}")
    except CaseTimeout as error:
        result.broken(str(error))
    return result
