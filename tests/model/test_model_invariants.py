"""Random action sequences keep every invariant of model/invariants.py (KL-INV-*)."""

from __future__ import annotations

import contextlib
import re
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafkalog.model import log
from kafkalog.model.coverage.rules import rules_exercised
from kafkalog.model.errors import ACTION_ERRORS, KafkalogError
from kafkalog.model.invariants import INVARIANTS, check_all
from kafkalog.model.state import PartitionState
from kafkalog.model.values import (
    BatchSpec,
    EpochEntry,
    Isolation,
    LogConfig,
    LogOffsetMetadata,
    Record,
    TimestampType,
)

SPEC = Path(__file__).resolve().parents[2] / "specs" / "log.md"
SPEC_RULES = frozenset(re.findall(r"\*\*(KL-[A-Z]+-\d+)\b", SPEC.read_text()))

configs = st.builds(
    LogConfig,
    segment_bytes=st.integers(100, 400),
    segment_ms=st.integers(50, 500),
    segment_jitter_ms=st.sampled_from([0, 30, 100]),
    index_interval_bytes=st.integers(0, 200),
    segment_index_bytes=st.sampled_from([12, 24, 40, 1000]),
    retention_ms=st.sampled_from([-1, 0, 100, 1000]),
    retention_bytes=st.sampled_from([-1, 0, 150, 600]),
    max_message_bytes=st.sampled_from([90, 10_000]),
    file_delete_delay_ms=st.integers(0, 100),
    message_timestamp_type=st.sampled_from(list(TimestampType)),
)
records = st.lists(
    st.builds(Record, st.none() | st.binary(max_size=3), st.binary(max_size=30),
              st.integers(-1, 300)),
    min_size=1, max_size=3,
).map(tuple)


def draw_action(data: st.DataObject, s: PartitionState) -> tuple[str, tuple[object, ...]]:
    leo, hw, lso = s.log_end_offset, s.high_watermark.message_offset, s.log_start_offset
    name = data.draw(st.sampled_from(sorted(ACTIONS)))
    if name == "append_as_leader":
        return name, (data.draw(records), data.draw(st.integers(0, 4)))
    if name == "append_as_follower":
        # KL-INV-5's domain: start at or above the active base (a roll may have gone above LEO).
        specs, base = [], max(leo, s.active.base_offset) + data.draw(st.integers(0, 3))
        for _ in range(data.draw(st.integers(0, 3))):
            recs = data.draw(records)
            specs.append(BatchSpec(base, data.draw(st.integers(0, 4)), recs))
            base += len(recs) + data.draw(st.integers(0, 2))
        return name, (tuple(specs), data.draw(st.none() | st.integers(0, 4)))
    if name == "read":
        return name, (data.draw(st.integers(lso - 1, leo + 1)), data.draw(st.integers(-1, 300)),
                      data.draw(st.sampled_from(list(Isolation))), data.draw(st.booleans()))
    if name == "maybe_increment_high_watermark":
        offset = data.draw(st.integers(0, leo + 1))
        full = LogOffsetMetadata(offset, s.active.base_offset, s.active.size)
        return name, (data.draw(st.sampled_from([LogOffsetMetadata(offset), full])),)
    if name == "assign_epoch":
        return name, (data.draw(st.integers(0, 6)), leo)
    ranges = {
        "update_high_watermark": st.integers(-1, leo + 1),
        "maybe_increment_log_start_offset": st.integers(0, hw + 1),
        # KL-INV-5's domain: rolls above the LEO are left to the unit tests (test_model_roll.py).
        "roll": st.none() | st.integers(leo - 1, leo),
        "truncate_to": st.integers(-1, leo + 1),
        "truncate_fully_and_start_at": st.integers(0, leo + 5),
        "flush": st.none() | st.integers(0, leo + 1),
        "end_offset_for_epoch": st.integers(-1, 6),
        "fetch_offset_by_timestamp": st.integers(-5, 300),
        "advance_clock": st.integers(0, 300),
    }
    if name in ranges:
        return name, (data.draw(ranges[name]),)
    return name, ()


ACTIONS = {
    "append_as_leader", "append_as_follower", "read", "update_high_watermark",
    "maybe_increment_high_watermark", "maybe_increment_log_start_offset", "delete_old_segments",
    "roll", "truncate_to", "truncate_fully_and_start_at", "flush", "assign_epoch",
    "end_offset_for_epoch", "fetch_offset_by_timestamp", "advance_clock", "close_and_reopen",
}


@given(config=configs, data=st.data())
def test_random_action_sequences__keep_every_invariant(
    config: LogConfig, data: st.DataObject
) -> None:
    """Spec: KL-INV-1, KL-INV-2, KL-INV-3, KL-INV-4, KL-INV-5, KL-INV-6, KL-INV-7, KL-INV-8,
    KL-INV-9, KL-INV-10, KL-INV-11, KL-INV-12, KL-INV-13, KL-INV-14"""
    s = log.empty_log(config, log_start_offset=data.draw(st.integers(0, 5)))
    for _ in range(data.draw(st.integers(1, 40))):
        name, args = draw_action(data, s)
        before = s
        outcome: object
        try:
            s, outcome = getattr(log, name)(s, *args)
        except KafkalogError as error:
            assert error.code in ACTION_ERRORS, f"{name}{args} raised {error!r}"
            outcome = error
        assert check_all(s) == [], f"after {name}{args}"
        rules = rules_exercised(name, before, s, outcome, {"timestamp": args[0]} if args else {})
        assert rules <= SPEC_RULES, f"{name}: unknown rules {rules - SPEC_RULES}"


@given(config=configs, data=st.data())
def test_close_and_reopen__twice__is_the_same_as_once(
    config: LogConfig, data: st.DataObject
) -> None:
    """A clean reload of a reloaded log changes nothing observable but the snapshot files.

    Spec: KL-RELOAD-3. A load deletes a snapshot at the log start offset (PSR-4), which the
    first load's clean-shutdown shortcut may have written (PSR-8): KL-PROD-12.
    """
    s = log.empty_log(config)
    for _ in range(data.draw(st.integers(1, 15))):
        name, args = draw_action(data, s)
        with contextlib.suppress(KafkalogError):
            s, _ = getattr(log, name)(s, *args)
    once, _ = log.close_and_reopen(s)
    twice, _ = log.close_and_reopen(once)
    # The snapshot tables are those files' contents, so they go with them.
    assert replace(log.view(twice), producer_snapshots=None, producer_snapshot_tables=()) == \
        replace(log.view(once), producer_snapshots=None, producer_snapshot_tables=())


@pytest.mark.parametrize(
    ("broken", "name"),
    [
        (lambda s: replace(s, high_watermark=LogOffsetMetadata(9)), "offsets_ordered"),
        (lambda s: replace(s, recovery_point=9), "recovery_point_bounded"),
        (lambda s: replace(s, segments=()), "segments_sorted_unique_non_empty"),
        (lambda s: replace(s, epochs=(EpochEntry(2, 0), EpochEntry(1, 1))),
         "epochs_strictly_increasing"),
        (lambda s: replace(s, epochs=(EpochEntry(2, 7),)), "epochs_within_log"),
        (lambda s: replace(s, deleted_files=(3,)), "pending_deletions_have_timers"),
        (lambda s: replace(s, log_end_offset=0, high_watermark=LogOffsetMetadata(0)),
         "data_below_log_end"),
    ],
)
def test_check_all__broken_state__names_the_violated_invariant(broken, name) -> None:  # type: ignore[no-untyped-def]
    """The predicates can fail. Spec: KL-INV-1, KL-INV-2, KL-INV-4, KL-INV-7, KL-INV-9, KL-INV-10,
    KL-INV-14"""
    s = log.empty_log(LogConfig())
    s, _ = log.append_as_leader(s, (Record(None, b"x", 0),), 0)
    assert name in INVARIANTS
    assert check_all(s) == []
    assert name in check_all(broken(s))
