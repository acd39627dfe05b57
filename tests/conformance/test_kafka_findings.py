"""Apache Kafka's own log under the checker: the traces of tests/regressions/kafka/ (docs/kafka.md).

Every trace there was found by `kafkalog check --kafka VERSION`. A `KAFKA-<release>-<what>`
trace was triaged as a Kafka bug: its header's `finding` names the release ("Apache Kafka
4.4.0"). The built-in implementation must conform on it (kafkalog does what the model says);
when Java and Maven are installed, Kafka's own log, through the JVM adapter, must still diverge
at the trace's last step with the recorded signature, so the trace keeps pinning the bug (a
release that fixes it makes this test fail and the finding is closed in docs/kafka.md). A
`<rule>-<release>-<what>` trace was a model or checker error, fixed under that rule: the
built-in implementation and that Kafka release must both conform on it.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kafkalog.conformance.traces.replay import replay_trace
from kafkalog.conformance.traces.trace import Trace, read_trace

CORPUS = Path(__file__).resolve().parents[1] / "regressions" / "kafka"
FINDINGS = sorted(CORPUS.glob("KAFKA-*.jsonl"))
FIXED = sorted(p for p in CORPUS.glob("KL-*.jsonl"))
NO_JVM = shutil.which("java") is None or shutil.which("mvn") is None
NO_JVM_REASON = "Kafka's own log needs java and mvn (the JVM adapter, adapters/kafka/)"
# One replay: a JVM start, a handful of steps, the adapter from the build cache (a first build
# resolves Kafka's jars with Maven, which takes minutes).
KAFKA_REPLAY_TIMEOUT_S = 900


def _release(trace: Trace) -> str:
    finding = trace.header.finding
    assert finding is not None and finding.startswith("Apache Kafka "), finding
    return finding.removeprefix("Apache Kafka ")


def _fixed_release(path: Path) -> str:
    found = re.match(r"KL-[A-Z]+-\d+-(\d+\.\d+\.\d+)-", path.name)
    assert found is not None, path.name
    return found.group(1)


def _replay_on_kafka(path: Path, release: str) -> tuple[int, str]:
    """(exit status, last line) of `kafkalog replay PATH --kafka RELEASE`, bounded in time."""
    done = subprocess.run(
        [sys.executable, "-m", "kafkalog", "replay", str(path), "--kafka", release],
        capture_output=True, text=True, timeout=KAFKA_REPLAY_TIMEOUT_S, check=False)
    return done.returncode, (done.stdout.strip().splitlines() or [done.stderr])[-1]


def test_corpus__every_kafka_trace_is_a_named_finding_or_a_fixed_rule() -> None:
    """KAFKA-<release>-<what> files carry the finding of that release and a divergence; the
    <rule>-<release>-<what> files carry none."""
    assert FINDINGS and FIXED
    assert sorted(CORPUS.glob("*.jsonl")) == sorted(FINDINGS + FIXED)
    for path in FINDINGS:
        trace = read_trace(path)
        assert path.name.startswith(f"KAFKA-{_release(trace)}-"), path.name
        assert trace.header.signature and trace.steps[-1].divergence, path.name
    for path in FIXED:
        trace = read_trace(path)
        assert _fixed_release(path) and trace.header.finding is None, path.name
        assert trace.header.signature is None, path.name


@pytest.mark.parametrize("path", FINDINGS + FIXED, ids=lambda p: p.stem)
def test_kafka_trace__replayed_on_the_builtin_implementation__conforms(path: Path) -> None:
    """kafkalog's implementation does what the model says, also where Kafka does not."""
    trace = read_trace(path)
    real = Trace(dataclasses.replace(trace.header, broken=None), trace.steps)
    result = replay_trace(real)
    assert result.conformed, (result.diverged_at, result.signature, result.adapter_error)


@pytest.mark.skipif(NO_JVM, reason=NO_JVM_REASON)
@pytest.mark.parametrize("path", FINDINGS, ids=lambda p: p.stem)
def test_kafka_finding__replayed_on_kafka_itself__still_diverges_at_its_last_step(
    path: Path,
) -> None:
    """The bug is still in that Kafka release: the same divergence at the same step."""
    trace = read_trace(path)
    status, last = _replay_on_kafka(path, _release(trace))
    assert status == 1, last
    assert last == f"diverged at step {len(trace.steps)}: {trace.header.signature}", last


@pytest.mark.skipif(NO_JVM, reason=NO_JVM_REASON)
@pytest.mark.parametrize("path", FIXED, ids=lambda p: p.stem)
def test_fixed_rule__replayed_on_kafka_itself__conforms(path: Path) -> None:
    """The model (or checker) error is fixed: Kafka's answers are in the model's allowed set."""
    status, last = _replay_on_kafka(path, _fixed_release(path))
    assert status == 0, last
