"""Every transaction broken implementation (conformance/broken/txn.py) is caught.

Like tests/conformance/test_broken.py: fixed seeds of the `transactions` family must diverge
with a shrunk trace of at most 10 steps that still diverges on the broken implementation and
conforms on the real one. Spec: KL-TXN-2, KL-TXN-4, KL-TXN-6, KL-TXN-9 (the rules the bugs break).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kafkalog.conformance.broken.catalogue import broken_class
from kafkalog.conformance.broken.txn import TXN_BROKEN, TXN_BROKEN_FAMILY
from kafkalog.conformance.trace import read_trace
from pinned_search import caught

MAX_TRACE_STEPS = 10  # the truncation scenario alone is 7 steps; slack for a loaded machine
SEEDS = range(24)
CORPUS = Path(__file__).resolve().parents[1] / "regressions"


@pytest.mark.parametrize("name", sorted(TXN_BROKEN))
def test_check__txn_broken_impl__is_caught_with_a_short_pinned_trace(name: str) -> None:
    """The bug is found and shrunk to <= 10 steps; the real implementation passes that trace."""
    started = time.monotonic()
    trace, tried = caught(name, TXN_BROKEN_FAMILY[name], SEEDS, MAX_TRACE_STEPS)
    assert trace is not None, f"{name} not pinned:\n" + "\n".join(tried)
    assert trace.header.broken == name
    print(f"{name}: {len(trace.steps)} steps in {time.monotonic() - started:.1f} s")


def test_broken_class__finds_transaction_bugs_in_the_shared_catalogue() -> None:
    """`kafkalog check --broken NAME` knows the transaction bugs (one catalogue)."""
    for name in TXN_BROKEN:
        assert broken_class(name) is TXN_BROKEN[name]


def test_corpus__holds_a_trace_for_every_transaction_broken_implementation() -> None:
    """Each transaction bug stays pinned by a trace in tests/regressions/."""
    named = {read_trace(p).header.broken for p in CORPUS.glob("*.jsonl")}
    assert set(TXN_BROKEN) <= named
