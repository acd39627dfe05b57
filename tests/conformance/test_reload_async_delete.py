"""KL-RELOAD-3: a load whose LEO is below the log-start checkpoint deletes the old segments
asynchronously, as Kafka's `LogLoader.deleteSegmentsIfLogStartGreaterThanLogEnd` does
(`removeAndDeleteSegmentsAsync`: renamed `.deleted`, removed `file.delete.delay.ms` later)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from kafkalog.conformance.adapter.json_codec import FEATURES
from kafkalog.conformance.check.impl_sut import ImplSut
from kafkalog.conformance.check.lockstep import Lockstep
from kafkalog.conformance.check.session import Session
from kafkalog.conformance.check.sut import ModelSut
from kafkalog.conformance.traces.scripted import scripted_trace
from kafkalog.conformance.traces.trace import read_trace
from kafkalog.model import values as v

TRACE = (Path(__file__).resolve().parents[1] / "regressions"
         / "KL-RELOAD-3-leo_below_log_start_deletes_asynchronously.jsonl")
CONFIG = v.LogConfig(segment_bytes=150, segment_ms=600000, segment_jitter_ms=0,
                     index_interval_bytes=64, segment_index_bytes=48, retention_ms=-1,
                     retention_bytes=-1, max_message_bytes=140, file_delete_delay_ms=1000)
RECORD = v.Record(None, b"test", 1700000000000)
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("append_as_leader", {"records": (RECORD,) * 5,
                          "leader_epoch": 0}),
    ("update_high_watermark", {"offset": 5}),
    ("maybe_increment_log_start_offset", {"offset": 2}),
    ("truncate_to", {"offset": 3}),
    ("close_and_reopen", {}),
]
# The recorded trace: the lockstep replay compares state() (pending deletions) at every step.
TRACE_CALLS = [*CALLS, ("advance_clock", {"ms": 999}), ("advance_clock", {"ms": 1})]


def _views(calls: list[tuple[str, dict[str, Any]]]
           ) -> tuple[tuple[v.LogStateView, v.LogStateView], list[str]]:
    """(model view, implementation view) after `calls` run in lockstep with no divergence, and
    the implementation's `.deleted` file names on disk."""
    impl = ImplSut(CONFIG, 1700000000000, 0)
    try:
        lockstep = Lockstep(ModelSut(CONFIG, 1700000000000, 0), impl, 1)
        for action, args in calls:
            lockstep.step(action, args)
        deleted = sorted(p.name for p in impl.log.dir.iterdir() if p.name.endswith(".deleted"))
        return (lockstep.model.state(), impl.state()), deleted
    finally:
        impl.close()


def test_reload_below_log_start__old_segment_pending_deletion_until_the_delay_passes() -> None:
    """Model and implementation agree: segment 0 is pending deletion, gone after the delay."""
    views, deleted = _views([*CALLS, ("advance_clock", {"ms": 999})])
    for view in views:
        assert view.pending_deletions == (0,)
        assert view.log_start_offset == view.log_end_offset == 2  # one empty segment at 2
        assert [s.base_offset for s in view.segments] == [2]
        assert view.producer_snapshots == (2,)  # truncateFullyAndStartAt, then the rebuild
    assert deleted == [f"{0:020d}{suffix}.deleted" for suffix in (".index", ".log", ".timeindex")]
    views, deleted = _views([*CALLS, ("advance_clock", {"ms": 1000})])
    assert [view.pending_deletions for view in views] == [(), ()]
    assert deleted == []


def test_reload_below_log_start__the_recorded_trace_matches_a_fresh_run() -> None:
    """The KL-RELOAD-3 regression trace is this script, recorded with no divergence."""
    trace = read_trace(TRACE)
    fresh = scripted_trace(CONFIG, TRACE_CALLS)
    assert trace.header.outcome == fresh.header.outcome == "conformed"
    assert [s.action for s in trace.steps] == [a for a, _ in TRACE_CALLS]


@pytest.mark.parametrize("fault", ["process_crash", "power_loss"])
def test_crash_inside_or_after_reload_below_log_start__recovers_a_state_the_model_allows(
        fault: str) -> None:
    """KL-CRASH-8, KL-CRASH-9: a crash at every third point of the dropping load's operations,
    and one after it, recovers a state the model allows: earlier `.deleted` leftovers go, and an
    unclean load that itself drops the segments deletes them asynchronously too."""
    logging.disable(logging.WARNING)  # recovery logs the segments it drops
    try:
        for point in [*range(0, 72, 3), 1 << 20]:
            lockstep = Session(CONFIG, ImplSut, frozenset(FEATURES), verify_every=1).start()
            try:
                for action, args in CALLS:
                    lockstep.step(action, args)
                _, impl = lockstep.step("crash", {"point": point, "fault": fault,
                                                  "seed": point, "leftover": "none"})
                assert impl.value >= 0
                view = lockstep.sut.state()  # only a load that dropped segment 0 leaves it
                assert view.pending_deletions in ((), (0,))
            finally:
                lockstep.sut.close()
    finally:
        logging.disable(logging.NOTSET)
