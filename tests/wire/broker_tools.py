"""What the live broker tests share: the CLI as a child process, a PID check, and the
signatures of a broker's recorded findings (tests/regressions/WIRE-<broker>-*.jsonl)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from kafkalog.conformance.traces.trace import read_trace

CLI = [sys.executable, "-c", "from kafkalog.cli.main import main; main()"]
REGRESSIONS = Path(__file__).resolve().parents[1] / "regressions"


def pid_alive(pid: int) -> bool:
    """Whether a process with this PID still exists (a stopped broker's must not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def finding_signatures(broker: str) -> frozenset[str]:
    """The signatures of the divergences recorded as `broker`'s findings (docs/brokers.md)."""
    return frozenset(read_trace(p).header.signature
                     for p in REGRESSIONS.glob(f"WIRE-{broker}-*.jsonl"))
