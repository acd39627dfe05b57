"""The checker compares exact index entries, optional in the adapter protocol."""

from __future__ import annotations

import dataclasses

from kafkalog.conformance.check.impl_sut import ImplSut
from kafkalog.conformance.check.observe import comparable
from kafkalog.conformance.check.session import START_MS
from kafkalog.conformance.check.sut import ModelSut
from kafkalog.conformance.gen.configs import CONFIG_FAMILIES
from kafkalog.model import values as v


def _batches(base: int, count: int) -> tuple[v.BatchSpec, ...]:
    record = (v.Record(None, b"test", START_MS),)
    return tuple(v.BatchSpec(base + n, 0, record, v.TimestampType.CREATE_TIME, v.NO_TIMESTAMP)
                 for n in range(count))


def test_state__multi_batch_follower_append__reports_one_index_entry_per_batch_on_both_sides(
) -> None:
    """With an index point at every batch: three batches in one append are three offset entries."""
    config = dataclasses.replace(CONFIG_FAMILIES["index_full"], segment_index_bytes=120)
    impl, model = ImplSut(config, START_MS), ModelSut(config, START_MS)
    try:
        for sut in (impl, model):
            sut.append_as_leader((v.Record(None, b"test", START_MS),), 0)
            sut.append_as_follower(_batches(1, 2))
        ours, theirs = model.state(), impl.state()
        assert theirs.segments[-1].offset_index == ours.segments[-1].offset_index
        assert ours.segments[-1].offset_index is not None
        assert [k for k, _ in ours.segments[-1].offset_index] == [1, 2]
        assert theirs.segments[-1].time_index == ours.segments[-1].time_index
    finally:
        impl.close()


def test_comparable__adapter_without_index_fields__is_not_compared_on_them() -> None:
    """A version-1 adapter that omits the optional fields still conforms."""
    segment = v.SegmentView(0, 72, 1, ((0, 0),), ((START_MS, 0),))
    model = v.LogStateView(0, 0, 1, 0, (segment,), ())
    old = dataclasses.replace(model, segments=(v.SegmentView(0, 72, 1),))
    ours, theirs = comparable(model, old)
    assert ours == theirs
    wrong = dataclasses.replace(model, segments=(v.SegmentView(0, 72, 1, (), ()),))
    ours, theirs = comparable(model, wrong)
    assert ours != theirs


def test_serve_adapter__state_reply__carries_the_same_index_entries_as_in_process() -> None:
    """The JSON-lines path reports the index entries too, equal to the in-process ones."""
    import shlex
    import sys
    from pathlib import Path

    from kafkalog.conformance.adapter.subprocess_sut import AdapterProcess, SubprocessSut

    config = dataclasses.replace(CONFIG_FAMILIES["index_full"], segment_index_bytes=120)
    process = AdapterProcess(f"{shlex.quote(str(Path(sys.executable).parent / 'kafkalog'))} "
                             "serve-adapter")
    impl = ImplSut(config, START_MS)
    try:
        remote = SubprocessSut(process, config, START_MS, 0)
        for sut in (remote, impl):  # the remote side takes keyword arguments, as execute() does
            sut.append_as_leader(records=(v.Record(None, b"test", START_MS),), leader_epoch=0)
            sut.append_as_follower(batches=_batches(1, 2), leader_epoch=None)
        over_the_protocol, in_process = remote.state(), impl.state()
        assert over_the_protocol.segments[-1].offset_index == ((1, 72), (2, 144))
        assert over_the_protocol == in_process
        remote.close()
    finally:
        impl.close()
        process.close()
