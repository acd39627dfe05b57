"""Every producer-state and transaction broken implementation is caught.

The catalogues are conformance/broken/producer.py and conformance/broken/txn.py. Like
tests/conformance/test_broken.py: fixed seeds of each bug's family (`producers`, `transactions`)
must diverge with a shrunk trace of at most 10 steps that still diverges on the broken
implementation and conforms on the real one. Spec: KL-PROD-5, KL-PROD-8, KL-PROD-11, KL-TXN-2,
KL-TXN-4, KL-TXN-6, KL-TXN-9 (the rules the bugs break).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kafkalog.conformance.broken.producer import PRODUCER_BROKEN, PRODUCER_BROKEN_FAMILY
from kafkalog.conformance.broken.registry import broken_class
from kafkalog.conformance.broken.txn import TXN_BROKEN, TXN_BROKEN_FAMILY
from kafkalog.conformance.traces.trace import read_trace
from pinned_search import caught

MAX_TRACE_STEPS = 10  # the reroll and truncation scenarios alone are 7 steps; slack for load
#: Seeds of the bug's family searched for a short trace: each bug's first is below 50 (the
#: aborted-list scan's needs `reads_across_aborts` drawn early: seed 48).
SEEDS = range(64)
CORPUS = Path(__file__).resolve().parents[1] / "regressions"
CATALOGUES = {"producer": (PRODUCER_BROKEN, PRODUCER_BROKEN_FAMILY),
              "transaction": (TXN_BROKEN, TXN_BROKEN_FAMILY)}
BUGS = [(kind, name) for kind, (bugs, _) in CATALOGUES.items() for name in sorted(bugs)]


@pytest.mark.parametrize(("kind", "name"), BUGS)
def test_check__producer_or_txn_broken_impl__is_caught_with_a_short_pinned_trace(
        kind: str, name: str) -> None:
    """The bug is found and shrunk to <= 10 steps; the real implementation passes that trace."""
    started = time.monotonic()
    trace, tried = caught(name, CATALOGUES[kind][1][name], SEEDS, MAX_TRACE_STEPS)
    assert trace is not None, f"{name} not pinned:\n" + "\n".join(tried)
    assert trace.header.broken == name
    print(f"{name}: {len(trace.steps)} steps in {time.monotonic() - started:.1f} s")


@pytest.mark.parametrize("kind", sorted(CATALOGUES))
def test_broken_class__finds_the_bugs_in_the_shared_catalogue(kind: str) -> None:
    """`kafkalog check --broken NAME` knows the producer and transaction bugs (one catalogue)."""
    bugs = CATALOGUES[kind][0]
    for name in bugs:
        assert broken_class(name) is bugs[name]


@pytest.mark.parametrize("kind", sorted(CATALOGUES))
def test_corpus__holds_a_trace_for_every_broken_implementation_of_the_catalogue(kind: str) -> None:
    """Each producer and transaction bug stays pinned by a trace in tests/regressions/."""
    named = {read_trace(p).header.broken for p in CORPUS.glob("*.jsonl")}
    assert set(CATALOGUES[kind][0]) <= named
