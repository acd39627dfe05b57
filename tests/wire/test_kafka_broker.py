"""Apache Kafka 3.9 and 4.4, started from the Maven registry's jars, as conforming wire targets.

Each test starts its own single-node KRaft broker on loopback (conformance/broker/kafka.py,
brokers/kafka/), which takes 10-20 s of JVM start on two cores; the checks are kept short.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_tools import CLI, pid_alive
from kafkalog.conformance.broker.adapter import broker_features
from kafkalog.conformance.broker.kafka import KafkaBroker, kafka_unavailable
from kafkalog.conformance.broker.registry import KAFKA_39, KAFKA_42, KAFKA_44, broker_kind
from kafkalog.conformance.broker.sut import Broker, BrokerSut
from kafkalog.conformance.errors import AdapterCrashedError
from kafkalog.conformance.gen.configs import config_family
from kafkalog.model import errors as e
from kafkalog.model import values as v


def _skip_without_kafka(version: str) -> None:
    reason = kafka_unavailable(version)
    if reason is not None:
        pytest.skip(f"Kafka {version} cannot be started here: {reason}")


@pytest.fixture(scope="module")
def kafka44(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    _skip_without_kafka(KAFKA_44)
    log = tmp_path_factory.mktemp("kafka44") / "kafka.log"
    with KafkaBroker(KAFKA_44, log) as broker:
        yield broker


@pytest.mark.parametrize("name,version", [("kafka-4.4", KAFKA_44), ("kafka-4.2", KAFKA_42),
                                          ("kafka-3.9", KAFKA_39)])
def test_check_wire_broker__apache_kafka__conforms_and_stops_its_broker(
        name: str, version: str, tmp_path: Path) -> None:
    """`check --wire-broker` starts Kafka on a free loopback port, every run conforms over the
    wire (KL-WIRE-1..8 on the conforming baseline), and the broker's PID is gone afterwards."""
    _skip_without_kafka(version)
    done = subprocess.run(
        [*CLI, "check", "--wire-broker", name, "--examples", "6", "--steps", "30",
         "--time-limit", "30", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "all runs conformed" in done.stderr
    pid = int(re.search(r"listens on 127\.0\.0\.1:\d+ \(pid (\d+)\)", done.stderr).group(1))
    assert not pid_alive(pid)
    assert (tmp_path / f"{name}.log").read_text().count("Kafka Server started") == 1


def test_kafka_44__offers_every_api_the_wire_check_uses(kafka44: KafkaBroker) -> None:
    """Kafka lists ListOffsets, OffsetForLeaderEpoch, InitProducerId and the transaction APIs,
    so nothing is left out (KL-WIRE-1, KL-WIRE-11, KL-WIRE-12)."""
    conn = Broker(kafka44.address)
    try:
        assert broker_features(conn) == frozenset({"black_box", "timestamps", "leader_epochs",
                                                   "producer_state", "transactions"})
    finally:
        conn.close()


def test_kafka_44__segment_bytes_below_one_mib__is_refused_at_create_topics(
        kafka44: KafkaBroker) -> None:
    """From 4.1 a topic's segment.bytes must be at least 1 MiB: CreateTopics answers
    INVALID_CONFIG, an adapter error rather than a run (KL-WIRE-4)."""
    conn = Broker(kafka44.address)
    try:
        with pytest.raises(AdapterCrashedError, match="at least 1048576"):
            BrokerSut(conn, broker_features(conn), config_family("tiny"))
    finally:
        conn.close()


def test_kafka_44__internal_segment_bytes__bounds_a_batch_like_segment_bytes(
        kafka44: KafkaBroker) -> None:
    """With `internal.segment.bytes` (the kafka-4.4 entry's adapter option) a batch larger than
    the segment is RECORD_LIST_TOO_LARGE, as the model's RecordBatchTooLargeError (KL-WIRE-4)."""
    options = broker_kind("kafka-4.4").adapter_options
    conn = Broker(kafka44.address, segment_key=options[options.index("--segment-bytes-config")
                                                        + 1])
    config = v.LogConfig(segment_bytes=200, max_message_bytes=1_000)
    log = BrokerSut(conn, broker_features(conn), config)
    try:
        assert log.append_as_leader((v.Record(None, b"x" * 50, 1000),), 0).first_offset == 0
        with pytest.raises(e.RecordBatchTooLargeError):
            log.append_as_leader((v.Record(None, b"x" * 300, 1001),), 0)
    finally:
        log.close()
        conn.close()
