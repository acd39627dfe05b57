"""Log compaction in the model: selection, the record rules, tombstones, transactions, producer
state, the checkpoint and the pass invariants (specs/log.md §13c, KL-CLEAN-*)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafkalog.model import log
from kafkalog.model.choices import outcomes
from kafkalog.model.cleaner.cleaner import select
from kafkalog.model.cleaner.offsets import policy_flags
from kafkalog.model.errors import IllegalArgumentError, InvalidRecordError, KafkalogError
from kafkalog.model.invariants import check_all, check_clean, visible_records
from kafkalog.model.state import PartitionState
from kafkalog.model.values import BatchSpec, Isolation, LogConfig, Record

COMPACT = LogConfig(cleanup_policy="compact", min_cleanable_dirty_ratio=0.0)


def put(s: PartitionState, key: int | None, value: bytes | None, pid: int = -1, seq: int = -1,
        transactional: bool = False) -> PartitionState:
    k = None if key is None else b"k%d" % key
    s, _ = log.append_as_leader(s, (Record(k, value, s.now_ms),), 0, pid, 0 if pid >= 0 else -1,
                                seq, transactional)
    return s


def seal(s: PartitionState) -> PartitionState:
    """Roll and move the HW to the LEO, so everything written so far is cleanable."""
    s, _ = log.roll(s)
    s, _ = log.update_high_watermark(s, s.log_end_offset)
    return s


def clean(s: PartitionState) -> PartitionState:
    """One pass (kafkalog's choices), checked against every invariant."""
    after, result = log.clean(s)
    assert result is not None
    assert check_all(after) == []
    assert check_clean(s, after, result.first_uncleanable_offset) == []
    return after


def survivors(s: PartitionState) -> list[tuple[int, bytes | None, bytes | None]]:
    return visible_records(s)


def batch_ranges(s: PartitionState) -> list[tuple[int, int]]:
    return [(b.base_offset, b.last_offset) for seg in s.segments for b in seg.batches]


def test_policy_flags__words__parse_compact_and_delete() -> None:
    """Spec: KL-CLEAN-1."""
    assert policy_flags("delete") == (False, True)
    assert policy_flags("compact,delete") == (True, True)
    assert policy_flags("") == (False, False)
    assert policy_flags("compact,compact") is None
    assert policy_flags("archive") is None


@pytest.mark.parametrize("config", [
    LogConfig(cleanup_policy="shred"),
    LogConfig(min_compaction_lag_ms=10, max_compaction_lag_ms=5),
    LogConfig(min_cleanable_dirty_ratio=1.5),
    LogConfig(delete_retention_ms=-1),
])
def test_empty_log__bad_compaction_config__raises_illegal_argument(config: LogConfig) -> None:
    """Spec: KL-CLEAN-1 (CLN-3)."""
    with pytest.raises(IllegalArgumentError):
        log.empty_log(config)


def test_append_as_leader__keyless_record_on_compacted_log__raises_invalid_record() -> None:
    """Spec: KL-CLEAN-12 (CLN-9, BUG-C33)."""
    s = log.empty_log(COMPACT)
    with pytest.raises(InvalidRecordError):
        put(s, None, b"v")
    follower, _ = log.append_as_follower(s, (BatchSpec(0, 0, (Record(None, b"v", 1),)),))
    assert follower.log_end_offset == 1


def test_clean__delete_policy__does_nothing() -> None:
    """Spec: KL-CLEAN-1, KL-CLEAN-11."""
    s = seal(put(log.empty_log(LogConfig()), 1, b"a"))
    assert log.clean(s) == (s, None)


def test_clean__duplicate_keys__keeps_newest_per_key_and_every_offset() -> None:
    """CLN-32 vector (`testDuplicateCheckAfterCleaning`). Spec: KL-CLEAN-6, KL-CLEAN-9."""
    s = log.empty_log(COMPACT)
    for pid, keys in ((1, (1, 2, 3)), (2, (3, 1, 4)), (3, (1, 4))):
        records = tuple(Record(b"k%d" % k, b"v", 0) for k in keys)
        s, _ = log.append_as_leader(s, records, 0, pid, 0, 0)
    s = clean(seal(s))
    assert [(o, k) for o, k, _ in survivors(s)] == [(1, b"k2"), (3, b"k3"), (6, b"k1"),
                                                   (7, b"k4")]
    assert [last for _, last in batch_ranges(s)] == [2, 5, 7]
    assert s.cleaner_checkpoint == 8


def test_clean__second_pass__removes_superseded_clean_records() -> None:
    """Spec: KL-CLEAN-4, KL-CLEAN-11 (CLN-32)."""
    s = log.empty_log(COMPACT)
    for i in range(6):
        s = put(s, i % 2, b"a%d" % i)
    s = clean(seal(s))
    s = clean(seal(put(s, 0, b"new")))
    assert [(o, k, v) for o, k, v in survivors(s)] == [(5, b"k1", b"a5"), (6, b"k0", b"new")]


def test_clean__tombstone__kept_until_horizon_then_removed() -> None:
    """CLN-33 (KIP-534, BUG-C12). Spec: KL-CLEAN-8."""
    s = log.empty_log(replace(COMPACT, delete_retention_ms=1000))
    s = put(put(s, 1, b"a"), 1, None)
    s = clean(seal(s))
    tomb = [b for seg in s.segments for b in seg.batches if b.records]
    assert [b.delete_horizon_ms for b in tomb] == [1000]
    s, _ = log.advance_clock(s, 999)
    s = clean(seal(put(s, 2, b"x")))
    assert (1, b"k1", None) in survivors(s)
    s, _ = log.advance_clock(s, 1)
    s = clean(seal(put(s, 3, b"y")))
    assert all(k != b"k1" for _, k, _ in survivors(s))


def test_clean__aborted_transaction__data_removed_marker_outlives_it_by_a_pass() -> None:
    """CLN-37..CLN-39, CLN-40. Spec: KL-CLEAN-7."""
    s = log.empty_log(replace(COMPACT, delete_retention_ms=0))
    s = put(s, 1, b"aborted", pid=7, seq=0, transactional=True)
    s, _ = log.append_marker(s, 7, 0, False, 0, 0)
    s = put(s, 2, b"plain")
    s = seal(s)
    s = clean(s)
    assert [k for _, k, _ in survivors(s)] == [b"k2"]
    markers = [b for seg in s.segments for b in seg.batches if b.is_control and b.records]
    # The producer's last data batch stays as an empty batch (CLN-41), so the ABORT stays
    # indexed while that (empty) aborted data remains (CLN-44).
    assert len(markers) == 1
    s = clean(seal(put(s, 3, b"z")))
    assert check_all(s) == []
    reads = log.read(s, 0, 10_000, Isolation.TXN_COMMITTED, True)[1]
    assert all(r.value != b"aborted" for b in reads.batches for r in b.records)


def test_clean__active_producer_last_batch__kept_empty() -> None:
    """CLN-41 vector (`testLogCleanerRetainsProducerLastSequence`). Spec: KL-CLEAN-6."""
    s = log.empty_log(COMPACT)
    s = put(s, 0, b"a")
    s = put(s, 0, b"b", pid=1, seq=0)
    s = put(s, 0, b"c", pid=2, seq=0)
    s = put(s, 0, b"d", pid=3, seq=0)
    s = put(s, 1, b"e", pid=2, seq=1)
    s = clean(seal(s))
    assert [last for _, last in batch_ranges(s)] == [1, 3, 4]
    assert [o for o, _, _ in survivors(s)] == [3, 4]


def test_clean__active_producer_state__survives_reload() -> None:
    """CLN-63: a reload after cleaning keeps each producer's epoch and last sequence."""
    s = log.empty_log(COMPACT)
    for seq in range(3):
        s = put(s, 0, b"v%d" % seq, pid=5, seq=seq)
    s = put(s, 0, b"last")
    before = log.view(s).producers
    s = clean(seal(s))
    s, _ = log.close_and_reopen(s)
    after = log.view(s).producers
    assert before is not None and after is not None
    assert [(p.producer_id, p.producer_epoch, p.batches[-1].last_seq) for p in after] == [
        (p.producer_id, p.producer_epoch, p.batches[-1].last_seq) for p in before]


def test_select__checkpoint_above_leo__resets_to_log_start_at_once() -> None:
    """BUG-C10 (CLN-15). Spec: KL-CLEAN-2."""
    s = replace(seal(put(log.empty_log(COMPACT), 1, b"a")), cleaner_checkpoint=99)
    after, dirty = select(s)
    assert dirty.first_dirty == 0 and after.cleaner_checkpoint == 0


def test_select__open_transaction__bounds_the_dirty_range() -> None:
    """CLN-16 vector (`testUndecidedTransactionalDataNotCleanable`). Spec: KL-CLEAN-2."""
    s = log.empty_log(COMPACT)
    s = put(s, 1, b"a", pid=3, seq=0, transactional=True)
    s = seal(s)
    _, dirty = select(s)
    assert (dirty.first_uncleanable, dirty.eligible) == (0, False)
    s, _ = log.append_marker(s, 3, 0, False, 0, 0)
    s = seal(s)
    _, dirty = select(s)
    assert dirty.first_uncleanable == 2 and dirty.eligible


def test_select__min_compaction_lag__keeps_young_segments_dirty() -> None:
    """CLN-16 third bound. Spec: KL-CLEAN-2."""
    s = log.empty_log(replace(COMPACT, min_compaction_lag_ms=100))
    s = seal(put(s, 1, b"a"))
    assert select(s)[1].eligible is False
    s, _ = log.advance_clock(s, 101)
    assert select(s)[1].eligible is True


def test_select__max_compaction_lag__forces_below_the_ratio() -> None:
    """CLN-18, CLN-19. Spec: KL-CLEAN-3."""
    config = replace(COMPACT, min_cleanable_dirty_ratio=0.99, max_compaction_lag_ms=50)
    s = log.empty_log(config, now_ms=10)
    s = seal(put(put(s, 1, b"a"), 2, b"b"))
    s = clean(s)
    s = seal(put(s, 1, b"c"))
    assert select(s)[1].eligible is False
    s, _ = log.advance_clock(s, 100)
    assert select(s)[1].eligible is True


def test_clean__groups__merge_within_segment_bytes_and_keep_first_base() -> None:
    """CLN-29, CLN-47, CLN-55. Spec: KL-CLEAN-5, KL-CLEAN-10."""
    s = log.empty_log(COMPACT)
    for i in range(4):
        s = seal(put(s, 0, b"v%d" % i))
    s = clean(s)
    assert [seg.base_offset for seg in s.segments] == [0, 4]
    assert [seg.base_offset for seg in s.segments[:1]] == [0]
    assert s.deleted_files == (0, 1, 2, 3)


def test_clean__map_capacity_choices__every_outcome_keeps_the_invariants() -> None:
    """CLN-85. Spec: KL-ALLOW-7, KL-CLEAN-4."""
    s = log.empty_log(COMPACT)
    for i in range(8):
        s = put(s, i % 4, b"v%d" % i)
    s = seal(s)
    ends = []
    for outcome in outcomes(log.clean, s):
        after, result = outcome.value
        ends.append(result.end_offset)
        assert check_all(after) == []
        assert check_clean(s, after, result.first_uncleanable_offset) == []
        assert after.cleaner_checkpoint == result.end_offset
    assert ends == [8, 1, 2, 3, 4]


def test_truncate_to__below_active_base__lowers_checkpoint() -> None:
    """CLN-68, BUG-C11. Spec: KL-CLEAN-13."""
    s = log.empty_log(COMPACT)
    for i in range(4):
        s = seal(put(s, i, b"v"))
    s = clean(s)
    assert s.cleaner_checkpoint == 4
    s, _ = log.truncate_to(s, 2)
    assert s.cleaner_checkpoint == s.active.base_offset <= 2


def test_delete_old_segments__compact_only__runs_only_start_offset_retention() -> None:
    """LOG-32, CLN-20 (KAFKA-7400, BUG-C25). Spec: KL-CLEAN-14."""
    config = replace(COMPACT, retention_ms=1)
    s = log.empty_log(config)
    s = seal(put(s, 1, b"a"))
    s, _ = log.advance_clock(s, 100)
    assert log.delete_old_segments(s)[1] == 0
    both = replace(s, config=replace(config, cleanup_policy="compact,delete"))
    assert log.delete_old_segments(both)[1] == 1


STEP = st.one_of(
    st.tuples(st.just("put"), st.integers(0, 3), st.booleans()),
    st.tuples(st.just("pput"), st.integers(0, 3), st.integers(1, 2)),
    st.tuples(st.just("txn"), st.integers(0, 3), st.booleans()),
    st.just(("seal",)),
    st.just(("clean",)),
    st.tuples(st.just("clock"), st.integers(0, 600)),
)


@given(st.lists(STEP, max_size=30), st.sampled_from(["3.9", "3.9.2", "4.4"]))
def test_clean__random_histories__every_outcome_keeps_every_invariant(
        steps: list[tuple[object, ...]], version: str) -> None:
    """Keyed values, tombstones, idempotent producers and aborted or committed transactions;
    every pass over all its allowed outcomes keeps KL-INV-1..22. Spec: KL-CLEAN-6, KL-CLEAN-7,
    KL-CLEAN-8, KL-CLEAN-11, KL-ALLOW-7."""
    config = replace(COMPACT, delete_retention_ms=500, segment_bytes=400, kafka_version=version)
    s = log.empty_log(config)
    seqs: dict[int, int] = {}
    for step in steps:
        kind = step[0]
        try:
            if kind == "put":
                s = put(s, int(step[1]), None if step[2] else b"v%d" % s.log_end_offset)  # type: ignore[arg-type]
            elif kind == "pput":
                pid = int(step[2])  # type: ignore[arg-type]
                s = put(s, int(step[1]), b"p", pid=pid, seq=seqs.get(pid, 0))  # type: ignore[arg-type]
                seqs[pid] = seqs.get(pid, 0) + 1
            elif kind == "txn":
                s = put(s, int(step[1]), b"t", pid=9, seq=seqs.get(9, 0), transactional=True)  # type: ignore[arg-type]
                seqs[9] = seqs.get(9, 0) + 1
                s, _ = log.append_marker(s, 9, 0, bool(step[2]), 0, 0)
            elif kind == "seal":
                s = seal(s)
            elif kind == "clock":
                s, _ = log.advance_clock(s, int(step[1]))  # type: ignore[arg-type]
            else:
                for outcome in outcomes(log.clean, s, limit=8):
                    after, result = outcome.value
                    assert check_all(after) == [], outcome.choices
                    if result is not None:
                        assert check_clean(s, after, result.first_uncleanable_offset) == []
                s = log.clean(s)[0]
        except KafkalogError:
            continue
        assert check_all(s) == []


def test_fetch_offset_by_timestamp__max_in_an_emptied_batch__answers_none() -> None:
    """CLN-43 keeps an emptied batch's max timestamp; KAFKA-16310's search takes the first
    batch carrying it and finds no record there. Spec: KL-TIME-3, KL-CLEAN-9."""
    s = log.empty_log(replace(COMPACT, delete_retention_ms=2_000), now_ms=1_000)
    s, _ = log.append_marker(s, 2**63 - 1, 1, True, 0, 0)
    s = clean(seal(s))
    s, _ = log.append_marker(s, 1, 0, True, 0, 0)
    s, _ = log.advance_clock(s, 5_001)
    s = clean(seal(s))
    first = s.segments[0].batches[0]
    assert (first.records, first.max_timestamp) == ((), 1_000)
    assert log.fetch_offset_by_timestamp(s, -3)[1] is None


def test_clean__log_start_above_the_checkpoint__resets_and_keeps_invariants() -> None:
    """CLN-15 (BUG-C10): a checkpoint below the log start offset resets to it; the uncleaned
    duplicates below the log start offset are out of KL-INV-19's range. Spec: KL-CLEAN-2."""
    s = log.empty_log(COMPACT)
    s = clean(seal(put(s, 0, b"a")))
    for i in range(4):
        s = put(s, 0, b"v%d" % i)
    s = seal(s)
    s, _ = log.maybe_increment_log_start_offset(s, s.log_end_offset)
    s, result = log.clean(s)
    assert result is None and s.cleaner_checkpoint == s.log_start_offset
    assert check_all(s) == []
