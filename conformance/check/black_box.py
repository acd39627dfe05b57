"""The black-box view: what the checker compares when the log is reached through a broker's API.

An adapter that drives a broker over Kafka's wire protocol (broker/adapter.py) lists the feature
`black_box` instead of `core` in its handshake (specs/adapter-protocol.md, "Features";
specs/wire.md). The checker then

- asks only the actions in `BLACK_BOX_ACTIONS` (plus those of the optional features listed),
  because a broker exposes no truncate, roll, flush, recovery point, segment layout, clock or
  restart (KL-WIRE-1);
- follows every append with `update_high_watermark(LEO)` on both sides, since with acks=all on
  a single replica the broker has moved its HW to the LEO when the Produce returns; the adapter
  answers the HW it observes (KL-WIRE-2);
- compares results and `state()` through `project_result` / `project_state`, which keep only the
  fields the wire shows (KL-WIRE-3).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kafkalog.conformance.adapter.json_codec import ACTIONS
from kafkalog.model import values as v

BLACK_BOX = "black_box"

#: Actions of the `core` feature a black-box adapter answers (KL-WIRE-1). The others of `core`
#: (roll, truncate_to, truncate_fully_and_start_at, flush, delete_old_segments, advance_clock)
#: have no counterpart in Kafka's client API and are never asked.
BLACK_BOX_ACTIONS: frozenset[str] = frozenset(
    {"append_as_leader", "read", "update_high_watermark", "maybe_increment_log_start_offset"}
)

#: Actions of optional features that a broker cannot perform even when it lists the feature:
#: the controller, not a client, assigns leader epochs.
NEVER_ON_THE_WIRE: frozenset[str] = frozenset({"assign_epoch"})

#: Placeholders for what the wire cannot show; both sides are projected onto them.
HIDDEN = -1
#: The leader epoch of a fresh topic's partition: its first (and, with one replica, only)
#: leader election (KL-WIRE-4).
FIRST_LEADER_EPOCH = 0


def is_black_box(features: frozenset[str]) -> bool:
    return BLACK_BOX in features and "core" not in features


def asks(features: frozenset[str], action: str) -> bool:
    """Whether the checker may ask an adapter with these handshake features for `action`."""
    feature = ACTIONS[action].feature
    if action == "crash":  # `crash` (full) or `crash_kill` (kill and reopen), protocol 2
        return bool({"crash", "crash_kill"} & features) and not is_black_box(features)
    if not is_black_box(features):
        return feature in features
    if action in NEVER_ON_THE_WIRE:
        return False
    if feature == "core":
        return action in BLACK_BOX_ACTIONS
    return feature in features


def project_result(value: Any) -> Any:
    """A result with only what the wire shows; hidden fields set to HIDDEN (KL-WIRE-3)."""
    if isinstance(value, v.LogAppendInfo):
        # ProduceResponse: base_offset, log_append_time_ms. The last offset follows from the
        # base and the request's record count; max timestamp, its offset and the validated size
        # are never sent back.
        return dataclasses.replace(value, max_timestamp=HIDDEN, offset_of_max_timestamp=HIDDEN,
                                   valid_bytes=HIDDEN, record_count=HIDDEN)
    if isinstance(value, v.FetchDataInfo):
        # FetchResponse: the raw records slice. The fetch offset metadata (none of its offset,
        # segment or position: the response has no such field), the file position of each
        # batch, and whether the slice began with a partial entry, are not.
        return dataclasses.replace(
            value,
            fetch_offset_metadata=v.LogOffsetMetadata(HIDDEN),
            batches=tuple(dataclasses.replace(b, position=HIDDEN) for b in value.batches),
            first_entry_incomplete=False,
        )
    if isinstance(value, v.LogOffsetMetadata):
        return v.LogOffsetMetadata(value.message_offset)
    return value


def project_state(state: v.LogStateView) -> v.LogStateView:
    """The observable state: log start offset and log end offset only (KL-WIRE-3).

    The HW is compared through the `update_high_watermark` step that follows every append
    (KL-WIRE-2); segments, recovery point, epoch cache and pending deletions are invisible.
    """
    return v.LogStateView(
        log_start_offset=state.log_start_offset,
        high_watermark=HIDDEN,
        log_end_offset=state.log_end_offset,
        recovery_point=HIDDEN,
        segments=(),
        epoch_entries=(),
        pending_deletions=(),
    )


def become_leader(model: Any, log_start_offset: int) -> None:
    """Apply to a fresh model what the broker did before the first request (KL-WIRE-9).

    When the controller makes the broker leader of the new topic's partition, `Partition.
    makeLeader` calls `maybeAssignEpochStartOffset(leaderEpoch, logEndOffset)`: the epoch cache
    holds (0, 0) before any append, which OffsetForLeaderEpoch and ListOffsets EARLIEST show.
    """
    model.assign_epoch(FIRST_LEADER_EPOCH, log_start_offset)


#: The answers a broker's background deletion of segments below the log start offset can change:
#: a timestamp search starts at the first segment (KL-TIME-3, KL-TIME-4).
BACKGROUND_DELETION_SHOWS: frozenset[str] = frozenset({"fetch_offset_by_timestamp"})
#: The trace step's `choice` when the model matched the broker only after that deletion.
BACKGROUND_DELETION = "broker_deleted_segments_below_log_start"


def after_background_deletion(model: Any, action: str, args: dict[str, Any], before: Any,
                              impl: Any) -> Any:
    """The model's answer if the broker's retention thread has deleted the segments wholly
    below the log start offset before this step and that explains `impl`; else None
    (KL-WIRE-10). When it does, the model continues from the state without those segments.

    Retention by time and size is off on the broker (KL-WIRE-5), but the log-start-offset part
    of `deleteOldSegments` cannot be switched off: the broker runs it on its own schedule
    (`log.initial.task.delay.ms`, then every `log.retention.check.interval.ms`), so after a
    DeleteRecords a black box may or may not still hold those segments.
    """
    from kafkalog.conformance.check.sut import StepResult
    from kafkalog.model import log

    if action not in BACKGROUND_DELETION_SHOWS or not impl.ok:
        return None
    config = before.config
    start_offset_only = dataclasses.replace(config, retention_ms=-1, retention_bytes=-1)
    pruned, deleted = log.delete_old_segments(dataclasses.replace(before, config=start_offset_only))
    if deleted == 0:
        return None
    pruned = dataclasses.replace(pruned, config=config)
    after, value = getattr(log, action)(pruned, **args)
    if project_result(value) != project_result(impl.value):
        return None
    model.partition_state = after
    return StepResult(value=value)


def view_invariants(state: v.LogStateView) -> list[str]:
    """The observable-state invariants a black-box view can check (LOG-2)."""
    if not 0 <= state.log_start_offset <= state.log_end_offset:
        return ["0 <= log_start_offset <= log_end_offset"]
    return []
