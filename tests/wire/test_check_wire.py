"""`kafkalog check --wire` against tansu: a bounded run that finds and saves broker divergences."""

from __future__ import annotations

import subprocess
from pathlib import Path

from broker_tools import CLI
from kafkalog.conformance.broker.process import TansuBroker
from kafkalog.conformance.traces.replay import replay_trace
from kafkalog.conformance.traces.trace import read_trace


def test_check_wire__against_tansu__saves_short_replayable_traces_of_its_divergences(
        tansu: TansuBroker, tmp_path: Path) -> None:
    """Four runs of 25 steps (about 10 s): each diverges (tansu has findings at every turn,
    README "Findings"), the summary reports steps/s and rules, every trace is at most a few
    steps long, names the wire adapter, and replays on the model alone (KL-WIRE-1,
    KL-WIRE-2, KL-WIRE-3)."""
    done = subprocess.run(
        [*CLI, "check", "--wire", tansu.address, "--broker-log", str(tansu.log_path),
         "--examples", "4", "--steps", "25", "--time-limit", "8", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "steps/s" in done.stderr and "spec rules exercised" in done.stderr
    assert "adapter_error" not in done.stderr, done.stderr[-2000:]
    traces = sorted(tmp_path.glob("*.jsonl"))
    assert traces, done.stderr[-2000:]
    for path in traces:
        trace = read_trace(path)
        assert "wire-adapter" in trace.header.adapter
        assert len(trace.steps) <= 5, path.read_text()
        assert replay_trace(trace, adapter="model").conformed
