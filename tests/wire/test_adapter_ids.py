"""Every request gets a reply with its own id, and a broker that lacks an API is said so in one
line: against librdkafka's mock cluster (no CreateTopics, no DeleteRecords) and an unused port."""

from __future__ import annotations

import io
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_tools import CLI
from kafkalog.conformance.adapter.server import serve
from kafkalog.conformance.adapter.subprocess_sut import AdapterProcess
from kafkalog.conformance.broker.librdkafka_mock import LibrdkafkaMockBroker, mock_available
from kafkalog.conformance.broker.process import free_loopback_port
from kafkalog.model import values as v

from kafkalog.cli.wire_cmds import wire_adapter_command


@pytest.fixture(scope="module")
def mock(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LibrdkafkaMockBroker]:
    if not mock_available():
        pytest.skip("confluent-kafka is not installed: pip install confluent-kafka")
    with LibrdkafkaMockBroker(tmp_path_factory.mktemp("mock") / "mock.log") as broker:
        yield broker


def _serve(factory, lines: list[dict]) -> list[dict]:  # type: ignore[no-untyped-def]
    out = io.StringIO()
    serve(factory, "test", frozenset({"black_box"}),
          stdin=io.StringIO("".join(json.dumps(line) + "\n" for line in lines)), stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_serve__an_adapter_bug_in_open__answers_the_request_id_with_a_one_line_message() -> None:
    """An untyped exception inside the adapter keeps the request's id and names the error in
    one line (specs/adapter-protocol.md); the next request is still served (KL-WIRE-8)."""
    def factory(config: v.LogConfig, now_ms: int, log_start_offset: int):  # type: ignore[no-untyped-def]
        raise RuntimeError("first line\nsecond line")

    replies = _serve(factory, [
        {"id": 1, "action": "handshake", "args": {"protocol_version": 2}},
        {"id": 2, "action": "open", "args": {}},
        {"id": 3, "action": "open", "args": {}},
    ])
    assert [r["id"] for r in replies] == [1, 2, 3]
    message = replies[1]["error"]["message"]
    assert "RuntimeError: first line second line" in message and "\n" not in message


def test_wire_adapter__broker_without_create_topics__answers_open_with_its_id_and_reason(
        mock: LibrdkafkaMockBroker) -> None:
    """The mock has no CreateTopics: a run whose limits it cannot apply is refused with the
    request's id and a one-line typed error; Kafka's defaults open an auto-created topic
    (KL-WIRE-4)."""
    process = AdapterProcess(wire_adapter_command(mock.address))
    try:
        assert process.features == frozenset({"black_box", "timestamps", "leader_epochs",
                                              "producer_state", "transactions"})
        with pytest.raises(Exception, match="no CreateTopics") as caught:
            process.request("open", {"config": {"segment_bytes": 400}, "now_ms": 0})
        assert "does not match request" not in str(caught.value)
        assert process.request("open", {"config": {}, "now_ms": 0}) is None
        assert "no DeleteRecords" in process.stderr_tail()
    finally:
        process.close()


def test_check_wire__broker_without_create_topics__says_what_is_left_out_and_runs(
        mock: LibrdkafkaMockBroker, tmp_path: Path) -> None:
    """`check --wire` names each missing API in one line, runs only kafka_defaults, and every
    run ends in a compared step, never in an adapter error over a lost reply id (KL-WIRE-1)."""
    done = subprocess.run(
        [*CLI, "check", "--wire", mock.address, "--examples", "2", "--steps", "10",
         "--time-limit", "20", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=120, check=False)
    lines = done.stderr.splitlines()
    assert any(line.startswith("the broker offers no CreateTopics (api 19)") for line in lines)
    assert any(line.startswith("the broker offers no DeleteRecords (api 21)") for line in lines)
    assert "reply id None" not in done.stderr and "adapter_error" not in done.stderr
    assert "(kafka_defaults)" in done.stderr, done.stderr[-2000:]


def test_check_wire__nothing_listening__ends_with_one_line_and_exit_2(tmp_path: Path) -> None:
    """A broker that cannot be used at all ends `check` before any run: one line, exit 2."""
    done = subprocess.run(
        [*CLI, "check", "--wire", f"127.0.0.1:{free_loopback_port()}", "--examples", "2",
         "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "BrokerUnavailableError" in done.stderr and "cannot connect" in done.stderr
