"""Trace files: writing, strict reading with line numbers, and replay (specs/trace-format.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kafkalog.conformance.errors import TraceFormatError
from kafkalog.conformance.gen.configs import CONFIG_FAMILIES
from kafkalog.conformance.traces.replay import print_replay, replay_trace
from kafkalog.conformance.traces.trace import (
    Trace,
    TraceHeader,
    TraceStep,
    dumps_trace,
    loads_trace,
    read_trace,
    write_trace,
)

HEADER = TraceHeader(config=CONFIG_FAMILIES["tiny"], seed=7, config_family="tiny",
                     now_ms=1_700_000_000_000, adapter="model")
APPEND = TraceStep(
    "append_as_leader",
    {"records": [{"key": None, "value": "dGVzdA==", "timestamp": 1_700_000_000_000,
                  "headers": []}], "leader_epoch": 0},
)


def trace_of(*steps: TraceStep) -> Trace:
    return Trace(HEADER, steps)


def test_dumps_then_loads__round_trips_header_and_steps(tmp_path: Path) -> None:
    """A written trace reads back equal; the header is line 1, steps are numbered from 1."""
    trace = trace_of(APPEND, TraceStep("truncate_to", {"offset": 0}, {"ok": True}, {"ok": True}))
    path = write_trace(trace, tmp_path / "t.jsonl")
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["kafkalog_trace"] == 1
    assert [json.loads(line)["step"] for line in lines[1:]] == [1, 2]
    assert read_trace(path) == trace


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("", None, "empty trace"),
        ('{"kafkalog_trace": 9, "config": {}}\n', 1, "kafkalog_trace=9"),
        ('{"kafkalog_trace": 1}\n', 1, "without config"),
        ('{"kafkalog_trace": 1, "config": {}, "colour": "red"}\n', 1, "unknown header"),
        ('{"kafkalog_trace": 1, "config": {"segment_bytes": "big"}}\n', 1, "segment_bytes"),
        ('{"kafkalog_trace": 1, "config": {}}\nnot json\n', 2, "not JSON"),
        ('{"kafkalog_trace": 1, "config": {}}\n{"step": 2, "action": "roll", "args": {}}\n', 2,
         "expected 1"),
        ('{"kafkalog_trace": 1, "config": {}}\n{"step": 1, "action": "compact"}\n', 2,
         "unknown action"),
        ('{"kafkalog_trace": 1, "config": {}}\n\n{"step": 1, "action": "truncate_to", '
         '"args": {"offset": "x"}}\n', 3, "args.offset"),
        ('{"kafkalog_trace": 1, "config": {}}\n{"step": 1, "action": "roll", "args": {}, '
         '"model": {"error": {"code": "Nope", "message": ""}}}\n', 2, "unknown error code"),
    ],
)
def test_loads_trace__bad_input__raises_trace_format_error_naming_the_line(
    text: str, line: int | None, fragment: str
) -> None:
    """Every problem names `file:line` (blank lines still count) and what was wrong."""
    with pytest.raises(TraceFormatError) as raised:
        loads_trace(text, source="t.jsonl")
    assert fragment in str(raised.value)
    assert raised.value.where == ("t.jsonl" if line is None else f"t.jsonl:{line}")


def test_read_trace__missing_file__is_a_trace_format_error(tmp_path: Path) -> None:
    """An unreadable path is a typed error, not an OSError."""
    with pytest.raises(TraceFormatError, match="cannot read"):
        read_trace(tmp_path / "absent.jsonl")


def test_replay__model_against_itself__conforms_and_prints_each_step() -> None:
    """Replaying on the model as the implementation conforms; one printed line per step."""
    trace = trace_of(APPEND, TraceStep("update_high_watermark", {"offset": 1}),
                     TraceStep("truncate_to", {"offset": 0}))
    result = replay_trace(trace, adapter="model")
    assert result.conformed and len(result.steps) == 3
    lines: list[str] = []
    print_replay(result, lines.append)
    assert lines[0].strip().startswith("1  append_as_leader(")
    assert lines[-1] == "conformed: 3 steps, no divergence"


def test_replay__a_broken_impl__stops_at_the_first_divergence_side_by_side() -> None:
    """With the HW-keeping full truncation, step 2 diverges; both sides are printed."""
    trace = trace_of(APPEND, TraceStep("truncate_fully_and_start_at", {"offset": 5}),
                     TraceStep("roll", {}))
    result = replay_trace(trace, broken="truncate_fully_keeps_hw")
    assert result.diverged_at == 2 and len(result.steps) == 2
    assert result.signature is not None and "high_watermark" in result.signature
    lines: list[str] = []
    print_replay(result, lines.append)
    assert any("FIRST DIVERGENCE" in line for line in lines)
    assert any(line.strip().startswith("model") and "| impl" in line for line in lines)


def test_replay__recorded_model_result_that_changed__is_noted_not_failed() -> None:
    """A stale recorded model answer is a note on the step, not a divergence."""
    stale = TraceStep("update_high_watermark", {"offset": 0}, {"ok": 99}, {"ok": 99})
    result = replay_trace(trace_of(stale), adapter="model")
    assert result.conformed
    assert result.steps[0].note is not None and "recorded" in result.steps[0].note


def test_dumps_trace__is_deterministic_text() -> None:
    """The same trace always serialises to the same bytes (traces are diffed and committed)."""
    assert dumps_trace(trace_of(APPEND)) == dumps_trace(trace_of(APPEND))
