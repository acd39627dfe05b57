"""Which spec rules one step exercised: `rules_exercised(action, before, after, outcome)`.

Conformance and campaigns count these per rule to report spec coverage. The classification looks
only at the states and the outcome, so it works for any implementation driven against the model.
`outcome` is the action's result, or the error instance it raised.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .. import errors
from ..coverage.compaction import compaction_rules
from ..coverage.producers import producer_rules
from ..coverage.transactions import txn_rules
from ..coverage.versions import version_rules
from ..helpers import (
    relative_offset_fits,
    should_roll_for_size,
    should_roll_for_time,
    time_waited_for_roll,
)
from ..segment import indexes_full
from ..state import PartitionState
from ..values import LogAppendInfo

Rules = set[str]

_ERROR_RULES: dict[type[errors.KafkalogError], dict[str, str]] = {
    errors.RecordTooLargeError: {"*": "KL-APPEND-4"},
    errors.RecordBatchTooLargeError: {"*": "KL-APPEND-5"},
    errors.OffsetsOutOfOrderError: {"*": "KL-APPEND-7"},
    errors.UnexpectedAppendOffsetError: {"*": "KL-APPEND-7"},
    errors.LogSegmentOffsetOverflowError: {"*": "KL-APPEND-9"},
    errors.IndexOffsetOverflowError: {"*": "KL-APPEND-6"},
    errors.InvalidRollError: {"*": "KL-ROLL-6"},
    errors.OffsetOutOfRangeError: {
        "read": "KL-READ-1",
        "maybe_increment_log_start_offset": "KL-LSO-1",
    },
    errors.IllegalArgumentError: {
        "append_as_leader": "KL-EPOCH-1",
        "append_as_follower": "KL-EPOCH-1",
        "assign_epoch": "KL-EPOCH-1",
        "maybe_increment_high_watermark": "KL-HW-3",
        "truncate_to": "KL-TRUNC-1",
        "truncate_fully_and_start_at": "KL-TRUNC-4",
        "flush": "KL-FLUSH-2",
        "read": "KL-READ-5",
        "advance_clock": "KL-CLOCK-1",
    },
}


def _append_argument_rule(error: errors.KafkalogError) -> str:
    """Which append check raised an IllegalArgumentError, told by the model's message."""
    message = error.message.lower()
    if "index" in message:
        return "KL-APPEND-6"
    if "timestamp" in message:
        return "KL-APPEND-2"
    if "no records" in message:
        return "KL-APPEND-7"
    return "KL-EPOCH-1"


#: What `model/bounds.py` says when a value does not fit Kafka's widths (KL-BOUND-1).
_BOUND_MESSAGES = ("outside the int32 range", "outside the int64 range", "past Long.MAX",
                   "lone surrogate")


def _error_rules(action: str, error: errors.KafkalogError) -> Rules:
    if isinstance(error, errors.IllegalArgumentError) and \
            any(m in error.message for m in _BOUND_MESSAGES):
        return {"KL-BOUND-1"}
    if isinstance(error, errors.IllegalArgumentError) and action.startswith("append_as_"):
        return {_append_argument_rule(error)}
    for cls, by_action in _ERROR_RULES.items():
        if isinstance(error, cls):
            rule = by_action.get(action, by_action.get("*"))
            return {rule} if rule else set()
    return set()


def _roll_reasons(before: PartitionState, after: PartitionState, info: LogAppendInfo) -> Rules:
    """Every SEG-6 condition that held on the active segment before the append."""
    active = before.active
    config = before.config
    rules = {"KL-ROLL-3", "KL-ROLL-5", "KL-ROLL-7"}
    if active.base_offset == after.active.base_offset:
        rules.add("KL-ROLL-6")  # KAFKA-6388: the empty active segment was replaced
    if should_roll_for_size(active.size, info.valid_bytes, config.segment_bytes):
        rules.add("KL-ROLL-1")
    rolling = active.rolling_based_timestamp
    waited = time_waited_for_roll(
        before.now_ms, info.max_timestamp, rolling if rolling is not None else -1,
        active.created_ms,
    )
    if should_roll_for_time(active.size, waited, config.segment_ms, active.roll_jitter_ms):
        rules.update({"KL-ROLL-2", "KL-ROLL-4"})
    if indexes_full(active):
        rules.add("KL-ROLL-8")
    if not relative_offset_fits(info.last_offset, active.base_offset):
        rules.add("KL-ROLL-9")
    return rules


def _append_rules(action: str, before: PartitionState, after: PartitionState,
                  info: LogAppendInfo) -> Rules:
    if info.record_count == 0:
        return {"KL-APPEND-10"}
    rules = {"KL-APPEND-5", "KL-APPEND-9"}
    if action == "append_as_leader":
        rules.update({"KL-APPEND-1", "KL-APPEND-2", "KL-APPEND-3"})
    else:
        rules.add("KL-APPEND-7")
        if info.first_offset > before.log_end_offset:
            rules.add("KL-APPEND-8")
    rolled = after.active.base_offset != before.active.base_offset or len(
        after.deletion_timers
    ) > len(before.deletion_timers)
    if rolled:
        rules |= _roll_reasons(before, after, info)
    if len(after.segments[-1].offset_index) > len(before.segments[-1].offset_index) or (
        rolled and after.segments[-1].offset_index
    ):
        rules.add("KL-APPEND-6")
    if after.epochs != before.epochs:
        rules.add("KL-EPOCH-1")
    if after.high_watermark != before.high_watermark:
        rules.add("KL-HW-5")
    return rules


def _read_rules(before: PartitionState, after: PartitionState, result: object) -> Rules:
    rules = {"KL-READ-1", "KL-READ-2"}
    if after.high_watermark != before.high_watermark:
        rules.add("KL-HW-4")
    size = getattr(result, "size_in_bytes", 0)
    if size:
        rules.update({"KL-READ-3", "KL-READ-4", "KL-READ-5"})
    return rules


def _retention_rules(before: PartitionState, after: PartitionState, count: object) -> Rules:
    rules = {"KL-RET-1", "KL-RET-2"}
    if not count:
        return rules
    rules.add("KL-RET-7")
    if after.log_start_offset != before.log_start_offset:
        rules.add("KL-LSO-2")
    if before.log_start_offset > before.segments[0].base_offset:
        rules.add("KL-RET-3")
    if before.config.retention_bytes >= 0:
        rules.add("KL-RET-4")
    if before.config.retention_ms >= 0:
        rules.add("KL-RET-5")
    if after.segments[0].base_offset >= before.log_end_offset:
        rules.update({"KL-RET-6", "KL-ROLL-3", "KL-ROLL-7"})
    rules.add("KL-DEL-1")
    return rules


def _truncate_rules(before: PartitionState, after: PartitionState, result: object) -> Rules:
    rules = {"KL-TRUNC-1"}
    if after.epochs != before.epochs:
        rules.add("KL-EPOCH-3")
    if result is False:
        return rules
    if after.epochs == () and after.segments[-1].size == 0 and len(after.segments) == 1 and (
        after.log_start_offset == after.log_end_offset
    ):
        rules.add("KL-TRUNC-4")
    rules.update({"KL-TRUNC-2", "KL-TRUNC-3", "KL-TRUNC-5"})
    if after.recovery_point < before.recovery_point:
        rules.add("KL-FLUSH-1")
    if after.deleted_files != before.deleted_files:
        rules.add("KL-DEL-1")
    return rules


def _simple(*rules: str) -> Callable[[PartitionState, PartitionState, object], Rules]:
    return lambda _b, _a, _r: set(rules)


def _hw_update(before: PartitionState, after: PartitionState, result: object) -> Rules:
    rules = {"KL-HW-1"}
    if after.high_watermark.message_offset < before.high_watermark.message_offset:
        rules.add("KL-HW-2")
    return rules


def _hw_increment(before: PartitionState, after: PartitionState, result: object) -> Rules:
    rules = {"KL-HW-3"}
    if before.high_watermark.message_offset_only:
        rules.add("KL-HW-4")
    return rules


def _lso(before: PartitionState, after: PartitionState, result: object) -> Rules:
    return {"KL-LSO-1", "KL-LSO-2", "KL-EPOCH-4"} if result else {"KL-LSO-1"}


def _roll(before: PartitionState, after: PartitionState, result: object) -> Rules:
    rules = {"KL-ROLL-3", "KL-ROLL-5", "KL-ROLL-7"}
    if after.recovery_point > before.recovery_point:
        rules.add("KL-FLUSH-3")
    if len(after.segments) == len(before.segments):
        rules.add("KL-ROLL-6")
    return rules


def _clock(before: PartitionState, after: PartitionState, result: object) -> Rules:
    rules = {"KL-CLOCK-1"}
    if after.deleted_files != before.deleted_files:
        rules.add("KL-DEL-2")
    return rules


def _reopen(before: PartitionState, after: PartitionState, result: object) -> Rules:
    rules = {"KL-RELOAD-1", "KL-RELOAD-2", "KL-RELOAD-3", "KL-RELOAD-4", "KL-RELOAD-5"}
    if before.epochs:
        # The reopened cache comes from the checkpoint alone, so state() comparing it with the
        # model's entries checks that every earlier change was written through (KL-EPOCH-6).
        rules.add("KL-EPOCH-6")
    return rules


_CLASSIFIERS: dict[str, Callable[[PartitionState, PartitionState, object], Rules]] = {
    "read": _read_rules,
    "update_high_watermark": _hw_update,
    "maybe_increment_high_watermark": _hw_increment,
    "maybe_increment_log_start_offset": _lso,
    "delete_old_segments": _retention_rules,
    "roll": _roll,
    "truncate_to": _truncate_rules,
    "truncate_fully_and_start_at": _simple("KL-TRUNC-4", "KL-DEL-1"),
    "flush": _simple("KL-FLUSH-1", "KL-FLUSH-2"),
    "assign_epoch": _simple("KL-EPOCH-1"),
    "end_offset_for_epoch": _simple("KL-EPOCH-2"),
    "advance_clock": _clock,
    "close_and_reopen": _reopen,
}


def _timestamp_rules(before: PartitionState, result: object,
                     args: Mapping[str, object]) -> Rules:
    """The target decides the rule; without it, the answer's shape is used to guess."""
    target = args.get("timestamp")
    if target in (-2, -4):
        return {"KL-TIME-1"}
    if target in (-1, -5):
        return {"KL-TIME-2"}
    if target == -3:
        return {"KL-TIME-3"}
    if target is not None:
        return {"KL-TIME-4"}
    if getattr(result, "timestamp", None) == -1:
        offset = getattr(result, "offset", None)
        return {"KL-TIME-1"} if offset == before.log_start_offset else {"KL-TIME-2"}
    return {"KL-TIME-3", "KL-TIME-4"}


def rules_exercised(action: str, before: PartitionState, after: PartitionState,
                    result_or_error: object,
                    args: Mapping[str, object] | None = None) -> frozenset[str]:
    """The spec rules (KL-*) one step exercised; errors map to the rule that raises them.

    `args` (optional) are the action's arguments by name; only `fetch_offset_by_timestamp` uses
    them, to tell its special targets apart.
    """
    return frozenset(_rules(action, before, after, result_or_error, args)
                     | producer_rules(action, before, after, result_or_error)
                     | txn_rules(action, before, after, result_or_error)
                     | compaction_rules(action, before, after, result_or_error)
                     | version_rules(action, result_or_error, args))


def _rules(action: str, before: PartitionState, after: PartitionState, result_or_error: object,
           args: Mapping[str, object] | None) -> set[str]:
    if isinstance(result_or_error, errors.KafkalogError):
        return _error_rules(action, result_or_error)
    if action in ("append_as_leader", "append_as_follower"):
        assert isinstance(result_or_error, LogAppendInfo)
        return _append_rules(action, before, after, result_or_error)
    if action == "fetch_offset_by_timestamp":
        return _timestamp_rules(before, result_or_error, args or {})
    classifier = _CLASSIFIERS.get(action)
    return classifier(before, after, result_or_error) if classifier else set()
