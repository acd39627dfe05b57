"""KL-ALLOW-10: a torn power loss may mix two batches' headers at one position (kafka mode).

The main job's seed 102582 (tests/regressions/kafka_mode/KL-ALLOW-10-*): a leader batch at
offset 2 (epoch 2) is synced, `truncate_to(2)` cuts it without an fsync (GAP-1), a follower
appends the same record at offset 3 (epoch 4) at the same position, and a torn power loss zeroes
the header bytes that differ: a CRC-valid batch at offset 0 under segment base 2, which fails
Kafka's load (and kafkalog's) with an offset overflow.
"""

from __future__ import annotations

from typing import Any

from kafkalog.model import log
from kafkalog.model.crash import crash
from kafkalog.model.crash.crash import CrashMode, FaultModel, LoadFailure
from kafkalog.model.crash.torn import PAGE, torn_header_layouts, torn_pairs
from kafkalog.model.errors import LogSegmentOffsetOverflowError
from kafkalog.model.recovery import rebuilt_segment
from kafkalog.model.state import Batch
from kafkalog.model.values import BatchSpec, LogConfig, Record

CONFIG = LogConfig(segment_bytes=65536, index_interval_bytes=4096, segment_index_bytes=10240)
TEST = Record(None, b"test", 1700000000000)


def _reappended(mode: CrashMode) -> tuple[Any, crash.Durable]:
    """Seed 102582's shape: a leader batch at offset 1 (epoch 2) synced as segment 1's first,
    cut without an fsync, then the same record appended by a follower at offset 2 (epoch 4)."""
    state = log.empty_log(CONFIG, now_ms=1700000000000)
    durable = crash.initial_durable(state)

    def do(action: str, *args: Any) -> None:
        nonlocal state, durable
        before = state
        state, _ = getattr(log, action)(state, *args)
        durable = crash.observe(durable, action, before, state, mode)

    do("append_as_leader", (Record(None, b"x" * 100, 1700000000000),), 0)
    do("roll", None)
    do("append_as_leader", (TEST,), 2)
    do("close_and_reopen")
    do("truncate_to", state.segments[-1].base_offset)
    do("append_as_follower", (BatchSpec(state.log_end_offset + 1, 4, (TEST,)),))
    return state, durable


def _failures(outcomes: tuple[Any, ...]) -> set[str]:
    return {o.code for o in outcomes if isinstance(o, LoadFailure)}


def test_torn_header__zeroed_offset_below_the_base__kafka_set_holds_the_failed_load() -> None:
    """Kafka mode, torn power loss: the set holds the overflow failure; a plain power loss and
    strict mode do not (the strict cut is durable). Spec: KL-ALLOW-10, KL-CRASH-13"""
    state, durable = _reappended(CrashMode.KAFKA)
    torn = crash.crash_states(state, durable, FaultModel.POWER_LOSS_TORN, CrashMode.KAFKA)
    assert "LogSegmentOffsetOverflowError" in _failures(torn)
    plain = crash.crash_states(state, durable, FaultModel.POWER_LOSS, CrashMode.KAFKA)
    assert "LogSegmentOffsetOverflowError" not in _failures(plain)
    strict_state, strict_durable = _reappended(CrashMode.STRICT)
    strict = crash.crash_states(strict_state, strict_durable, FaultModel.POWER_LOSS_TORN)
    assert not _failures(strict)


def test_torn_pairs__same_content_other_header__paired_once() -> None:
    """The synced batch 1 and the re-appended batch 2 pair up at position 0 of segment 1; the
    batches only one layout holds do not. Spec: KL-ALLOW-10"""
    state, durable = _reappended(CrashMode.KAFKA)
    pairs = torn_pairs((state.segments, *durable.layouts))
    assert [(base, {a.base_offset, b.base_offset}) for base, a, b in pairs] == [(1, {1, 2})]


def _batch(offset: int, epoch: int, position: int) -> Batch:
    return Batch(base_offset=offset, last_offset=offset, partition_leader_epoch=epoch,
                 max_timestamp=1, size=72, position=position, records=(TEST,))


def test_torn_header__header_in_one_page__only_the_zeroed_mix_is_new() -> None:
    """One page holds both fields: old, new or zeroed together; old and new are the two
    batches themselves, so the zeroed header is the one layout added. Spec: KL-ALLOW-10"""
    state, durable = _reappended(CrashMode.KAFKA)
    layouts = [state.segments]
    added = torn_header_layouts(layouts, (state.segments, *durable.layouts))
    headers = {(b.base_offset, b.partition_leader_epoch) for layout in added
               for b in layout[-1].batches}
    assert headers == {(0, 0)}


def test_torn_header__fields_across_a_page_boundary__each_page_chosen_alone() -> None:
    """A batch at 4,089 has its base offset across two pages (its last byte in the second) and
    its epoch in the second: each page is old, new or zeroed alone. Spec: KL-ALLOW-10"""
    from kafkalog.model.crash.torn import _mixed_headers

    old, new = _batch(0x0102, 3, PAGE - 7), _batch(0x0201, 5, PAGE - 7)
    headers = set(_mixed_headers(old, new))
    assert (0x0101, 5) in headers  # first page old, second page new
    assert (0x0202, 3) in headers  # first page new, second page old
    assert (0x0000, 0) in headers  # both zeroed where they differ (whole bytes)
    assert (0x0100, 0) in headers  # first page old, second page zeroed
    assert len(headers) == 3 * 3 - 2  # every page choice but the two batches themselves
    assert (0x0102, 3) not in headers and (0x0201, 5) not in headers


def test_rebuilt_segment__batch_below_the_base__the_load_fails() -> None:
    """Kafka's recover checks each batch's range before indexing it (SEG-2, LOC-15): a batch
    under the base raises the overflow, it does not empty the segment. Spec: KL-ALLOW-10"""
    state, _ = _reappended(CrashMode.KAFKA)
    segment = state.segments[-1]
    torn = segment.batches[0]
    below = type(torn)(**{**torn.__dict__, "base_offset": 0, "last_offset": 0})
    broken = type(segment)(**{**segment.__dict__, "batches": (below,)})
    try:
        rebuilt_segment(broken, CONFIG, 0, 0)
    except LogSegmentOffsetOverflowError as error:
        assert "offset 0" in str(error)
    else:
        raise AssertionError("a batch below the base loaded")


def test_garbage_headers__clues_imply_a_random_byte__agreeing_bytes_kept() -> None:
    """A garbage page replaces only the bytes where the two headers differ (FLT-10): offsets
    0x0A and 0x0B differ in their last byte, so a recovered log ending at 0x11 (a batch at 0x10)
    is a header the set holds with that clue; one at 0x1010 changes a byte the two share, and an
    epoch in the clues that differs where epochs 3 and 3 agree is refused. Spec: KL-ALLOW-10"""
    from kafkalog.model.crash.torn import TornClues, _garbage_headers

    old, new = _batch(0x0A, 3, 0), _batch(0x0B, 3, 0)
    clues = TornClues(ends=frozenset({0x11, 0x1011}), epochs=frozenset({3, 7}))
    assert set(_garbage_headers(old, new, clues)) == {(0x10, 3)}
    assert set(_garbage_headers(old, new, TornClues())) == set()


def test_torn_header_layouts__garbage_clue__one_more_layout_only_with_clues() -> None:
    """The seed-102582 pair (offsets 1 and 2, epochs 2 and 4): a clue of a log ending at 4
    gives the header (3, 2) (offset byte 0x03 where 0x01 and 0x02 differ, the old epoch),
    which no old, new or zeroed page gives; without clues the set does not hold it.
    Spec: KL-ALLOW-10"""
    from kafkalog.model.crash.torn import TornClues

    state, durable = _reappended(CrashMode.KAFKA)
    sources = (state.segments, *durable.layouts)

    def headers(clues: TornClues | None) -> set[tuple[int, int]]:
        return {(b.base_offset, b.partition_leader_epoch)
                for layout in torn_header_layouts([state.segments], sources, clues)
                for b in layout[-1].batches}

    clue = TornClues(ends=frozenset({4}), epochs=frozenset({2}))
    assert (3, 2) in headers(clue)
    assert (3, 2) not in headers(None)
    assert headers(TornClues()) == headers(None)
