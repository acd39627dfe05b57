"""The leader-epoch cache functions against LeaderEpochFileCacheTest's cases (EPO-2..EPO-8)."""

from __future__ import annotations

import pytest
from kafkalog.model import epochs
from kafkalog.model.errors import IllegalArgumentError
from kafkalog.model.values import EpochEndOffset, EpochEntry


def entries(*pairs: tuple[int, int]) -> tuple[EpochEntry, ...]:
    return tuple(EpochEntry(e, o) for e, o in pairs)


CACHE = entries((2, 6), (3, 8), (4, 11))


def test_assign__same_epoch_higher_offset__keeps_the_first_start_offset() -> None:
    """An epoch's start offset never moves forward. Spec: KL-EPOCH-1"""
    cache = epochs.assign(entries((2, 6)), 2, 7)
    assert cache == entries((2, 6))


def test_assign__same_epoch_lower_offset__replaces_the_entry() -> None:
    """Spec: KL-EPOCH-1"""
    assert epochs.assign(entries((2, 6)), 2, 5) == entries((2, 5))


def test_assign__higher_epoch_lower_offset__drops_tail_entries_starting_at_or_after_it() -> None:
    """Spec: KL-EPOCH-1"""
    assert epochs.assign(entries((2, 6), (3, 8)), 4, 7) == entries((2, 6), (4, 7))


def test_assign__lower_epoch__removes_every_entry_with_epoch_at_or_above_it() -> None:
    """Spec: KL-EPOCH-1"""
    assert epochs.assign(entries((2, 6), (3, 8)), 1, 9) == entries((1, 9))


@pytest.mark.parametrize(("epoch", "offset"), [(-1, 0), (0, -1)])
def test_assign__negative_epoch_or_offset__raises_illegal_argument(epoch: int, offset: int) -> None:
    """ERR-27. Spec: KL-EPOCH-1"""
    with pytest.raises(IllegalArgumentError):
        epochs.assign((), epoch, offset)


@pytest.mark.parametrize(
    ("cache", "requested", "expected"),
    [
        ((), 0, (-1, -1)),  # shouldReturnUnsupportedIfNoEpochRecorded
        (CACHE, -1, (-1, -1)),  # KAFKA-6857: the undefined epoch
        (CACHE, 4, (4, 20)),  # the latest epoch ends at the LEO
        (CACHE, 5, (-1, -1)),  # above the latest epoch
        (CACHE, 3, (3, 11)),  # ends where the next epoch starts
        (CACHE, 1, (1, 6)),  # KAFKA-7415: below the first epoch, echoed back
        (entries((0, 10), (2, 13)), 1, (0, 13)),  # KAFKA-6361 / KIP-279
        (entries((1, 11), (2, 13)), 1, (1, 13)),
    ],
)
def test_end_offset_for__leader_epoch_file_cache_cases(
    cache: tuple[EpochEntry, ...], requested: int, expected: tuple[int, int]
) -> None:
    """EPO-4 with the LEO 20. Spec: KL-EPOCH-2"""
    assert epochs.end_offset_for(cache, requested, 20) == EpochEndOffset(*expected)


@pytest.mark.parametrize(
    ("end", "expected"),
    [(9, ((2, 6), (3, 8))), (8, ((2, 6),)), (6, ()), (12, ((2, 6), (3, 8), (4, 11))),
     (-1, ((2, 6), (3, 8), (4, 11)))],
)
def test_truncate_from_end__drops_entries_starting_at_or_after_the_end(
    end: int, expected: tuple[tuple[int, int], ...]
) -> None:
    """Spec: KL-EPOCH-3"""
    assert epochs.truncate_from_end(CACHE, end) == entries(*expected)


@pytest.mark.parametrize(
    ("start", "expected"),
    [(8, ((3, 8), (4, 11))), (9, ((3, 9), (4, 11))), (5, ((2, 6), (3, 8), (4, 11))),
     (11, ((4, 11),)), (12, ((4, 12),)), (-1, ((2, 6), (3, 8), (4, 11)))],
)
def test_truncate_from_start__keeps_the_covering_epoch_moved_to_the_start(
    start: int, expected: tuple[tuple[int, int], ...]
) -> None:
    """The cut is exclusive: truncate_from_start(9) keeps (3, 9). Spec: KL-EPOCH-4"""
    assert epochs.truncate_from_start(CACHE, start) == entries(*expected)


@pytest.mark.parametrize(
    ("offset", "expected"), [(5, None), (6, 2), (7, 2), (8, 3), (10, 3), (11, 4), (100, 4)]
)
def test_epoch_for_offset__returns_the_epoch_covering_the_offset(
    offset: int, expected: int | None
) -> None:
    """Spec: KL-EPOCH-5"""
    assert epochs.epoch_for_offset(CACHE, offset) == expected


def test_latest_epoch__none_for_empty_cache_else_last_epoch() -> None:
    """Spec: KL-EPOCH-5"""
    assert epochs.latest_epoch(()) is None
    assert epochs.latest_epoch(CACHE) == 4
