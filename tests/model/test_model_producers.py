"""Producer state in the model: validation, duplicates, expiry, snapshots, rebuilds (KL-PROD)."""

from __future__ import annotations

import contextlib
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafkalog.model import log
from kafkalog.model.errors import (
    IllegalArgumentError,
    InvalidProducerEpochError,
    InvalidRecordError,
    KafkalogError,
    OutOfOrderSequenceError,
)
from kafkalog.model.invariants import check_all
from kafkalog.model.producer import producer_entry as pe
from kafkalog.model.producer import producer_state as ps
from kafkalog.model.state import PartitionState
from kafkalog.model.values import (
    INT32_MAX,
    BatchSpec,
    Isolation,
    LogConfig,
    Record,
    TimestampType,
)

ONE = (Record(None, b"test", 10),)
TWO = (Record(None, b"a", 10), Record(None, b"b", 11))


def produce(s: PartitionState, pid: int, epoch: int, seq: int,
            records: tuple[Record, ...] = ONE) -> tuple[PartitionState, tuple[int, int]]:
    s, info = log.append_as_leader(s, records, 0, producer_id=pid, producer_epoch=epoch,
                                   base_sequence=seq)
    return s, (info.first_offset, info.last_offset)


def entry(s: PartitionState, pid: int) -> pe.ProducerEntry:
    found = ps.lookup(s.producer_state.producers, pid)
    assert found is not None
    return found


def test_sequence_arithmetic__wraps_at_int_max() -> None:
    """PST-5 vectors. Spec: KL-PROD-3"""
    assert pe.increment_sequence(INT32_MAX, 1) == 0
    assert pe.increment_sequence(INT32_MAX - 10, 20) == 9
    assert pe.decrement_sequence(9, 20) == INT32_MAX - 10
    assert pe.decrement_sequence(5, 3) == 2
    assert pe.in_sequence(INT32_MAX, 0) and not pe.in_sequence(INT32_MAX, 1)
    assert pe.in_sequence(-1, 0) and pe.in_sequence(4, 5) and not pe.in_sequence(4, 6)


def test_leader_append__records_the_batch_in_the_producer_table() -> None:
    """Spec: KL-PROD-1, KL-PROD-4"""
    s = log.empty_log(LogConfig())
    s, offsets = produce(s, 7, 0, 0, TWO)
    assert offsets == (0, 1)
    view = log.view(s)
    assert view.producers is not None and len(view.producers) == 1
    p = view.producers[0]
    assert (p.producer_id, p.producer_epoch, p.last_timestamp) == (7, 0, 11)
    assert [(b.first_seq, b.last_seq, b.first_offset, b.last_offset) for b in p.batches] == [
        (0, 1, 0, 1)]


def test_retry_of_a_cached_batch__returns_original_offsets_and_appends_nothing() -> None:
    """PST-10. Spec: KL-PROD-5"""
    s = log.empty_log(LogConfig())
    s, first = produce(s, 1, 0, 0)
    s, _ = produce(s, 1, 0, 1)
    before = log.view(s)
    s, again = produce(s, 1, 0, 0)
    assert again == first
    assert log.view(s) == before


def test_retry_older_than_five_batches__is_out_of_order() -> None:
    """PST-11 (ULT.testDuplicateAppends). Spec: KL-PROD-5, KL-PROD-7"""
    s = log.empty_log(LogConfig())
    for seq in range(6):
        s, _ = produce(s, 1, 0, seq)
    assert len(entry(s, 1).batches) == pe.NUM_BATCHES_TO_RETAIN
    s, _ = produce(s, 1, 0, 1)  # still cached: a duplicate
    with pytest.raises(OutOfOrderSequenceError):
        produce(s, 1, 0, 0)


def test_rebatched_retry__is_out_of_order_not_duplicate() -> None:
    """PST-11: a different sequence range is no duplicate. Spec: KL-PROD-5, KL-PROD-7"""
    s = log.empty_log(LogConfig())
    s, _ = produce(s, 1, 0, 0, TWO)
    with pytest.raises(OutOfOrderSequenceError):
        produce(s, 1, 0, 0)


def test_gap_in_sequence__is_out_of_order_and_changes_nothing() -> None:
    """PST-15 row 3. Spec: KL-PROD-7"""
    s = log.empty_log(LogConfig())
    s, _ = produce(s, 1, 0, 0)
    with pytest.raises(OutOfOrderSequenceError):
        produce(s, 1, 0, 2)


def test_unknown_producer__any_first_sequence_is_accepted() -> None:
    """PST-15 row 1, PST-17 (KIP-360). Spec: KL-PROD-7"""
    s = log.empty_log(LogConfig())
    s, _ = produce(s, 1, 3, 42)
    assert entry(s, 1).last_seq == 42


def test_epoch_bump__needs_sequence_zero_and_clears_cache() -> None:
    """PST-13, PST-15 rows 4-5. Spec: KL-PROD-4, KL-PROD-7"""
    s = log.empty_log(LogConfig())
    s, _ = produce(s, 1, 0, 0)
    with pytest.raises(OutOfOrderSequenceError):
        produce(s, 1, 1, 1)
    s, _ = produce(s, 1, 1, 0)
    assert entry(s, 1).producer_epoch == 1 and len(entry(s, 1).batches) == 1


def test_stale_epoch__is_fenced_on_leader_but_accepted_on_follower() -> None:
    """PST-12, PST-21. Spec: KL-PROD-6, KL-PROD-8"""
    s = log.empty_log(LogConfig())
    s, _ = produce(s, 1, 5, 0)
    with pytest.raises(InvalidProducerEpochError):
        produce(s, 1, 4, 1)
    spec = BatchSpec(1, 0, ONE, producer_id=1, producer_epoch=4, base_sequence=77)
    s, _ = log.append_as_follower(s, (spec,))
    assert entry(s, 1).producer_epoch == 4 and entry(s, 1).last_seq == 77


def test_follower__never_deduplicates() -> None:
    """PST-11 (ULT.testDuplicateAppendToFollower). Spec: KL-PROD-8"""
    s = log.empty_log(LogConfig())
    spec = BatchSpec(0, 0, ONE, producer_id=1, producer_epoch=0, base_sequence=0)
    s, _ = log.append_as_follower(s, (spec,))
    s, info = log.append_as_follower(s, (BatchSpec(1, 0, ONE, producer_id=1, producer_epoch=0,
                                                   base_sequence=0),))
    assert (info.first_offset, s.log_end_offset) == (1, 2)


def test_sequence_wrap__zero_follows_int_max_and_one_does_not() -> None:
    """PST-16 (PSMT.testProducerSequenceWrapAround). Spec: KL-PROD-3, KL-PROD-7"""
    s = log.empty_log(LogConfig())
    s, _ = produce(s, 1, 0, INT32_MAX - 1, TWO)
    assert entry(s, 1).last_seq == INT32_MAX
    with pytest.raises(OutOfOrderSequenceError):
        produce(s, 1, 0, 1)
    s, _ = produce(s, 1, 0, 0)
    s2 = log.empty_log(LogConfig())
    s2, _ = produce(s2, 1, 0, INT32_MAX, TWO)  # a batch wrapping internally
    assert entry(s2, 1).batches[0].first_seq == INT32_MAX and entry(s2, 1).last_seq == 0


def test_producer_id_without_sequence__is_invalid_record() -> None:
    """PSE-5. Spec: KL-PROD-2"""
    s = log.empty_log(LogConfig())
    with pytest.raises(InvalidRecordError):
        produce(s, 1, 0, -1)
    with pytest.raises(IllegalArgumentError):
        produce(s, 1, 40000, 0)


def test_expiry__runs_on_the_check_schedule_and_spares_nothing_recent() -> None:
    """PST-22, PST-23. Spec: KL-PROD-9"""
    config = LogConfig(producer_id_expiration_ms=1000, producer_id_expiration_check_interval_ms=100)
    s = log.empty_log(config)
    s, _ = produce(s, 1, 0, 0, (Record(None, b"x", 0),))
    s, _ = log.advance_clock(s, 950)
    assert entry(s, 1)
    s, _ = log.advance_clock(s, 49)  # clock 999: the check at 900 saw age 900
    assert entry(s, 1)
    s, _ = log.advance_clock(s, 1)  # the check at 1000 sees age 1000
    assert s.producer_state.producers == ()
    s, _ = produce(s, 1, 0, 17)  # unknown again: any sequence
    assert entry(s, 1).last_seq == 17


def test_retention__keeps_producers_but_deletes_their_snapshots() -> None:
    """PST-23, PSR-2. Spec: KL-PROD-10, KL-PROD-11"""
    s = log.empty_log(LogConfig(segment_bytes=72))
    for seq in range(3):
        s, _ = produce(s, 1, 0, seq)
    assert log.view(s).producer_snapshots == (1, 2)
    s, _ = log.update_high_watermark(s, 3)
    s, _ = log.maybe_increment_log_start_offset(s, 2)
    assert log.view(s).producer_snapshots == (1, 2)
    s, _ = log.delete_old_segments(s)
    assert log.view(s).producer_snapshots == (2,)
    assert entry(s, 1).last_seq == 2


def test_reload__keeps_only_the_newest_batch_per_producer() -> None:
    """PSF-4, PST-11: after a reload only the last batch is recognised as duplicate.

    Spec: KL-PROD-10, KL-PROD-12
    """
    s = log.empty_log(LogConfig())
    for seq in range(3):
        s, _ = produce(s, 1, 0, seq)
    s, _ = log.close_and_reopen(s)
    assert log.view(s).producer_snapshots == (3,)
    assert [b.last_seq for b in entry(s, 1).batches] == [2]
    s, again = produce(s, 1, 0, 2)
    assert again == (2, 2)
    with pytest.raises(OutOfOrderSequenceError):
        produce(s, 1, 0, 1)


def test_reload__drops_producers_expired_at_load_time() -> None:
    """PSR-4 step 2. Spec: KL-PROD-12"""
    s = log.empty_log(LogConfig(producer_id_expiration_ms=1000,
                                producer_id_expiration_check_interval_ms=10**9))
    s, _ = produce(s, 1, 0, 0, (Record(None, b"x", 0),))
    s, _ = log.advance_clock(s, 5000)
    assert entry(s, 1)  # the periodic check has not run yet
    s, _ = log.close_and_reopen(s)
    assert s.producer_state.producers == ()


def test_truncation__rebuilds_from_snapshot_and_replays() -> None:
    """PSR-10: state at the target is the snapshot's plus replayed batches. Spec: KL-PROD-12"""
    s = log.empty_log(LogConfig(segment_bytes=2 * 72))
    for seq in range(5):
        s, _ = produce(s, 1, 0, seq)
    s, _ = produce(s, 2, 0, 0)
    s, _ = log.truncate_to(s, 3)
    assert [b.last_seq for b in entry(s, 1).batches] == [1, 2]  # snapshot at 2 + batch 2
    assert ps.lookup(s.producer_state.producers, 2) is None
    assert log.view(s).producer_snapshots == (2, 3)


def test_truncate_fully__forgets_producers_and_snapshots() -> None:
    """PSR-11. Spec: KL-PROD-11"""
    s = log.empty_log(LogConfig(segment_bytes=72))
    s, _ = produce(s, 1, 0, 0)
    s, _ = produce(s, 1, 0, 1)
    s, _ = log.truncate_fully_and_start_at(s, 10)
    assert log.view(s).producers == () and log.view(s).producer_snapshots == ()


def test_duplicate__reports_cached_timestamp_as_log_append_time() -> None:
    """PST-10: logAppendTime = the cached batch's timestamp. Spec: KL-PROD-5"""
    s = log.empty_log(LogConfig(message_timestamp_type=TimestampType.LOG_APPEND_TIME), now_ms=5)
    s, _ = produce(s, 1, 0, 0)
    s, _ = log.advance_clock(s, 10)
    s, info = log.append_as_leader(s, ONE, 0, producer_id=1, producer_epoch=0, base_sequence=0)
    assert (info.first_offset, info.log_append_time) == (0, 5)


PRODUCER_CONFIG = LogConfig(segment_bytes=250, segment_index_bytes=48, index_interval_bytes=60,
                            retention_ms=500, file_delete_delay_ms=50,
                            producer_id_expiration_ms=400,
                            producer_id_expiration_check_interval_ms=100)


def _step(data: st.DataObject, s: PartitionState) -> PartitionState:
    """One random action, producer appends weighted up; errors leave the state unchanged."""
    kind = data.draw(st.sampled_from(["leader"] * 4 + ["follower", "roll", "truncate", "reopen",
                                                       "retain", "clock", "start", "fully"]))
    pid = data.draw(st.sampled_from([1, 2, 2**40]))
    epoch, seq = data.draw(st.integers(0, 2)), data.draw(st.sampled_from([0, 1, 2, 3, INT32_MAX]))
    n = data.draw(st.integers(1, 3))
    records = tuple(Record(None, b"v", s.now_ms) for _ in range(n))
    leo = s.log_end_offset
    calls = {
        "leader": lambda: log.append_as_leader(s, records, 0, producer_id=pid,
                                               producer_epoch=epoch, base_sequence=seq),
        "follower": lambda: log.append_as_follower(s, (BatchSpec(
            leo, 0, records, producer_id=pid, producer_epoch=epoch, base_sequence=seq),)),
        "roll": lambda: log.roll(s),
        "truncate": lambda: log.truncate_to(s, data.draw(st.integers(0, leo))),
        "reopen": lambda: log.close_and_reopen(s),
        "retain": lambda: log.delete_old_segments(log.update_high_watermark(s, leo)[0]),
        "clock": lambda: log.advance_clock(s, data.draw(st.integers(0, 600))),
        "start": lambda: log.maybe_increment_log_start_offset(
            s, data.draw(st.integers(0, s.high_watermark.message_offset))),
        "fully": lambda: log.truncate_fully_and_start_at(s, data.draw(st.integers(0, leo))),
    }
    with contextlib.suppress(KafkalogError):
        s, _ = calls[kind]()
    return s


@given(data=st.data())
def test_random_producer_sequences__keep_every_invariant(data: st.DataObject) -> None:
    """Every action keeps producer state well formed (one-step induction, sampled).

    Spec: KL-INV-15, KL-PROD-1
    """
    s = log.empty_log(PRODUCER_CONFIG)
    for _ in range(data.draw(st.integers(1, 30))):
        s = _step(data, s)
        assert check_all(s) == [], check_all(s)


def test_check_all__bad_producer_state__is_named() -> None:
    """The predicate can fail: a cached batch at the LEO. Spec: KL-INV-15"""
    s = log.empty_log(LogConfig())
    s, _ = produce(s, 1, 0, 0)
    assert check_all(s) == []
    bad = pe.ProducerEntry(1, 0, batches=(pe.BatchMetadata(0, 1, 0, 0),))
    broken = replace(s, producer_state=replace(s.producer_state, producers=(bad,)))
    assert check_all(broken) == ["producer_state_well_formed"]


def test_stray_and_out_of_range_snapshots__follow_the_reference_vectors() -> None:
    """PSR-3 and PSR-4 vectors on the model's snapshot set. Spec: KL-PROD-12"""
    state = ps.ProducerState(snapshots=tuple((o, ()) for o in (2, 5, 42)))
    assert [o for o, _ in ps.remove_stray_snapshots(state, [5]).snapshots] == [5, 42]
    assert [o for o, _ in ps.remove_stray_snapshots(state, [42]).snapshots] == [42]
    state = ps.ProducerState(snapshots=tuple((o, ()) for o in (1, 2, 3, 4, 5)),
                             last_map_offset=9)
    reloaded = ps.truncate_and_reload(state, 1, 3, 0, 1000)
    assert [o for o, _ in reloaded.snapshots] == [2, 3] and reloaded.last_map_offset == 3


def test_read__returns_the_stored_producer_fields() -> None:
    """A read shows each batch's producer id, epoch and base sequence. Spec: KL-PROD-2"""
    s = log.empty_log(LogConfig())
    s, _ = produce(s, 7, 2, 40, TWO)
    s, _ = log.append_as_leader(s, ONE, 0)
    s, fetched = log.read(s, 0, 10_000, Isolation.LOG_END, False)
    assert [(b.producer_id, b.producer_epoch, b.base_sequence) for b in fetched.batches] == [
        (7, 2, 40), (-1, -1, -1)]
