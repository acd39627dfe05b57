"""kafka-wire, installed from the Go module proxy, as a wire target (`--wire-broker kafka-wire`).

The first start runs `go install` of the pinned release into a cache folder
(conformance/broker/kafka_wire_broker.py); later starts take well under a second. The tests
that need the broker skip, with the reason, when Go is missing, and when the Go module proxy
refuses the pinned release (ModuleNotServedError: it then answers 403 for it) and no binary is
given in $KAFKALOG_KAFKA_WIRE_BIN. The tests of the typed start-up errors need neither.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_tools import CLI, finding_signatures, pid_alive
from kafkalog.conformance.broker import kafka_wire_broker as kw
from kafkalog.conformance.broker.adapter import broker_features, probe_broker
from kafkalog.conformance.broker.kafka_wire_broker import (
    KAFKA_WIRE_VERSION,
    KafkaWireBroker,
    ModuleNotServedError,
)
from kafkalog.conformance.broker.sut import Broker
from kafkalog.conformance.errors import BrokerUnavailableError

#: The divergences recorded as kafka-wire findings (docs/brokers.md): a short check may reach
#: these and nothing else.
FINDING_SIGNATURES = finding_signatures("kafka-wire")


def _skip_without_binary() -> None:
    reason = kw.kafka_wire_unavailable()
    if reason is not None:
        pytest.skip(f"kafka-wire cannot be built here: {reason}")
    try:
        kw.kafka_wire_binary()
    except ModuleNotServedError as error:
        pytest.skip(f"kafka-wire cannot be installed here: {error.message}")


@pytest.fixture(scope="module")
def kafka_wire(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaWireBroker]:
    _skip_without_binary()
    with KafkaWireBroker(tmp_path_factory.mktemp("kafka-wire") / "kafka-wire.log") as broker:
        yield broker


def test_kafka_wire__lacks_the_producer_apis__each_named_in_one_line(
        kafka_wire: KafkaWireBroker) -> None:
    """kafka-wire serves ListOffsets but no DeleteRecords, OffsetForLeaderEpoch,
    InitProducerId or transaction API: only `black_box` and `timestamps` are offered, and the
    probe names each missing API, and ListOffsets stopping at v5, with what is left out
    (KL-WIRE-1)."""
    conn = Broker(kafka_wire.address)
    try:
        assert broker_features(conn) == frozenset({"black_box", "timestamps"})
    finally:
        conn.close()
    limits = "\n".join(probe_broker(kafka_wire.address))
    for api in ("DeleteRecords", "OffsetForLeaderEpoch", "InitProducerId", "EndTxn"):
        assert f"the broker offers no {api} " in limits
    assert "ListOffsets up to v5 only" in limits  # MAX_TIMESTAMP needs v7


def test_check_wire_broker__kafka_wire__diverges_only_on_recorded_findings_and_stops_it(
        tmp_path: Path) -> None:
    """A short check ends with conformance or with divergences that are recorded findings
    (tests/regressions/WIRE-kafka-wire-*), never an adapter error; the broker's PID is gone
    afterwards and every trace header names the pinned version."""
    _skip_without_binary()
    done = subprocess.run(
        [*CLI, "check", "--wire-broker", "kafka-wire", "--examples", "6", "--steps", "20",
         "--max-failures", "0", "--time-limit", "30", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    assert "adapter_error seed" not in done.stderr, done.stderr[-3000:]
    headers = [json.loads(trace.read_text().splitlines()[0])
               for trace in tmp_path.glob("seed-*.jsonl")]
    assert (done.returncode == 0) == (not headers), done.stderr[-3000:]
    for header in headers:
        assert header["outcome"] == "diverged", done.stderr[-3000:]
        assert header["signature"] in FINDING_SIGNATURES, header["signature"]
        assert f"kafkalog-kafka-wire-{KAFKA_WIRE_VERSION}-" in header["adapter"]
    pid = int(re.search(r"listens on 127\.0\.0\.1:\d+ \(pid (\d+)\)", done.stderr).group(1))
    assert not pid_alive(pid)


def test_kafka_wire_broker__binary_that_reports_another_version__is_refused_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The trace headers name the pinned version, so a given binary must be that version."""
    fake = tmp_path / "kafka-wire"
    fake.write_text("#!/bin/sh\necho 'kafka-wire dev (commit none, go1.26.8, linux/amd64)'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("KAFKALOG_KAFKA_WIRE_BIN", str(fake))
    with pytest.raises(BrokerUnavailableError, match=r"reports version dev, not the pinned "):
        KafkaWireBroker(tmp_path / "kafka-wire.log")


def test_kafka_wire_binary__given_path_is_not_executable__is_a_typed_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKALOG_KAFKA_WIRE_BIN", str(tmp_path / "missing"))
    with pytest.raises(BrokerUnavailableError, match="is not an executable file"):
        kw.kafka_wire_binary()


def test_go_install_failure__proxy_answers_403__is_module_not_served() -> None:
    """The proxy's refusal is its own error naming the module and the way out, in one line."""
    error = kw._install_failure(
        "go: github.com/csnyder256/kafka-wire/cmd/kafka-wire@v0.1.0: reading https://proxy/"
        "github.com/csnyder256/kafka-wire/@v/v0.1.0.info: 403 Forbidden\n\tserver response: "
        "This module version is not available.")
    assert isinstance(error, ModuleNotServedError)
    assert "\n" not in error.message and "KAFKALOG_KAFKA_WIRE_BIN" in error.message
    other = kw._install_failure("go: build failed\nsomething else")
    assert not isinstance(other, ModuleNotServedError) and "\n" not in other.message
    dependency = kw._install_failure(
        "go: reading https://proxy/github.com/some/dependency/@v/v1.0.0.mod: 403 Forbidden")
    assert not isinstance(dependency, ModuleNotServedError)
