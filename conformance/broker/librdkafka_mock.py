"""librdkafka's mock cluster (PyPI confluent-kafka) as a broker process, stopped by its PID.

A producer configured with `test.mock.num.brokers=1` starts an in-memory mock broker on a
loopback port inside the client library; this module runs such a producer in a child Python
process that prints the mock's address and lives until its stdin closes or it is signalled. The
mock offers no CreateTopics, DeleteRecords or DescribeConfigs (it creates topics on Metadata),
which makes it the reference for how `check --wire` treats a broker that lacks an API.
"""

from __future__ import annotations

import sys
from pathlib import Path

from kafkalog.conformance.broker.child import AddressPrintingBroker
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


class LibrdkafkaMockBroker(AddressPrintingBroker):
    """One mock cluster of one broker in a child process; a context manager that stops it."""

    name = "librdkafka-mock"

    def __init__(self, log_path: Path) -> None:
        if not mock_available():
            raise BrokerUnavailableError("librdkafka's mock needs confluent-kafka "
                                         "(pip install confluent-kafka)", where="librdkafka-mock")
        super().__init__([sys.executable, "-c", _CHILD], log_path)
