"""The compaction invariants catch what they name: each predicate holds after a real pass and
fails on a seeded broken one (KL-INV-18..22)."""

from __future__ import annotations

from dataclasses import replace

from kafkalog.model import log
from kafkalog.model.invariants import (
    check_all,
    check_clean,
    clean_keeps_latest_values,
    clean_keeps_offsets,
    clean_leaves_uncleanable_alone,
    cleaned_keys_unique,
    cleaner_checkpoint_bounded,
)
from kafkalog.model.state import PartitionState
from kafkalog.model.values import LogConfig, Record

COMPACT = LogConfig(cleanup_policy="compact", min_cleanable_dirty_ratio=0.0)


def history() -> PartitionState:
    """Keys 0..2 written twice each, one tombstone, sealed below an active segment."""
    s = log.empty_log(COMPACT)
    for i, value in enumerate([b"a", b"b", b"c", b"d", None, b"f"]):
        s, _ = log.append_as_leader(s, (Record(b"k%d" % (i % 3), value, i),), 0)
    s, _ = log.roll(s)
    s, _ = log.append_as_leader(s, (Record(b"k0", b"active", 9),), 0)
    s, _ = log.update_high_watermark(s, s.log_end_offset)
    return s


def cleaned() -> tuple[PartitionState, PartitionState, int]:
    before = history()
    after, result = log.clean(before)
    assert result is not None
    return before, after, result.first_uncleanable_offset


def test_cleaner_checkpoint_bounded__above_leo__fails() -> None:
    """Spec: KL-INV-18."""
    _, after, _ = cleaned()
    assert cleaner_checkpoint_bounded(after)
    assert not cleaner_checkpoint_bounded(replace(after, cleaner_checkpoint=after.log_end_offset
                                                  + 1))


def test_cleaned_keys_unique__checkpoint_over_uncleaned_duplicates__fails() -> None:
    """Spec: KL-INV-19."""
    before, after, _ = cleaned()
    assert cleaned_keys_unique(after) and check_all(after) == []
    assert not cleaned_keys_unique(replace(before, cleaner_checkpoint=6))


def test_clean_keeps_latest_values__dropping_the_newest_value__fails() -> None:
    """Spec: KL-INV-20."""
    before, after, bound = cleaned()
    assert clean_keeps_latest_values(before, after, bound)
    first = after.segments[0]
    broken = replace(first, batches=tuple(b for b in first.batches if b.last_offset != 5))
    assert not clean_keeps_latest_values(before, replace(after, segments=(broken,
                                                                         *after.segments[1:])),
                                         bound)


def test_clean_keeps_offsets__moving_a_record__fails() -> None:
    """Spec: KL-INV-21."""
    before, after, bound = cleaned()
    assert clean_keeps_offsets(before, after, bound)
    first = after.segments[0]
    batch = first.batches[-1]
    moved = replace(batch, base_offset=batch.base_offset - 1, last_offset=batch.last_offset - 1)
    broken = replace(first, batches=(*first.batches[:-1], moved))
    assert not clean_keeps_offsets(before, replace(after, segments=(broken, *after.segments[1:])),
                                   bound)


def test_clean_leaves_uncleanable_alone__touching_the_active_segment__fails() -> None:
    """Spec: KL-INV-22."""
    before, after, bound = cleaned()
    assert clean_leaves_uncleanable_alone(before, after, bound)
    assert check_clean(before, after, bound) == []
    active = replace(after.active, batches=())
    broken = replace(after, segments=(*after.segments[:-1], active))
    assert not clean_leaves_uncleanable_alone(before, broken, bound)


def test_cleaned_keys_unique__log_start_fallen_below_a_reset_checkpoint__holds() -> None:
    """A checkpoint reset to the log start (CLN-15) covers data no pass read; a crash lowers
    the log start to its checkpoint file (GAP-12) and shows that data again, so the range is
    bounded by the log start the entry was written at (campaign seed 1201, compacted, kafka
    mode and strict alike). Spec: KL-INV-19."""
    moved, _ = log.maybe_increment_log_start_offset(history(), 6)
    reset, _ = log.clean(replace(moved, cleaner_checkpoint=0))
    assert reset.cleaner_checkpoint == 6 and reset.cleaner_floor == 6
    fallen = replace(reset, log_start_offset=0)  # what the crash's load leaves
    assert cleaned_keys_unique(fallen)
    assert not cleaned_keys_unique(replace(fallen, cleaner_floor=0))



def _sealed(s: PartitionState, *keys: bytes) -> PartitionState:
    for key in keys:
        s, _ = log.append_as_leader(s, (Record(key, b"v", 0),), 0)
    s, _ = log.roll(s)
    s, _ = log.update_high_watermark(s, s.log_end_offset)
    return s


def test_clean__going_on_from_its_entry_over_a_fallen_log_start__keeps_the_floor() -> None:
    """A pass that goes on from the cleaner's entry after a crash lowered the log start below
    the entry's floor (GAP-12) maps only the new dirty range: the duplicates between the fallen
    log start and the floor stay, so the pass keeps the floor rather than taking the log start
    (trace KL-INV-19-pass_keeps_its_floor_over_a_log_start_fallen_back-seed10515).
    Spec: KL-INV-19."""
    s = _sealed(log.empty_log(COMPACT), b"k0", b"k1", b"k0", b"k1", b"k2")
    s, _ = log.maybe_increment_log_start_offset(s, 4)
    first, _ = log.clean(s)
    assert first.cleaner_checkpoint == 5 and first.cleaner_floor == 4
    fallen = replace(first, log_start_offset=0)  # what the crash's load leaves
    again, result = log.clean(_sealed(fallen, b"k2"))
    assert result is not None and result.first_dirty_offset == 5
    assert again.cleaner_floor == 4 and again.log_start_offset == 0
    assert cleaned_keys_unique(again) and check_all(again) == []
    assert not cleaned_keys_unique(replace(again, cleaner_floor=0))
