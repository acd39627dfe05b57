"""`check --wire-broker`: a run that ends in an adapter error restarts the broker before the
next run (kafkalog/cli/conformance_cmds.py, conformance/broker/registry.py RestartableBroker),
so a broker one run left broken does not fail every later run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from broker_tools import pid_alive
from click.testing import CliRunner
from kafkalog.conformance.broker import adapter as broker_adapter
from kafkalog.conformance.broker import registry
from kafkalog.conformance.broker.process import TansuBroker

from kafkalog.cli import main as cli_main
from kafkalog.cli.conformance_cmds import check


def test_check_wire_broker__a_run_ending_in_an_adapter_error__restarts_the_broker(
        tansu_bin: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first broker is gone before the first run (as a broker whose storage service ended
    is, for every request): that run ends in an adapter error, the check stops that PID and
    starts a fresh tansu on a new port, says so in one line, and the second run is checked on
    it (no adapter error); the fresh broker is stopped by its PID when the check ends."""
    started: list[TansuBroker] = []

    def start(log_path: Path) -> TansuBroker:
        broker = TansuBroker(tansu_bin, log_path)
        started.append(broker)
        if len(started) == 1:
            broker.stop()
        return broker

    monkeypatch.setitem(registry.BROKERS, "gone-tansu",
                        registry.BrokerKind("gone-tansu", "tansu that is gone at once", start))
    monkeypatch.setattr(broker_adapter, "probe_broker", lambda address: [])  # it would refuse
    monkeypatch.setattr(cli_main, "unwind_on_sigterm", lambda: None)  # pytest keeps its own

    out = tmp_path / "out"
    result = CliRunner().invoke(check, [
        "--wire-broker", "gone-tansu", "--examples", "2", "--steps", "5", "--family", "tiny",
        "--time-limit", "10", "--crash-weight", "0", "--out", str(out)])
    stderr = result.stderr
    assert result.exit_code in (0, 1), stderr[-3000:]
    assert len(started) == 2, stderr[-3000:]
    first, second = started
    assert first.address != second.address
    line = re.search(r"seed 0: gone-tansu restarted after an adapter error: pid (\d+) stopped, "
                     r"listens on (\S+) \(pid (\d+)\), log (\S+)", stderr)
    assert line is not None, stderr[-3000:]
    assert line.groups() == (str(first.pid), second.address, str(second.pid),
                             str(out / "gone-tansu.2.log"))
    assert not pid_alive(first.pid) and not pid_alive(second.pid)
    assert re.search(r"adapter_error seed 0 \(tiny\)", stderr), stderr[-3000:]
    assert "adapter_error seed 1" not in stderr, stderr[-3000:]
    trace = out / "seed-1-tiny.jsonl"
    if trace.exists():  # tansu diverges in most runs: a divergence found on the fresh broker
        header = json.loads(trace.read_text().splitlines()[0])
        assert f"--bootstrap {second.address}" in header["adapter"], header
