"""The black-box view (conformance/check/black_box.py): which actions are asked, what is
compared."""

from __future__ import annotations

import dataclasses
from collections import Counter

from hypothesis import seed as hypothesis_seed
from hypothesis.stateful import run_state_machine_as_test
from kafkalog.conformance.adapter.json_codec import ACTIONS, FEATURES
from kafkalog.conformance.check import black_box
from kafkalog.conformance.check.runner import run_settings
from kafkalog.conformance.check.session import Session
from kafkalog.conformance.check.sut import ModelSut
from kafkalog.conformance.gen.configs import config_family
from kafkalog.conformance.gen.machines import make_machine
from kafkalog.model import values as v

WIRE_FEATURES = frozenset({"black_box", "timestamps"})


def test_asks__a_full_adapter__is_asked_every_action_of_its_features() -> None:
    """`core` keeps its meaning: every core action, and each optional one when listed."""
    features = frozenset({"core", "timestamps"})
    asked = {a for a in ACTIONS if black_box.asks(features, a)}
    expected = {a for a, spec in ACTIONS.items() if spec.feature in features}
    assert asked == expected


def test_asks__a_black_box_adapter__is_never_asked_what_a_broker_cannot_do() -> None:
    """Roll, truncation, flush, retention, clock and epoch assignment are left out
    (KL-WIRE-1)."""
    features = frozenset({"black_box", "timestamps", "leader_epochs", "reopen"})
    asked = {a for a in ACTIONS if black_box.asks(features, a)}
    assert asked == {"append_as_leader", "read", "update_high_watermark",
                     "maybe_increment_log_start_offset", "fetch_offset_by_timestamp",
                     "end_offset_for_epoch", "close_and_reopen"}
    assert not black_box.asks(frozenset({"black_box"}), "roll")


def test_project_result__hides_the_fetch_offset_metadata_a_fetch_response_lacks() -> None:
    """A FetchResponse carries no fetch offset metadata: the model's batch-base answer (trunk,
    KL-VERSION-3) and the adapter's placeholder compare equal (KL-WIRE-3)."""
    base = v.FetchDataInfo(v.LogOffsetMetadata(16, 0, 786), 0, ())
    asked = v.FetchDataInfo(v.LogOffsetMetadata(18), 0, ())
    assert black_box.project_result(base) == black_box.project_result(asked)


def test_session__black_box__starts_the_model_as_leader_of_epoch_0() -> None:
    """A fresh topic's partition became leader of epoch 0 at offset 0 before the first request
    (Partition.makeLeader): the model's epoch cache starts with that entry (KL-WIRE-9)."""
    session = Session(config_family("tiny"), _BlackBoxModel, WIRE_FEATURES, max_steps=5)
    lockstep = session.start()
    assert lockstep.model.end_offset_for_epoch(0) == v.EpochEndOffset(0, 0)
    full = Session(config_family("tiny"), ModelSut, frozenset({"core"}), max_steps=5).start()
    assert full.model.end_offset_for_epoch(0) is None


def test_project_state__keeps_only_log_start_and_log_end() -> None:
    """Segments, HW, recovery point, epochs and pending deletions are not on the wire
    (KL-WIRE-3)."""
    a = v.LogStateView(1, 3, 5, 4, (v.SegmentView(0, 72, 1),), (v.EpochEntry(0, 0),), ())
    b = v.LogStateView(1, 5, 5, -1, (), (), ())
    assert black_box.project_state(a) == black_box.project_state(b)
    assert black_box.project_state(a) != black_box.project_state(
        v.LogStateView(0, 3, 5, 4, (), (), ()))


def test_project_result__hides_produce_fields_the_response_does_not_carry() -> None:
    """Max timestamp, its offset and the validated size are not in a ProduceResponse
    (KL-WIRE-3)."""
    model = v.LogAppendInfo(0, 1, 1000, 0, -1, 84, 2)
    broker = v.LogAppendInfo(0, 1, -1, -1, -1, 84, 2)
    assert black_box.project_result(model) == black_box.project_result(broker)
    moved = v.LogAppendInfo(1, 2, -1, -1, -1, 84, 2)
    assert black_box.project_result(model) != black_box.project_result(moved)


class _BlackBoxModel(ModelSut):
    """The model posing as a broker: leader of epoch 0 before the first request (KL-WIRE-9)."""

    features = WIRE_FEATURES

    def __init__(self, config: v.LogConfig, now_ms: int = 0, log_start_offset: int = 0) -> None:
        super().__init__(config, now_ms, log_start_offset)
        black_box.become_leader(self, log_start_offset)


def test_machine__against_a_black_box__follows_every_append_with_the_brokers_hw() -> None:
    """A model posing as a broker conforms, is asked only wire actions, and every append is
    followed by update_high_watermark(LEO) (KL-WIRE-2)."""
    config = config_family("tiny")
    session = Session(config, _BlackBoxModel, WIRE_FEATURES, max_steps=40)
    session_steps: list[list[tuple[str, bool]]] = []
    original_finish = session.finish

    def finish(lockstep):  # type: ignore[no-untyped-def]
        session_steps.append([(s.action, "ok" in (s.model or {})) for s in lockstep.steps])
        original_finish(lockstep)

    session.finish = finish  # type: ignore[method-assign]
    run_state_machine_as_test(hypothesis_seed(3)(make_machine(session)),
                              settings=run_settings(40))
    assert not session.failed
    actions = Counter(a for steps in session_steps for a, _ in steps)
    assert set(actions) <= {a for a in ACTIONS if black_box.asks(WIRE_FEATURES, a)}
    assert actions["append_as_leader"] > 0
    for steps in session_steps:
        for i, (action, ok) in enumerate(steps[:-1]):
            if action == "append_as_leader" and ok:
                assert steps[i + 1][0] == "update_high_watermark", steps
    assert "black_box" in FEATURES


class _BrokerAfterRetentionThread(_BlackBoxModel):
    """A broker whose retention thread ran before the lookup: segments wholly below the log
    start offset are gone (time and size retention are off on wire topics, KL-WIRE-5)."""

    def fetch_offset_by_timestamp(self, timestamp: int) -> v.TimestampAndOffset | None:
        from kafkalog.model import log

        state = self.partition_state
        off = dataclasses.replace(state.config, retention_ms=-1, retention_bytes=-1)
        pruned, _ = log.delete_old_segments(dataclasses.replace(state, config=off))
        self.partition_state = dataclasses.replace(pruned, config=state.config)
        return super().fetch_offset_by_timestamp(timestamp)


def test_lockstep__lookup_after_the_brokers_retention_thread__is_the_choice_it_made() -> None:
    """After DeleteRecords the broker deletes the segments below the log start offset on its
    own schedule; a by-time lookup that then starts at a later segment conforms as that choice,
    and the model continues without those segments (KL-WIRE-10; kafka-3.9 seed 2003)."""
    session = Session(config_family("hw_retention"), _BrokerAfterRetentionThread, WIRE_FEATURES,
                      max_steps=40)
    lockstep = session.start()
    ts = 1_700_000_000_000
    for count in (1, 3, 3, 3, 2):
        lockstep.step("append_as_leader", {
            "records": tuple(v.Record(None, b"test", ts) for _ in range(count)), "leader_epoch": 0})
        lockstep.step("update_high_watermark",
                      {"offset": lockstep.model.state().log_end_offset})
    lockstep.step("maybe_increment_log_start_offset", {"offset": 10})
    model, broker = lockstep.step("fetch_offset_by_timestamp", {"timestamp": ts})
    assert broker.value == model.value == v.TimestampAndOffset(ts, 10, 0)
    assert lockstep.steps[-1].choice == black_box.BACKGROUND_DELETION
    assert lockstep.model.state().segments[0].base_offset == 10


def test_splits_append_from_hw__dropping_the_hw_step_of_an_append__refused() -> None:
    """The minimiser never drops the HW step that follows an append in a black-box trace."""
    from kafkalog.conformance.traces.minimise import splits_append_from_hw
    from kafkalog.conformance.traces.trace import TraceStep

    steps = [TraceStep(action=a, args={}) for a in
             ("append_as_leader", "update_high_watermark", "read", "append_as_leader")]
    assert splits_append_from_hw(steps, 1)
    assert not splits_append_from_hw(steps, 0)
    assert not splits_append_from_hw(steps, 2)
    assert not splits_append_from_hw(steps, 3)
