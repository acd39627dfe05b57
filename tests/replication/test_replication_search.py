"""The search rediscovers KIP-101 and KAFKA-6361 and finds nothing under KIP-279.

Each policy's machine runs once per session (module fixtures); the tests read its outcome.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from kafkalog.model.replication import log as rlog
from kafkalog.model.replication import replication as rep
from kafkalog.model.replication.steps import Step, apply_step, replay
from replication_machine import SearchOutcome, search

LOSS = "no_committed_data_loss"
DIVERGENCE = "logs_match_below_high_watermark"
# A broken policy must fail within this share of the budget KIP-279 stays clean under.
SMALL_FRACTION = 0.25


def fresh_search(policy: str) -> SearchOutcome:
    """Run one derandomized search in a fresh interpreter.

    In-process, the example sequence depended on which tests ran earlier in the session (global
    Hypothesis state), so the same search found a counterexample alone and missed it in the full
    suite. A subprocess makes the outcome a function of the code alone.
    """
    program = (
        "import pickle, sys; sys.path.insert(0, sys.argv[1]);"
        "from replication_machine import BUDGETS, search;"
        "policy = sys.argv[2];"
        "sys.stdout.buffer.write(pickle.dumps(search(policy, max_examples=BUDGETS[policy])))"
    )
    result = subprocess.run(
        [sys.executable, "-c", program, str(Path(__file__).parent), policy],
        capture_output=True, check=True, timeout=900,
    )
    outcome: SearchOutcome = pickle.loads(result.stdout)
    return outcome


@pytest.fixture(scope="module")
def hw_search() -> SearchOutcome:
    return fresh_search("truncate_to_high_watermark")


@pytest.fixture(scope="module")
def kip101_search() -> SearchOutcome:
    return fresh_search("leader_epoch_request")


@pytest.fixture(scope="module")
def kip279_search() -> SearchOutcome:
    return fresh_search("leader_epoch_kip279")


def _breaks(steps: tuple[Step, ...], policy: str, invariant: str) -> bool:
    outcomes = replay(steps, policy)
    return invariant in outcomes[-1].violated and not any(o.violated for o in outcomes[:-1])


def _clean_under(steps: tuple[Step, ...], policy: str) -> bool:
    return not any(o.violated for o in replay(steps, policy))


def test_hw_truncation__search__finds_committed_data_loss(hw_search: SearchOutcome) -> None:
    """Truncating to the HW loses a committed record (KIP-101 scenario 1); KIP-279 keeps it."""
    steps = hw_search.found[LOSS]
    assert _breaks(steps, "truncate_to_high_watermark", LOSS)
    assert _clean_under(steps, "leader_epoch_kip279")
    assert _clean_under(steps, "leader_epoch_request")


def test_hw_truncation__search__finds_divergence_after_unflushed_loss(
        hw_search: SearchOutcome) -> None:
    """A leader that lost unflushed records wins; a follower keeps its old HW-covered record.

    KIP-101 scenario 2: the logs then differ below both HWs; KIP-279 truncates the old record.
    """
    steps = hw_search.found[DIVERGENCE]
    assert _breaks(steps, "truncate_to_high_watermark", DIVERGENCE)
    assert any(s.action == "crash" and s.args["lost"] > 0 for s in steps)
    assert _clean_under(steps, "leader_epoch_kip279")


def _asks_for_unknown_epoch(steps: tuple[Step, ...]) -> bool:
    """Some truncation asks the leader for an epoch the leader never had (KAFKA-6361)."""
    s = rep.initial_state(2)
    for step in steps:
        if step.action in ("truncate", "restart") and s.leader is not None:
            asked = s.replicas[step.args["replica"]].epochs
            leader_epochs = {e.epoch for e in rlog.epoch_entries(s.replicas[s.leader])}
            if asked and asked[-1].epoch not in leader_epochs:
                return True
        s, _ = apply_step(s, step, "leader_epoch_request")
    return False


def test_first_epoch_protocol__search__finds_kafka_6361_divergence(
        kip101_search: SearchOutcome) -> None:
    """KIP-101 as first shipped diverges after a fast fail-over; KIP-279 does not. Spec: EPO-4."""
    steps = kip101_search.found[DIVERGENCE]
    assert _breaks(steps, "leader_epoch_request", DIVERGENCE)
    assert _asks_for_unknown_epoch(steps)
    assert sum(s.action == "elect" for s in steps) >= 2
    assert _clean_under(steps, "leader_epoch_kip279")


def test_kip279__search_with_large_budget__finds_nothing(
        kip279_search: SearchOutcome, hw_search: SearchOutcome,
        kip101_search: SearchOutcome) -> None:
    """KIP-279 stays clean where the broken policies failed within a small fraction. Spec: EPO-4."""
    assert kip279_search.found == {}
    # Each broken policy's first counterexample (whichever invariant it breaks first).
    firsts = [min(examples for examples, _ in outcome.first.values())
              for outcome in (hw_search, kip101_search)]
    assert max(firsts) <= SMALL_FRACTION * kip279_search.examples


@pytest.mark.slow
def test_kip279__three_replicas_long_runs__finds_nothing() -> None:
    """Three replicas and 40-step runs: KIP-279 still breaks no invariant."""
    outcome = search("leader_epoch_kip279", max_examples=1500, replica_count=3, steps=40)
    assert outcome.found == {}
