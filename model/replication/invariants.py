"""The replication invariants as named predicates over `ReplicationState` (formal-methods B.7).

The Hypothesis machine and the Z3 check state the same three properties; each predicate here is
total and pure, and `violated_invariants` lists those that fail.
"""

from __future__ import annotations

from itertools import combinations

from ..replication import log as rlog
from ..replication.replication import ReplicationState


def no_committed_data_loss(s: ReplicationState) -> bool:
    """Every record ever below a leader's HW is in the current leader's log, unchanged.

    `committed` only grows, so this also holds for every future leader; ISR followers that hold
    a different record at a committed offset are divergence, caught by log matching once their
    HW covers it. Losses accepted at an election (a replica that lost records won) are already
    cut from `committed` (see `replication.elect`). Leader completeness in B.7.
    """
    if s.leader is None:
        return True
    held = rlog.entries(s.replicas[s.leader])
    return held[:len(s.committed)] == s.committed


def reconciled(s: ReplicationState) -> frozenset[int]:
    """Replicas whose logs the protocol vouches for: running and not waiting to truncate."""
    return s.up - s.pending_truncation


def logs_match_below_high_watermark(s: ReplicationState) -> bool:
    """Any two reconciled replicas hold the same records below the smaller of their HWs.

    Log matching (Vanlightly/kafka-tlaplus). A crashed replica, or one told of a new epoch that has
    not truncated yet, may hold stale records; the protocol only vouches for a log once it has
    reconciled.
    """
    for a, b in combinations(sorted(reconciled(s)), 2):
        below = min(rlog.high_watermark(s.replicas[a]), rlog.high_watermark(s.replicas[b]))
        if rlog.entries(s.replicas[a])[:below] != rlog.entries(s.replicas[b])[:below]:
            return False
    return True


def high_watermark_within_log_end(s: ReplicationState) -> bool:
    """HW <= LEO on every replica (LOG-5)."""
    return all(
        rlog.high_watermark(log) <= rlog.log_end_offset(log) for log in s.replicas
    )


INVARIANTS = {
    "no_committed_data_loss": no_committed_data_loss,
    "logs_match_below_high_watermark": logs_match_below_high_watermark,
    "high_watermark_within_log_end": high_watermark_within_log_end,
}


def violated_invariants(s: ReplicationState) -> tuple[str, ...]:
    """The names of the invariants `s` breaks, in `INVARIANTS` order."""
    return tuple(name for name, holds in INVARIANTS.items() if not holds(s))
