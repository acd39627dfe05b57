"""The replication model's actions, guards and invariants, one behaviour per test."""

from __future__ import annotations

import pytest
from kafkalog.model.errors import IllegalArgumentError, IllegalStateError
from kafkalog.model.replication import log as rlog
from kafkalog.model.replication import replication as rep
from kafkalog.model.replication.invariants import (
    high_watermark_within_log_end,
    logs_match_below_high_watermark,
    no_committed_data_loss,
    violated_invariants,
)
from kafkalog.model.replication.steps import Step, apply_step, check_step, replay
from kafkalog.model.values import EpochEntry

KIP279 = "leader_epoch_kip279"


def _run(*steps: tuple[str, dict[str, int]], policy: str = KIP279,
         replicas: int = 2) -> rep.ReplicationState:
    return replay([Step(a, args) for a, args in steps], policy, replicas)[-1].state


def test_initial_state__replica_zero__leads_epoch_zero_with_full_isr() -> None:
    """Replica 0 leads epoch 0 and has recorded (0, 0). Spec: LOG-50."""
    s = rep.initial_state(3)
    assert (s.leader, s.leader_epoch, s.isr) == (0, 0, frozenset({0, 1, 2}))
    assert rlog.epoch_entries(s.replicas[0]) == (EpochEntry(0, 0),)


@pytest.mark.parametrize("count", [1, 4])
def test_initial_state__replica_count_out_of_range__raises(count: int) -> None:
    """Only 2 or 3 replicas are modelled."""
    with pytest.raises(IllegalArgumentError):
        rep.initial_state(count)


def test_fetch__response__carries_the_high_watermark_from_before_the_fetch() -> None:
    """The follower learns the HW one fetch late, which scenario 1 needs. Spec: LOG-5."""
    s = _run(("append", {}), ("fetch", {"replica": 1, "max_records": 3}),
             ("fetch", {"replica": 1, "max_records": 3}))
    assert rlog.high_watermark(s.replicas[0]) == 1
    assert rlog.high_watermark(s.replicas[1]) == 0
    assert s.committed == (rlog.Entry(0, "m1"),)


def test_fetch__max_records__bounds_what_is_returned() -> None:
    """A fetch returns at most `max_records` records from the follower's LEO."""
    s = _run(("append", {}), ("append", {}), ("fetch", {"replica": 1, "max_records": 1}))
    assert rlog.log_end_offset(s.replicas[1]) == 1


def test_fetch__follower_ahead_of_leader__truncates_to_leader_log_end() -> None:
    """OFFSET_OUT_OF_RANGE: a follower past the leader's LEO cuts back to it."""
    fetch = ("fetch", {"replica": 1, "max_records": 3})
    s = _run(("append", {}), ("append", {}), fetch, fetch, fetch,
             ("crash", {"replica": 0, "lost": 2}), ("restart", {"replica": 0}),
             ("elect", {"replica": 0}), ("truncate", {"replica": 1}),
             policy="truncate_to_high_watermark")
    assert rlog.log_end_offset(s.replicas[1]) == 2 > rlog.log_end_offset(s.replicas[0])
    s, appended = rep.fetch(s, 1, 3)
    assert appended == 0
    assert rlog.log_end_offset(s.replicas[1]) == rlog.log_end_offset(s.replicas[0]) == 0


def test_fetch__pending_follower__is_refused() -> None:
    """A follower told of a new epoch must truncate before it fetches (KAFKA-7164)."""
    s = _run(("elect", {"replica": 0}))
    with pytest.raises(IllegalStateError):
        rep.fetch(s, 1, 1)


def test_crash__flushed_records__survive() -> None:
    """Only records above the recovery point can be lost. Spec: LOG-26."""
    s = _run(("append", {}), ("append", {}), ("flush", {"replica": 0}), ("append", {}))
    s, lost = rep.crash(s, 0, 5)
    assert lost == 1
    assert rlog.log_end_offset(s.replicas[0]) == 2
    assert s.leader is None and 0 in s.lost_unflushed


def test_crash__negative_loss__raises() -> None:
    """`lost` is a count."""
    with pytest.raises(IllegalArgumentError):
        rep.crash(rep.initial_state(), 0, -1)


def test_restart__without_leader__waits_for_election_to_truncate() -> None:
    """A restarted replica truncates at once if it can ask a leader, else after the election."""
    s = _run(("crash", {"replica": 1, "lost": 0}), ("crash", {"replica": 0, "lost": 0}))
    s, offset = rep.restart(s, 1, KIP279)
    assert offset is None and 1 in s.pending_truncation
    s, _ = rep.restart(s, 0, KIP279)
    s, _ = rep.elect(s, 0)
    assert s.pending_truncation == frozenset({1})


def test_elect__new_leader__records_epoch_at_its_log_end_and_resets_positions() -> None:
    """The winner assigns (epoch, LEO); every other live replica must truncate. Spec: LOG-50."""
    s = _run(("append", {}), ("fetch", {"replica": 1, "max_records": 3}), ("elect", {"replica": 1}))
    assert rlog.epoch_entries(s.replicas[1])[-1] == EpochEntry(1, 1)
    assert s.fetch_positions == () and s.pending_truncation == frozenset({0})


def test_elect__replica_outside_isr__is_refused() -> None:
    """Elections are clean: only ISR members may win."""
    s = _run(("shrink_isr", {"replica": 1}))
    with pytest.raises(IllegalStateError):
        rep.elect(s, 1)


def test_elect__winner_that_lost_unflushed_records__counts_an_accepted_loss() -> None:
    """Last replica standing (Vanlightly/kafka-tlaplus): its lost committed records are not a
    protocol failure."""
    s = _run(("shrink_isr", {"replica": 1}), ("append", {}), ("advance_high_watermark", {}),
             ("crash", {"replica": 0, "lost": 1}),
             ("restart", {"replica": 0}), ("elect", {"replica": 0}))
    assert s.accepted_losses == 1 and s.committed == ()
    assert no_committed_data_loss(s)


def test_shrink_isr__leaving_only_the_leader__advances_its_high_watermark() -> None:
    """Partition.maybeShrinkIsr re-checks the HW. Spec: LOG-7."""
    s = _run(("append", {}), ("shrink_isr", {"replica": 1}))
    assert rlog.high_watermark(s.replicas[0]) == 1


def test_advance_high_watermark__unseen_follower__holds_it_back() -> None:
    """A follower that has not fetched this epoch keeps the HW where it is."""
    s = _run(("append", {}))
    s, hw = rep.advance_high_watermark(s)
    assert hw == 0


def test_fetch__caught_up_follower__rejoins_isr() -> None:
    """ISR expansion: position >= leader HW and >= the leader epoch's start offset."""
    s = _run(("shrink_isr", {"replica": 1}), ("append", {}), ("advance_high_watermark", {}),
             ("fetch", {"replica": 1, "max_records": 3}))
    assert 1 not in s.isr
    s, _ = rep.fetch(s, 1, 3)
    assert 1 in s.isr


def test_truncate__unknown_policy__raises_naming_the_known_ones() -> None:
    """A bad policy name is a typed error."""
    s = _run(("elect", {"replica": 0}))
    with pytest.raises(IllegalArgumentError, match="leader_epoch_kip279"):
        rep.truncate(s, 1, "nope")


def test_actions__unknown_replica__raise_illegal_argument() -> None:
    """Replica ids outside the partition are rejected with the id named."""
    with pytest.raises(IllegalArgumentError, match="no replica 7"):
        rep.flush(rep.initial_state(), 7)


@pytest.mark.parametrize("step", [Step("jump", {}), Step("fetch", {"replica": 1}),
                                  Step("elect", {"replica": True})])
def test_check_step__malformed__raises(step: Step) -> None:
    """Steps from traces are validated before they run."""
    with pytest.raises(IllegalArgumentError):
        check_step(step)


def test_invariants__fresh_partition__all_hold() -> None:
    """Nothing is broken before anything happens."""
    s = rep.initial_state(3)
    assert violated_invariants(s) == ()
    assert logs_match_below_high_watermark(s) and high_watermark_within_log_end(s)


def test_logs_match__pending_follower__is_not_vouched_for() -> None:
    """A follower that has not reconciled yet may hold stale records without a violation."""
    s = _run(("append", {}), ("fetch", {"replica": 1, "max_records": 3}), ("elect", {"replica": 1}),
             ("append", {}), ("elect", {"replica": 0}))
    s, _ = apply_step(s, Step("append", {}), KIP279)
    assert 1 in s.pending_truncation and logs_match_below_high_watermark(s)
