"""Which compaction rules (KL-CLEAN-*) one step exercised; joined into `coverage/rules.py`."""

from __future__ import annotations

from .. import errors
from ..state import PartitionState
from ..values import CleanResult


def _has_gaps(state: PartitionState) -> bool:
    return any(b.record_offsets is not None for seg in state.segments for b in seg.batches)


def _horizons(state: PartitionState) -> bool:
    return any(b.delete_horizon_ms is not None for seg in state.segments for b in seg.batches)


def compaction_rules(action: str, before: PartitionState, after: PartitionState,
                     outcome: object) -> set[str]:
    """KL-CLEAN rules told from the pass's result and what it changed.

    Spec: KL-CLEAN-2 (a dirty range was computed), KL-CLEAN-4 and KL-CLEAN-5 (a pass ran),
    KL-CLEAN-9 (a batch now has gaps), KL-CLEAN-8 (a horizon was set), KL-CLEAN-7 (a
    `.txnindex` entry survived a pass), KL-CLEAN-12 (a keyless record was refused),
    KL-CLEAN-13 (a truncation lowered the checkpoint), KL-CLEAN-14 (retention of a
    compacted log).
    """
    rules: set[str] = set()
    compacted = "compact" in before.config.cleanup_policy
    if isinstance(outcome, errors.InvalidRecordError) and "without key" in str(outcome):
        return {"KL-CLEAN-12"}
    if action == "clean":
        rules |= {"KL-CLEAN-1", "KL-CLEAN-2", "KL-CLEAN-3"}
        if isinstance(outcome, CleanResult):
            rules |= {"KL-CLEAN-4", "KL-CLEAN-5", "KL-CLEAN-6", "KL-CLEAN-10", "KL-CLEAN-11"}
            if _has_gaps(after):
                rules.add("KL-CLEAN-9")
            if _horizons(after) and not _horizons(before):
                rules.add("KL-CLEAN-8")
            if any(seg.txn_index for seg in after.segments):
                rules.add("KL-CLEAN-7")
    elif action in ("truncate_to", "truncate_fully_and_start_at") and (
            before.cleaner_checkpoint != after.cleaner_checkpoint):
        rules.add("KL-CLEAN-13")
    elif action == "delete_old_segments" and compacted:
        rules.add("KL-CLEAN-14")
    return rules
