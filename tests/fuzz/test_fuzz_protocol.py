"""Fuzz slice: hostile adapter sessions and damaged traces. The adapter answers every line,
names the request whenever its id is readable, and stays usable; a damaged trace is a
TraceFormatError or replays without an untyped failure. Long form: `kafkalog fuzz`."""

from __future__ import annotations

from hypothesis import given, settings
from kafkalog.conformance.fuzz.campaign import seed_traces
from kafkalog.conformance.fuzz.harness import Verdict, run_adapter_case, run_trace_case
from kafkalog.conformance.fuzz.mutators import adapter_sessions, trace_texts

TRACES = seed_traces()


@settings(max_examples=150)
@given(lines=adapter_sessions())
def test_hostile_adapter_session__every_line_answered_and_adapter_usable(
        lines: list[bytes]) -> None:
    """One reply per line, ids echoed, no untyped failure, and a fresh session works after."""
    result = run_adapter_case(lines)
    assert result.verdict is not Verdict.UNGRACEFUL, result.details


@settings(max_examples=150)
@given(text=trace_texts(TRACES))
def test_damaged_trace__typed_parse_error_or_clean_replay(text: str) -> None:
    """A damaged trace never produces a traceback, in the parser or in the replayed log."""
    result = run_trace_case(text)
    assert result.verdict is not Verdict.UNGRACEFUL, result.details
