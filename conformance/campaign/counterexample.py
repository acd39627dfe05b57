"""A bucket's shrunk trace as a person reads it: the steps, the diverging step side by side, and
the log's state just before it.

The trace (specs/trace-format.md) records each step's call and both answers, not the state; the
state before the diverging step is recomputed by replaying the earlier steps on the model alone
(pure, milliseconds). A text that is not a valid trace (a hand-made one, a newer format) is shown
as far as it can be, with the reason instead of the missing parts, never as an error: the report
must always be written.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from typing import Any

from kafkalog.conformance.adapter.json_codec import decode_args, encode
from kafkalog.conformance.check.sut import ModelSut, execute
from kafkalog.conformance.traces.trace import loads_trace
from kafkalog.model.errors import KafkalogError

_ARGS_LIMIT = 120


@dataclass(frozen=True)
class Counterexample:
    """What the report shows of one trace."""

    steps: tuple[tuple[int, str, str, str], ...]  # (step, call, model answer, impl answer)
    diverging: int | None  # the step whose check failed (usually the last)
    divergence: str | None  # what differed
    model: str  # the diverging step's model answer, pretty JSON
    impl: str  # the same for the implementation
    state_before: str | None  # the model's state view before the diverging step, pretty JSON
    problem: str | None = None  # why part of the view is missing


def counterexample(trace_jsonl: str) -> Counterexample:
    """Parse a trace and rebuild the state before its diverging step."""
    try:
        trace = loads_trace(trace_jsonl)
    except KafkalogError as error:
        return Counterexample((), None, None, "", "", None, f"not a readable trace: {error}")
    rows = tuple(
        (index, f"{step.action}({_args(step.args)})", _short(step.model), _short(step.impl))
        for index, step in enumerate(trace.steps, start=1)
    )
    marked = [i for i, step in enumerate(trace.steps, start=1) if step.divergence is not None]
    at = marked[0] if marked else (len(trace.steps) or None)
    if at is None:
        return Counterexample(rows, None, None, "", "", None, "the trace has no steps")
    step = trace.steps[at - 1]
    state, problem = _state_before(trace, at)
    return Counterexample(
        rows, at, step.divergence, _pretty(step.model), _pretty(step.impl), state, problem
    )


def render_html(view: Counterexample) -> str:
    """The counterexample as HTML: a steps table, the diverging step side by side, the state."""
    parts = []
    if view.problem:
        parts.append(f"<p><em>{_e(view.problem)}</em></p>")
    if view.steps:
        rows = "".join(
            f"<tr{' class=div' if number == view.diverging else ''}><td class=n>{number}</td>"
            f"<td><code>{_e(call)}</code></td><td><code>{_e(model)}</code></td>"
            f"<td><code>{_e(impl)}</code></td></tr>"
            for number, call, model, impl in view.steps
        )
        head = "<tr><th>#</th><th>call</th><th>model</th><th>implementation</th></tr>"
        parts.append(f"<table class=steps>{head}{rows}</table>")
    if view.diverging is not None:
        parts.append(
            f"<p>Step {view.diverging} diverged: <b>{_e(view.divergence or 'answers differ')}</b>"
            "</p><table class=side><tr><th>model</th><th>implementation</th></tr>"
            f"<tr><td><pre>{_e(view.model)}</pre></td><td><pre>{_e(view.impl)}</pre></td></tr>"
            "</table>"
        )
    if view.state_before is not None:
        parts.append(
            f"<details><summary>State before step {view.diverging} (model)</summary>"
            f"<pre>{_e(view.state_before)}</pre></details>"
        )
    return "".join(parts)


def render_lines(view: Counterexample, limit: int = 12) -> list[str]:
    """The counterexample as plain lines for the terminal (the last `limit` steps)."""
    lines = [f"  ({view.problem})"] if view.problem else []
    shown = view.steps[-limit:]
    if len(view.steps) > len(shown):
        lines.append(f"  ... {len(view.steps) - len(shown)} earlier steps")
    for number, call, model, impl in shown:
        mark = ">>" if number == view.diverging else "  "
        same = model == impl
        answer = f"-> {model}" if same else f"-> model {model} | impl {impl}"
        lines.append(f"{mark} {number:>3} {call} {answer}")
    if view.diverging is not None:
        lines.append(f"   step {view.diverging}: {view.divergence or 'answers differ'}")
    return lines


def _state_before(trace: Any, at: int) -> tuple[str | None, str | None]:
    """The model's state view after steps 1..at-1, replayed on the model alone."""
    header = trace.header
    try:
        model = ModelSut(header.config, header.now_ms, header.log_start_offset)
        for index, step in enumerate(trace.steps[: at - 1], start=1):
            execute(model, step.action, decode_args(step.action, step.args, f"step {index}"))
        return json.dumps(encode(model.state()), indent=1, sort_keys=True), None
    except Exception as error:  # noqa: BLE001 - a report is written whatever the trace holds
        return None, f"state before the step not available: {type(error).__name__}: {error}"


def _args(args: dict[str, Any]) -> str:
    text = ", ".join(
        f"{key}={json.dumps(value, separators=(',', ':'))}" for key, value in args.items()
    )
    return text if len(text) <= _ARGS_LIMIT else text[: _ARGS_LIMIT - 3] + "..."


def _short(result: Any) -> str:
    """A recorded result in one short line: `ok`, `ok 5`, `Error: message`, `unsupported`."""
    if not isinstance(result, dict) or len(result) != 1:
        return "-" if result is None else str(result)[:80]
    ((kind, body),) = result.items()
    if kind == "error" and isinstance(body, dict):
        return f"{body.get('code')}"
    if kind == "ok":
        text = json.dumps(body, separators=(",", ":"))
        return (
            "ok"
            if body is True or body is None
            else (text if len(text) <= 60 else text[:57] + "...")
        )
    return str(kind)


def _pretty(result: Any) -> str:
    return json.dumps(result, indent=1, sort_keys=True)


def _e(text: str) -> str:
    return html.escape(text, quote=True)
