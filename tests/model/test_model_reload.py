"""close_and_reopen: a clean shutdown and load keeps the log (FMT-44, REC-*, LOG-3, LOG-4)."""

from __future__ import annotations

from kafkalog.model import log
from kafkalog.model.state import PartitionState
from kafkalog.model.values import BatchSpec, EpochEntry, LogConfig, Record


def rec(ts: int = 0) -> Record:
    return Record(None, b"test", ts)


def busy_log() -> PartitionState:
    s = log.empty_log(LogConfig(segment_bytes=144, index_interval_bytes=0))
    for i in range(5):
        s, _ = log.append_as_leader(s, (rec(100 + i),), i // 2)
    s, _ = log.update_high_watermark(s, 4)
    return s


def test_close_and_reopen__preserves_data_offsets_and_epochs() -> None:
    """Spec: KL-RELOAD-1, KL-RELOAD-2, KL-RELOAD-3, KL-RELOAD-4, KL-RELOAD-5"""
    s = busy_log()
    before = log.view(s)
    s, _ = log.advance_clock(s, 1000)
    s2, _ = log.close_and_reopen(s)
    after = log.view(s2)
    def layout(view: object) -> list[tuple[int, int, int]]:  # the clean close adds index entries
        return [(g.base_offset, g.size_in_bytes, g.next_offset) for g in view.segments]  # type: ignore[attr-defined]

    assert layout(after) == layout(before) and after.epoch_entries == before.epoch_entries
    assert (after.log_start_offset, after.high_watermark, after.log_end_offset) == (0, 4, 5)
    assert after.recovery_point == 5
    assert all(seg.created_ms == 1000 for seg in s2.segments)
    assert [seg.last_modified_ms for seg in s2.segments] == [0, 0, 0]
    assert [seg.batches for seg in s2.segments] == [seg.batches for seg in s.segments]


def test_close_and_reopen__active_index_full_capacity_others_trimmed() -> None:
    """SEG-17 and REC-12. Spec: KL-RELOAD-1, KL-RELOAD-3"""
    s2, _ = log.close_and_reopen(busy_log())
    first, last = s2.segments[0], s2.segments[-1]
    assert first.offset_index_max_entries == len(first.offset_index)
    assert first.time_index == ((101, 1),)
    assert last.offset_index_max_entries == 10 * 1024 * 1024 // 8


def test_close_and_reopen__drops_pending_deletions() -> None:
    """REC-2 removes `.deleted` files. Spec: KL-RELOAD-3, KL-DEL-1"""
    s, _ = log.maybe_increment_log_start_offset(busy_log(), 2)
    s, _ = log.delete_old_segments(s)
    assert s.deleted_files == (0,)
    s2, _ = log.close_and_reopen(s)
    assert s2.deleted_files == () and s2.deletion_timers == ()
    assert s2.log_start_offset == 2


def test_close_and_reopen__lso_inside_first_segment__survives_via_checkpoint() -> None:
    """FMT-40: written only when above the first base. Spec: KL-RELOAD-2, KL-RELOAD-4"""
    s, _ = log.maybe_increment_log_start_offset(busy_log(), 1)
    s2, _ = log.close_and_reopen(s)
    assert s2.log_start_offset == 1
    assert s2.epochs == (EpochEntry(0, 1), EpochEntry(1, 2), EpochEntry(2, 4))


def test_close_and_reopen__roll_above_leo__leo_becomes_the_active_base() -> None:
    """REC-8: LEO = the last segment's readNextOffset. Spec: KL-RELOAD-3, KL-RELOAD-5"""
    s, _ = log.roll(busy_log(), 9)
    s2, _ = log.close_and_reopen(s)
    assert s2.log_end_offset == 9 and s2.high_watermark.message_offset == 4


def test_close_and_reopen__truncated_into_a_gap__leo_drops_to_the_data() -> None:
    """LOG-42 caveat made visible by the reload. Spec: KL-RELOAD-3, KL-TRUNC-2"""
    s = log.empty_log(LogConfig())
    s, _ = log.append_as_follower(s, (BatchSpec(0, 0, (rec(), rec())), BatchSpec(5, 0, (rec(),))))
    s, _ = log.truncate_to(s, 4)
    assert s.log_end_offset == 4
    s2, _ = log.close_and_reopen(s)
    assert s2.log_end_offset == 2


def test_close_and_reopen__data_below_checkpointed_lso__restarts_empty_at_the_lso() -> None:
    """REC-9 (KAFKA-8306). Spec: KL-RELOAD-3, KL-RELOAD-4"""
    s = log.empty_log(LogConfig())
    s, _ = log.append_as_follower(s, (BatchSpec(0, 3, (rec(), rec())), BatchSpec(5, 3, (rec(),))))
    s, _ = log.update_high_watermark(s, 6)
    s, _ = log.maybe_increment_log_start_offset(s, 4)
    s, _ = log.truncate_to(s, 4)
    s2, _ = log.close_and_reopen(s)
    v = log.view(s2)
    assert [seg.base_offset for seg in v.segments] == [4]
    assert (v.log_start_offset, v.log_end_offset, v.high_watermark) == (4, 4, 4)
    assert v.epoch_entries == ()
