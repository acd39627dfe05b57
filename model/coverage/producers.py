"""Which producer-state rules (KL-PROD-*) one step exercised; joined into `coverage.py`."""

from __future__ import annotations

from .. import errors
from ..state import PartitionState
from ..values import LogAppendInfo

_ERRORS: dict[type[errors.KafkalogError], str] = {
    errors.OutOfOrderSequenceError: "KL-PROD-7",
    errors.InvalidProducerEpochError: "KL-PROD-6",
    errors.InvalidRecordError: "KL-PROD-2",
}


def producer_rules(action: str, before: PartitionState, after: PartitionState,
                   outcome: object) -> set[str]:
    """KL-PROD rules told from the producer state before and after, and the outcome.

    Spec: KL-PROD-1 (the table is observed whenever it is not empty).
    """
    if isinstance(outcome, errors.KafkalogError):
        rule = _ERRORS.get(type(outcome))
        return {rule, "KL-PROD-3"} if rule == "KL-PROD-7" else ({rule} if rule else set())
    old, new = before.producer_state, after.producer_state
    if not (old.producers or new.producers):
        return set()  # empty snapshots of producer-less logs: no producer rule was at stake
    rules = {"KL-PROD-1"}
    old_snaps = {o for o, _ in old.snapshots}
    new_snaps = {o for o, _ in new.snapshots}
    if new_snaps - old_snaps:
        rules.add("KL-PROD-10")
    if old_snaps - new_snaps:
        rules.add("KL-PROD-11")
    if action.startswith("append_as_") and isinstance(outcome, LogAppendInfo):
        if new.producers != old.producers:
            rules |= {"KL-PROD-2", "KL-PROD-3", "KL-PROD-4"}
            if action == "append_as_follower":
                rules.add("KL-PROD-8")
        elif (action == "append_as_leader" and outcome.first_offset >= 0
              and after.log_end_offset == before.log_end_offset):
            rules.add("KL-PROD-5")
    if action == "advance_clock" and len(new.producers) < len(old.producers):
        rules.add("KL-PROD-9")
    if action in ("truncate_to", "close_and_reopen"):
        rules.add("KL-PROD-12")
    return rules
