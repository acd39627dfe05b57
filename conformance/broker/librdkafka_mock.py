"""librdkafka's mock cluster (PyPI confluent-kafka) as a broker process, stopped by its PID.

A producer configured with `test.mock.num.brokers=1` starts an in-memory mock broker on a
loopback port inside the client library; this module runs such a producer in a child Python
process that prints the mock's address and lives until its stdin closes or it is signalled. The
mock offers no CreateTopics, DeleteRecords or DescribeConfigs (it creates topics on Metadata),
which makes it the reference for how `check --wire` treats a broker that lacks an API.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import TracebackType

from kafkalog.conformance.errors import BrokerUnavailableError

_CHILD = """
import sys
from confluent_kafka import Producer
producer = Producer({"test.mock.num.brokers": 1, "bootstrap.servers": "unused:1"})
broker = next(iter(producer.list_topics(timeout=10).brokers.values()))
print(f"{broker.host}:{broker.port}", flush=True)
sys.stdin.read()  # until the parent closes stdin or stops this process
"""


def mock_available() -> bool:
    try:
        import confluent_kafka  # noqa: F401
    except ModuleNotFoundError:
        return False
    return True


class LibrdkafkaMockBroker:
    """One mock cluster of one broker in a child process; a context manager that stops it."""

    def __init__(self, log_path: Path, start_timeout_s: float = 20.0) -> None:
        if not mock_available():
            raise BrokerUnavailableError("librdkafka's mock needs confluent-kafka "
                                         "(pip install confluent-kafka)", where="librdkafka-mock")
        self.log_path = log_path
        self._log = log_path.open("wb")
        self._proc = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=self._log, text=True)
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
            raise BrokerUnavailableError(f"the mock did not start: {tail}",
                                         where="librdkafka-mock")
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
        self._log.close()

    def __enter__(self) -> LibrdkafkaMockBroker:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
