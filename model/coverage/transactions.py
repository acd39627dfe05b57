"""Which transaction rules (KL-TXN-*) one step exercised; joined into `coverage.py`."""

from __future__ import annotations

from .. import errors
from ..producer.transactions import aborted_txn_entries, last_stable_offset
from ..state import PartitionState
from ..values import FetchDataInfo, LogAppendInfo

_ERRORS: dict[type[errors.KafkalogError], str] = {
    errors.InvalidTxnStateError: "KL-TXN-3",
    errors.TransactionCoordinatorFencedError: "KL-TXN-2",
}


def _open_txns(state: PartitionState) -> set[tuple[int, int]]:
    return {(e.producer_id, e.current_txn_first_offset) for e in state.producer_state.producers
            if e.current_txn_first_offset >= 0}


def txn_rules(action: str, before: PartitionState, after: PartitionState,
              outcome: object) -> set[str]:
    """KL-TXN rules told from the transactions before and after, and the outcome.

    Spec: KL-TXN-1 (a marker or transactional batch was written), KL-TXN-10 (the LSO a
    read_committed consumer would take as LATEST was at stake).
    """
    if isinstance(outcome, errors.KafkalogError):
        rule = _ERRORS.get(type(outcome))
        if rule is None and action == "append_marker":
            rule = "KL-TXN-2"
        return {rule} if rule else set()
    rules: set[str] = set()
    old_open, new_open = _open_txns(before), _open_txns(after)
    old_index, new_index = aborted_txn_entries(before), aborted_txn_entries(after)
    if action == "append_marker" or (action.startswith("append_as_")
                                     and isinstance(outcome, LogAppendInfo)
                                     and new_open - old_open):
        rules |= {"KL-TXN-1", "KL-TXN-2" if action != "append_as_leader" else "KL-TXN-3"}
    if len(new_index) > len(old_index) or (
            before.producer_state.unreplicated != after.producer_state.unreplicated
            and len(after.producer_state.unreplicated) > len(before.producer_state.unreplicated)):
        rules.add("KL-TXN-4")
    if before.first_unstable_offset != after.first_unstable_offset:
        rules.add("KL-TXN-5")
    if last_stable_offset(before) != last_stable_offset(after) and (old_open or new_open or
                                                                  after.producer_state.unreplicated
                                                                  or before.producer_state
                                                                  .unreplicated):
        rules |= {"KL-TXN-6", "KL-TXN-10"}
    if action in ("close_and_reopen", "truncate_fully_and_start_at") and (old_open or old_index):
        rules.add("KL-TXN-7")
    if action == "truncate_to" and (len(new_index) < len(old_index) or new_open - old_open):
        rules.add("KL-TXN-8")
    if action == "read" and isinstance(outcome, FetchDataInfo) \
            and outcome.aborted_transactions is not None:
        rules.add("KL-TXN-9")
    return rules
