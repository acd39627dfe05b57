"""The crash action: the allowed set of post-crash-and-load states (specs/log.md §15)."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest
from kafkalog.model import log
from kafkalog.model.crash import crash
from kafkalog.model.crash import inside as crash_inside
from kafkalog.model.crash.crash import CrashMode, Durable, FaultModel
from kafkalog.model.crash.invariants import crash_violations
from kafkalog.model.invariants import check_all
from kafkalog.model.recovery import Checkpoints, load_unclean
from kafkalog.model.state import PartitionState
from kafkalog.model.values import EpochEntry, LogConfig, Record

CONFIG = LogConfig(segment_bytes=300, index_interval_bytes=100, segment_index_bytes=48,
                   file_delete_delay_ms=1000)
POWER = (FaultModel.POWER_LOSS, FaultModel.POWER_LOSS_PREFIX, FaultModel.POWER_LOSS_TORN)


class Tracked:
    """A model log with its durability, advanced by `observe` like the checker's ModelSut."""

    def __init__(self, mode: CrashMode = CrashMode.STRICT) -> None:
        self.mode = mode
        self.state = log.empty_log(CONFIG)
        self.durable = crash.initial_durable(self.state)

    def do(self, action: str, *args: Any) -> Any:
        before = self.state
        self.state, result = getattr(log, action)(self.state, *args)
        self.durable = crash.observe(self.durable, action, before, self.state, self.mode)
        return result

    def append(self, n: int = 1, epoch: int = 0, ts: int = 100) -> None:
        for _ in range(n):
            self.do("append_as_leader", (Record(None, b"test", ts),), epoch)

    def outcomes(self, fault: FaultModel) -> tuple[crash.Outcome, ...]:
        return crash.crash_states(self.state, self.durable, fault, self.mode)

    def leos(self, fault: FaultModel) -> set[int]:
        return {s.log_end_offset for s, _ in self.outcomes(fault)}


def test_process_crash__keeps_every_batch_and_falls_back_to_the_checkpointed_offsets() -> None:
    """FLT-1: the page cache survives; rp/HW from checkpoints. Spec: KL-CRASH-2, KL-CRASH-4"""
    t = Tracked()
    t.append(3)
    t.do("update_high_watermark", 3)
    (state, _), = t.outcomes(FaultModel.PROCESS_CRASH)
    assert state.log_end_offset == 3 and state.recovery_point == 0
    assert state.high_watermark.message_offset == 0  # never checkpointed (GAP-12)


def test_power_loss__unflushed_tail_may_end_at_any_batch_boundary_at_or_above_f() -> None:
    """CRP-6: every batch-aligned prefix from F up. Spec: KL-CRASH-2"""
    t = Tracked()
    t.append(2)
    assert t.do("flush", None) == 2
    t.append(2)
    for fault in POWER:
        assert t.leos(fault) == {2, 3, 4}


def test_power_loss__may_drop_a_batch_starting_at_f_after_a_truncation_inside_a_batch() -> None:
    """SEG-14 removes the straddling batch, so F (= the new LEO) sits above the kept end; the
    next batch starts at F and may be lost. Spec: KL-CRASH-2"""
    t = Tracked()
    t.do("append_as_leader", tuple(Record(None, b"test", 100) for _ in range(3)), 0)
    t.do("truncate_to", 2)
    t.do("append_as_leader", tuple(Record(None, b"test", 100) for _ in range(3)), 0)
    assert t.durable.flushed == 2
    for fault in POWER:
        assert t.leos(fault) == {0, 5}


def test_roll__flushes_the_previous_segment_so_its_batches_survive_power_loss() -> None:
    """KL-ROLL-7's flush is synchronous. Spec: KL-CRASH-2"""
    t = Tracked()
    t.append(2)
    t.do("roll", None)
    t.append(1)
    assert t.durable.flushed == 2
    assert t.leos(FaultModel.POWER_LOSS) == {2, 3}


def test_strict_truncation__never_resurrects_truncated_batches_kafka_mode_may() -> None:
    """GAP-1: Kafka's truncation is not durable; kafkalog's is. Spec: KL-CRASH-3, KL-CRASH-10"""
    for mode, resurrect in ((CrashMode.STRICT, False), (CrashMode.KAFKA, True)):
        t = Tracked(mode)
        t.append(4)
        t.do("flush", None)
        t.do("truncate_to", 2)
        t.append(1, epoch=1)
        leos = {s.log_end_offset for s, _ in t.outcomes(FaultModel.POWER_LOSS)}
        assert (4 in leos) is resurrect, mode
        assert t.durable.checkpoints.recovery_point == 2  # DUR-26: written after the cut


def test_retention__kafka_mode_may_bring_deleted_segments_back_strict_does_not() -> None:
    """GAP-2: retention's `.deleted` renames are not durable in Kafka. Spec: KL-CRASH-3"""
    for mode, resurrect in ((CrashMode.STRICT, False), (CrashMode.KAFKA, True)):
        t = Tracked(mode)
        t.append(6)
        t.do("update_high_watermark", 6)
        t.do("maybe_increment_log_start_offset", 4)
        assert t.do("delete_old_segments") > 0
        firsts = {s.segments[0].base_offset for s, _ in t.outcomes(FaultModel.POWER_LOSS)}
        assert (0 in firsts) is resurrect, mode


def test_lso_advance__is_undone_by_a_crash_before_any_checkpoint() -> None:
    """GAP-12 / DUR-16: DeleteRecords without a checkpoint is lost. Spec: KL-CRASH-4"""
    t = Tracked()
    t.append(3)
    t.do("update_high_watermark", 3)
    t.do("maybe_increment_log_start_offset", 2)
    (state, _), = t.outcomes(FaultModel.PROCESS_CRASH)
    assert state.log_start_offset == 0


def test_clean_shutdown__makes_everything_durable_and_checkpointed() -> None:
    """CRP-13 forward progress. Spec: KL-CRASH-4, KL-CRASH-7"""
    t = Tracked()
    t.append(3)
    t.do("update_high_watermark", 2)
    t.do("close_and_reopen")
    for fault in (FaultModel.PROCESS_CRASH, *POWER):
        states = {(s.log_end_offset, s.recovery_point, s.high_watermark.message_offset)
                  for s, _ in t.outcomes(fault)}
        assert states == {(3, 3, 2)}


def test_unclean_load__rebuilds_indexes_and_re_adds_epochs_above_the_checkpoint() -> None:
    """RCV-6, RCV-10: recovery re-derives indexes and epochs. Spec: KL-CRASH-5, KL-CRASH-6"""
    t = Tracked()
    t.append(2, epoch=0)
    t.append(2, epoch=3)
    stale = crash.Durable(t.durable.flushed, t.durable.checkpoints, ((),))
    (state, _), = crash.crash_states(t.state, stale, FaultModel.PROCESS_CRASH)
    assert state.epochs == (EpochEntry(0, 0), EpochEntry(3, 2))
    active = state.segments[-1]
    assert active.offset_index_max_entries == 6  # REC-12: full capacity again
    assert all(k >= active.base_offset for k, _ in active.offset_index)


SMALL_INDEX = LogConfig(segment_bytes=2048, index_interval_bytes=64, segment_index_bytes=120)


def _appended_with_reopens(*chunks: int) -> PartitionState:
    """72-byte batches in `chunks`, a clean reopen between two: each reopen resets the live
    index counter, so the batch after it gets no index entry where recovery gives it one."""
    state = log.empty_log(SMALL_INDEX)
    for i, n in enumerate(chunks):
        if i:
            state, _ = log.close_and_reopen(state)
        for _ in range(n):
            state, _ = log.append_as_leader(state, (Record(None, b"test", 100),), 0)
    return state


def test_unclean_load__active_index_rebuilt_beyond_capacity__keeps_entries_and_rolls_next(
) -> None:
    """16 rebuilt offset-index entries where segment_index_bytes holds 15: REC-12 keeps them
    (a capacity never below the entries, KL-INV-13), so a second crash loads too and the next
    append rolls. Spec: KL-CRASH-5"""
    state = _appended_with_reopens(3, 14)
    assert len(state.active.offset_index) == state.active.offset_index_max_entries == 15
    loaded = load_unclean(state.segments, Checkpoints(), SMALL_INDEX, 0)
    active = loaded.active
    assert len(active.offset_index) == active.offset_index_max_entries == 16
    assert check_all(loaded) == []
    again = load_unclean(loaded.segments, Checkpoints(), SMALL_INDEX, 0)
    assert again.active.offset_index == active.offset_index
    appended, _ = log.append_as_leader(again, (Record(None, b"test", 100),), 0)
    assert [s.base_offset for s in appended.segments] == [0, 17]


def test_truncate_to__active_index_rebuilt_beyond_capacity__keeps_the_entries_below() -> None:
    """SEG-13 resizes to full capacity, never below the entries it keeps. Spec: KL-CRASH-5"""
    state = _appended_with_reopens(3, 3, 12)
    assert len(state.segments) == 1 and state.log_end_offset == 18
    loaded = load_unclean(state.segments, Checkpoints(), SMALL_INDEX, 0)
    assert len(loaded.active.offset_index) == 17
    cut, _ = log.truncate_to(loaded, 17)
    assert len(cut.active.offset_index) == cut.active.offset_index_max_entries == 16
    assert check_all(cut) == []


def test_unclean_load__log_end_below_the_log_start_checkpoint_starts_empty_there() -> None:
    """RCV-7 (KAFKA-8306). Spec: KL-CRASH-6"""
    empty = (log.empty_log(CONFIG).segments[0],)
    loaded = load_unclean(empty, Checkpoints(recovery_point=0, log_start=4), CONFIG, 0)
    assert (loaded.log_start_offset, loaded.log_end_offset, loaded.epochs) == (4, 4, ())
    assert [s.base_offset for s in loaded.segments] == [4]


def test_unclean_load__epoch_entry_above_the_recovered_end__is_re_derived() -> None:
    """A stale entry at or above the loaded LEO (a crash inside a truncation) is cut before
    recovery re-derives the epochs, so loading the loaded state again changes nothing (seed
    903). Spec: KL-CRASH-6, KL-CRASH-7"""
    t = Tracked()
    t.append(3, epoch=0)
    stale = Checkpoints(recovery_point=20, epochs=(EpochEntry(0, 12),))
    loaded = load_unclean(t.state.segments, stale, CONFIG, 0)
    assert loaded.log_end_offset == 3 and loaded.epochs == (EpochEntry(0, 0),)
    again = load_unclean(loaded.segments, replace(stale, epochs=loaded.epochs), CONFIG, 0)
    assert again.epochs == loaded.epochs


def test_unclean_load__flushed_batch_of_a_replaced_epoch__adds_no_entry() -> None:
    """Batch 0 carries epoch 2, epoch 1 replaced it from offset 1 (EPO-3); a load with the
    recovery point at the LEO keeps (1, 1) instead of RCV-10's (2, 0), as a clean load does.
    Spec: KL-CRASH-6, KL-CRASH-7"""
    t = Tracked()
    t.append(1, epoch=2)
    t.append(1, epoch=1)
    assert t.state.epochs == (EpochEntry(1, 1),)
    checkpoints = Checkpoints(recovery_point=2, epochs=t.state.epochs)
    loaded = load_unclean(t.state.segments, checkpoints, CONFIG, 0)
    assert loaded.epochs == (EpochEntry(1, 1),)


def test_unclean_load__batches_at_or_above_the_recovery_point__add_their_epochs() -> None:
    """Spec: KL-CRASH-6"""
    t = Tracked()
    t.append(2, epoch=0)
    t.append(2, epoch=1)
    t.append(2, epoch=2)
    checkpoints = Checkpoints(recovery_point=2, epochs=(EpochEntry(0, 0),))
    loaded = load_unclean(t.state.segments, checkpoints, CONFIG, 0)
    assert loaded.epochs == (EpochEntry(0, 0), EpochEntry(1, 2), EpochEntry(2, 4))


def test_unclean_load__no_entry_below_the_recovery_point__every_recovered_batch_adds() -> None:
    """A log-start advance undone by a crash left no entry below the recovery point (GAP-12).
    Spec: KL-CRASH-6"""
    t = Tracked()
    t.append(2, epoch=0)
    t.append(2, epoch=1)
    t.append(2, epoch=2)
    checkpoints = Checkpoints(recovery_point=3, epochs=(EpochEntry(2, 6),))
    loaded = load_unclean(t.state.segments, checkpoints, CONFIG, 0)
    assert loaded.epochs == (EpochEntry(0, 0), EpochEntry(1, 2), EpochEntry(2, 4))


def test_unclean_load__empty_cache__flushed_batches_add_no_entry() -> None:
    """An empty checkpointed cache over batches of epoch 3 (an assign of epoch 1 at the LEO
    removed (3, 0), EPO-3, and a load's trim at the LEO removed (1, 2)): a clean load keeps it
    empty, and so does an unclean one for the batches below the recovery point, so a crash
    right after the clean load reloads alike (campaign seed 700353). Batches at or above the
    recovery point still add theirs. Spec: KL-CRASH-6, KL-CRASH-7"""
    t = Tracked()
    t.append(2, epoch=3)
    empty = Checkpoints(recovery_point=2, epochs=())
    assert load_unclean(t.state.segments, empty, CONFIG, 0).epochs == ()
    lower = Checkpoints(recovery_point=1, epochs=())
    assert load_unclean(t.state.segments, lower, CONFIG, 0).epochs == (EpochEntry(3, 1),)


def test_crash_right_after_a_load__recovers_the_same_state() -> None:
    """CRP-12 idempotence, also with LSO = LEO = 10. Spec: KL-CRASH-7"""
    t = Tracked()
    t.append(10, epoch=1)
    t.do("update_high_watermark", 10)
    t.do("maybe_increment_log_start_offset", 10)
    t.do("close_and_reopen")
    for fault in (FaultModel.PROCESS_CRASH, *POWER):
        for state, durable in t.outcomes(fault):
            again = crash.crash_states(state, durable, fault)
            assert {log.view(s) for s, _ in again} == {log.view(state)}


def test_crash_inside_an_action__is_a_state_of_the_set_before_or_after_it() -> None:
    """FLT-11 / CRP-8. Spec: KL-CRASH-8"""
    t = Tracked()
    t.append(3)
    t.do("flush", None)
    before, durable_before = t.state, t.durable
    t.do("truncate_to", 1)
    inside = crash_inside.crash_between(before, durable_before, t.state, t.durable,
                                        "truncate_to", FaultModel.POWER_LOSS)
    assert {s.log_end_offset for s, _ in inside} == {1, 2, 3}
    t.do("close_and_reopen")
    assert any(s.recovery_point == s.log_end_offset == 1 for s, _ in inside)


def test_crash_inside_a_truncation__after_the_cut__may_keep_the_snapshots_it_deletes() -> None:
    """Kafka's truncateTo cuts the log, then `truncateAndReload` deletes the snapshots at or
    below the log start (PSR-4), and kafkalog keeps that order: a crash between leaves the cut
    log (the batch 4-5 gone, everything flushed) with snapshots 1 and 2, which a load whose
    recovery starts above them keeps. Spec: KL-CRASH-8, KL-CRASH-11"""
    t = Tracked()
    for seq in range(3):
        t.do("append_as_leader", (Record(None, b"test", 100),), 0, 7, 0, seq)
        t.do("roll", None)  # snapshots 1, 2, 3
    t.do("close_and_reopen")  # recovery-point checkpoint 3
    t.do("append_as_leader", (Record(None, b"test", 100),), 0, 7, 0, 3)
    t.do("append_as_leader", (Record(None, b"test", 100),) * 2, 0, 7, 0, 4)
    t.do("update_high_watermark", 6)
    t.do("flush", None)
    t.do("maybe_increment_log_start_offset", 4)
    before, durable_before = t.state, t.durable
    t.do("truncate_to", 5)
    assert not {1, 2} & {o for o, _ in t.state.producer_state.snapshots}
    inside = crash_inside.crash_between(before, durable_before, t.state, t.durable,
                                        "truncate_to", FaultModel.PROCESS_CRASH)
    assert any(s.log_end_offset == 4 and {1, 2} <= {o for o, _ in s.producer_state.snapshots}
               for s, _ in inside)
    for state, _ in inside:
        assert check_all(state) == []


def test_crash_inside_a_full_truncation__trims_stale_epochs_at_the_loaded_log_start() -> None:
    """The epoch file may still be the old one when the segments are gone; kafkalog trims at
    the loaded LSO, not at the older checkpoint (REC-15), so KL-INV-10 holds (check seed 175).
    Spec: KL-CRASH-6, KL-CRASH-8"""
    t = Tracked()
    t.append(10)
    t.do("close_and_reopen")  # recovery-point checkpoint 10: recovery keeps the cache's entries
    before, durable_before = t.state, t.durable
    t.do("truncate_fully_and_start_at", 3)
    for fault in (FaultModel.PROCESS_CRASH, *POWER):
        inside = crash_inside.crash_between(before, durable_before, t.state, t.durable,
                                            "truncate_fully_and_start_at", fault)
        for state, _ in inside:
            assert check_all(state) == [], (fault, state.log_start_offset, state.epochs)
        assert any(s.log_start_offset == 3 for s, _ in inside)


def test_offsets_going_back__may_empty_the_last_segment_flushed_or_not() -> None:
    """GAP-6, RCV-6 (KAFKA-905): the load empties the segment instead of failing; without the
    plant the set is unchanged. Spec: KL-CRASH-9"""
    t = Tracked()
    t.append(3)
    t.do("roll", None)
    t.append(2)
    t.do("flush", None)
    plain = {log.view(s) for s, _ in t.outcomes(FaultModel.POWER_LOSS)}
    planted = crash.crash_states(t.state, t.durable, FaultModel.POWER_LOSS, offsets_back=True)
    leos = {s.log_end_offset for s, _ in planted}
    assert leos == {3, 5} and {log.view(s) for s, _ in planted} > plain
    emptied = [s for s, _ in planted if s.log_end_offset == 3]
    assert all(s.segments[-1].batches == () and check_all(s) == [] for s in emptied)


def test_torn_tail_cut__may_stamp_the_last_modified_time_of_a_segment_without_timestamps() -> None:
    """SEG-19: only visible to time retention without timestamps. Spec: KL-CRASH-9"""
    t = Tracked()
    t.append(2, ts=-1)
    t.do("advance_clock", 500)
    stamps = {s.segments[-1].last_modified_ms for s, _ in t.outcomes(FaultModel.PROCESS_CRASH)}
    assert stamps == {0, 500}
    assert crash.crash_allows(t.outcomes(FaultModel.PROCESS_CRASH),
                              log.view(t.outcomes(FaultModel.PROCESS_CRASH)[0][0]))


ACTIONS = ("append", "append", "append", "flush", "roll", "truncate_to", "truncate_fully",
           "hw", "lso", "retain", "reopen", "clock", "crash")


def _random_walk(rng: random.Random, mode: CrashMode) -> list[tuple[PartitionState, Durable,
                                                                   PartitionState]]:
    t = Tracked(mode)
    checked = []
    for _ in range(14):
        name = rng.choice(ACTIONS)
        leo = t.state.log_end_offset
        if name == "append":
            t.append(rng.randint(1, 2), epoch=rng.randint(0, 2), ts=rng.choice((-1, 100, 200)))
        elif name == "flush":
            t.do("flush", rng.randint(0, leo))
        elif name == "roll":
            t.do("roll", None)
        elif name == "truncate_to":
            t.do("truncate_to", rng.randint(0, leo))
        elif name == "truncate_fully":
            t.do("truncate_fully_and_start_at", rng.randint(0, leo + 2))
        elif name == "hw":
            t.do("update_high_watermark", leo)
        elif name == "lso":
            t.do("maybe_increment_log_start_offset", t.state.high_watermark.message_offset)
        elif name == "retain":
            t.do("advance_clock", 200_000)
            t.do("delete_old_segments")
        elif name == "reopen":
            t.do("close_and_reopen")
        elif name == "clock":
            t.do("advance_clock", 1000)
        else:
            fault = rng.choice(list(FaultModel))
            for state, _ in t.outcomes(fault):
                checked.append((t.state, t.durable, state))
            t.state, t.durable = rng.choice(t.outcomes(fault))
    return checked


@pytest.mark.parametrize("mode", list(CrashMode))
def test_every_member_of_the_allowed_set__satisfies_the_crash_invariants(mode: CrashMode) -> None:
    """CRP-4, CRP-6, CRP-9, CRP-11, CRP-15 over random walks. Spec: KL-CRASH-10, KL-CRASH-1"""
    rng = random.Random(10)
    seen = 0
    for _ in range(60):
        for before, durable, after in _random_walk(rng, mode):
            assert crash_violations(before, durable, after, mode) == [], (before, after)
            assert check_all(after) == [], (before, after)  # the model's own invariants too
            seen += 1
    assert seen > 50


def test_kafka_mode__a_load_after_a_process_crash_makes_nothing_durable() -> None:
    """GAP-4 (found by `check --crash-mode kafka`): Kafka's recovery fsyncs nothing, so what it
    served from the page cache may be lost by the next power loss; strict recovery fsyncs it.
    Spec: KL-CRASH-1, KL-CRASH-7"""
    for mode, lost in ((CrashMode.STRICT, False), (CrashMode.KAFKA, True)):
        t = Tracked(mode)
        t.append(2)
        (state, durable), = t.outcomes(FaultModel.PROCESS_CRASH)
        assert state.log_end_offset == 2
        again = crash.crash_states(state, durable, FaultModel.POWER_LOSS, mode)
        assert (0 in {s.log_end_offset for s, _ in again}) is lost


def test_kafka_mode__a_crash_inside_a_truncation_may_leave_a_hole_strict_may_not() -> None:
    """Kafka renames a truncation's segments `.deleted` lowest first and cuts afterwards, so a
    process crash part-way may keep a later segment after a removed one (seed 113); kafkalog
    removes them highest first. Spec: KL-CRASH-8"""
    for mode, hole in ((CrashMode.STRICT, False), (CrashMode.KAFKA, True)):
        t = Tracked(mode)
        for _ in range(3):
            t.append(2)
            t.do("roll", None)
        t.append(1)  # segments at 0, 2, 4, 6
        before, durable_before = t.state, t.durable
        t.do("truncate_to", 1)
        inside = crash_inside.crash_between(before, durable_before, t.state, t.durable,
                                            "truncate_to", FaultModel.PROCESS_CRASH, mode)
        bases = {tuple(x.base_offset for x in s.segments) for s, _ in crash.loaded_outcomes(inside)}
        assert ((0, 4, 6) in bases) is hole, (mode, bases)
        assert all(check_all(s) == [] for s, _ in crash.loaded_outcomes(inside))


def test_kafka_mode__a_removed_snapshot_file_may_come_back_strict_not() -> None:
    """DUR-29: no snapshot removal is dir-fsynced in Kafka, so a power loss may undo one and
    the load rebuilds from that file (seeds 195, 734). Spec: KL-CRASH-11"""
    for mode, back in ((CrashMode.STRICT, False), (CrashMode.KAFKA, True)):
        t = Tracked(mode)
        t.append(2)
        t.do("roll", None)  # snapshots at 2 and 3
        t.append(1)
        t.do("roll", None)
        t.do("update_high_watermark", 3)
        t.do("maybe_increment_log_start_offset", 3)
        t.append(1)
        had = set(t.state.producer_state.snapshots)
        t.do("truncate_to", 3)  # PSR: drops the snapshots at or below the log start (seed 734)
        gone = had - set(t.state.producer_state.snapshots)
        assert gone and set(t.durable.ghosts) == (gone if back else set())
        options = crash._snapshot_options(t.state, mode, t.durable.ghosts)
        assert any(gone <= set(o) for o in options) is back



def test_kafka_mode__removed_snapshot_files_the_recovered_state_lists__come_back_together(
) -> None:
    """A power loss undoes each removed file's unsynced unlink on its own (FLT-5, DUR-29), so
    any subset may be back: the set offers each one alone or all, and with the files a
    recovered state lists (TornClues.snapshots), those together, with any one unlisted beside
    them (seed 6057: 1 and 8 back, 7 not). Spec: KL-CRASH-11"""
    ghosts = tuple((offset, ()) for offset in (1, 3, 7, 8))
    t = Tracked(CrashMode.KAFKA)
    alone = crash._snapshot_options(t.state, CrashMode.KAFKA, ghosts)
    listed = crash._snapshot_options(t.state, CrashMode.KAFKA, ghosts, frozenset({1, 8}))

    def offsets(options: list[Any]) -> set[tuple[int, ...]]:
        return {tuple(o for o, _ in option if (o, ()) in ghosts) for option in options}

    assert (1, 8) not in offsets(alone) and {(1,), (8,), (1, 3, 7, 8)} <= offsets(alone)
    assert {(1, 8), (1, 3, 8), (1, 7, 8)} <= offsets(listed)

def test_kafka_mode__after_a_power_loss_load_the_cut_image_may_come_back() -> None:
    """GAP-4 after a power loss: the load's cut of the image (here the emptied segment of
    planted offsets going back) is not fsynced, so the image is a layout a later power loss
    may bring back (seeds 293, 381); strict loads make their cuts durable. Spec: KL-CRASH-1"""
    for mode, back in ((CrashMode.STRICT, False), (CrashMode.KAFKA, True)):
        t = Tracked(mode)
        t.append(2)
        t.do("roll", None)
        t.append(2)
        t.do("flush", None)
        planted = crash.crash_states(t.state, t.durable, FaultModel.POWER_LOSS, mode,
                                     offsets_back=True)
        emptied = [(s, d) for s, d in crash.loaded_outcomes(planted) if s.log_end_offset == 2]
        assert emptied
        state, durable = emptied[0]
        again = crash.crash_states(state, durable, FaultModel.POWER_LOSS, mode)
        assert (4 in {s.log_end_offset for s, _ in crash.loaded_outcomes(again)}) is back
