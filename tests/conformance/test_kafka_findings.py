"""Findings in Apache Kafka's own log (tests/regressions/kafka/, docs/kafka.md).

Each trace there was found by `kafkalog check --kafka VERSION` and triaged as a Kafka bug: its
header's `finding` names the release ("Apache Kafka 4.4.0"). The built-in implementation must
conform on it (kafkalog does what the model says). When Java and Maven are installed, Kafka's
own log, through the JVM adapter, must still diverge at the trace's last step with the recorded
signature, so the trace keeps pinning the bug; a release that fixes it makes this test fail and
the finding is then closed in docs/kafka.md.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kafkalog.conformance.traces.replay import replay_trace
from kafkalog.conformance.traces.trace import Trace, read_trace

CORPUS = Path(__file__).resolve().parents[1] / "regressions" / "kafka"
FINDINGS = sorted(CORPUS.glob("KAFKA-*.jsonl"))
# One replay: a JVM start, a handful of steps, the adapter from the build cache (a first build
# resolves Kafka's jars with Maven, which takes minutes).
KAFKA_REPLAY_TIMEOUT_S = 900


def _release(trace: Trace) -> str:
    finding = trace.header.finding
    assert finding is not None and finding.startswith("Apache Kafka "), finding
    return finding.removeprefix("Apache Kafka ")


def test_corpus__every_kafka_trace_is_a_named_finding() -> None:
    """Each file is named KAFKA-<release>-<what> after the release its header's finding names."""
    assert FINDINGS
    for path in FINDINGS:
        trace = read_trace(path)
        assert path.name.startswith(f"KAFKA-{_release(trace)}-"), path.name
        assert trace.header.signature and trace.steps[-1].divergence, path.name


@pytest.mark.parametrize("path", FINDINGS, ids=lambda p: p.stem)
def test_kafka_finding__replayed_on_the_builtin_implementation__conforms(path: Path) -> None:
    """kafkalog's implementation does what the model says where Kafka does not."""
    trace = read_trace(path)
    real = Trace(dataclasses.replace(trace.header, broken=None), trace.steps)
    result = replay_trace(real)
    assert result.conformed, (result.diverged_at, result.signature, result.adapter_error)


@pytest.mark.skipif(shutil.which("java") is None or shutil.which("mvn") is None,
                    reason="Kafka's own log needs java and mvn (the JVM adapter, adapters/kafka/)")
@pytest.mark.parametrize("path", FINDINGS, ids=lambda p: p.stem)
def test_kafka_finding__replayed_on_kafka_itself__still_diverges_at_its_last_step(
    path: Path,
) -> None:
    """The bug is still in that Kafka release: the same divergence at the same step."""
    trace = read_trace(path)
    done = subprocess.run(
        [sys.executable, "-m", "kafkalog", "replay", str(path), "--kafka", _release(trace)],
        capture_output=True, text=True, timeout=KAFKA_REPLAY_TIMEOUT_S, check=False)
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    assert done.returncode == 1, last
    assert last == f"diverged at step {len(trace.steps)}: {trace.header.signature}", last
