"""KL-ALLOW-5: recovery's cut may delete the later segments Kafka's way (`.deleted`, then a timer).

The scenario is Kafka's own: a roll whose flush had not run yet (KL-ALLOW-3) when the power went,
so the rolled segment's last batch is torn while the next segment is on disk. Unclean recovery
cuts the torn batch (RCV-6) and removes every later segment: kafkalog at once, Kafka through
`removeAndDeleteSegmentsAsync`. kafkalog's own implementation never leaves an earlier segment
unsynced (its roll flushes), so no fault model of the checker produces this image: the test plants
the torn batch in the crash image and gives the model the matching durable frontier (below that
batch), then drives the real implementation and its variants through the lockstep checker.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from kafkalog.conformance.broken.variants import patched_variant, variant_names
from kafkalog.conformance.check import impl_sut
from kafkalog.conformance.check.impl_sut import ImplSut
from kafkalog.conformance.check.lockstep import DivergenceError, Lockstep
from kafkalog.conformance.check.sut import ModelSut
from kafkalog.model import values as v
from kafkalog.model.choices import outcomes
from kafkalog.model.crash import crash
from kafkalog.model.recovery import Checkpoints, load_unclean
from kafkalog.model.state import Segment

T = 1700000000000
CONFIG = v.LogConfig(segment_bytes=150, segment_ms=600000, segment_jitter_ms=0,
                     index_interval_bytes=64, segment_index_bytes=48, retention_ms=-1,
                     retention_bytes=-1, max_message_bytes=140, file_delete_delay_ms=1000)
RECORD = v.Record(None, b"test", T)
APPEND = ("append_as_leader", {"records": (RECORD,), "leader_epoch": 0})
TORN = 3  # the offset of the torn batch: segments [0, 1] [2, 3] [4, 5], the middle one torn


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    logging.disable(logging.WARNING)  # recovery logs the cut and the segments it drops
    yield
    logging.disable(logging.NOTSET)


def _tear_rolled_segment(partition_dir: Path, kind: str, seed: int,
                         index_interval_bytes: int = 4096) -> None:
    """The crash image: the last byte of the second-to-last segment's `.log` flipped (a torn,
    never-flushed page), so that segment's last batch fails its CRC."""
    logs = sorted(p for p in partition_dir.iterdir() if p.name.endswith(".log"))
    data = bytearray(logs[-2].read_bytes())
    data[-1] ^= 0xFF
    logs[-2].write_bytes(bytes(data))


def _lockstep(monkeypatch: pytest.MonkeyPatch) -> tuple[Lockstep, ImplSut]:
    """Six one-record batches in lockstep, then the crash with the torn rolled segment; the
    model's frontier is the torn batch (everything below it flushed)."""
    impl = ImplSut(CONFIG, T, 0)
    lockstep = Lockstep(ModelSut(CONFIG, T, 0), impl, 1)
    for _ in range(6):
        lockstep.step(*APPEND)
    model = lockstep.model
    assert [s.base_offset for s in model.partition_state.segments] == [0, 2, 4]
    model.durable = replace(model.durable, flushed=TORN)  # also what KL-CRASH-10 checks

    def crash_outcomes(fault: str, ops_lost: int, leftover: str = "none",
                       clues: object = None) -> tuple[crash.Outcome, ...]:
        # The image is the page cache with one page torn: a power loss's set at that frontier.
        return crash.crash_states(model.partition_state, model.durable,
                                  crash.FaultModel.POWER_LOSS, model.mode)

    monkeypatch.setattr(model, "crash_outcomes", crash_outcomes)
    monkeypatch.setattr(impl_sut, "plant_leftover", _tear_rolled_segment)
    return lockstep, impl


def _crash(lockstep: Lockstep) -> None:
    lockstep.step("crash", {"point": 1 << 20, "fault": "process_crash", "seed": 0,
                            "leftover": "torn_tail"})


def _deleted_names(impl: ImplSut) -> list[str]:
    return sorted(p.name for p in impl.log.dir.iterdir() if p.name.endswith(".deleted"))


def test_recovery_cut__kafkalog_deletes_later_segments_at_once__conforms(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Spec: KL-ALLOW-5 (kafkalog's choice: option 0, nothing pending after the cut)."""
    lockstep, impl = _lockstep(monkeypatch)
    try:
        _crash(lockstep)
        view = impl.state()
        assert (view.log_end_offset, [s.base_offset for s in view.segments]) == (TORN, [0, 2])
        assert view.pending_deletions == () and _deleted_names(impl) == []
        lockstep.step(*APPEND)  # the log goes on from the cut
    finally:
        impl.close()


def test_recovery_cut__kafka_variant_defers_deletion__conforms_and_timers_fire_in_lockstep(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Spec: KL-ALLOW-5 (Kafka's removeAndDeleteSegmentsAsync: `.deleted` until the delay)."""
    with patched_variant("recovery_cut_deletes_async"):
        lockstep, impl = _lockstep(monkeypatch)
        try:
            _crash(lockstep)
            view = impl.state()
            assert (view.log_end_offset, [s.base_offset for s in view.segments]) == (TORN, [0, 2])
            assert view.pending_deletions == (4,)
            assert lockstep.model.state().pending_deletions == (4,)  # the model adopted it
            assert _deleted_names(impl) == [f"{4:020d}{s}.deleted"
                                            for s in (".index", ".log", ".timeindex")]
            lockstep.step(*APPEND)  # offset 3 again: readable from segment 2 only
            lockstep.step("read", {"start_offset": TORN, "max_bytes": 1000,
                                   "isolation": v.Isolation.LOG_END, "min_one_message": False})
            lockstep.step("advance_clock", {"ms": 999})
            assert impl.state().pending_deletions == (4,)
            lockstep.step("advance_clock", {"ms": 1})
            assert impl.state().pending_deletions == () and _deleted_names(impl) == []
        finally:
            impl.close()


def test_recovery_cut__variant_keeping_later_segments_readable__is_rejected(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Spec: KL-ALLOW-5 (no Kafka keeps the segments after the cut in the log)."""
    with patched_variant("recovery_cut_keeps_later_segments"):
        lockstep, impl = _lockstep(monkeypatch)
        try:
            with pytest.raises(DivergenceError, match="recovered state not allowed"):
                _crash(lockstep)
            assert [s.base_offset for s in impl.state().segments] == [0, 2, 4]
        finally:
            impl.close()


def test_kafka_variants__registry__one_conforming_and_one_rejected_per_rule() -> None:
    """Spec: KL-ALLOW-5, KL-ALLOW-6 (both variants of each rule are registered, with opposite
    verdicts)."""
    assert variant_names(True) == ["recovery_cut_deletes_async", "roll_replace_renames_deleted"]
    assert variant_names(False) == ["recovery_cut_keeps_later_segments",
                                    "roll_replace_loses_base"]


def _segments() -> tuple[Segment, ...]:
    from kafkalog.model import log

    state = log.empty_log(CONFIG, T)
    for _ in range(6):
        state, _ = log.append_as_leader(state, (RECORD,), 0)
    return state.segments


def test_load_unclean__cut_with_later_segments_on_disk__offers_none_or_a_prefix_pending() -> None:
    """Spec: KL-ALLOW-5 (options: nothing pending, or the on-disk later segments pending)."""
    seg0, seg1, seg2 = _segments()
    cut = replace(seg1, batches=seg1.batches[:1], size=seg1.batches[0].size)
    later = replace(seg2, base_offset=6)  # a fourth segment's stand-in, above segment 4
    found = [(o.choices, o.value.deleted_files, o.value.deletion_timers,
              [s.base_offset for s in o.value.segments])
             for o in outcomes(load_unclean, (seg0, cut), Checkpoints(), CONFIG, T, frozenset(),
                               (), (seg2, later))]
    due = T + CONFIG.file_delete_delay_ms
    assert found == [
        ((), (), (), [0, 2]),
        (("recovery_cut_deletion=1",), (4, 6), ((due, 4), (due, 6)), [0, 2]),
        (("recovery_cut_deletion=2",), (4,), ((due, 4),), [0, 2]),
    ]


def test_crash_states__power_loss_tearing_an_earlier_segment__allows_both_deletions() -> None:
    """Spec: KL-ALLOW-5, KL-CRASH-10 (every member keeps the crash invariants)."""
    from kafkalog.model import log
    from kafkalog.model.crash.invariants import crash_violations

    state = log.empty_log(CONFIG, T)
    for _ in range(6):
        state, _ = log.append_as_leader(state, (RECORD,), 0)
    durable = crash.Durable(flushed=TORN, checkpoints=Checkpoints(), epoch_options=(state.epochs,))
    members = crash.crash_states(state, durable, crash.FaultModel.POWER_LOSS)
    at_cut = {m.deleted_files for m, _ in members if m.log_end_offset == TORN}
    assert at_cut == {(), (4,)}
    assert all(not crash_violations(state, durable, m) for m, _ in members)
    whole = {m.deleted_files for m, _ in members if m.log_end_offset == 6}
    assert whole == {()}  # nothing was cut: nothing is pending


@pytest.mark.parametrize("version", ["3.6", "3.9", "4.0", "4.4", "trunk"])
def test_load_unclean__every_profile__offers_kafkas_deferred_deletion(version: str) -> None:
    """Spec: KL-ALLOW-5, KL-VERSION-1 (LogLoader.recoverLog defers in 3.6.2, 3.9, 4.x and
    trunk, the name older traces carry)."""
    seg0, seg1, seg2 = _segments()
    config = replace(CONFIG, kafka_version=version)
    pending = [o.value.deleted_files for o in outcomes(load_unclean, (seg0, seg1), Checkpoints(),
                                                       config, T, frozenset(), (), (seg2,))]
    assert pending == [(), (4,)]


def test_crash_states__kafka_mode_resurrected_layout_cut__allows_its_later_segment_pending(
) -> None:
    """Spec: KL-ALLOW-5 (a layout a kafka-mode crash resurrects, GAP-1, is cut like the log's)."""
    from kafkalog.model import log

    state = log.empty_log(CONFIG, T)
    durable = crash.initial_durable(state)
    for _ in range(6):
        before = state
        state, _ = log.append_as_leader(state, (RECORD,), 0)
        durable = crash.observe(durable, "append_as_leader", before, state, crash.CrashMode.KAFKA)
    before = state
    state, _ = log.truncate_to(state, 2)  # segments 2 and 4 go; Kafka's removal is not durable
    durable = crash.observe(durable, "truncate_to", before, state, crash.CrashMode.KAFKA)
    members = crash.crash_states(state, durable, crash.FaultModel.POWER_LOSS,
                                 crash.CrashMode.KAFKA)
    assert {m.deleted_files for m, _ in members if m.log_end_offset == TORN} == {(), (4,)}
