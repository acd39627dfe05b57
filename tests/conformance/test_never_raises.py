"""An untyped failure never conforms, and `run_seed` never raises.

Implementations that raise in `close()`, in `state()` and in every action must each end the run
with an outcome, and with a saved, replayable trace whenever anything diverged.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from kafkalog.conformance.adapter.json_codec import ACTIONS
from kafkalog.conformance.check.impl_sut import ImplSut
from kafkalog.conformance.check.runner import run_seed
from kafkalog.conformance.check.sut import UNEXPECTED_EXCEPTION, ModelSut, StepResult
from kafkalog.conformance.traces.replay import replay_trace
from kafkalog.conformance.traces.trace import Trace, loads_trace, read_trace


def _boom(*_args: Any, **_kwargs: Any) -> Any:
    raise IndexError("list index out of range")


def test_same_as__unexpected_exception_on_both_sides__does_not_conform() -> None:
    """Two crashes are not agreement: UnexpectedException never conforms (adapter protocol)."""
    crash = StepResult(code=UNEXPECTED_EXCEPTION, message="IndexError")
    assert not crash.same_as(crash)
    assert not crash.same_as(StepResult(value=1))
    typed = StepResult(code="OffsetOutOfRangeError")
    assert typed.same_as(typed)


def test_replay__model_and_impl_both_crash__reports_a_divergence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Replay prints a divergence, not "conformed", when both sides raise untyped errors."""
    path = Path(__file__).resolve().parents[1] / "regressions"
    trace = read_trace(path / "BUG-38-truncate_fully_keeps_hw.jsonl")
    trace = Trace(dataclasses.replace(trace.header, broken=None), trace.steps)
    action = trace.steps[0].action
    monkeypatch.setattr(ImplSut, action, _boom)
    monkeypatch.setattr(ModelSut, action, _boom)
    result = replay_trace(trace)
    assert result.diverged_at == 1
    assert result.signature is not None and UNEXPECTED_EXCEPTION in result.signature


def test_run_seed__impl_close_raises_after_a_divergence__still_returns_a_shrunk_trace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Teardown failures never escape: the divergence comes back with its trace."""
    real_close = ImplSut.close

    def close_then_fail(self: ImplSut) -> None:
        real_close(self)
        raise IndexError("close failed")

    monkeypatch.setattr(ImplSut, "close", close_then_fail)
    outcomes = [run_seed(seed, steps=30, config_family="tiny", broken="truncate_fully_keeps_hw",
                         shrink_s=0.5) for seed in range(12)]
    assert {o.outcome for o in outcomes} <= {"diverged", "adapter_error", "conformed"}
    outcome = next(o for o in outcomes if o.outcome == "diverged")
    assert outcome.trace_jsonl is not None
    assert not replay_trace(loads_trace(outcome.trace_jsonl)).conformed


def test_run_seed__impl_close_always_raises__ends_with_an_outcome_naming_teardown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A close that fails with nothing else wrong is reported, not raised."""
    real_close = ImplSut.close

    def close_then_fail(self: ImplSut) -> None:
        real_close(self)
        raise RuntimeError("utime failed")

    monkeypatch.setattr(ImplSut, "close", close_then_fail)
    outcome = run_seed(3, steps=10, config_family="tiny")
    assert outcome.outcome == "adapter_error"
    assert outcome.signature is not None and outcome.signature.startswith("teardown|close|")


def test_run_seed__impl_state_raises__diverges_with_a_one_step_trace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A crashing state() is a divergence at the first step, shrunk and replayable."""
    monkeypatch.setattr(ImplSut, "state", _boom)
    outcome = run_seed(2, steps=10, config_family="tiny")
    assert outcome.outcome == "diverged", outcome.signature
    assert outcome.signature is not None and "|state()|" in outcome.signature
    trace = loads_trace(outcome.trace_jsonl or "")
    assert len(trace.steps) == 1
    assert replay_trace(trace).diverged_at == 1


def test_run_seed__every_impl_action_raises__diverges_with_a_one_step_trace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every action crashing (and close and verify too) still ends with a diverged outcome."""
    for action in ACTIONS:
        monkeypatch.setattr(ImplSut, action, _boom)
    monkeypatch.setattr(ImplSut, "verify", _boom)
    outcome = run_seed(4, steps=10, config_family="index_full")
    assert outcome.outcome == "diverged", outcome.signature
    assert outcome.signature is not None and f"|{UNEXPECTED_EXCEPTION}|result|" in outcome.signature
    trace = loads_trace(outcome.trace_jsonl or "")
    assert len(trace.steps) == 1
