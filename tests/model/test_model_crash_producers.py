"""Producer state after a crash and an unclean load (model/crash_producers.py, KL-CRASH-11)."""

from __future__ import annotations

from typing import Any

from kafkalog.model import crash, crash_producers, log
from kafkalog.model.crash import FaultModel
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


def test_recovery__rebuilds_from_the_snapshot_at_the_recovery_point_segment() -> None:
    """PSR-4 inside PSR-7: the temporary manager deletes snapshots above the recovered segment's
    base, so a producer only a deleted segment knew is gone. Spec: KL-CRASH-11"""
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
    # Snapshot 1 (producer 7) is the base the recovered segment rebuilds from; without it the
    # producer whose only batch was deleted cannot come back.
    assert kept == {(7,), ()}
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
