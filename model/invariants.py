"""Named invariants of a partition state, each citing its rule (specs/log.md, KL-INV-*).

`check_all(state)` returns the names of the violated predicates; an empty list means the state is
one the spec allows. Conformance and the formal checks use these same functions.
"""

from __future__ import annotations

from collections.abc import Callable

from .producer.producer_state import ProducerState
from .producer.transactions import last_stable_offset
from .segment import materialised
from .segment_facts import IdentityMemo, log_facts, offset_indexes_consistent
from .state import Batch, PartitionState
from .versions import index_entry_per_batch


def offsets_ordered(s: PartitionState) -> bool:
    """KL-INV-1 (LOG-2 (1)): 0 <= log_start_offset <= high_watermark <= log_end_offset."""
    return 0 <= s.log_start_offset <= s.high_watermark.message_offset <= s.log_end_offset


def recovery_point_bounded(s: PartitionState) -> bool:
    """KL-INV-2 (LOG-2 (3), LOC-2): 0 <= recovery_point <= log_end_offset."""
    return 0 <= s.recovery_point <= s.log_end_offset


def log_start_in_first_segment(s: PartitionState) -> bool:
    """KL-INV-3 (LOG-2 (4)): the log start offset is at or above the first segment's base."""
    return bool(s.segments) and s.log_start_offset >= s.segments[0].base_offset


def segments_sorted_unique_non_empty(s: PartitionState) -> bool:
    """KL-INV-4 (LOG-2 (5), MAP-1): at least one segment; bases strictly increase."""
    bases = [seg.base_offset for seg in s.segments]
    return bool(bases) and all(a < b for a, b in zip(bases, bases[1:], strict=False))


def batches_inside_segments(s: PartitionState) -> bool:
    """KL-INV-5 (SEG-2, LOG-2 (6)): batch offsets in [base, base + Int.MAX], below the next base.

    Domain: a roll above the LEO is followed by a follower append starting at or above the new
    base (as LOG-22's own rolls are); Kafka checks only the largest offset (SEG-3 step 3).
    """
    return log_facts(s.segments).batches_inside  # segment_facts.py: the walk's answer, kept


def offsets_strictly_increasing(s: PartitionState) -> bool:
    """KL-INV-6 (LOG-15 (4), SEG-2, LOG-2): batch last offsets strictly increase across the log."""
    return log_facts(s.segments).lasts_increasing


def data_below_log_end(s: PartitionState) -> bool:
    """KL-INV-7 (LOC-3, LOG-42): every stored offset is below the log end offset."""
    highest = log_facts(s.segments).max_last
    return highest is None or highest < s.log_end_offset


def positions_contiguous(s: PartitionState) -> bool:
    """KL-INV-8 (FMT-52): batches sit back to back from position 0; size is their sum."""
    return log_facts(s.segments).positions_contiguous


def epochs_strictly_increasing(s: PartitionState) -> bool:
    """KL-INV-9 (EPO-1, LOG-2 (7)): epochs and start offsets both strictly increase."""
    pairs = list(zip(s.epochs, s.epochs[1:], strict=False))
    return all(a.epoch < b.epoch and a.start_offset < b.start_offset for a, b in pairs)


def epochs_within_log(s: PartitionState) -> bool:
    """KL-INV-10 (LOG-2 (8)): epoch start offsets lie in [log start, LEO].

    Holds when `assign_epoch` is only called as a leader does (start offset = LEO, LOG-50).
    """
    return all(s.log_start_offset <= e.start_offset <= s.log_end_offset for e in s.epochs)


def offset_index_well_formed(s: PartitionState) -> bool:
    """KL-INV-11 (FMT-12, FMT-14): keys strictly increase; each entry is a batch (last, start).

    Before 4.0 (KL-VERSION-4) an entry is an append's (last offset, first batch's start): a
    batch's last offset paired with the start of that batch or of an earlier one.
    """
    per_batch = index_entry_per_batch(s.config.kafka_version)
    return offset_indexes_consistent(s.segments, per_batch)


def time_index_well_formed(s: PartitionState) -> bool:
    """KL-INV-12 (FMT-19, FMT-22): timestamps strictly increase, offsets never decrease."""
    facts = log_facts(s.segments)
    highest = facts.max_time_index_offset
    return facts.time_index_ordered and (highest is None or highest < s.log_end_offset)


def indexes_within_capacity(s: PartitionState) -> bool:
    """KL-INV-13 (FMT-14, FMT-21, FMT-26): entry counts never exceed capacities."""
    return log_facts(s.segments).indexes_within_capacity


def pending_deletions_have_timers(s: PartitionState) -> bool:
    """KL-INV-14 (LOC-11): each `.deleted` name is sorted, unique and has a pending timer."""
    files = list(s.deleted_files)
    timed = {base for _, base in s.deletion_timers}
    return files == sorted(set(files)) and all(base in timed for base in files)


def producer_state_well_formed(s: PartitionState) -> bool:
    """KL-INV-15 (PST-3, PST-13, PSR-1, PSF-4): producers sorted and unique; each
    caches at most 5 batches with strictly increasing last offsets below the LEO; snapshot
    offsets increase, the latest is at most the map end, and no snapshot holds a producer twice,
    more than one batch per producer, or data at or beyond its own offset (KAFKA-6683)."""
    # A step that leaves the producer state alone keeps the very same frozen object.
    return _producer_state_consistent(s.producer_state, s.log_end_offset)


def _producer_state_of(ps: ProducerState, log_end_offset: int) -> bool:
    ids = [e.producer_id for e in ps.producers]
    if ids != sorted(set(ids)) or ps.last_snap_offset > ps.last_map_offset:
        return False
    for e in ps.producers:
        lasts = [b.last_offset for b in e.batches]
        if len(lasts) > 5 or lasts != sorted(set(lasts)):
            return False
        if any(not 0 <= b.first_offset <= b.last_offset < log_end_offset for b in e.batches):
            return False
    offsets = [o for o, _ in ps.snapshots]
    if offsets != sorted(set(offsets)):
        return False
    for offset, content in ps.snapshots:
        pids = [e.producer_id for e in content]
        if len(pids) != len(set(pids)):
            return False
        if any(len(e.batches) > 1 or e.last_data_offset >= offset for e in content):
            return False
    return True


_producer_state_consistent: IdentityMemo[ProducerState, bool] = IdentityMemo(_producer_state_of)


def last_stable_offset_bounded(s: PartitionState) -> bool:
    """KL-INV-16 (TXN-8, TXN-9): log start <= the cached FUO (when present),
    and log start <= last stable offset <= HW <= LEO."""
    fuo = s.first_unstable_offset
    if fuo is not None and fuo < s.log_start_offset:
        return False
    lso = last_stable_offset(s)
    hw = s.high_watermark.message_offset
    return s.log_start_offset <= lso <= hw <= s.log_end_offset


def transactions_well_formed(s: PartitionState) -> bool:
    """KL-INV-17 (TXN-5..7, TXN-11, PSF-8): unreplicated markers are >= the log start offset
    and never the first offset of an open transaction; each segment's `.txnindex` entries have
    strictly increasing marker offsets inside the segment, first <= last, last stable <= last +
    1, and each names an ABORT control batch of that producer. (Unreplicated markers can lie
    below the HW after a truncation that replays them without an HW update, KL-TXN-5.)"""
    ps = s.producer_state
    ongoing = {e.current_txn_first_offset for e in ps.producers if e.current_txn_first_offset >= 0}
    if any(c.last_offset < s.log_start_offset or c.first_offset in ongoing
           for c in ps.unreplicated):
        return False
    facts = log_facts(s.segments)
    active = facts.active_max_txn_last
    return facts.txn_index_consistent and (active is None or active < s.log_end_offset)


def cleaner_checkpoint_bounded(s: PartitionState) -> bool:
    """KL-INV-18 (CLN-15, CLN-21, CLN-68): the cleaner checkpoint, when present, lies in
    [0, LEO]; selection resets one below the log start offset (KL-CLEAN-2)."""
    return s.cleaner_checkpoint is None or 0 <= s.cleaner_checkpoint <= s.log_end_offset


def _aborted_ranges(s: PartitionState) -> dict[int, list[tuple[int, int]]]:
    """Each producer's aborted ranges [first offset, marker offset] from the `.txnindex`es."""
    ranges: dict[int, list[tuple[int, int]]] = {}
    for segment in s.segments:
        for e in segment.txn_index:
            ranges.setdefault(e.producer_id, []).append((e.first_offset, e.last_offset))
    return ranges


def visible_records(s: PartitionState) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every data record a read-committed consumer would see: control
    batches and data of aborted transactions (by the `.txnindex`) left out (TXN-14)."""
    aborted = _aborted_ranges(s)
    found: list[tuple[int, bytes | None, bytes | None]] = []
    for segment in s.segments:
        for b in segment.batches:
            if b.is_control or (b.is_transactional and any(
                    lo <= b.base_offset <= hi for lo, hi in aborted.get(b.producer_id, ()))):
                continue
            found.extend((b.record_offset(i), r.key, r.value) for i, r in enumerate(b.records))
    return found


def cleaned_keys_unique(s: PartitionState) -> bool:
    """KL-INV-19 (CLN-32, CLN-90 (2)): between the log start offset and the cleaner checkpoint
    each key has at most one visible data record. Below the log start offset the cleaner last
    wrote its entry at (`cleaner_floor`) no pass read the data: a reset checkpoint (CLN-15)
    covers it, and a crash that lowers the log start to its checkpoint (GAP-12) shows it."""
    if s.cleaner_checkpoint is None:
        return True
    start = max(s.log_start_offset, s.cleaner_floor)
    keys = [k for offset, k, _ in visible_records(s)
            if k is not None and start <= offset < s.cleaner_checkpoint]
    return len(keys) == len(set(keys))


INVARIANTS: dict[str, Callable[[PartitionState], bool]] = {
    f.__name__: f
    for f in (
        offsets_ordered,
        recovery_point_bounded,
        log_start_in_first_segment,
        segments_sorted_unique_non_empty,
        batches_inside_segments,
        offsets_strictly_increasing,
        data_below_log_end,
        positions_contiguous,
        epochs_strictly_increasing,
        epochs_within_log,
        offset_index_well_formed,
        time_index_well_formed,
        indexes_within_capacity,
        pending_deletions_have_timers,
        producer_state_well_formed,
        last_stable_offset_bounded,
        transactions_well_formed,
        cleaner_checkpoint_bounded,
        cleaned_keys_unique,
    )
}


def check_all(state: PartitionState) -> list[str]:
    """The names of every violated invariant, in declaration order (empty when all hold)."""
    return [name for name, predicate in INVARIANTS.items() if not predicate(state)]


# --- one cleaning pass: predicates over (before, after, first uncleanable offset) -------------


def clean_keeps_latest_values(before: PartitionState, after: PartitionState, bound: int) -> bool:
    """KL-INV-20 (CLN-31, CLN-32, CLN-90 (2)): each key's newest visible record survives
    unchanged, unless it is a tombstone, which may go with every record of its key."""
    def newest(s: PartitionState) -> dict[bytes, tuple[int, bytes | None]]:
        latest: dict[bytes, tuple[int, bytes | None]] = {}
        for offset, key, value in visible_records(s):
            if key is not None:
                latest[key] = (offset, value)
        return latest
    old, new = newest(before), newest(after)
    for key, (offset, value) in old.items():
        if new.get(key) != (offset, value) and not (value is None and key not in new):
            return False
    return set(new) <= set(old)


def clean_keeps_offsets(before: PartitionState, after: PartitionState, bound: int) -> bool:
    """KL-INV-21 (CLN-46, CLN-47, CLN-67): offsets never change: every batch keeps its offset
    range and producer fields, every record its offset, key and value; the log start offset,
    HW and LEO stay."""
    def batches(s: PartitionState) -> dict[int, Batch]:
        return {b.base_offset: b for seg in s.segments for b in seg.batches}
    old = batches(before)
    for base, b in batches(after).items():
        o = old.get(base)
        if o is None or (o.last_offset, o.producer_id, o.producer_epoch, o.base_sequence,
                         o.is_transactional, o.is_control) != (
                b.last_offset, b.producer_id, b.producer_epoch, b.base_sequence,
                b.is_transactional, b.is_control):
            return False
        records = {o.record_offset(i): (r.key, r.value) for i, r in enumerate(o.records)}
        if any(records.get(b.record_offset(i)) != (r.key, r.value)
               for i, r in enumerate(b.records)):
            return False
    return (before.log_start_offset, before.high_watermark.message_offset,
            before.log_end_offset) == (after.log_start_offset,
                                       after.high_watermark.message_offset, after.log_end_offset)


def clean_leaves_uncleanable_alone(before: PartitionState, after: PartitionState,
                                   bound: int) -> bool:
    """KL-INV-22 (CLN-17, CLN-67, CLN-90 (3)): every segment at or above the first uncleanable
    offset, the active one included, is unchanged."""
    def upper(s: PartitionState) -> tuple[object, ...]:
        # Selection may read a segment's largest timestamp (CLN-16), which Kafka caches.
        return tuple(materialised(seg) for seg in s.segments if seg.base_offset >= bound)
    return upper(before) == upper(after)


CLEAN_INVARIANTS: dict[str, Callable[[PartitionState, PartitionState, int], bool]] = {
    f.__name__: f
    for f in (clean_keeps_latest_values, clean_keeps_offsets, clean_leaves_uncleanable_alone)
}


def check_clean(before: PartitionState, after: PartitionState, first_uncleanable: int
                ) -> list[str]:
    """The names of the violated pass predicates (empty when all hold)."""
    return [name for name, predicate in CLEAN_INVARIANTS.items()
            if not predicate(before, after, first_uncleanable)]
