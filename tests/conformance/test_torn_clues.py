"""KL-ALLOW-10's garbage pages: the clues a recovered state gives the model (torn_clues.py)."""

from __future__ import annotations

from kafkalog.conformance.crash.torn_clues import clues_of_error, clues_of_view
from kafkalog.model import values as v


def _view() -> v.LogStateView:
    segments = (v.SegmentView(0, 144, 2, offset_index=((1, 72),), time_index=((5, 1),)),
                v.SegmentView(2, 72, 4294967313))
    return v.LogStateView(0, 0, 4294967313, 0, segments,
                          (v.EpochEntry(0, 0), v.EpochEntry(3, 4294967312)))


def test_clues_of_view__ends_starts_lasts_and_epochs() -> None:
    """Every segment's end and the log end, each epoch's start, the offsets the indexes name,
    and the epochs. Spec: KL-ALLOW-10"""
    clues = clues_of_view(_view())
    assert clues.ends == {2, 4294967313}
    assert clues.starts == {0, 4294967312}
    assert clues.lasts == {1}
    assert clues.epochs == {0, 3}


def test_clues_of_error__the_overflowing_offset__or_none_for_another_failure() -> None:
    """The offset-overflow error names the batch outside the range; other failures give none.
    Spec: KL-ALLOW-10"""
    error = ("LogSegmentOffsetOverflowError: Detected offset overflow at offset 16 in segment "
             "with base offset 2 (/d/p-0/00000000000000000002.log)")
    clues = clues_of_error(error)
    assert clues is not None and clues.starts == clues.lasts == {16}
    assert clues_of_error("CorruptRecordError: bad crc") is None
