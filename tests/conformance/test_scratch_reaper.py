"""Scratch directories outlive no run a signal ends: SIGTERM unwinds through `scratch_scope`, and
what SIGKILL leaves behind (its owner's PID in the name) the next process reaps."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from kafkalog.conformance.check.scratch import reap_orphans

from kafkalog.cli.main import unwind_on_sigterm

# A child that makes a scratch directory inside a scope, says where, and sleeps until a signal.
OWNER = """
import sys, time
from kafkalog.cli.main import unwind_on_sigterm
from kafkalog.conformance.check.scratch import new_scratch, scratch_scope
if sys.argv[1] == "unwind":
    unwind_on_sigterm()
try:
    with scratch_scope():
        print(new_scratch(), flush=True)
        time.sleep(60)
except KeyboardInterrupt:
    sys.exit(130)
"""
# A fresh process's first scratch directory, left for the test to see.
NEXT = """
from kafkalog.conformance.check.scratch import new_scratch
print(new_scratch(), flush=True)
"""
CLI = [sys.executable, "-c", "from kafkalog.cli.main import main; main()"]


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    root = tmp_path / "scratch"
    root.mkdir()
    return root


def _env(scratch: Path) -> dict[str, str]:
    return {**os.environ, "KAFKALOG_SCRATCH": str(scratch)}


def _exited_pid() -> int:
    """The PID of a process that has exited and been waited for."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _start_owner(scratch: Path, mode: str) -> tuple[subprocess.Popen[str], Path]:
    proc = subprocess.Popen([sys.executable, "-c", OWNER, mode], env=_env(scratch),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    path = Path(proc.stdout.readline().strip())
    assert path.is_dir() and path.parent == scratch, proc.stderr and proc.stderr.read()
    return proc, path


def _stop(proc: subprocess.Popen[str], signum: int) -> int:
    proc.send_signal(signum)
    try:
        proc.communicate(timeout=30)
    finally:
        proc.kill()
    return proc.returncode


def test_reap_orphans__removes_only_directories_whose_owner_is_gone(scratch: Path) -> None:
    dead, me = _exited_pid(), os.getpid()
    orphan = scratch / f"kafkalog-conformance-pid{dead}-ab12_xyz"
    (orphan / "conformance-0").mkdir(parents=True)
    (orphan / "conformance-0" / "00000000000000000000.log").write_bytes(b"x" * 100)
    orphan_sweep = scratch / f"kafkalog-sweep-pid{dead}-q9w8e7r6"
    orphan_sweep.mkdir()
    kept = [
        f"kafkalog-conformance-pid{me}-live0001",  # its owner runs
        "kafkalog-conformance-mxrpojzg",  # an older version's name: no PID to tell
        "kafkalog-kafka-4-abcdefgh",  # a kafkalog- directory whose number is no PID
        f"other-tool-pid{dead}-abcdefgh",  # not ours
        "kafkalog-conformance-pid0-abcdefgh",  # PID 0 would signal our own process group
    ]
    for name in kept:
        (scratch / name).mkdir()
    (scratch / f"kafkalog-conformance-pid{dead}-afile123").write_text("a file, not a directory")

    removed = reap_orphans(scratch)

    assert sorted(removed) == sorted([orphan, orphan_sweep])
    assert sorted(p.name for p in scratch.iterdir()) == sorted(
        [*kept, f"kafkalog-conformance-pid{dead}-afile123"])


def test_reap_orphans__missing_parent__removes_nothing(tmp_path: Path) -> None:
    assert reap_orphans(tmp_path / "absent") == []


def test_sigterm__after_the_cli_handler__unwinds_and_leaves_no_directory(scratch: Path) -> None:
    proc, path = _start_owner(scratch, "unwind")
    assert f"-pid{proc.pid}-" in path.name  # the owner can be told from the name

    assert _stop(proc, signal.SIGTERM) == 130  # it unwound, as on Ctrl-C
    assert list(scratch.iterdir()) == []


def test_sigkill__leaves_the_directory__and_the_next_process_reaps_it(scratch: Path) -> None:
    proc, path = _start_owner(scratch, "unwind")

    assert _stop(proc, signal.SIGKILL) == -signal.SIGKILL
    assert path.is_dir()  # nothing runs on SIGKILL

    after = subprocess.run([sys.executable, "-c", NEXT], env=_env(scratch), check=True,
                           capture_output=True, text=True, timeout=60)
    fresh = Path(after.stdout.strip())
    assert sorted(scratch.iterdir()) == [fresh]  # the orphan went; the new one stays


def test_sigterm__cli_command__unwinds_with_one_line_and_no_directory(scratch: Path) -> None:
    """Every command gets the handler from `main`: a serve-adapter session with an open log."""
    proc = subprocess.Popen([*CLI, "serve-adapter"], env=_env(scratch), text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write('{"id":1,"action":"handshake","args":{"protocol_version":1}}\n'
                     '{"id":2,"action":"open","args":{}}\n')
    proc.stdin.flush()
    replies = [json.loads(proc.stdout.readline()) for _ in range(2)]
    assert "ok" in replies[1], replies
    assert len(list(scratch.iterdir())) == 1  # the open log's directory

    proc.send_signal(signal.SIGTERM)
    try:
        _, stderr = proc.communicate(timeout=30)
    finally:
        proc.kill()

    assert proc.returncode == 130
    assert "Traceback" not in stderr
    assert [line for line in stderr.splitlines() if line.strip()] == ["kafkalog: aborted"]
    assert list(scratch.iterdir()) == []


def test_unwind_on_sigterm__an_ignored_sigterm_stays_ignored() -> None:
    before = signal.getsignal(signal.SIGTERM)
    try:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        assert unwind_on_sigterm() is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        assert unwind_on_sigterm() is signal.SIG_DFL
        assert signal.getsignal(signal.SIGTERM) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGTERM, before)
