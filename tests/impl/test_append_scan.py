"""The single-pass append path (`scan_headers` facts) agrees with the batch-object path (#6)."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafkalog.impl.log.validator import (
    _analyze_clean,
    _analyze_rows,
    analyze_and_validate,
    analyze_batches,
    assign_offsets,
    assign_offsets_scanned,
    py_stamp_headers,
)
from kafkalog.impl.records.batch_scan import (
    compiled_facts_summary,
    compiled_index_decisions,
    compiled_scan_headers,
    compiled_stamp_headers,
)
from kafkalog.impl.records.compression import CompressionType
from kafkalog.impl.records.facts_summary import FactsSummary, py_facts_summary
from kafkalog.impl.records.memory_records import (
    MemoryRecords,
    batch_facts,
    build_batch,
    py_scan_headers,
    scan_headers,
)
from kafkalog.impl.segment.indexing import index_decisions, py_index_decisions
from kafkalog.model.errors import KafkalogError
from kafkalog.model.values import NO_TIMESTAMP, Record, TimestampType

_BATCH = st.tuples(
    st.integers(0, 40),  # base offset
    st.integers(1, 4),  # records
    st.integers(-1, 3),  # partition leader epoch
    st.lists(st.integers(-1, 50), min_size=4, max_size=4),  # record timestamps
)


def _buffer(specs: list[tuple[int, int, int, list[int]]], corrupt: int | None, cut: int) -> bytes:
    out = bytearray()
    for base, count, epoch, stamps in specs:
        records = [Record(None, b"v%d" % i, stamps[i]) for i in range(count)]
        out += build_batch(records, base, epoch, TimestampType.CREATE_TIME, NO_TIMESTAMP,
                           CompressionType.NONE)
    if corrupt is not None and out:
        out[(corrupt * 7919) % len(out)] ^= 0x5A
    return bytes(out[: max(0, len(out) - cut)])


def _outcome(fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        a = fn(*args, **kwargs)
    except KafkalogError as e:
        return (type(e).__name__, str(e))
    except Exception as e:  # noqa: BLE001 - untyped failures must match between paths too
        return ("untyped", type(e).__name__)
    info = a.follower_info() if not kwargs["leader"] else None
    return (a.first_offset, a.last_offset, a.max_timestamp, a.valid_bytes, a.record_count,
            a.monotonic, info)


@settings(max_examples=150, deadline=None)
@given(st.lists(_BATCH, max_size=5), st.one_of(st.none(), st.integers(0, 10_000)),
       st.integers(0, 30), st.booleans(), st.one_of(st.none(), st.integers(-1, 3)),
       st.integers(20, 400))
def test_validation__single_pass__matches_the_batch_object_path(
    specs: list[Any], corrupt: int | None, cut: int, leader: bool, leader_epoch: int | None,
    max_bytes: int,
) -> None:
    """Same errors (type and message) or the same facts, whatever the batches, bytes and tails."""
    records = MemoryRecords(_buffer(specs, corrupt, cut))
    kwargs = dict(leader=leader, max_message_bytes=max_bytes, where="t-0",
                  leader_epoch=leader_epoch)
    assert _outcome(analyze_and_validate, records, **kwargs) == _outcome(
        analyze_batches, records, **kwargs)


@settings(max_examples=60, deadline=None)
@given(st.lists(_BATCH, min_size=1, max_size=5), st.integers(0, 30))
def test_scan_headers__facts__match_batch_headers(specs: list[Any], cut: int) -> None:
    """Every whole batch's facts equal its header fields; a torn tail is left out."""
    records = MemoryRecords(_buffer(specs, None, cut))
    facts = scan_headers(records.buffer)
    assert facts is not None
    assert [f[:7] for f in facts] == [f[:7] for f in batch_facts(records)]
    assert all(f[7] for f in facts)


@settings(max_examples=60, deadline=None)
@given(st.lists(_BATCH, min_size=1, max_size=5), st.integers(0, 1000), st.integers(0, 5),
       st.sampled_from(list(TimestampType)))
def test_assign_offsets__single_pass__stamps_the_same_bytes_and_info(
    specs: list[Any], first: int, epoch: int, ts_type: TimestampType,
) -> None:
    """Stamped bytes, LogAppendInfo and carried facts agree with the batch-object path."""
    raw = _buffer([(0, *rest) for _, *rest in specs], None, 0)
    facts = scan_headers(memoryview(raw))
    assert facts is not None
    slow = MemoryRecords(bytearray(raw))
    slow_info = assign_offsets(slow, first, epoch, ts_type, 99)
    fast, fast_info = assign_offsets_scanned(bytearray(raw), facts, first, epoch, ts_type, 99)
    assert fast.to_bytes() == slow.to_bytes()
    assert fast_info == slow_info
    assert [f[:7] for f in fast.facts] == [f[:7] for f in batch_facts(slow)]


def test_scan_headers__legacy_or_undersized_batch__declines() -> None:
    """A batch that is not plain v2 sends the caller to the batch-object path (None)."""
    raw = bytearray(build_batch([Record(None, b"v", 5)], 0, 0, TimestampType.CREATE_TIME,
                                NO_TIMESTAMP, CompressionType.NONE))
    raw[16] = 1  # magic 1
    assert scan_headers(memoryview(raw)) is None
    small = bytearray(26)
    small[8:12] = (14).to_bytes(4, "big")
    small[16] = 2
    assert scan_headers(memoryview(small)) is None


@pytest.mark.skipif(compiled_scan_headers is None, reason="the C extension records._scan is "
                    "not built here (no compiler at install time): nothing to compare")
@settings(max_examples=200, deadline=None)
@given(st.lists(_BATCH, max_size=5), st.one_of(st.none(), st.integers(0, 10_000)),
       st.integers(0, 30), st.sampled_from([None, 0, 1, 3, 255]), st.binary(max_size=70))
def test_scan_headers__compiled_twin__returns_the_python_facts_on_any_bytes(
    specs: list[Any], corrupt: int | None, cut: int, magic: int | None, tail: bytes,
) -> None:
    """The C pass (impl/records/_scan.c) returns exactly `py_scan_headers`' list (or None) on valid,
    corrupt, cut, re-magicked and garbage-tailed buffers; the append path uses the C one."""
    raw = bytearray(_buffer(specs, corrupt, cut)) + tail
    if magic is not None and len(raw) > 16:
        raw[16] = magic
    view = memoryview(bytes(raw))
    assert compiled_scan_headers(view) == py_scan_headers(view)
    assert scan_headers is compiled_scan_headers


_COMPILED_ONLY = pytest.mark.skipif(
    compiled_stamp_headers is None, reason="the C extension records._scan is not built "
    "here (no compiler at install time): nothing to compare")
_BIG = st.one_of(st.integers(0, 2**40), st.integers(2**63 - 200, 2**63 + 5),
                 st.integers(-(2**63) - 5, -(2**63) + 5))


@_COMPILED_ONLY
@settings(max_examples=200, deadline=None)
@given(st.lists(_BATCH, max_size=6), _BIG, st.one_of(st.integers(-1, 9), _BIG))
def test_stamp_headers__compiled_twin__returns_what_python_does(
    specs: list[Any], first_offset: int, epoch: int,
) -> None:
    """`stamp_headers` (impl/records/_scan_append.c) returns the same 16-byte stamps, facts and
    totals
    as `py_stamp_headers`, or declines (None) where the reference needs integers beyond int64;
    the reference then raises what it always raised."""
    facts = py_scan_headers(memoryview(_buffer(specs, None, 0)))
    assert facts is not None
    got = compiled_stamp_headers(facts, first_offset, epoch)
    try:
        want = py_stamp_headers(facts, first_offset, epoch)
    except (struct.error, OverflowError):
        assert got is None
        return
    if got is None:  # declined: the caller runs the reference
        assert not (0 <= first_offset <= 2**40 and -(2**31) <= epoch < 2**31)
        return
    assert got == want


@_COMPILED_ONLY
@settings(max_examples=200, deadline=None)
@given(st.lists(_BATCH, max_size=6), st.integers(0, 2000), st.integers(0, 300),
       st.integers(0, 400), st.integers(-1, 60), st.integers(-1, 50), _BIG)
def test_index_decisions__compiled_twin__decides_what_python_does(
    specs: list[Any], position: int, interval: int, since: int, max_ts: int, max_off: int,
    shift: int,
) -> None:
    """`index_decisions` in C returns exactly `py_index_decisions`' entries and counters, also
    for base offsets near the int64 limit (where it may decline and the reference decides)."""
    raw = _buffer(specs, None, 0)
    facts = [(p, s, b + shift, d, e, t, r, ok)
             for p, s, b, d, e, t, r, ok in py_scan_headers(memoryview(raw)) or []]
    want = py_index_decisions(facts, position, interval, since, max_ts, max_off)
    got = compiled_index_decisions(facts, position, interval, since, max_ts, max_off)
    assert got is None or got == want
    assert index_decisions(facts, position, interval, since, max_ts, max_off) == want


def _analysis_facts(a: Any) -> tuple[Any, ...]:
    batch = a.max_timestamp_batch
    return (a.first_offset, a.last_offset, a.max_timestamp, a.valid_bytes, a.record_count,
            a.monotonic, a.facts, None if batch is None else batch.position)


@settings(max_examples=200, deadline=None)
@given(st.lists(_BATCH, min_size=1, max_size=6), st.booleans(), st.booleans(),
       st.one_of(st.none(), st.integers(-3, 3)), st.integers(20, 400))
def test_analysis__column_checks__agree_with_the_row_loop_whenever_they_answer(
    specs: list[Any], leader: bool, client_bases: bool, leader_epoch: int | None,
    max_bytes: int,
) -> None:
    """`_analyze_clean` (whole-column checks) answers only when the row loop would raise nothing
    and cut nothing, and then with the same analysis; it answers for plain client appends."""
    if client_bases:  # what clients send: every base offset 0, so the leader's column path runs
        specs = [(0, *rest) for _, *rest in specs]
    buf = memoryview(_buffer(specs, None, 0))
    facts = scan_headers(buf)
    assert facts is not None
    stop_above = leader_epoch if not leader else None
    quick = _analyze_clean(buf, facts, leader, max_bytes, stop_above)
    if quick is not None:
        rows = _analyze_rows(buf, facts, leader, max_bytes, "t-0", stop_above)
        assert _analysis_facts(quick) == _analysis_facts(rows)
    elif leader and client_bases:
        assert max_bytes < max(f[1] for f in facts), "a clean client append took the row loop"


_FACT = st.tuples(st.integers(0, 2**20), st.integers(0, 2**31), _BIG, st.integers(-5, 2**31),
                  st.integers(-(2**31), 2**31 - 1), _BIG, st.integers(0, 2**31), st.booleans())


@settings(max_examples=300, deadline=None)
@given(st.lists(_FACT, max_size=6), st.booleans())
def test_facts_summary__compiled_twin__summarises_what_python_does(
    facts: list[Any], from_batches: bool,
) -> None:
    """`facts_summary` (impl/records/_scan_append.c) returns `py_facts_summary`'s values, or
    declines
    (None) only where a field or a last offset leaves int64; on real scans it always answers."""
    if from_batches:
        found = scan_headers(memoryview(_buffer([(b, 1, e, [t] * 4) for b, _, e, t, *_ in
                                                 [(f[2] % 40, 0, f[4] % 4, f[5] % 50)
                                                  for f in facts]], None, 0)))
        assert found is not None
        facts = found
    want = py_facts_summary(facts)
    if compiled_facts_summary is None:
        return
    got = compiled_facts_summary(facts)
    if got is None:
        assert not facts or any(not -(2**63) <= v < 2**63 for f in facts
                                for v in (*f[:7], f[2] + f[3]))
        return
    assert FactsSummary._make(got) == want
