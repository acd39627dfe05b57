"""A broker in a child process that prints its `HOST:PORT` as its first line on stdout.

kfake's Go main and librdkafka's mock cluster both start this way and both exit when their stdin
closes, so one class starts, watches and stops them (by PID, SIGKILL after a grace period).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import TracebackType
from typing import Self

from kafkalog.conformance.errors import BrokerUnavailableError


class AddressPrintingBroker:
    """One child broker; a context manager that stops it. Raises BrokerUnavailableError when
    the child exits or prints nothing before its address (the tail of its log says why)."""

    name = "broker"  # named in errors: what did not start

    def __init__(self, argv: list[str], log_path: Path) -> None:
        self.log_path = log_path
        self._log = log_path.open("wb")
        self._proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=self._log, text=True)
        self.pid = self._proc.pid
        assert self._proc.stdout is not None
        try:
            line = self._proc.stdout.readline().strip()
        except BaseException:
            self.stop()
            raise
        if not line:
            self.stop()
            tail = log_path.read_text("utf-8", "replace")[-300:]
            raise BrokerUnavailableError(f"{self.name} did not start: {tail}", where=self.name)
        self.address = line

    @property
    def alive(self) -> bool:
        return self._proc.poll() is None

    def stop(self, grace_s: float = 2.0) -> None:
        """Close the child's stdin (it exits), then SIGKILL it after `grace_s`."""
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            try:
                self._proc.stdin.close()
                self._proc.wait(timeout=grace_s)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        if not self._log.closed:
            self._log.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
