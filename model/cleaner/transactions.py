"""The cleaner's transaction tracker (Kafka's `CleanedTransactionMetadata`), as frozen values.

A pass carries one tracker across its groups: aborted transactions wait in a queue ordered by
first offset, move to "ongoing aborted" once a batch reaches their first offset, and the markers
close them (CLN-36..CLN-40). Rules: KL-CLEAN-7.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..state import Batch
from ..values import AbortedTxnEntry


@dataclass(frozen=True)
class OngoingAborted:
    """One producer's aborted transaction the pass is inside of (CLN-37)."""

    entry: AbortedTxnEntry
    data_seen: bool  # CLN-38: aborted data of it was read in this pass (an empty batch counts)


@dataclass(frozen=True)
class TxnTracker:
    """`CleanedTransactionMetadata`: the pending heap, ongoing aborted and committed producers."""

    pending: tuple[AbortedTxnEntry, ...] = ()  # sorted by first offset (a min-heap in Kafka)
    aborted: tuple[tuple[int, OngoingAborted], ...] = ()  # (producer id, state), by id
    committed: frozenset[int] = frozenset()  # producers with a committed transaction in progress


def add_aborted(tracker: TxnTracker, entries: tuple[AbortedTxnEntry, ...]) -> TxnTracker:
    """CLN-36: queue collected aborted transactions (duplicates are harmless: CLN-37 step 1)."""
    pending = sorted((*tracker.pending, *entries), key=lambda e: e.first_offset)
    return replace(tracker, pending=tuple(pending))


def _ongoing(tracker: TxnTracker) -> dict[int, OngoingAborted]:
    return dict(tracker.aborted)


def _with(tracker: TxnTracker, ongoing: dict[int, OngoingAborted]) -> TxnTracker:
    return replace(tracker, aborted=tuple(sorted(ongoing.items())))


def _consume_started(tracker: TxnTracker, last_offset: int) -> TxnTracker:
    """CLN-37 step 1: entries whose first offset <= the batch's last offset become ongoing,
    unless their producer already has one (the entry is then dropped)."""
    ongoing = _ongoing(tracker)
    pending = list(tracker.pending)
    while pending and pending[0].first_offset <= last_offset:
        entry = pending.pop(0)
        ongoing.setdefault(entry.producer_id, OngoingAborted(entry, False))
    return replace(_with(tracker, ongoing), pending=tuple(pending))


def on_data_batch(tracker: TxnTracker, batch: Batch) -> tuple[TxnTracker, bool]:
    """CLN-37: a data batch; True iff it is aborted (and so discardable). Spec: KL-CLEAN-7."""
    tracker = _consume_started(tracker, batch.last_offset)
    if not batch.is_transactional:
        return tracker, False
    ongoing = _ongoing(tracker)
    current = ongoing.get(batch.producer_id)
    if current is not None:
        ongoing[batch.producer_id] = replace(current, data_seen=True)
        return _with(tracker, ongoing), True
    return replace(tracker, committed=tracker.committed | {batch.producer_id}), False


def on_control_batch(tracker: TxnTracker, batch: Batch
                     ) -> tuple[TxnTracker, bool, AbortedTxnEntry | None]:
    """CLN-38: a control batch; (tracker, discardable, `.txnindex` entry to keep). An empty one
    is discardable; an ABORT is kept with its entry iff its aborted data was seen in this pass;
    a COMMIT is discardable iff none of its data remains. Spec: KL-CLEAN-7."""
    tracker = _consume_started(tracker, batch.last_offset)
    if not batch.records:
        return tracker, True, None
    marker = batch.producer_batch().marker
    assert marker is not None
    if marker.commit:
        discardable = batch.producer_id not in tracker.committed
        committed = tracker.committed - {batch.producer_id}
        return replace(tracker, committed=committed), discardable, None
    ongoing = _ongoing(tracker)
    current = ongoing.pop(batch.producer_id, None)
    tracker = _with(tracker, ongoing)
    if current is not None and current.data_seen:
        return tracker, False, current.entry
    return tracker, True, None
