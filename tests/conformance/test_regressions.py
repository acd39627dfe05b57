"""The regression corpus: every trace in tests/regressions/ replays through the lockstep checks.

Against the built-in implementation each trace must conform. A trace whose header names a
broken implementation must also still diverge against that one, at its last step, so the trace
keeps catching the bug it was written for (specs/trace-format.md, "Regression corpus"). A trace
whose header names a broker `finding` was recorded against that broker (specs/wire.md): it is
replayed on the model only, and the broker's recorded answer must still differ from the model's.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from kafkalog.conformance.adapter.json_codec import decode_args, decode_result
from kafkalog.conformance.check import black_box
from kafkalog.conformance.check.sut import ModelSut, StepResult, execute
from kafkalog.conformance.traces.replay import replay_trace
from kafkalog.conformance.traces.trace import Trace, TraceStep, read_trace

CORPUS = Path(__file__).resolve().parents[1] / "regressions"
TRACES = sorted(CORPUS.glob("*.jsonl"))


def test_corpus__holds_a_trace_for_every_broken_implementation() -> None:
    """At least one trace per reintroduced bug, so each stays pinned."""
    from kafkalog.conformance.broken.registry import BROKEN

    named = {read_trace(path).header.broken for path in TRACES}
    assert set(BROKEN) <= named


def test_corpus__holds_a_trace_for_every_crash_bug_the_checker_can_reach() -> None:
    """Each seeded crash-recovery bug (conformance/broken/crash.py) is pinned by a
    trace `kafkalog check` found, except those make_crash_traces.py lists as unreachable."""
    import importlib.util

    from kafkalog.conformance.broken.crash import BROKEN_CRASH

    spec = importlib.util.spec_from_file_location("make_crash_traces",
                                                  CORPUS / "make_crash_traces.py")
    assert spec is not None and spec.loader is not None
    maker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(maker)
    named = {read_trace(path).header.broken for path in TRACES}
    assert set(BROKEN_CRASH) - maker.NOT_REACHABLE <= named
    assert any(step.action == "crash" for p in TRACES for step in read_trace(p).steps)


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.stem)
def test_trace__replayed_on_the_builtin_implementation__conforms(path: Path) -> None:
    """The real implementation agrees with the model on every step of the trace."""
    trace = read_trace(path)
    real = Trace(dataclasses.replace(trace.header, broken=None), trace.steps)
    result = replay_trace(real)
    assert result.conformed, (result.diverged_at, result.signature, result.adapter_error)


@pytest.mark.parametrize(
    "path", [p for p in TRACES if read_trace(p).header.broken], ids=lambda p: p.stem
)
def test_trace__replayed_on_its_broken_implementation__still_diverges_at_its_last_step(
    path: Path,
) -> None:
    """The trace still catches its bug, at the step where it was recorded to diverge."""
    trace = read_trace(path)
    result = replay_trace(trace)
    assert result.diverged_at == len(trace.steps)
    assert result.signature == trace.header.signature


FINDINGS = [p for p in TRACES if read_trace(p).header.finding]


def _model_answer(trace: Trace) -> tuple[ModelSut, StepResult]:
    """The model after every step the broker ran (steps it answered `unsupported` were skipped
    on both sides), and its answer to the last one."""
    header = trace.header
    model = ModelSut(header.config, header.now_ms, header.log_start_offset)
    answer = StepResult()
    for step in trace.steps:
        if isinstance(step.impl, dict) and "unsupported" in step.impl:
            continue
        answer = execute(model, step.action, decode_args(step.action, step.args))
    return model, answer


def _recorded(step: TraceStep) -> StepResult:
    (kind, body), = step.impl.items()
    if kind == "error":
        return StepResult(code=body["code"], message=body["message"])
    return StepResult(value=black_box.project_result(decode_result(step.action, body)))


@pytest.mark.parametrize("path", FINDINGS, ids=lambda p: p.stem)
def test_broker_finding__the_recorded_broker_answer__still_differs_from_the_model(
    path: Path,
) -> None:
    """A broker's divergence (header `finding`) replays on the model alone and the broker's
    recorded answer at the last step is not what the model answers, through the wire view; for
    a `state()` finding the step's answers agree and the broker's state query failed."""
    trace = read_trace(path)
    assert replay_trace(trace, adapter="model").conformed
    model, answer = _model_answer(trace)
    last = trace.steps[-1]
    assert last.divergence, "a finding's last step records what differed"
    kind = trace.header.signature.split("|")[3]
    if answer.ok:
        answer = StepResult(value=black_box.project_result(answer.value))
    if kind == "result":
        assert not answer.same_as(_recorded(last)), (answer.describe(), last.impl)
    elif kind == "state()":
        # The broker answered the step as the model does, then failed to report its state
        # (its `state` reply was an UnexpectedException), where the model reports one.
        recorded = _recorded(last)
        assert answer.same_as(recorded), (answer.describe(), last.impl)
        assert trace.header.signature.split("|")[:3] == [
            last.action, answer.code or "ok", recorded.code or "ok"]
        assert last.divergence.startswith("state() raised UnexpectedException: ")
        black_box.project_state(model.state())
    else:
        assert kind.startswith("state."), kind
        field = kind.removeprefix("state.")
        seen = re.search(r": model (.+) \| impl (.+)$", last.divergence)
        assert seen is not None and seen.group(1) != seen.group(2)
        projected = black_box.project_state(model.state())
        assert repr(getattr(projected, field)) == seen.group(1)
