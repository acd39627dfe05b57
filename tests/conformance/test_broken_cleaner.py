"""Every broken log cleaner is caught on the compacted family.

The catalogue is conformance/broken/cleaner.py (historical Kafka cleaner bugs, BUG-C* of the
compaction reference). Like tests/conformance/test_broken_producer_txn.py: fixed seeds of the
`compact` family must diverge with a shrunk trace of at most 10 steps that still diverges on the
broken implementation and conforms on the real one. Spec: KL-CLEAN-1..KL-CLEAN-14 (the rules the
bugs break).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kafkalog.conformance.broken.cleaner import (
    CLEANER_BROKEN,
    CLEANER_BROKEN_FAMILY,
    CLEANER_CRASH_ONLY,
    CLEANER_TICKETS,
)
from kafkalog.conformance.broken.registry import all_broken, broken_class
from kafkalog.conformance.traces.trace import read_trace
from pinned_search import caught

MAX_TRACE_STEPS = 10
# Cleaning passes are a few of the compacted machine's many rules (and swarm testing turns some
# off per seed), so a bug that needs a pass after a clock step takes more seeds to meet.
SEEDS = range(300)
CORPUS = Path(__file__).resolve().parents[1] / "regressions"
REACHED = sorted(CLEANER_BROKEN)


@pytest.mark.parametrize("name", REACHED)
def test_check__broken_cleaner__is_caught_with_a_short_pinned_trace(name: str) -> None:
    """The bug is found and shrunk to <= 10 steps; the real implementation passes that trace."""
    started = time.monotonic()
    trace, tried = caught(name, CLEANER_BROKEN_FAMILY[name], SEEDS, MAX_TRACE_STEPS,
                          crash_weight=1 if name in CLEANER_CRASH_ONLY else 0)
    assert trace is not None, f"{name} not pinned:\n" + "\n".join(tried)
    assert trace.header.broken == name
    print(f"{name}: seed {trace.header.seed}, {len(trace.steps)} steps in "
          f"{time.monotonic() - started:.1f} s")


def test_broken_class__finds_the_cleaner_bugs_in_the_shared_catalogue() -> None:
    """`kafkalog check --broken NAME` knows every cleaner bug, and none shadows another's."""
    for name, bug in CLEANER_BROKEN.items():
        assert broken_class(name) is bug
    assert len(all_broken()) == len({**all_broken(), **CLEANER_BROKEN})


def test_catalogue__names_the_reference_bug_rule_and_ticket_of_each_entry() -> None:
    """Each entry cites its BUG-C row (or the CLN rule it slips), its rule and its ticket."""
    assert len(CLEANER_BROKEN) >= 8
    assert set(CLEANER_TICKETS) == set(CLEANER_BROKEN) == set(CLEANER_BROKEN_FAMILY)
    for name, bug in CLEANER_BROKEN.items():
        assert bug.bug.startswith(("BUG-C", "CLN-")) and bug.rule.startswith("CLN-")
        ticket = CLEANER_TICKETS[name]
        assert bug.bug.startswith("CLN-") if ticket is None else ticket.startswith("KAFKA-")
    historical = [n for n, t in CLEANER_TICKETS.items() if t is not None]
    assert len(historical) >= 8


def test_corpus__holds_a_trace_for_every_broken_cleaner() -> None:
    """Each cleaner bug stays pinned by a trace in tests/regressions/."""
    named = {read_trace(p).header.broken for p in CORPUS.glob("*.jsonl")}
    assert set(CLEANER_BROKEN) <= named
