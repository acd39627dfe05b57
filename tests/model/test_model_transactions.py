"""Transactions in the model: markers, the last stable offset, `.txnindex`, read_committed."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafkalog.model import log
from kafkalog.model.errors import (
    IllegalArgumentError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTxnStateError,
    KafkalogError,
    TransactionCoordinatorFencedError,
)
from kafkalog.model.invariants import check_all
from kafkalog.model.producer.transaction_entry import marker_record, parse_marker
from kafkalog.model.producer.transactions import collect_aborted
from kafkalog.model.sizes import batch_size
from kafkalog.model.state import PartitionState, Segment
from kafkalog.model.values import (
    AbortedTransaction,
    AbortedTxnEntry,
    BatchSpec,
    Isolation,
    LogConfig,
    Record,
)

ONE = (Record(None, b"test", 10),)


def txn(s: PartitionState, pid: int, seq: int, epoch: int = 0,
        transactional: bool = True) -> PartitionState:
    s, _ = log.append_as_leader(s, ONE, 0, pid, epoch, seq, transactional)
    return s


def marker(s: PartitionState, pid: int, commit: bool, epoch: int = 0,
           coordinator_epoch: int = 1) -> PartitionState:
    s, _ = log.append_marker(s, pid, epoch, commit, coordinator_epoch, 0)
    return s


def lso(s: PartitionState) -> int | None:
    return log.view(s).last_stable_offset


def test_marker_record__is_the_psf11_control_record_and_a_78_byte_batch() -> None:
    """Spec: KL-TXN-1 — COMMIT with coordinator epoch 5: key 0001, value 0000 00000005."""
    record = marker_record(True, 5, 0)
    assert (record.key, record.value) == (b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x05")
    assert batch_size((record,)) == 78
    assert parse_marker(record, "t").coordinator_epoch == 5


@pytest.mark.parametrize("key,value,error", [
    (b"\x00\x00\x00", b"\x00\x00\x00\x00\x00\x05", InvalidRecordError),
    (b"\xff\xff\x00\x01", b"\x00\x00\x00\x00\x00\x05", InvalidRecordError),
    (b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00", InvalidRecordError),
    (b"\x00\x00\x00\x02", b"\x00\x00\x00\x00\x00\x05", IllegalArgumentError),
])
def test_follower_control_batch__with_a_malformed_marker_is_rejected(
        key: bytes, value: bytes, error: type[KafkalogError]) -> None:
    """Spec: KL-TXN-1 — short or negative-version keys/values, unknown types (TXN-4)."""
    s = log.empty_log(LogConfig())
    spec = BatchSpec(0, 0, (Record(key, value, 0),), producer_id=1, producer_epoch=0,
                     is_transactional=True, is_control=True)
    with pytest.raises(error):
        log.append_as_follower(s, (spec,))


def test_transactional_batch__without_producer_id_is_rejected() -> None:
    """Spec: KL-TXN-1"""
    with pytest.raises(IllegalArgumentError):
        log.append_as_leader(log.empty_log(LogConfig()), ONE, 0, is_transactional=True)


def test_open_transaction__pins_the_lso_until_the_hw_passes_the_marker() -> None:
    """Spec: KL-TXN-3, KL-TXN-5, KL-TXN-6 — TXN-12: the marker alone does not release it."""
    s = log.empty_log(LogConfig())
    s, _ = log.append_as_leader(s, ONE, 0)
    s = txn(s, 7, 0)
    s, _ = log.update_high_watermark(s, 2)
    assert (lso(s), s.first_unstable_offset) == (1, 1)
    s = marker(s, 7, commit=True)
    s, _ = log.update_high_watermark(s, 2)
    assert lso(s) == 1  # the marker at 2 is not below the HW yet
    s, _ = log.update_high_watermark(s, 3)
    assert lso(s) == 3 and s.producer_state.unreplicated == ()
    assert log.view(s).aborted_txns == ()  # commits are never indexed
    assert check_all(s) == []


def test_non_transactional_data_inside_a_transaction__is_invalid_txn_state() -> None:
    """Spec: KL-TXN-3 — every origin, nothing changes."""
    s = txn(log.empty_log(LogConfig()), 7, 0)
    with pytest.raises(InvalidTxnStateError):
        log.append_as_leader(s, ONE, 0, 7, 0, 1)
    follower = BatchSpec(1, 0, ONE, producer_id=7, producer_epoch=0, base_sequence=1)
    with pytest.raises(InvalidTxnStateError):
        log.append_as_follower(s, (follower,))


def test_marker__fences_old_producer_and_coordinator_epochs() -> None:
    """Spec: KL-TXN-2 — PSE-1 and PSE-4 from the coordinator; replication accepts both."""
    s = marker(txn(log.empty_log(LogConfig()), 7, 0, epoch=3), 7, False, epoch=3,
               coordinator_epoch=5)
    with pytest.raises(InvalidProducerEpochError):
        marker(s, 7, True, epoch=2, coordinator_epoch=5)
    with pytest.raises(TransactionCoordinatorFencedError):
        marker(s, 7, True, epoch=3, coordinator_epoch=4)
    spec = BatchSpec(s.log_end_offset, 0, (marker_record(True, 4, 0),), producer_id=7,
                     producer_epoch=2, is_transactional=True, is_control=True)
    s, _ = log.append_as_follower(s, (spec,))
    entry = s.producer_state.producers[0]
    assert (entry.producer_epoch, entry.coordinator_epoch) == (2, 4)


def test_marker_with_higher_epoch__clears_the_cache_and_empty_transaction_indexes_nothing() -> None:
    """Spec: KL-TXN-2 — TXN-4: a bumped-epoch ABORT with no open transaction."""
    s, _ = log.append_as_leader(log.empty_log(LogConfig()), ONE, 0, 7, 0, 0)
    s = marker(s, 7, False, epoch=1)
    entry = s.producer_state.producers[0]
    assert (entry.producer_epoch, entry.batches, log.view(s).aborted_txns) == (1, (), ())
    s = marker(s, 9, True, epoch=4)  # unknown producer: an entry without batches
    assert s.producer_state.producers[1].producer_epoch == 4


def test_abort__indexes_the_lso_of_the_first_other_open_transaction() -> None:
    """Spec: KL-TXN-4 — TXN-10 (PSMT.testLastStableOffsetCompletedTxn shape)."""
    s = log.empty_log(LogConfig())
    s = txn(txn(txn(s, 1, 0), 2, 0), 3, 0)  # open at 0, 1, 2
    s = marker(s, 1, False)  # 3: stores 1
    s = marker(s, 3, False)  # 4: stores 1
    s = marker(s, 2, False)  # 5: stores 6
    assert log.view(s).aborted_txns == (
        AbortedTxnEntry(1, 0, 3, 1), AbortedTxnEntry(3, 2, 4, 1), AbortedTxnEntry(2, 1, 5, 6))
    assert check_all(s) == []


def test_follower_append__completing_two_transactions_counts_the_later_one_as_open() -> None:
    """Spec: KL-TXN-4 — completions in batch order within one append."""
    def data(offset: int, pid: int) -> BatchSpec:
        return BatchSpec(offset, 0, ONE, producer_id=pid, producer_epoch=0, base_sequence=0,
                         is_transactional=True)

    def abort(offset: int, pid: int) -> BatchSpec:
        return BatchSpec(offset, 0, (marker_record(False, 1, 0),), producer_id=pid,
                         producer_epoch=0, is_transactional=True, is_control=True)

    s, _ = log.append_as_follower(log.empty_log(LogConfig()),
                                  (data(0, 1), data(1, 2), abort(2, 1), abort(3, 2)))
    assert log.view(s).aborted_txns == (AbortedTxnEntry(1, 0, 2, 1), AbortedTxnEntry(2, 1, 3, 4))


def test_collect_aborted__matches_kafka_transaction_index_vectors() -> None:
    """Spec: KL-TXN-9 — TIT.testCollectAbortedTransactions."""
    entries = (AbortedTxnEntry(0, 0, 10, 11), AbortedTxnEntry(1, 5, 15, 13),
               AbortedTxnEntry(2, 18, 35, 25), AbortedTxnEntry(3, 32, 50, 40))
    s = log.empty_log(LogConfig())
    s = replace(s, segments=(replace(s.segments[0], txn_index=entries),))

    def pids(start: int, upper: int) -> list[int]:
        return [a.producer_id for a in collect_aborted(s, start, 0, upper)]
    assert pids(0, 100) == [0, 1, 2, 3]
    assert pids(0, 32) == [0, 1, 2]
    assert pids(0, 35) == [0, 1, 2, 3]
    assert pids(11, 35) == [1, 2, 3]
    assert pids(20, 41) == [2, 3]


def test_read_committed__stops_at_the_lso_and_lists_overlapping_aborts() -> None:
    """Spec: KL-TXN-9 — bound, empty-but-present list at the bound, aborted list otherwise."""
    s = log.empty_log(LogConfig())
    s = marker(txn(s, 7, 0), 7, commit=False)  # 0 data, 1 abort
    s = txn(s, 8, 0)  # 2 open
    s, _ = log.update_high_watermark(s, 3)
    assert lso(s) == 2
    s, info = log.read(s, 0, 10_000, Isolation.TXN_COMMITTED, False)
    assert [b.base_offset for b in info.batches] == [0, 1]
    assert info.batches[1].is_control and info.batches[1].producer_id == 7
    assert info.aborted_transactions == (AbortedTransaction(7, 0),)
    s, at_bound = log.read(s, 2, 10_000, Isolation.TXN_COMMITTED, False)
    assert (at_bound.batches, at_bound.aborted_transactions) == ((), ())
    s, uncommitted = log.read(s, 0, 10_000, Isolation.HIGH_WATERMARK, False)
    assert uncommitted.aborted_transactions is None and len(uncommitted.batches) == 3


def test_truncation_through_an_open_transaction__cuts_the_index_and_reopens() -> None:
    """Spec: KL-TXN-8, KL-TXN-5 — the ABORT marker is cut; the transaction is open again."""
    s = marker(txn(log.empty_log(LogConfig()), 7, 0), 7, commit=False)
    s, _ = log.update_high_watermark(s, 2)
    assert (lso(s), len(log.view(s).aborted_txns or ())) == (2, 1)
    s, _ = log.truncate_to(s, 1)
    assert log.view(s).aborted_txns == ()
    assert s.producer_state.producers[0].current_txn_first_offset == 0
    assert (lso(s), log.view(s).high_watermark) == (0, 1)
    assert check_all(s) == []


def test_reload__keeps_open_transactions_and_the_index() -> None:
    """Spec: KL-TXN-7 — snapshots carry currentTxnFirstOffset; unreplicated ones are dropped."""
    s = marker(txn(log.empty_log(LogConfig()), 7, 0), 7, commit=False)
    s = txn(s, 8, 0)
    s, _ = log.update_high_watermark(s, 1)
    s, _ = log.close_and_reopen(s)
    assert s.producer_state.unreplicated == ()
    assert (lso(s), log.view(s).aborted_txns) == (1, (AbortedTxnEntry(7, 0, 1, 2),))
    s, _ = log.truncate_fully_and_start_at(s, 10)
    assert (lso(s), s.first_unstable_offset) == (10, None)


def test_log_start_above_the_fuo__clamps_it() -> None:
    """Spec: KL-TXN-5 — TXN-12: the transaction stays open; the FUO moves to the log start."""
    s = txn(log.empty_log(LogConfig()), 7, 0)
    s, _ = log.append_as_leader(s, ONE, 0)
    s, _ = log.update_high_watermark(s, 2)
    s, _ = log.maybe_increment_log_start_offset(s, 1)
    assert (s.first_unstable_offset, lso(s)) == (1, 1)


def test_lso__is_a_read_committed_consumers_latest_offset() -> None:
    """Spec: KL-TXN-10 — fetch_offset_by_timestamp stays the log layer's (LATEST = LEO)."""
    s = txn(log.empty_log(LogConfig()), 7, 0)
    s, _ = log.update_high_watermark(s, 1)
    s, latest = log.fetch_offset_by_timestamp(s, -1)
    assert latest is not None and latest.offset == 1 and lso(s) == 0


ACTIONS = st.lists(st.tuples(st.sampled_from(["data", "txn", "commit", "abort", "hw", "trunc",
                                              "reopen", "roll", "start"]),
                             st.integers(0, 2), st.integers(0, 12)), max_size=25)


@settings(max_examples=60, deadline=None)
@given(ACTIONS)
def test_random_transactional_histories__keep_every_invariant(actions: list[tuple[str, int, int]]
                                                              ) -> None:
    """Spec: KL-INV-16, KL-INV-17 — the LSO bounds and the txn bookkeeping after every step."""
    s = log.empty_log(LogConfig(segment_bytes=300))
    seqs = [0, 0, 0]
    for kind, pid, n in actions:
        try:
            if kind in ("data", "txn"):
                s = txn(s, pid, seqs[pid], transactional=kind == "txn")
                seqs[pid] += 1
            elif kind in ("commit", "abort"):
                s = marker(s, pid, kind == "commit")
            elif kind == "hw":
                s, _ = log.update_high_watermark(s, n)
            elif kind == "trunc":
                s, _ = log.truncate_to(s, n)
                seqs = [0, 0, 0] if n == 0 else seqs
            elif kind == "reopen":
                s, _ = log.close_and_reopen(s)
            elif kind == "roll":
                s, _ = log.roll(s)
            else:
                s, _ = log.maybe_increment_log_start_offset(s, n)
        except KafkalogError:
            continue
        assert check_all(s) == [], (kind, pid, n)
        assert isinstance(s.segments[-1], Segment)


def test_truncation_replaying_a_completed_txn__can_pull_the_lso_back_until_an_hw_update() -> None:
    """Spec: KL-TXN-5, KL-INV-17 — Kafka's truncateTo replays a completed transaction as
    unreplicated and no HW update retires it: the next append's FUO recomputation lowers the
    LSO below the HW; the next HW assignment restores it."""
    s = txn(txn(log.empty_log(LogConfig()), 1, 0), 1, 1)
    s = marker(s, 1, commit=True)
    s, _ = log.update_high_watermark(s, 3)
    s, _ = log.append_as_leader(s, ONE, 0)
    s, _ = log.append_as_leader(s, ONE, 0, 1, 0, 2)
    s, _ = log.truncate_to(s, 4)
    assert (lso(s), len(s.producer_state.unreplicated)) == (3, 1)
    s, _ = log.append_as_leader(s, ONE, 0)
    assert lso(s) == 0 and check_all(s) == []
    s, _ = log.update_high_watermark(s, 3)
    assert lso(s) == 3


def test_aborted_upper_bound__exact_first_index_entry__answers_the_second_one() -> None:
    """Spec: KL-TXN-9 — Kafka's indexSlotRangeFor never probes slot 0 on an exact match, so a
    read ending exactly at the first offset-index entry's position uses the second entry."""
    from kafkalog.model.producer.transactions import upper_bound_offset
    from kafkalog.model.values import FetchDataInfo, LogOffsetMetadata

    s = log.empty_log(LogConfig())
    two = replace(s.segments[0], offset_index=((2, 144), (4, 288)))
    s = replace(s, segments=(two,), log_end_offset=9)
    at = LogOffsetMetadata(0, 0, 0)
    assert upper_bound_offset(s, 0, FetchDataInfo(at, 144)) == 4
    assert upper_bound_offset(s, 0, FetchDataInfo(at, 100)) == 2
    assert upper_bound_offset(s, 0, FetchDataInfo(at, 200)) == 4
    one = replace(s, segments=(replace(two, offset_index=((2, 144),)),))
    assert upper_bound_offset(one, 0, FetchDataInfo(at, 144)) == 9
