"""The empty log, config validation, the observable view, flush and epoch durability."""

from __future__ import annotations

import pytest
from kafkalog.model import log
from kafkalog.model.errors import IllegalArgumentError
from kafkalog.model.values import (
    EpochEndOffset,
    EpochEntry,
    LogConfig,
    LogOffsetMetadata,
    LogStateView,
    Record,
    SegmentView,
)


def test_empty_log__one_empty_segment_and_all_offsets_at_the_start() -> None:
    """Spec: KL-STATE-1"""
    s = log.empty_log(LogConfig(), now_ms=42, log_start_offset=7)
    assert log.view(s) == LogStateView(7, 7, 7, 7, (SegmentView(7, 0, 7, (), ()),), (), (),
                                      producers=(), producer_snapshots=(7,),
                                      last_stable_offset=7, aborted_txns=(),
                                      producer_snapshot_tables=((),))
    assert s.high_watermark == LogOffsetMetadata(7)
    assert (s.active.created_ms, s.now_ms) == (42, 42)


@pytest.mark.parametrize(
    "config",
    [LogConfig(segment_bytes=13), LogConfig(segment_index_bytes=11), LogConfig(segment_ms=0),
     LogConfig(retention_ms=-2), LogConfig(segment_jitter_ms=-1),
     LogConfig(file_delete_delay_ms=-1), LogConfig(index_interval_bytes=-1)],
)
def test_empty_log__invalid_config__raises_illegal_argument(config: LogConfig) -> None:
    """Spec: KL-STATE-2"""
    with pytest.raises(IllegalArgumentError):
        log.empty_log(config)


def test_empty_log__negative_start__raises_illegal_argument() -> None:
    """Spec: KL-STATE-2"""
    with pytest.raises(IllegalArgumentError):
        log.empty_log(LogConfig(), log_start_offset=-1)


def test_view__reports_segments_epochs_and_pending_deletions() -> None:
    """Spec: KL-STATE-3"""
    s = log.empty_log(LogConfig(segment_bytes=72))
    for _ in range(3):
        s, _ = log.append_as_leader(s, (Record(None, b"test", 0),), 2)
    s, _ = log.update_high_watermark(s, 3)
    s, _ = log.maybe_increment_log_start_offset(s, 1)
    s, _ = log.delete_old_segments(s)
    assert log.view(s) == LogStateView(
        1, 3, 3, 2,
        # index entries too: the rolled segment's time index ends with its max timestamp
        (SegmentView(1, 72, 2, (), ((0, 1),)), SegmentView(2, 72, 3, (), ())),
        (EpochEntry(2, 1),), (0,),
        producers=(), producer_snapshots=(1, 2), last_stable_offset=3, aborted_txns=(),
        producer_snapshot_tables=((), ()),
    )


def test_flush__none_flushes_to_leo_and_lower_offsets_change_nothing() -> None:
    """LOG-26. Spec: KL-FLUSH-2, KL-FLUSH-1"""
    s = log.empty_log(LogConfig())
    s, _ = log.append_as_leader(s, (Record(None, b"a", 0), Record(None, b"b", 0)), 0)
    s, rp = log.flush(s, 1)
    assert rp == 1
    s, rp = log.flush(s, 0)
    assert rp == 1
    s, rp = log.flush(s)
    assert rp == 2


@pytest.mark.parametrize("offset", [-1, 3])
def test_flush__outside_zero_and_leo__raises_illegal_argument(offset: int) -> None:
    """Spec: KL-FLUSH-2"""
    s = log.empty_log(LogConfig())
    s, _ = log.append_as_leader(s, (Record(None, b"a", 0), Record(None, b"b", 0)), 0)
    with pytest.raises(IllegalArgumentError):
        log.flush(s, offset)


def test_epoch_truncation__survives_a_reload_because_it_is_written_synchronously() -> None:
    """EPO-10: kafkalog writes truncations at once. Spec: KL-EPOCH-6"""
    s = log.empty_log(LogConfig())
    s, _ = log.append_as_leader(s, (Record(None, b"a", 0),), 1)
    s, _ = log.append_as_leader(s, (Record(None, b"b", 0),), 2)
    s, _ = log.truncate_to(s, 1)
    s, _ = log.close_and_reopen(s)
    assert s.epochs == (EpochEntry(1, 0),)


def test_end_offset_for_epoch__undefined_is_none_known_is_epoch_and_end() -> None:
    """LOG-51. Spec: KL-EPOCH-2"""
    s = log.empty_log(LogConfig())
    s, _ = log.append_as_leader(s, (Record(None, b"a", 0),), 1)
    s, _ = log.assign_epoch(s, 3, 1)
    assert log.end_offset_for_epoch(s, 5)[1] is None
    assert log.end_offset_for_epoch(s, 3)[1] == EpochEndOffset(3, 1)
    result = log.end_offset_for_epoch(s, 2)[1]
    assert result is not None and (result.epoch, result.end_offset) == (1, 1)
