"""KL-TRUNC-3: a segment's max timestamp is read lazily after a load, so a truncation that
empties the time index first forgets the batches it keeps (LogSegment.truncateTo reads
`maxTimestampSoFar()` after `timeIndex.truncateTo`). Found by `kafkalog check --family
transactions --seed 5000 --examples 300 --steps 60 --crash-weight 8` (seed 5150); the scripts
here are its shrunk form and the read paths that make Kafka re-derive instead.

Regenerate the traces: `python tests/conformance/test_max_timestamp_memory.py`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from kafkalog.conformance.gen.configs import config_family
from kafkalog.conformance.traces.scripted import run_calls, scripted_trace
from kafkalog.conformance.traces.trace import read_trace, write_trace
from kafkalog.model import values as v

CORPUS = Path(__file__).resolve().parents[1] / "regressions"
CONFIG = config_family("transactions")
T = 1_700_000_000_000
Call = tuple[str, dict[str, Any]]


def _leader(ts: int) -> Call:
    return ("append_as_leader", {"records": (v.Record(None, b"test", ts),), "leader_epoch": 0})


#: Batch 5 (T+5) from a follower, 6 (T+10, the max), 7, 8 (T); a clean reopen leaves the time
#: index with its final entry (T+10, 6) only and the max unread.
SETUP: list[Call] = [
    ("append_as_follower", {"batches": (v.BatchSpec(5, 0, (v.Record(None, b"test", T + 5),)),),
                            "leader_epoch": None}),
    _leader(T + 10), _leader(T), _leader(T), ("close_and_reopen", {}),
]
#: The cut empties the time index: the max becomes (-1, base); the re-append's (T, 6) is the
#: final entry at the next close; MAX_TIMESTAMP answers (T, 6) and a search for T+1 nothing.
CUT: list[Call] = [("truncate_to", {"offset": 6}), _leader(T), ("close_and_reopen", {}),
                   ("fetch_offset_by_timestamp", {"timestamp": -3}),
                   ("fetch_offset_by_timestamp", {"timestamp": T + 1})]
TRACES: dict[str, list[Call]] = {
    "KL-TRUNC-3-max_timestamp_forgotten_after_reload_and_cut": [*SETUP, *CUT],
    # A MAX_TIMESTAMP lookup reads the max first: the cut re-derives (T+5, 5).
    "KL-TRUNC-3-max_timestamp_read_before_cut_is_rederived": [
        *SETUP, ("fetch_offset_by_timestamp", {"timestamp": -3}), *CUT],
}
#: The other reads of the max before the cut: a timestamp search, and time retention's walk
#: (the HW at the LEO lets it reach the segment).
READS: dict[str, list[Call]] = {
    "search": [("fetch_offset_by_timestamp", {"timestamp": T + 7})],
    "retention": [("update_high_watermark", {"offset": 9}), ("delete_old_segments", {})],
    "none": [],
}


def _answers(calls: list[Call]) -> list[Any]:
    lockstep, signature = run_calls(CONFIG, calls)
    assert signature is None
    return [step.model for step in lockstep.steps]


@pytest.mark.parametrize("name", sorted(TRACES))
def test_recorded_trace__matches_a_fresh_conforming_run(name: str) -> None:
    """Each KL-TRUNC-3 regression trace is its script, recorded with no divergence."""
    trace = read_trace(CORPUS / f"{name}.jsonl")
    fresh = scripted_trace(CONFIG, TRACES[name])
    assert trace.header.outcome == fresh.header.outcome == "conformed"
    assert [s.model for s in trace.steps] == [s.model for s in fresh.steps]


def test_cut_after_reload__max_timestamp_answers_the_re_appended_batch_not_the_larger_one(
) -> None:
    """Model and implementation agree that batch 5's larger T+5 is forgotten. Spec: KL-TRUNC-3"""
    answers = _answers(TRACES["KL-TRUNC-3-max_timestamp_forgotten_after_reload_and_cut"])
    assert answers[-2] == {"ok": {"timestamp": T, "offset": 6, "leader_epoch": 0}}
    assert answers[-1] == {"ok": None}


@pytest.mark.parametrize("read", sorted(READS))
def test_cut_after_reload__a_read_of_the_max_before_it_decides_what_is_remembered(
        read: str) -> None:
    """Every path that reads the max before the cut makes Kafka re-derive it (T+5 at 5); with
    none it is forgotten. Model and implementation agree. Spec: KL-TRUNC-3, KL-RET-5"""
    answers = _answers([*SETUP, *READS[read], *CUT])
    expected = (T, 6) if read == "none" else (T + 5, 5)
    assert answers[-2] == {"ok": {"timestamp": expected[0], "offset": expected[1],
                                  "leader_epoch": 0}}


if __name__ == "__main__":
    for name, calls in TRACES.items():
        print(write_trace(scripted_trace(CONFIG, calls), CORPUS / f"{name}.jsonl"), file=sys.stderr)
