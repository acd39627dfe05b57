"""The three truncation policies on the published scenarios' offsets (formal-methods B.1-B.3)."""

from __future__ import annotations

from kafkalog.model.replication import log as rlog
from kafkalog.model.replication.log import ReplicaLog
from kafkalog.model.replication.policies import (
    kip101_end_offset_for,
    leader_epoch_kip279,
    leader_epoch_request,
    truncate_to_high_watermark,
)
from kafkalog.model.values import EpochEntry


def _log(*runs: tuple[int, int], hw: int = 0, epoch_after: int | None = None) -> ReplicaLog:
    """A log holding `count` records of `epoch` for each (epoch, count) run, then its HW."""
    log, n = rlog.new_replica_log(), 0
    for epoch, count in runs:
        for _ in range(count):
            n += 1
            log = rlog.append_as_leader(log, f"m{n}", epoch)
    if epoch_after is not None:
        log = rlog.assign_epoch(log, epoch_after)
    return rlog.update_high_watermark(log, hw)


def test_scenario_1__hw_truncation__drops_the_record_the_leader_committed() -> None:
    """B.1: A holds [m1, m2] with HW 1; the HW rule cuts m2, the epoch rules keep it."""
    follower, leader = _log((0, 2), hw=1), _log((0, 2), hw=2)
    assert truncate_to_high_watermark(follower, leader) == 1
    assert leader_epoch_request(follower, leader) == 2
    assert leader_epoch_kip279(follower, leader) == 2


def test_scenario_2__epoch_rules__drop_the_record_the_new_leader_replaced() -> None:
    """B.2: A holds [m1, m2]@e0 (HW 2); B leads e1 with [m1@e0, m3@e1]; A must cut to 1."""
    follower, leader = _log((0, 2), hw=2), _log((0, 1), (1, 1), hw=1)
    assert truncate_to_high_watermark(follower, leader) == 2
    assert leader_epoch_request(follower, leader) == 1
    assert leader_epoch_kip279(follower, leader) == 1


def _kafka_6361(n: int) -> tuple[ReplicaLog, ReplicaLog]:
    """B.3: A has [0,20]@e1 then leads e3 from 21 to 30; B has [0,10]@e1 and [11,n]@e2."""
    leader = _log((1, 21), (3, 10), hw=11)
    follower = _log((1, 11), (2, n - 10), hw=11)
    return follower, leader


def test_kafka_6361__first_epoch_protocol__answers_the_start_of_the_next_epoch() -> None:
    """0.11 answers 21 for the unknown e2, so B keeps e2 data at 11..n. Spec: BUG-51."""
    leader = _kafka_6361(15)[1]
    assert kip101_end_offset_for(leader.epochs, 2, 31) == 21
    for n, expected in ((15, 16), (20, 21), (25, 21)):
        follower, leader = _kafka_6361(n)
        assert leader_epoch_request(follower, leader) == expected


def test_kafka_6361__kip279__truncates_to_the_end_of_the_shared_epoch() -> None:
    """KIP-279: A answers (e1, 21); B truncates to min(its end of e1 = 11, 21). Spec: EPO-4."""
    for n in (15, 20, 25):
        follower, leader = _kafka_6361(n)
        assert leader_epoch_kip279(follower, leader) == 11


def test_kip279__follower_lacking_the_answered_epoch__asks_again() -> None:
    """A follower without the returned epoch cuts to its own earlier epoch and retries."""
    leader = _log((0, 2), (2, 2), (4, 1), hw=0)  # epochs 0@0, 2@2, 4@4
    follower = _log((0, 3), (1, 1), (3, 2), hw=0)  # epochs 0@0, 1@3, 3@4
    # Ask e3 -> (2, 4); no e2 here: cut to 4, where e3 starts; ask e1 -> (0, 2); min(3, 2).
    assert leader_epoch_kip279(follower, leader) == 2


def test_kip101_answer__request_below_first_epoch__is_undefined() -> None:
    """The 0.11 cache answered -1 below its first epoch (fixed later by KAFKA-7415)."""
    entries = (EpochEntry(5, 10), EpochEntry(7, 20))
    assert kip101_end_offset_for(entries, 4, 30) == -1
    assert kip101_end_offset_for(entries, 7, 30) == 30
    assert kip101_end_offset_for(entries, 6, 30) == 20
    assert kip101_end_offset_for(entries, 8, 30) == -1


def test_epoch_policies__follower_without_epochs__fall_back_to_its_high_watermark() -> None:
    """No epoch to ask about: both epoch rules use the HW, like the fetcher did."""
    follower, leader = rlog.new_replica_log(), _log((0, 2), hw=2)
    assert leader_epoch_request(follower, leader) == 0
    assert leader_epoch_kip279(follower, leader) == 0
