"""Properties every state of a crash's allowed set has (specs/log.md KL-CRASH-10, CRP-*).

`crash_violations(before, durable, after, mode)` names the properties a recovered state `after`
breaks, given the log `before` the crash and what was durable. The model's own `crash_states`
satisfies them (tests/model/test_model_crash.py); the checker's membership test is stronger.
"""

from __future__ import annotations

from collections.abc import Callable

from ..crash.crash import CrashMode, Durable
from ..crash.torn import crc_covered, torn_pairs
from ..state import Batch, PartitionState


def _batches(state: PartitionState) -> list[Batch]:
    return [b for s in state.segments for b in s.batches]


def _key(batch: Batch) -> tuple[int, int, int, object]:
    return (batch.base_offset, batch.last_offset, batch.partition_leader_epoch, batch.records)


def keeps_flushed_batches(before: PartitionState, durable: Durable,
                          after: PartitionState, mode: CrashMode) -> bool:
    """CRP-4: every batch below F that is at or above the new LSO is there, unchanged."""
    kept = {_key(b) for b in _batches(after)}
    return all(_key(b) in kept for b in _batches(before)
               if b.next_offset <= durable.flushed and b.base_offset >= after.log_start_offset)


def is_prefix(before: PartitionState, durable: Durable, after: PartitionState,
              mode: CrashMode) -> bool:
    """CRP-6, CRP-15: strict: the recovered batches are a prefix of the log's (no resurrection,
    nothing invented); kafka: a prefix of the log's or of a layout it may resurrect, where a
    batch paired with another at its position may carry a torn header (KL-ALLOW-10)."""
    got = _batches(after)
    sources = (before.segments, *(durable.layouts if mode is CrashMode.KAFKA else ()))
    # KL-ALLOW-10: a header torn between two batches at one position keeps their content
    torn = ({b for _, one, other in torn_pairs(sources) for b in (one, other)}
            if mode is CrashMode.KAFKA else set())

    def same(ours: Batch, theirs: Batch) -> bool:
        return _key(ours) == _key(theirs) or (
            theirs in torn and crc_covered(ours) == crc_covered(theirs))

    for segments in sources:
        had = [b for s in segments for b in s.batches]
        if len(got) <= len(had) and all(map(same, got, had)):
            return True
    return False


def epochs_consistent(before: PartitionState, durable: Durable, after: PartitionState,
                      mode: CrashMode) -> bool:
    """CRP-9: epochs and start offsets strictly increase; every start offset is below the LEO."""
    entries = after.epochs
    pairs = zip(entries, entries[1:], strict=False)
    return (all(a.epoch < b.epoch and a.start_offset < b.start_offset for a, b in pairs)
            and all(e.start_offset < after.log_end_offset for e in entries))


def offsets_bounded(before: PartitionState, durable: Durable, after: PartitionState,
                    mode: CrashMode) -> bool:
    """CRP-11, RCV-3: 0 <= LSO <= HW <= LEO, recovery point <= LEO; no leftover is pending, only
    the segments a LEO below the log-start checkpoint dropped (RCV-7), all below the LSO, and
    those recovery's cut removed Kafka's way (KL-ALLOW-5), all at or above the LEO."""
    return (0 <= after.log_start_offset <= after.high_watermark.message_offset
            <= after.log_end_offset and after.recovery_point <= after.log_end_offset
            and all(b < after.log_start_offset or b >= after.log_end_offset
                    for b in after.deleted_files)
            and len(after.deletion_timers) == len(after.deleted_files))


CRASH_INVARIANTS: dict[str, Callable[[PartitionState, Durable, PartitionState, CrashMode], bool]]
CRASH_INVARIANTS = {
    f.__name__: f for f in (keeps_flushed_batches, is_prefix, epochs_consistent, offsets_bounded)
}


def crash_violations(before: PartitionState, durable: Durable, after: PartitionState,
                     mode: CrashMode = CrashMode.STRICT) -> list[str]:
    """The KL-CRASH-10 properties `after` breaks (empty when it is a legal recovery)."""
    return [name for name, holds in CRASH_INVARIANTS.items()
            if not holds(before, durable, after, mode)]
