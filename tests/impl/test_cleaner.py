"""The implementation's cleaner agrees with the model on generated logs: the same pass result,
the same bytes per batch (offsets, records, sizes, positions, horizons), the same checkpoint,
indexes and `.txnindex`es, and the cleaned directory reopens and verifies clean (KL-CLEAN-*)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafkalog.conformance.check.impl_sut import ImplSut
from kafkalog.impl.cleaner.log_cleaner import LogCleaner
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.model import log
from kafkalog.model.choices import outcomes
from kafkalog.model.errors import IllegalArgumentError, InvalidRecordError, KafkalogError
from kafkalog.model.state import PartitionState
from kafkalog.model.values import LogConfig, Record

COMPACT = LogConfig(cleanup_policy="compact", min_cleanable_dirty_ratio=0.0,
                    delete_retention_ms=500, segment_bytes=400, index_interval_bytes=100)


class Pair:
    """The model's state and the implementation behind the same steps."""

    def __init__(self, config: LogConfig) -> None:
        self.model = log.empty_log(config)
        self.impl = ImplSut(config)

    def step(self, action: str, *args: Any) -> None:
        """Run `action` on both; both raise the same error type or neither does."""
        model_error = impl_error = None
        try:
            self.model, _ = getattr(log, action)(self.model, *args)
        except KafkalogError as error:
            model_error = type(error)
        try:
            getattr(self.impl, action)(*args)
        except KafkalogError as error:
            impl_error = type(error)
        assert model_error == impl_error, action

    def put(self, key: int | None, value: bytes | None, pid: int = -1, seq: int = -1,
            transactional: bool = False) -> None:
        k = None if key is None else b"k%d" % key
        record = Record(k, value, self.model.now_ms)
        self.step("append_as_leader", (record,), 0, pid, 0 if pid >= 0 else -1, seq,
                  transactional)

    def seal(self) -> None:
        self.step("roll")
        self.step("update_high_watermark", self.model.log_end_offset)

    def clean(self) -> None:
        before = self.model
        self.model, expected = log.clean(before)
        got = LogCleaner(self.impl.log).clean()
        assert got == expected
        self.compare()

    def compare(self) -> None:
        assert list(impl_contents(self.impl)) == list(model_contents(self.model))
        assert self.impl.state() == log.view(self.model)
        checkpoint = LogCleaner(self.impl.log).checkpoint.read()
        assert checkpoint == self.model.cleaner_checkpoint

    def close(self) -> None:
        self.impl.close()


def model_contents(s: PartitionState) -> Iterator[tuple[object, ...]]:
    for seg in s.segments:
        for b in seg.batches:
            records = tuple((b.record_offset(i), r.key, r.value, b.record_timestamp(i))
                            for i, r in enumerate(b.records))
            yield (seg.base_offset, b.base_offset, b.last_offset, b.position, b.size,
                   b.max_timestamp, b.delete_horizon_ms, records)
        yield (seg.base_offset, "txn", tuple(seg.txn_index))


def impl_contents(sut: ImplSut) -> Iterator[tuple[object, ...]]:
    for seg in sut.log.local_log.segments:
        for b in seg.log.batches(0):
            b.ensure_valid()
            records = tuple((r.offset, r.key, r.value, r.timestamp) for r in b.records())
            horizon = b.base_timestamp if b.has_delete_horizon else None
            yield (seg.base_offset, b.base_offset, b.last_offset, b.position,
                   b.size_in_bytes, b.max_timestamp, horizon, records)
        yield (seg.base_offset, "txn", tuple(seg.txn_index.entries()))


@pytest.fixture
def pair() -> Iterator[Pair]:
    p = Pair(COMPACT)
    yield p
    p.close()


def test_clean__keyed_values_and_tombstones__impl_matches_model(pair: Pair) -> None:
    """Spec: KL-CLEAN-6, KL-CLEAN-8, KL-CLEAN-9, KL-CLEAN-10, KL-CLEAN-11."""
    for i in range(12):
        pair.put(i % 3, None if i == 7 else b"v%d" % i)
    pair.seal()
    pair.clean()
    pair.step("advance_clock", 600)
    pair.put(5, b"x")
    pair.seal()
    pair.clean()


def test_clean__transactions_and_producers__impl_matches_model(pair: Pair) -> None:
    """Spec: KL-CLEAN-6, KL-CLEAN-7."""
    pair.put(1, b"a", pid=7, seq=0, transactional=True)
    pair.put(2, b"b")
    pair.step("append_marker", 7, 0, False, 0, 0)
    pair.put(1, b"c", pid=8, seq=0, transactional=True)
    pair.step("append_marker", 8, 0, True, 0, 0)
    pair.put(2, b"d", pid=9, seq=0)
    pair.seal()
    pair.clean()
    pair.step("advance_clock", 600)
    pair.put(3, b"e")
    pair.seal()
    pair.clean()


def test_clean__cleaned_directory__reopens_and_reads_the_same(pair: Pair) -> None:
    """CLN-57, CLN-58 (phase E): after the swap the load sees only plain segments.
    Spec: KL-CLEAN-10."""
    for i in range(10):
        pair.put(i % 2, b"v%d" % i)
    pair.seal()
    pair.clean()
    pair.step("advance_clock", 70_000)
    pair.impl.close_and_reopen()
    pair.model, _ = log.close_and_reopen(pair.model)
    pair.compare()
    assert pair.impl.verify() == []


def test_append_as_leader__keyless_on_compacted__both_raise_invalid_record(pair: Pair) -> None:
    """Spec: KL-CLEAN-12."""
    with pytest.raises(InvalidRecordError):
        pair.impl.log.append_as_leader(MemoryRecords.with_records((Record(None, b"v", 0),)), 0)
    pair.put(None, b"v")
    pair.compare()


def test_open__bad_cleanup_policy__impl_raises_like_model() -> None:
    """Spec: KL-CLEAN-1."""
    with pytest.raises(IllegalArgumentError):
        ImplSut(replace(COMPACT, cleanup_policy="compact,shred"))
    with pytest.raises(IllegalArgumentError):
        log.empty_log(replace(COMPACT, cleanup_policy="compact,shred"))


STEP = st.one_of(
    st.tuples(st.just("put"), st.integers(0, 3), st.booleans()),
    st.tuples(st.just("pput"), st.integers(0, 3), st.integers(1, 2)),
    st.tuples(st.just("txn"), st.integers(0, 3), st.booleans()),
    st.just(("seal",)),
    st.just(("clean",)),
    st.tuples(st.just("clock"), st.integers(0, 600)),
    st.tuples(st.just("trunc"), st.integers(0, 6)),
    st.just(("retain",)),
)


@settings(max_examples=25)
@given(st.lists(STEP, max_size=25), st.sampled_from(["3.9", "3.9.2", "4.4"]))
def test_clean__random_histories__impl_matches_model(steps: list[tuple[Any, ...]],
                                                     version: str) -> None:
    """Truncations and retention between passes too. Spec: KL-CLEAN-2, KL-CLEAN-4,
    KL-CLEAN-5, KL-CLEAN-6, KL-CLEAN-7, KL-CLEAN-8, KL-CLEAN-13, KL-CLEAN-14."""
    pair = Pair(replace(COMPACT, kafka_version=version))
    seqs: dict[int, int] = {}
    try:
        for step in steps:
            kind = step[0]
            if kind == "put":
                pair.put(step[1], None if step[2] else b"v%d" % pair.model.log_end_offset)
            elif kind == "pput":
                pid = step[2]
                pair.put(step[1], b"p", pid=pid, seq=seqs.get(pid, 0))
                seqs[pid] = seqs.get(pid, 0) + 1
            elif kind == "txn":
                pair.put(step[1], b"t", pid=9, seq=seqs.get(9, 0), transactional=True)
                seqs[9] = seqs.get(9, 0) + 1
                pair.step("append_marker", 9, 0, bool(step[2]), 0, 0)
            elif kind == "seal":
                pair.seal()
            elif kind == "clock":
                pair.step("advance_clock", step[1])
            elif kind == "trunc":
                pair.step("truncate_to", max(0, pair.model.log_end_offset - step[1]))
                pair.compare()
            elif kind == "retain":
                pair.step("delete_old_segments")
                pair.compare()
            else:
                pair.clean()
    finally:
        pair.close()


@pytest.mark.parametrize("capacity", [1, 2, 3, 5])
def test_clean__bounded_offset_map__is_one_of_the_models_allowed_outcomes(capacity: int) -> None:
    """A map of `capacity` entries ends the pass early (CLN-26, CLN-28); the result and state
    are among the model's outcomes. Spec: KL-ALLOW-7, KL-CLEAN-4."""
    pair = Pair(COMPACT)
    try:
        for i in range(12):
            pair.put(i % 4, b"v%d" % i)
        pair.seal()
        got = LogCleaner(pair.impl.log, map_capacity=capacity).clean()
        matches = [o for o in outcomes(log.clean, pair.model)
                   if o.value[1] == got and log.view(o.value[0]) == pair.impl.state()]
        assert len(matches) == 1, got
        assert got is not None and (got.end_offset < 12) is (capacity < 4)
        pair.model = matches[0].value[0]
        pair.compare()
    finally:
        pair.close()
