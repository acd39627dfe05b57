"""A replicated partition: 2-3 replicas of the single-log model under Kafka's replication protocol.

Pure like the rest of `model/`: every action is `action(state, ...) -> (state, result)` and either
returns a new state or raises a typed error leaving nothing changed. The controller is atomic: an
election bumps the epoch, keeps the ISR (the leader shrinks it; fetches grow it) and tells every
live replica at once, like `KafkaReplication.tla` (hachikuji/kafka-specification). What the
search may interleave: leader appends, follower fetches, HW advances, flushes, crashes that lose
unflushed records, restarts, follower truncation under a pluggable policy (`policies.py`),
ISR shrinks and elections.

Not modelled: zombie fetches and fencing (KIP-320), unclean election, ISR changes by the
controller, log start offset movement, multi-record batches (see `log.py`).

Two ghost fields exist only for the invariants (`invariants.py`): `committed`, every
record ever below a leader's HW, and `lost_unflushed`, the replicas whose crash lost records.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import IllegalArgumentError, IllegalStateError
from ..replication import log as rlog
from ..replication.log import Entry, ReplicaLog
from ..replication.policies import policy_named

MIN_REPLICAS = 2
MAX_REPLICAS = 3


@dataclass(frozen=True)
class ReplicationState:
    """One partition's replicas and the controller's view of them."""

    replicas: tuple[ReplicaLog, ...]  # replica id = index
    leader: int | None  # None while offline: the leader crashed and no election happened yet
    leader_epoch: int  # the controller's latest epoch; Invariant: >= every epoch in any log
    isr: frozenset[int]  # Invariant: leader in isr when leader is not None
    up: frozenset[int]  # replicas running; Invariant: leader in up when leader is not None
    # Live followers told of a new epoch (or restarted) that must truncate before they fetch.
    pending_truncation: frozenset[int]
    # The leader's view of each follower's LEO from its last fetch in this epoch (Kafka's
    # remote replica state); reset at every election. Sorted (replica, offset) pairs.
    fetch_positions: tuple[tuple[int, int], ...]
    committed: tuple[Entry, ...]  # ghost: records ever below a leader's HW, offset = index
    lost_unflushed: frozenset[int]  # ghost: replicas whose crash lost records, until they catch up
    accepted_losses: int  # ghost: committed records dropped because a replica that lost them won
    next_payload: int  # the number of the next leader append's payload ("m<n>")

    def position_of(self, replica: int) -> int | None:
        """The leader's view of `replica`'s LEO, or None before its first fetch this epoch."""
        return dict(self.fetch_positions).get(replica)


def initial_state(replica_count: int = 2) -> ReplicationState:
    """Replica 0 leads epoch 0 with every replica in the ISR and every log empty (LOG-50).

    Raises IllegalArgumentError unless 2 <= `replica_count` <= 3.
    """
    if not MIN_REPLICAS <= replica_count <= MAX_REPLICAS:
        raise IllegalArgumentError(
            f"replica count {replica_count} outside [{MIN_REPLICAS}, {MAX_REPLICAS}]",
            where="initial_state",
        )
    logs = [rlog.new_replica_log() for _ in range(replica_count)]
    logs[0] = rlog.assign_epoch(logs[0], 0)
    everyone = frozenset(range(replica_count))
    return ReplicationState(tuple(logs), 0, 0, everyone, everyone, frozenset(), (), (),
                            frozenset(), 0, 1)


# --- Enabledness: the machine's preconditions and the actions' guards share these ---


def can_append(s: ReplicationState) -> bool:
    return s.leader is not None


def can_fetch(s: ReplicationState, r: int) -> bool:
    return (s.leader is not None and r != s.leader and r in s.up
            and r not in s.pending_truncation)


def can_truncate(s: ReplicationState, r: int) -> bool:
    return s.leader is not None and r in s.pending_truncation


def can_elect(s: ReplicationState, r: int) -> bool:
    return r in s.isr and r in s.up


def can_shrink_isr(s: ReplicationState, r: int) -> bool:
    return s.leader is not None and r in s.isr and r != s.leader


def _check(s: ReplicationState, r: int, enabled: bool, action: str) -> None:
    if not 0 <= r < len(s.replicas):
        raise IllegalArgumentError(f"no replica {r} (replicas 0..{len(s.replicas) - 1})",
                                   where=action)
    if not enabled:
        raise IllegalStateError(f"{action} is not enabled for replica {r}", where=action)


def _with_log(s: ReplicationState, r: int, log: ReplicaLog) -> ReplicationState:
    logs = list(s.replicas)
    logs[r] = log
    return replace(s, replicas=tuple(logs))


def _leader(s: ReplicationState) -> int:
    if s.leader is None:
        raise IllegalStateError("the partition has no leader", where="replication")
    return s.leader


# --- Actions ---


def append(s: ReplicationState) -> tuple[ReplicationState, Entry]:
    """The leader appends one new record in its epoch (LOG-14). Raises IllegalStateError offline."""
    leader = _leader(s)
    entry = Entry(s.leader_epoch, f"m{s.next_payload}")
    log = rlog.append_as_leader(s.replicas[leader], entry.payload, entry.epoch)
    return replace(_with_log(s, leader, log), next_payload=s.next_payload + 1), entry


def fetch(s: ReplicationState, r: int, max_records: int) -> tuple[ReplicationState, int]:
    """Follower `r` fetches from its LEO; returns how many records it appended.

    The leader reads up to `max_records` records and its HW for the response, then records the
    fetch offset as `r`'s position, lets `r` join the ISR once that reaches the leader's HW and
    the start of the leader's epoch (Partition.isFollowerInSync) and advances its HW
    (ReplicaManager.fetchMessages: read first, update follower state after, so the response
    carries the HW from before this fetch). The follower appends the records and takes
    min(leader HW, own LEO) as its HW (LOG-5). A follower ahead of the leader's LEO gets
    OFFSET_OUT_OF_RANGE and truncates to the leader's LEO (AbstractFetcherThread).
    """
    _check(s, r, can_fetch(s, r), "fetch")
    if max_records < 0:
        raise IllegalArgumentError(f"max_records {max_records} is negative", where="fetch")
    leader = _leader(s)
    leader_log, follower = s.replicas[leader], s.replicas[r]
    position = rlog.log_end_offset(follower)
    if position > rlog.log_end_offset(leader_log):
        return _with_log(s, r, rlog.truncate_to(follower, rlog.log_end_offset(leader_log))), 0
    records = rlog.entries(leader_log)[position:position + max_records]
    follower = rlog.append_as_follower(follower, position, records)
    follower = rlog.update_high_watermark(follower, rlog.high_watermark(leader_log))
    positions = dict(s.fetch_positions)
    positions[r] = position
    s = replace(_with_log(s, r, follower), fetch_positions=tuple(sorted(positions.items())))
    s, _ = advance_high_watermark(_after_fetch(s, r, position))
    return s, len(records)


def _after_fetch(s: ReplicationState, r: int, position: int) -> ReplicationState:
    leader_log = s.replicas[_leader(s)]
    epoch_start = leader_log.epochs[-1].start_offset if leader_log.epochs else 0
    if r not in s.isr and position >= max(rlog.high_watermark(leader_log), epoch_start):
        s = replace(s, isr=s.isr | {r})
    caught_up = rlog.entries(s.replicas[r])[:len(s.committed)] == s.committed
    if r in s.lost_unflushed and caught_up:
        s = replace(s, lost_unflushed=s.lost_unflushed - {r})
    return s


def advance_high_watermark(s: ReplicationState) -> tuple[ReplicationState, int]:
    """The leader raises its HW to the smallest LEO in the ISR, if higher (LOG-7, LOG-9).

    A follower whose position the leader has not seen this epoch holds the HW back. Returns the
    leader's HW afterwards. Raises IllegalStateError offline.
    """
    leader = _leader(s)
    leader_log = s.replicas[leader]
    candidates = [rlog.log_end_offset(leader_log)]
    for r in s.isr - {leader}:
        position = s.position_of(r)
        if position is None:
            return s, rlog.high_watermark(leader_log)
        candidates.append(position)
    target = min(candidates)
    if target <= rlog.high_watermark(leader_log):
        return s, rlog.high_watermark(leader_log)
    s = _with_log(s, leader, rlog.update_high_watermark(leader_log, target))
    if target > len(s.committed):
        newly = rlog.entries(leader_log)[len(s.committed):target]
        s = replace(s, committed=s.committed + newly)
    return s, target


def flush(s: ReplicationState, r: int) -> tuple[ReplicationState, int]:
    """Replica `r` flushes to its LEO; returns its recovery point (LOG-26)."""
    _check(s, r, r in s.up, "flush")
    log = rlog.flush(s.replicas[r])
    return _with_log(s, r, log), log.recovery_point


def crash(s: ReplicationState, r: int, lost: int) -> tuple[ReplicationState, int]:
    """Replica `r` crashes, losing up to `lost` unflushed records; returns how many it lost.

    A crashed leader leaves the partition offline until an election. The leader keeps its view
    of `r`'s position until `r` fetches again, as Kafka does.
    """
    _check(s, r, r in s.up, "crash")
    if lost < 0:
        raise IllegalArgumentError(f"lost {lost} is negative", where="crash")
    log, dropped = rlog.crash(s.replicas[r], lost)
    s = replace(
        _with_log(s, r, log),
        up=s.up - {r},
        leader=None if s.leader == r else s.leader,
        pending_truncation=s.pending_truncation - {r},
        lost_unflushed=s.lost_unflushed | {r} if dropped else s.lost_unflushed,
    )
    return s, dropped


def restart(s: ReplicationState, r: int, policy: str) -> tuple[ReplicationState, int | None]:
    """Replica `r` comes back as a follower and truncates under `policy` before it fetches.

    Returns the truncation offset, or None when there is no leader to ask yet: then `r` waits
    for the next election and truncates afterwards (`truncate`).
    """
    _check(s, r, r not in s.up, "restart")
    s = replace(s, up=s.up | {r}, pending_truncation=s.pending_truncation | {r})
    if s.leader is None:
        return s, None
    return truncate(s, r, policy)


def truncate(s: ReplicationState, r: int, policy: str) -> tuple[ReplicationState, int]:
    """Follower `r` truncates under `policy` against the current leader; returns the offset.

    Raises IllegalArgumentError for an unknown policy, IllegalStateError when `r` has nothing
    to reconcile or there is no leader to ask.
    """
    rule = policy_named(policy)
    _check(s, r, can_truncate(s, r), "truncate")
    offset = rule(s.replicas[r], s.replicas[_leader(s)])
    log = rlog.truncate_to(s.replicas[r], offset)
    return replace(_with_log(s, r, log), pending_truncation=s.pending_truncation - {r}), offset


def elect(s: ReplicationState, r: int) -> tuple[ReplicationState, int]:
    """The controller makes ISR member `r` leader in a new epoch; returns the epoch.

    The new leader records (epoch, LEO) (LOG-50) and forgets follower positions; every other live
    replica must truncate (on every epoch change, KAFKA-7164). When the winner is a replica whose
    crash lost records, the committed records it lacks are counted as an accepted loss (the
    "last replica standing" case of `Vanlightly/kafka-tlaplus`) rather than a protocol failure.
    """
    _check(s, r, can_elect(s, r), "elect")
    epoch = s.leader_epoch + 1
    s = _with_log(s, r, rlog.assign_epoch(s.replicas[r], epoch))
    committed = s.committed
    if r in s.lost_unflushed:
        kept = rlog.entries(s.replicas[r])
        common = next((i for i, (a, b) in enumerate(zip(kept, committed, strict=False))
                       if a != b), min(len(kept), len(committed)))
        committed = committed[:common]
    s = replace(
        s,
        leader=r,
        leader_epoch=epoch,
        pending_truncation=s.up - {r},
        fetch_positions=(),
        committed=committed,
        accepted_losses=s.accepted_losses + len(s.committed) - len(committed),
    )
    # Partition.makeLeader re-checks the HW: with the ISR down to the leader it may move.
    s, _ = advance_high_watermark(s)
    return s, epoch


def shrink_isr(s: ReplicationState, r: int) -> tuple[ReplicationState, None]:
    """The leader drops follower `r` from the ISR (it lagged too long) and re-checks its HW."""
    _check(s, r, can_shrink_isr(s, r), "shrink_isr")
    s, _ = advance_high_watermark(replace(s, isr=s.isr - {r}))
    return s, None
