"""nafka, installed from PyPI into a virtual environment of its own, as a wire target
(`--wire-broker nafka`).

The first start makes that environment (`pip install nafka==0.1 kafka-python==2.3.3`, a few
seconds; conformance/broker/nafka_broker.py); later starts take about a second. The tests that
need the broker skip, with the reason, only when PyPI refuses the pinned packages
(PackageNotServedError) and no interpreter is given in $KAFKALOG_NAFKA_PYTHON. The tests of the
typed start-up errors need neither.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_tools import CLI, finding_signatures, pid_alive
from kafkalog.conformance.broker import nafka_broker as nb
from kafkalog.conformance.broker.adapter import broker_features, probe_broker
from kafkalog.conformance.broker.nafka_broker import (
    NAFKA_VERSION,
    NafkaBroker,
    PackageNotServedError,
)
from kafkalog.conformance.broker.sut import Broker
from kafkalog.conformance.errors import BrokerUnavailableError

#: The divergences recorded as nafka findings (docs/brokers.md): a short check reaches these
#: and nothing else.
FINDING_SIGNATURES = finding_signatures("nafka")


def _skip_without_nafka() -> None:
    reason = nb.nafka_unavailable()
    if reason is not None:
        pytest.skip(f"nafka cannot be started here: {reason}")
    try:
        nb.nafka_python()
    except PackageNotServedError as error:
        pytest.skip(f"nafka cannot be installed here: {error.message}")


@pytest.fixture(scope="module")
def nafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NafkaBroker]:
    _skip_without_nafka()
    with NafkaBroker(tmp_path_factory.mktemp("nafka") / "nafka.log") as broker:
        yield broker


def test_nafka__lacks_create_topics_and_the_producer_apis__each_named_in_one_line(
        nafka: NafkaBroker) -> None:
    """nafka serves Produce, Fetch, ListOffsets (v5) and Metadata only: `black_box` and
    `timestamps` are offered, and the probe names each missing API with what is left out, and
    that the handshake needed ApiVersions v3 (nafka answers v0 in v4's layout) (KL-WIRE-1)."""
    conn = Broker(nafka.address)
    try:
        assert broker_features(conn) == frozenset({"black_box", "timestamps"})
        assert conn.control.api_versions_version == 3
    finally:
        conn.close()
    limits = "\n".join(probe_broker(nafka.address))
    for api in ("CreateTopics", "DeleteRecords", "OffsetForLeaderEpoch", "InitProducerId",
                "EndTxn"):
        assert f"the broker offers no {api} " in limits
    assert "the handshake used ApiVersions v3 (KIP-511)" in limits
    assert "ListOffsets up to v5 only" in limits  # MAX_TIMESTAMP needs v7


def test_check_wire_broker__nafka__diverges_only_on_recorded_findings_and_stops_it(
        tmp_path: Path) -> None:
    """A short check (the kafka_defaults family only: no CreateTopics) diverges, every run in a
    recorded finding (tests/regressions/WIRE-nafka-*), never an adapter error; the broker's PID
    is gone afterwards and every trace header names the pinned version."""
    _skip_without_nafka()
    done = subprocess.run(
        [*CLI, "check", "--wire-broker", "nafka", "--examples", "4", "--steps", "20",
         "--max-failures", "0", "--time-limit", "30", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 1, done.stderr[-3000:]
    assert "adapter_error seed" not in done.stderr, done.stderr[-3000:]
    headers = [json.loads(trace.read_text().splitlines()[0])
               for trace in tmp_path.glob("seed-*.jsonl")]
    assert headers, done.stderr[-3000:]
    for header in headers:
        assert header["outcome"] == "diverged", done.stderr[-3000:]
        assert header["config_family"] == "kafka_defaults"
        assert header["signature"] in FINDING_SIGNATURES, header["signature"]
        assert f"kafkalog-nafka-{NAFKA_VERSION}-" in header["adapter"]
    pid = int(re.search(r"listens on 127\.0\.0\.1:\d+ \(pid (\d+)\)", done.stderr).group(1))
    assert not pid_alive(pid)


def test_nafka_python__given_path_is_not_executable__is_a_typed_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKALOG_NAFKA_PYTHON", str(tmp_path / "missing"))
    with pytest.raises(BrokerUnavailableError, match="is not an executable file"):
        nb.nafka_python()


def test_nafka_broker__interpreter_with_another_nafka__is_refused_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The trace headers name the pinned version, so a given interpreter must run that nafka:
    a stand-in that reports 0.2 and then listens is stopped and refused."""
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\necho 'nafka 0.2'\nexec {sys.executable} -c '"
                    "import socket, sys, time; s = socket.socket(); "
                    "s.bind((\"127.0.0.1\", int(sys.argv[sys.argv.index(\"--port\") + 1]))); "
                    "s.listen(); time.sleep(60)' \"$@\"\n")
    fake.chmod(0o755)
    monkeypatch.setenv("KAFKALOG_NAFKA_PYTHON", str(fake))
    with pytest.raises(BrokerUnavailableError, match=r"runs nafka 0\.2, not the pinned 0\.1"):
        NafkaBroker(tmp_path / "nafka.log")


def test_install_failure__pypi_has_no_such_release__is_package_not_served() -> None:
    """PyPI's refusal is its own error naming the packages and the way out, in one line."""
    error = nb.install_failure(
        "ERROR: Could not find a version that satisfies the requirement nafka==0.1 (from "
        "versions: none)\nERROR: No matching distribution found for nafka==0.1\n")
    assert isinstance(error, PackageNotServedError)
    assert "\n" not in error.message and "KAFKALOG_NAFKA_PYTHON" in error.message
    other = nb.install_failure("Error: Command '['python', '-m', 'ensurepip']' returned 1\n")
    assert not isinstance(other, PackageNotServedError) and "\n" not in other.message
