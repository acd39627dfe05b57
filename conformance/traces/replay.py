"""Deterministic replay of a trace: the same steps through the same lockstep checks.

`replay_trace` rebuilds the starting log from the header, runs every recorded action on a fresh
model and the chosen implementation (the built-in one, a broken one, or an adapter command) and
stops at the first step where they disagree. It depends only on the trace's concrete arguments,
never on Hypothesis, so a trace replays across Hypothesis versions and in other languages.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafkalog.conformance.adapter.json_codec import decode_args
from kafkalog.conformance.check.lockstep import DivergenceError, Lockstep
from kafkalog.conformance.check.runner import sut_factory
from kafkalog.conformance.check.scratch import scratch_scope
from kafkalog.conformance.check.session import AdapterAbort, Session, close_sides
from kafkalog.conformance.check.sut import StepResult
from kafkalog.conformance.errors import AdapterError, TraceFormatError
from kafkalog.conformance.traces.trace import Trace, TraceStep
from kafkalog.model.errors import KafkalogError

Printer = Callable[[str], None]


@dataclass(frozen=True)
class StepReport:
    """One replayed step: its number, the call, both results, and a divergence if any."""

    index: int
    call: str
    model: StepResult | None
    impl: StepResult | None
    divergence: str | None = None
    note: str | None = None  # e.g. the model now answers differently from the recorded trace


@dataclass
class ReplayResult:
    steps: list[StepReport] = field(default_factory=list)
    diverged_at: int | None = None  # 1-based step number of the first divergence
    signature: str | None = None
    adapter_error: str | None = None
    # The adapter error was not a typed one (no KafkalogError): a bug of the harness or of the
    # implementation's set-up, never an answer about the trace.
    untyped: bool = False

    @property
    def conformed(self) -> bool:
        return self.diverged_at is None and self.adapter_error is None


def replay_trace(trace: Trace, *, adapter: str | None = None, broken: str | None = None,
                 verify_every: int = 1) -> ReplayResult:
    """Replay `trace` against `adapter`/`broken` (default: what the header names, else builtin).

    No scratch directory of the replay outlives it, whatever ends it (`scratch_scope`).
    """
    with scratch_scope():
        return _replay(trace, adapter, broken, verify_every)


def _replay(trace: Trace, adapter: str | None, broken: str | None,
            verify_every: int) -> ReplayResult:
    header = trace.header
    if adapter is None and broken is None:
        broken = header.broken
    process = None
    result = ReplayResult()
    try:
        factory, features, process = sut_factory(adapter, broken)  # the adapters run_seed uses
        session = Session(header.config, factory, features, now_ms=header.now_ms,
                          log_start_offset=header.log_start_offset, verify_every=verify_every)
        lockstep = session.start()
    except BaseException as error:
        if process is not None:
            process.close()
        if isinstance(error, KeyboardInterrupt):
            raise
        cause = error.error if isinstance(error, AdapterAbort) else error
        result.adapter_error = f"{getattr(cause, 'code', type(cause).__name__)}: {cause}"
        result.untyped = not isinstance(cause, KafkalogError)
        return result
    try:
        _run_steps(trace, lockstep, result)
    finally:
        close_sides(lockstep)  # never raises: the replay's verdict is already decided
        if process is not None:
            process.close()
    return result


def _run_steps(trace: Trace, lockstep: Lockstep, result: ReplayResult) -> None:
    for index, step in enumerate(trace.steps, start=1):
        try:
            args = decode_args(step.action, step.args, where=f"step {index} args")
        except KafkalogError as error:
            raise TraceFormatError(str(error), where=f"step {index}") from None
        call = f"{step.action}({_format_args(step.args)})"
        try:
            results = lockstep.step(step.action, args)
        except DivergenceError as divergence:
            recorded = lockstep.steps[-1]
            result.steps.append(StepReport(index, call, _result(recorded.model),
                                           _result(recorded.impl), str(divergence)))
            result.diverged_at, result.signature = index, divergence.signature
            return
        except AdapterError as error:
            result.adapter_error = f"step {index}: {error.code}: {error}"
            return
        if results is None:
            result.steps.append(StepReport(index, call, None, None, note="unsupported: skipped"))
            continue
        model, impl = results
        result.steps.append(StepReport(index, call, model, impl, note=_drift(step, model)))


def _result(recorded: Any) -> StepResult | None:
    if not isinstance(recorded, dict) or len(recorded) != 1:
        return None
    (kind, body), = recorded.items()
    if kind == "error":
        return StepResult(code=body.get("code"), message=body.get("message", ""))
    if kind == "ok":
        return StepResult(value=_Raw(body))
    return None


class _Raw:
    """A recorded JSON result shown as-is (the trace holds JSON, not value objects)."""

    def __init__(self, body: Any) -> None:
        self.body = body

    def __repr__(self) -> str:
        return json.dumps(self.body, separators=(",", ":"))


def _drift(step: TraceStep, model: StepResult) -> str | None:
    """A note when the model's answer now differs from the one recorded in the trace."""
    if step.model is None or step.model == model.to_json():
        return None
    return f"model answer differs from the recorded {json.dumps(step.model)[:200]}"


def _format_args(args: dict[str, Any]) -> str:
    text = ", ".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in args.items())
    return text if len(text) <= 160 else text[:157] + "..."


def print_replay(result: ReplayResult, echo: Printer) -> None:
    """Each step on one line; the first divergence with both results side by side."""
    for report in result.steps:
        if report.divergence is None:
            outcome = "skipped" if report.model is None else report.model.describe()
            echo(f"{report.index:>4}  {report.call}  ->  {_short(outcome)}")
            if report.note:
                echo(f"      note: {report.note}")
            continue
        echo(f"{report.index:>4}  {report.call}   <-- FIRST DIVERGENCE")
        model = report.model.describe() if report.model else "-"
        impl = report.impl.describe() if report.impl else "-"
        width = max(len(model), 5)
        echo(f"      {'model'.ljust(width)} | impl")
        echo(f"      {model.ljust(width)} | {impl}")
        echo(f"      {report.divergence}")
    if result.adapter_error:
        echo(f"adapter error: {result.adapter_error}")
    elif result.diverged_at is None:
        echo(f"conformed: {len(result.steps)} steps, no divergence")
    else:
        echo(f"diverged at step {result.diverged_at}: {result.signature}")


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
