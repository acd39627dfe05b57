"""Producer state after a crash and an unclean load (model/crash/producers.py, KL-CRASH-11)."""

from __future__ import annotations

from typing import Any

from kafkalog.model import log
from kafkalog.model.crash import crash
from kafkalog.model.crash import producers as crash_producers
from kafkalog.model.crash.crash import FaultModel
from kafkalog.model.invariants import check_all
from kafkalog.model.values import LogConfig, Record

CONFIG = LogConfig(segment_bytes=300, index_interval_bytes=100, segment_index_bytes=48,
                   file_delete_delay_ms=1000)


class Tracked:
    """A model log with its durability, advanced like the checker's ModelSut."""

    def __init__(self) -> None:
        self.state = log.empty_log(CONFIG)
        self.durable = crash.initial_durable(self.state)

    def do(self, action: str, *args: Any) -> Any:
        before = self.state
        self.state, result = getattr(log, action)(self.state, *args)
        self.durable = crash.observe(self.durable, action, before, self.state)
        return result

    def produce(self, pid: int, seq: int, epoch: int = 0) -> None:
        self.do("append_as_leader", (Record(None, b"test", 100),), 0, pid, epoch, seq)

    def outcomes(self, fault: FaultModel) -> tuple[crash.Outcome, ...]:
        return crash.crash_states(self.state, self.durable, fault)


def _cache(state: Any, pid: int) -> list[tuple[int, int]]:
    view = log.view(state)
    entry = next(p for p in view.producers if p.producer_id == pid)
    return [(b.first_seq, b.first_offset) for b in entry.batches]


def test_surviving_snapshots__are_every_prefix_of_the_list() -> None:
    """DUR-29: the newest may be lost; a load-time rebuild drops those above. Spec: KL-CRASH-11"""
    files = ((3, ()), (5, ()), (8, ()))
    assert crash_producers.surviving_snapshots(files) == [files, files[:2], files[:1], ()]


def test_unclean_load__keeps_each_producers_newest_batch_only() -> None:
    """PSR-7 then PSF-4: recovery snapshots at the segment's end, the load reads that snapshot,
    so the batch cache a clean log had (five batches) shrinks to one. Spec: KL-CRASH-11"""
    t = Tracked()
    for seq in range(3):
        t.produce(pid=7, seq=seq)
    assert len(_cache(t.state, 7)) == 3
    for state, _ in t.outcomes(FaultModel.PROCESS_CRASH):
        assert _cache(state, 7) == [(2, 2)]
        assert [o for o, _ in state.producer_state.snapshots] == [3]  # at the LEO
        assert check_all(state) == []


def test_recovery__producer_known_only_below_the_log_start__is_gone_after_every_load() -> None:
    """PSR-4 inside PSR-7: the temporary manager deletes snapshots above the recovered segment's
    base, and (starting at the loaded log start, 1) the snapshot at the log start too, so a
    producer only a deleted segment knew is gone. Kafka's pass starts at the checkpoint (0 here)
    and brings it back from snapshot 1, which the same load deletes: it is gone after the next
    load. Spec: KL-CRASH-11, KL-CRASH-7"""
    t = Tracked()
    t.produce(pid=7, seq=0)
    t.do("roll", None)
    t.do("append_as_leader", (Record(None, b"test", 100),), 0)
    t.do("close_and_reopen")
    t.do("update_high_watermark", 2)
    t.do("maybe_increment_log_start_offset", 1)
    t.do("delete_old_segments")
    assert [p.producer_id for p in log.view(t.state).producers] == [7]  # kept (KAFKA-7190)
    kept = {tuple(p.producer_id for p in log.view(s).producers)
            for s, _ in t.outcomes(FaultModel.POWER_LOSS)}
    assert kept == {()}
    assert all(check_all(s) == [] for s, _ in t.outcomes(FaultModel.POWER_LOSS))


def test_crash_right_after_an_unclean_load__recovers_the_same_producer_table() -> None:
    """Strict: the load's snapshot files are durable, so loading twice = loading once.
    Spec: KL-CRASH-11, KL-CRASH-7"""
    t = Tracked()
    for seq in range(2):
        t.produce(pid=3, seq=seq)
    t.do("roll", None)
    t.produce(pid=4, seq=0)
    for fault in FaultModel:
        for state, durable in t.outcomes(fault):
            again = crash.crash_states(state, durable, fault)
            assert {log.view(s).producers for s, _ in again} == {log.view(state).producers}


def _txn(t: Tracked, pid: int, seq: int) -> None:
    t.do("append_as_leader", (Record(None, b"test", 100),), 0, pid, 0, seq, True)


def _marker(t: Tracked, pid: int, commit: bool) -> None:
    t.do("append_marker", pid, 0, commit, 1, 0)


def test_unclean_load__rebuilds_the_txn_index_of_recovered_segments_only_from_their_batches(
) -> None:
    """TXN-11 in PSR-7: an ABORT marker lost with the unflushed tail takes its `.txnindex`
    entry with it; a kept one is re-indexed with TXN-10's last stable offset.
    Spec: KL-CRASH-12"""
    t = Tracked()
    _txn(t, pid=5, seq=0)        # offset 0, producer 5's transaction
    _txn(t, pid=6, seq=0)        # offset 1, producer 6's transaction, still open below
    _marker(t, pid=5, commit=False)  # offset 2: ABORT, LSO = 1 (producer 6 is open)
    assert [(e.producer_id, e.last_stable_offset) for e in log.view(t.state).aborted_txns] == [
        (5, 1)]
    outcomes = t.outcomes(FaultModel.POWER_LOSS)
    by_leo = {s.log_end_offset: log.view(s).aborted_txns for s, _ in outcomes}
    assert set(by_leo) == {0, 1, 2, 3}
    assert by_leo[2] == () and by_leo[3] == log.view(t.state).aborted_txns
    for state, _ in outcomes:
        assert check_all(state) == []


def test_unclean_load__an_ongoing_transaction_holds_the_last_stable_offset_back() -> None:
    """TXN-13 then TXN-8: the open transaction comes back from the recovery's snapshot; nothing
    is unreplicated; the LSO is its first offset once the HW checkpoint is above it.
    Spec: KL-CRASH-12"""
    t = Tracked()
    t.do("append_as_leader", (Record(None, b"test", 100),), 0)
    _txn(t, pid=9, seq=0)  # offset 1, open
    t.do("update_high_watermark", 2)
    t.do("close_and_reopen")  # checkpoints the HW
    for state, _ in t.outcomes(FaultModel.PROCESS_CRASH):
        assert log.view(state).last_stable_offset == 1
        assert state.producer_state.unreplicated == ()


def test_unclean_load__txn_begun_below_the_log_start__indexed_alike_by_every_load() -> None:
    """A transaction's first batch (offset 0) went with its segment; its ABORT marker is at 2.
    The log-start checkpoint reads 0 (FMT-40), so Kafka's recovery pass would read the
    snapshot at the log start (1) and index first offset 0, and the same load deletes that
    snapshot (PSR-4), so the next load indexes 1. Both passes start at the loaded log start:
    every load indexes 1. Spec: KL-CRASH-11, KL-CRASH-12, KL-CRASH-7"""
    t = Tracked()
    _txn(t, pid=1, seq=0)
    t.do("roll", None)
    t.do("update_high_watermark", 1)
    t.do("maybe_increment_log_start_offset", 1)
    assert t.do("delete_old_segments") == 1
    _txn(t, pid=1, seq=1)
    _marker(t, pid=1, commit=False)
    assert [(e.first_offset, e.last_offset) for e in log.view(t.state).aborted_txns] == [(0, 2)]
    for state, durable in t.outcomes(FaultModel.PROCESS_CRASH):
        first = log.view(state).aborted_txns
        assert [(e.first_offset, e.last_offset) for e in first] == [(1, 2)]
        for again, _ in crash.crash_states(state, durable, FaultModel.PROCESS_CRASH):
            assert log.view(again).aborted_txns == first
