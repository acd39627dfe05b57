"""franz-go's kfake, built from brokers/kfake, as a wire target (`--wire-broker kfake`).

The first test builds the Go main when no cached binary exists (conformance/broker/kfake.py),
which with a cold Go module cache downloads kfake from the module proxy; later starts take well
under a second. Every test is skipped, with the reason, only when Go is missing.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_tools import CLI, pid_alive
from kafkalog.conformance.broker.adapter import broker_features
from kafkalog.conformance.broker.kfake import KFAKE_VERSION, KfakeBroker, kfake_unavailable
from kafkalog.conformance.broker.sut import Broker


def _skip_without_go() -> None:
    reason = kfake_unavailable()
    if reason is not None:
        pytest.skip(f"kfake cannot be built here: {reason}")


@pytest.fixture(scope="module")
def kfake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KfakeBroker]:
    _skip_without_go()
    with KfakeBroker(tmp_path_factory.mktemp("kfake") / "kfake.log") as broker:
        yield broker


def test_kfake__offers_every_api_the_wire_check_uses(kfake: KfakeBroker) -> None:
    """kfake lists ListOffsets, OffsetForLeaderEpoch, InitProducerId and the transaction APIs,
    so nothing is left out (KL-WIRE-1, KL-WIRE-11, KL-WIRE-12)."""
    conn = Broker(kfake.address)
    try:
        assert broker_features(conn) == frozenset({"black_box", "timestamps", "leader_epochs",
                                                   "producer_state", "transactions"})
    finally:
        conn.close()


def test_check_wire_broker__kfake_past_its_findings__conforms_and_stops_its_broker(
        tmp_path: Path) -> None:
    """With `end_offset_for_epoch` left out (its epoch -1 finding) and without `roomy` (the
    only family whose batches outgrow a segment), seeds 0-2 conform over the wire (they reach none
    of kfake's other findings, docs/brokers.md), and the broker's PID is gone afterwards."""
    _skip_without_go()
    done = subprocess.run(
        [*CLI, "check", "--wire-broker", "kfake", "--examples", "3", "--steps", "20",
         "--family", "tiny", "--family", "index_full",
         "--wire-exclude", "end_offset_for_epoch", "--time-limit", "20", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "all runs conformed" in done.stderr
    pid = int(re.search(r"listens on 127\.0\.0\.1:\d+ \(pid (\d+)\)", done.stderr).group(1))
    assert not pid_alive(pid)


def test_check_wire_broker__kfake_finding__trace_header_names_the_exact_kfake_version(
        tmp_path: Path) -> None:
    """A diverging run's trace records kfake's pinned version in its adapter command line, so a
    finding names the kfake it was found in."""
    _skip_without_go()
    done = subprocess.run(
        [*CLI, "check", "--wire-broker", "kfake", "--examples", "1", "--steps", "20",
         "--seed", "2", "--family", "size_retention", "--time-limit", "20",
         "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 1, done.stderr[-3000:]
    traces = sorted(tmp_path.glob("seed-*.jsonl"))
    assert traces, done.stderr[-3000:]
    header = json.loads(traces[0].read_text().splitlines()[0])
    assert KFAKE_VERSION.startswith("v") and f"kafkalog-kfake-{KFAKE_VERSION}-" in header["adapter"]
