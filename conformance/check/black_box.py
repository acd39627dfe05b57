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
import time
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
            batches=tuple(_wire_batch(b) for b in value.batches),
            first_entry_incomplete=False,
        )
    if isinstance(value, v.LogOffsetMetadata):
        return v.LogOffsetMetadata(value.message_offset)
    return value


def _wire_batch(batch: v.BatchView) -> v.BatchView:
    """A batch without its file position; a control batch also without its timestamps, which
    are the coordinator's wall clock on a broker (KL-WIRE-12)."""
    batch = dataclasses.replace(batch, position=HIDDEN)
    if not batch.is_control:
        return batch
    records = tuple(dataclasses.replace(r, timestamp=HIDDEN) for r in batch.records)
    return dataclasses.replace(batch, max_timestamp=HIDDEN, records=records)


def project_state(state: v.LogStateView) -> v.LogStateView:
    """The observable state: log start offset, log end offset and the LSO (KL-WIRE-3).

    The HW is compared through the `update_high_watermark` step that follows every append
    (KL-WIRE-2); the LSO is ListOffsets LATEST at read_committed, None where the adapter has no
    `transactions` (KL-WIRE-12). Segments, recovery point, epoch cache and pending deletions are
    invisible, and so are the producer table, its snapshots and the `.txnindex` entries: no
    client request answers them (KL-WIRE-11, KL-WIRE-12), so they are never compared.
    """
    return v.LogStateView(
        log_start_offset=state.log_start_offset,
        high_watermark=HIDDEN,
        log_end_offset=state.log_end_offset,
        recovery_point=HIDDEN,
        segments=(),
        epoch_entries=(),
        pending_deletions=(),
        producers=None,
        producer_snapshots=None,
        last_stable_offset=state.last_stable_offset,
        aborted_txns=None,
    )


def project_states(model: v.LogStateView,
                   impl: v.LogStateView) -> tuple[v.LogStateView, v.LogStateView]:
    """Both sides' observable states (`project_state`); the LSO only once the model's HW has
    caught up with the broker's (KL-WIRE-12).

    Right after an append the broker's HW is already the LEO while the model's moves in the
    `update_high_watermark` step that follows (KL-WIRE-2), and the LSO is bounded by the HW:
    it is compared in that next step, not hidden.
    """
    hw_step_pending = model.high_watermark < model.log_end_offset
    model, impl = project_state(model), project_state(impl)
    if hw_step_pending and model.last_stable_offset is not None:
        model = dataclasses.replace(model, last_stable_offset=HIDDEN)
        impl = dataclasses.replace(impl, last_stable_offset=HIDDEN)
    return model, impl


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


#: The trace step's `choice` when the model matched the broker only with the broker's file times.
BROKER_FILE_TIMES = "untimestamped_segments_dated_by_the_brokers_wall_clock"


def with_broker_file_times(model: Any, action: str, args: dict[str, Any], before: Any,
                           impl: Any) -> Any:
    """The model's answer if each segment holding no timestamp were last modified at the
    broker's wall clock; None if that does not explain `impl` (KL-WIRE-5).

    A timestamp lookup searches the first segment whose largest timestamp reaches the target,
    and a segment without timestamps counts its `.log` file's last-modified time (SEG-19): the
    model's clock there, the broker's wall clock on a broker, later than every record
    timestamp the checker draws. The lookup changes nothing, so the model's state stays.
    """
    from kafkalog.conformance.check.sut import StepResult
    from kafkalog.model import log

    untimestamped = [s for s in before.segments if s.max_timestamp_and_offset[0] < 0]
    if action not in BACKGROUND_DELETION_SHOWS or not impl.ok or not untimestamped:
        return None
    wall_clock_ms = int(time.time() * 1000)
    segments = tuple(dataclasses.replace(s, last_modified_ms=wall_clock_ms)
                     if s in untimestamped else s for s in before.segments)
    _, value = getattr(log, action)(dataclasses.replace(before, segments=segments), **args)
    if project_result(value) != project_result(impl.value):
        return None
    return StepResult(value=value)


def view_invariants(state: v.LogStateView) -> list[str]:
    """The observable-state invariants a black-box view can check (LOG-2)."""
    if not 0 <= state.log_start_offset <= state.log_end_offset:
        return ["0 <= log_start_offset <= log_end_offset"]
    return []
