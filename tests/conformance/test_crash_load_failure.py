"""A crash whose load fails is checked, not a harness crash (KL-CRASH-13).

The trace is the shrunk `kafkalog check --family transactions --seed 5150 --crash-weight 8` run:
Kafka (and kafkalog) accept producer 2's non-transactional batch after a clean reopen forgot its
open transaction, and an unclean load's recovery replay then throws InvalidTxnStateError.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from kafkalog.conformance.check import runner
from kafkalog.conformance.check.sut import ModelSut
from kafkalog.conformance.traces.replay import replay_trace
from kafkalog.conformance.traces.trace import Trace, read_trace
from kafkalog.model.crash import crash
from kafkalog.model.errors import InvalidTxnStateError

TRACE = (Path(__file__).resolve().parents[1] / "regressions"
         / "KL-CRASH-13-seed5150_load_fails_on_forgotten_transaction.jsonl")


def test_failed_load_the_model_allows__conforms_and_ends_the_example() -> None:
    """Both sides fail the load with InvalidTxnStateError; the crash step conforms.
    Spec: KL-CRASH-13"""
    result = replay_trace(read_trace(TRACE))
    assert result.conformed, (result.diverged_at, result.signature, result.adapter_error)
    last = result.steps[-1]
    assert last.call.startswith("crash(")
    assert last.model is not None and last.model.code == "InvalidTxnStateError"
    assert last.impl is not None and last.impl.code == "InvalidTxnStateError"


def test_failed_load_the_model_does_not_allow__diverges_at_the_crash(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A model whose set has only loaded states reports the impl's failed load as crash.load.
    Spec: KL-CRASH-13"""
    original = ModelSut.crash_outcomes

    def loads_only(self: ModelSut, *args: object) -> tuple[crash.Outcome, ...]:
        return crash.loaded_outcomes(original(self, *args)) or (  # type: ignore[arg-type]
            (self.partition_state, self.durable),)

    monkeypatch.setattr(ModelSut, "crash_outcomes", loads_only)
    trace = read_trace(TRACE)
    result = replay_trace(trace)
    assert result.diverged_at == len(trace.steps)
    assert result.signature is not None and "crash.load" in result.signature


def test_model_raising_in_a_crash_step__is_recorded_as_a_harness_step(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The checker's own exception becomes a `harness|` divergence at the
    step that raised, so the steps before it replay. Spec: KL-CRASH-13"""
    def raising(self: ModelSut, *args: object) -> tuple[crash.Outcome, ...]:
        raise InvalidTxnStateError("Expected transactional write from producer 2 at offset 1")

    monkeypatch.setattr(ModelSut, "crash_outcomes", raising)
    trace = read_trace(TRACE)
    real = Trace(dataclasses.replace(trace.header, broken=None), trace.steps)
    result = replay_trace(real)
    assert result.diverged_at == len(trace.steps)
    assert result.signature == ("harness|InvalidTxnStateError|Expected transactional write from "
                                "producer 2 at offset 1")


def test_run_meeting_a_harness_error__reports_adapter_error_with_a_replayable_trace(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`kafkalog check` keeps the adapter_error outcome but now writes the steps that lead to
    the harness error. Spec: KL-CRASH-13"""
    def raising(self: ModelSut, *args: object) -> tuple[crash.Outcome, ...]:
        raise RuntimeError("model bug")

    monkeypatch.setattr(ModelSut, "crash_outcomes", raising)
    outcome = runner.run_seed(0, steps=15, config_family="tiny", crash_weight=8,
                              shrink_s=1, time_limit_s=60)
    assert outcome.outcome == runner.ADAPTER_ERROR
    assert outcome.signature == "harness|RuntimeError|model bug"
    assert outcome.trace_jsonl is not None
    from kafkalog.conformance.traces.trace import loads_trace

    steps = loads_trace(outcome.trace_jsonl).steps
    assert steps[-1].action == "crash" and steps[-1].divergence is not None
