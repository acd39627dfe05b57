"""Truncation policies: where a follower truncates before it fetches from a (new) leader.

Each policy is a pure function `(follower, leader) -> offset` over the two replica logs; the
follower then truncates to that offset (the replication model calls `truncate_to`). Three
generations of Kafka's rule (KIP-101's two scenarios and KIP-279, specs/counterexamples/):

- `truncate_to_high_watermark`: before KIP-101 (0.10): the follower's own HW.
- `leader_epoch_request`: KIP-101 as first shipped (0.11): ask the leader for the end offset of the
  follower's latest epoch; the leader answers with the start of its next higher epoch even when it
  never had the requested one (KAFKA-6361).
- `leader_epoch_kip279`: KIP-279 (2.0): the leader answers (largest epoch <= requested, its end
  offset) (EPO-4 step 5); a follower that does not know the returned epoch truncates to the end
  of its own largest epoch below it and asks again, so it ends at the longest common prefix.
"""

from __future__ import annotations

from collections.abc import Callable

from .. import epochs as epoch_cache
from ..errors import IllegalArgumentError
from ..replication.log import ReplicaLog, high_watermark, log_end_offset
from ..values import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, EpochEntry

TruncationPolicy = Callable[[ReplicaLog, ReplicaLog], int]


def truncate_to_high_watermark(follower: ReplicaLog, leader: ReplicaLog) -> int:
    """Pre-KIP-101: truncate to the follower's own HW; the leader is not asked (KIP-101's cases)."""
    return high_watermark(follower)


def kip101_end_offset_for(entries: tuple[EpochEntry, ...], requested_epoch: int,
                          leo: int) -> int:
    """The 0.11 leader's answer (LeaderEpochFileCache.endOffsetFor before KAFKA-6361).

    The LEO for the leader's latest epoch; else the start offset of the first epoch above the
    request; undefined (-1) for the undefined epoch, an empty cache, a request below the first
    epoch or above the latest. It never says which epoch the offset belongs to: that is the bug.
    """
    if requested_epoch == UNDEFINED_EPOCH or not entries or requested_epoch < entries[0].epoch:
        return UNDEFINED_EPOCH_OFFSET
    if requested_epoch == entries[-1].epoch:
        return leo
    higher = next((e for e in entries if e.epoch > requested_epoch), None)
    return UNDEFINED_EPOCH_OFFSET if higher is None else higher.start_offset


def leader_epoch_request(follower: ReplicaLog, leader: ReplicaLog) -> int:
    """KIP-101 as first designed: min(leader's end offset for my latest epoch, my LEO).

    Falls back to the HW when the follower has no epoch or the leader's answer is undefined
    (0.11 ReplicaFetcherThread.maybeTruncate).
    """
    latest = epoch_cache.latest_epoch(follower.epochs)
    if latest is None:
        return high_watermark(follower)
    end = kip101_end_offset_for(leader.epochs, latest, log_end_offset(leader))
    if end == UNDEFINED_EPOCH_OFFSET:
        return high_watermark(follower)
    return min(end, log_end_offset(follower))


def leader_epoch_kip279(follower: ReplicaLog, leader: ReplicaLog) -> int:
    """KIP-279: iterate OffsetsForLeaderEpoch until the follower knows the epoch returned.

    AbstractFetcherThread.getOffsetTruncationState (2.0): an undefined answer falls back to the
    HW; an answered epoch the follower lacks moves it to the end of its largest epoch below that
    and asks again (each round drops at least one epoch, so this terminates); otherwise truncate
    to min(own end offset for that epoch, the leader's). O(rounds x epochs).
    """
    entries, leo = follower.epochs, log_end_offset(follower)
    while True:
        latest = epoch_cache.latest_epoch(entries)
        if latest is None:
            return min(high_watermark(follower), leo)
        answer = epoch_cache.end_offset_for(leader.epochs, latest, log_end_offset(leader))
        if answer.end_offset == UNDEFINED_EPOCH_OFFSET:
            return min(high_watermark(follower), leo)
        mine = epoch_cache.end_offset_for(entries, answer.epoch, leo)
        if mine.epoch == answer.epoch:
            return min(mine.end_offset, answer.end_offset, leo)
        # The follower lacks `answer.epoch`: `mine` ends where its next epoch above starts, so
        # cutting there drops at least its latest epoch before it asks again.
        leo = min(mine.end_offset, leo)
        entries = epoch_cache.truncate_from_end(entries, leo)


POLICIES: dict[str, TruncationPolicy] = {
    "truncate_to_high_watermark": truncate_to_high_watermark,
    "leader_epoch_request": leader_epoch_request,
    "leader_epoch_kip279": leader_epoch_kip279,
}


def policy_named(name: str) -> TruncationPolicy:
    """The policy called `name`; raises IllegalArgumentError naming the known ones."""
    try:
        return POLICIES[name]
    except KeyError:
        raise IllegalArgumentError(
            f"unknown truncation policy {name!r} (known: {', '.join(POLICIES)})",
            where="truncation policy",
        ) from None
