"""Kafka fidelity: spec fixes against Kafka's source stay pinned by traces the model reproduces.

Every trace in tests/regressions/ records the model's answers; they must replay with no drift (the
model of today gives exactly the recorded answers), so a change of the model's semantics shows up
as a reviewed diff of the corpus (`conformance.scripted.rerecord`), never silently. Traces named
`KL-*.jsonl` pin a spec rule (confirmed against Kafka's source) on the real implementation.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kafkalog.conformance.traces.replay import replay_trace
from kafkalog.conformance.traces.trace import read_trace

CORPUS = Path(__file__).resolve().parents[1] / "regressions"
# Broker findings (specs/wire.md) record a broker's answers; test_regressions replays them.
TRACES = [p for p in sorted(CORPUS.glob("*.jsonl")) if not read_trace(p).header.finding]


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.stem)
def test_regression_trace__replayed__the_model_gives_the_recorded_answers(path: Path) -> None:
    """Spec: KL-APPEND-3 (no drift between the model and any recorded trace)."""
    trace = read_trace(path)
    result = replay_trace(trace)
    drift = [(r.index, r.note) for r in result.steps if r.note]
    assert drift == []
