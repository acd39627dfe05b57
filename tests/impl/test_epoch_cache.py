"""LeaderEpochCache: scenarios ported from Kafka's LeaderEpochFileCacheTest."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafkalog.impl.checkpoint.checkpoint_file import LeaderEpochCheckpointFile
from kafkalog.impl.checkpoint.epoch_cache import LeaderEpochCache
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.model.errors import IllegalArgumentError
from kafkalog.model.values import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, EpochEntry

FS = FileSystem()
UNDEFINED = (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)


@pytest.fixture
def checkpoint_path(tmp_path: Path) -> Path:
    return tmp_path / "leader-epoch-checkpoint"


@pytest.fixture
def cache(checkpoint_path: Path) -> LeaderEpochCache:
    return LeaderEpochCache(LeaderEpochCheckpointFile(FS, checkpoint_path))


def assign_all(cache: LeaderEpochCache, *pairs: tuple[int, int]) -> None:
    for epoch, offset in pairs:
        cache.assign(epoch, offset)


def E(*pairs: tuple[int, int]) -> tuple[EpochEntry, ...]:  # noqa: N802 (short table helper)
    return tuple(EpochEntry(e, o) for e, o in pairs)


def test_previous_epoch__tracks_assignments_and_truncation(cache: LeaderEpochCache) -> None:
    """Spec: EPO-9 (testPreviousEpoch, testFindPreviousEpoch, testFindPreviousEntry)."""
    assert cache.previous_epoch() is None
    cache.assign(2, 10)
    assert cache.previous_epoch() is None and cache.previous_entry(2) is None
    cache.assign(4, 15)
    assert cache.previous_epoch() == 2 and cache.previous_entry(4) == EpochEntry(2, 10)
    cache.assign(10, 20)
    assert cache.previous_epoch() == 4 and cache.previous_epoch(10) == 4
    cache.truncate_from_end(18)
    assert cache.previous_epoch() == 2
    assert cache.previous_entry(cache.latest_epoch or 0) == EpochEntry(2, 10)


@pytest.mark.parametrize(
    ("assigned", "requested", "leo", "expected"),
    [
        ([(2, 10)], 2, 11, (2, 11)),  # shouldAddEpochAndMessageOffsetToCache
        ([(2, 11), (2, 12)], 2, 14, (2, 14)),  # shouldReturnLogEndOffsetIfLatestEpochRequested
        ([(2, 11), (3, 12)], UNDEFINED_EPOCH, 0, UNDEFINED),  # ...IfUndefinedEpochRequested
        ([], 0, 0, UNDEFINED),  # shouldReturnUnsupportedIfNoEpochRecorded
        ([], UNDEFINED_EPOCH, 73, UNDEFINED),  # ...NoEpochRecordedAndUndefinedEpochRequested
        ([(5, 11), (6, 12), (7, 13)], 4, 0, (4, 11)),  # ...RequestedEpochLessThanFirstEpoch
        ([(5, 11), (6, 12), (7, 13), (7, 12)], 5, 0, (5, 12)),  # ...MatchingEpochButEarlier
        ([(5, 11), (6, 12), (7, 13), (7, 12)], 6, 0, (5, 12)),
        ([(1, 11), (1, 12), (2, 13), (2, 14), (3, 15), (3, 16)], 2, 17, (2, 15)),
        ([(0, 10), (2, 13), (4, 17)], 1, 0, (0, 13)),  # ...NextAvailableEpochIfNoExactEpoch
        ([(0, 10), (2, 13), (4, 17)], 2, 0, (2, 17)),
        ([(0, 10), (2, 13), (4, 17)], 3, 0, (2, 17)),
        ([(2, 100)], 3, 100, UNDEFINED),  # ...EpochIsRequestedWhichIsNotCurrentlyTracked
        ([(2, 6)], 2, 7, (2, 7)),  # shouldSupportEpochsThatDoNotStartFromZero
        ([(1, 5), (2, 6), (1, 7)], 1, 8, (1, 8)),  # shouldEnforceMonotonicallyIncreasingEpochs
        ([(1, 5), (2, 6), (1, 7)], 2, 8, UNDEFINED),
        ([], 7, 0, UNDEFINED),  # shouldFetchEndOffsetOfEmptyCache
    ],
)
def test_end_offset_for__kafka_cases(
    cache: LeaderEpochCache, assigned: list[tuple[int, int]], requested: int, leo: int,
    expected: tuple[int, int],
) -> None:
    """Spec: EPO-4, BUG-50, BUG-51, BUG-52 (LeaderEpochFileCacheTest endOffsetFor cases)."""
    assign_all(cache, *assigned)
    assert cache.end_offset_for(requested, leo) == expected


@pytest.mark.parametrize(
    ("assigned", "expected"),
    [
        ([(2, 9), (2, 10)], E((2, 9))),  # shouldNotOverwriteLogEndOffsetForALeaderEpoch...
        ([(2, 9), (3, 9)], E((3, 9))),  # shouldEnforceMonotonicallyIncreasingStartOffsets
        ([(2, 6), (2, 10)], E((2, 6))),  # shouldNotOverwriteOffsetForALeaderEpoch...
        ([(2, 6), (2, 7)], E((2, 6))),  # shouldNotUpdateEpochAndStartOffsetIfItDidNotChange
        ([(2, 6), (3, 5)], E((3, 5))),  # shouldEnforceOffsetsIncreaseMonotonically
        ([(1, 5), (2, 6), (1, 7)], E((1, 7))),  # shouldEnforceMonotonicallyIncreasingEpochs
    ],
)
def test_assign__monotonic_rules(
    cache: LeaderEpochCache, assigned: list[tuple[int, int]], expected: tuple[EpochEntry, ...]
) -> None:
    """Spec: EPO-2, EPO-3."""
    assign_all(cache, *assigned)
    assert cache.epoch_entries() == expected
    cache.check()


def test_end_offset_for__leader_changes_many_times(cache: LeaderEpochCache) -> None:
    """Spec: EPO-4 (shouldIncreaseAndTrackEpochsAsLeadersChangeManyTimes)."""
    assign_all(cache, (0, 0), (1, 0))
    assert cache.latest_epoch == 1
    assert cache.end_offset_for(1, 0) == (1, 0) and cache.end_offset_for(0, 0) == (0, 0)
    assert cache.end_offset_for(1, 5) == (1, 5) and cache.end_offset_for(0, 5) == (0, 0)
    cache.assign(2, 5)
    assert [cache.end_offset_for(e, 10) for e in (2, 1, 0)] == [(2, 10), (1, 5), (0, 0)]


def test_end_offset_for__follower_receives_many_messages(cache: LeaderEpochCache) -> None:
    """Spec: EPO-4 (shouldIncreaseAndTrackEpochsAsFollowerReceivesManyMessages)."""
    for epoch in range(3):
        for offset in range(epoch * 3, epoch * 3 + 3):
            cache.assign(epoch, offset)
        assert cache.latest_epoch == epoch
        assert cache.end_offset_for(epoch, epoch * 3 + 3) == (epoch, epoch * 3 + 3)
    assert cache.end_offset_for(0, 9) == (0, 3)
    assert cache.end_offset_for(1, 9) == (1, 6)


@pytest.mark.parametrize(
    ("op", "offset", "expected"),
    [
        ("end", 8, E((2, 6))),  # shouldDropEntriesOnEpochBoundaryWhenRemovingLatestEntries
        ("end", 9, E((2, 6), (3, 8))),  # shouldDropEntriesBetweenEpochBoundaryWhenRemovingNewest
        ("end", UNDEFINED_EPOCH_OFFSET, E((2, 6), (3, 8), (4, 11))),  # ...TailIfUndefinedPassed
        ("start", 8, E((3, 8), (4, 11))),  # shouldPreserveResetOffsetOnClearEarliestIfOneExists
        ("start", 1, E((2, 6), (3, 8), (4, 11))),  # shouldNotClearAnythingIfOffsetTooEarly
        ("start", 6, E((2, 6), (3, 8), (4, 11))),  # shouldNotClearAnythingIfOffsetIsFirstOffset
        ("start", 11, E((4, 11))),  # shouldRetainLatestEpochOnClearAllEarliest
        ("start", 9, E((3, 9), (4, 11))),  # shouldUpdateOffsetBetweenEpochBoundariesOnClear...
        ("start", 15, E((4, 15))),  # shouldRetainLatestEpochOnClearAllEarliestAndUpdateItsOffset
        ("start", UNDEFINED_EPOCH_OFFSET, E((2, 6), (3, 8), (4, 11))),  # ...HeadIfUndefined
    ],
)
def test_truncate__kafka_cases(
    cache: LeaderEpochCache, checkpoint_path: Path, op: str, offset: int,
    expected: tuple[EpochEntry, ...],
) -> None:
    """Spec: EPO-6, EPO-7 (truncateFromEnd/StartAsyncFlush cases), EPO-10 (written through)."""
    assign_all(cache, (2, 6), (3, 8), (4, 11))
    if op == "end":
        cache.truncate_from_end(offset)
    else:
        cache.truncate_from_start(offset)
    assert cache.epoch_entries() == expected
    assert tuple(LeaderEpochCheckpointFile(FS, checkpoint_path).read()) == expected


def test_truncate_from_start__between_first_two_epochs(cache: LeaderEpochCache) -> None:
    """Spec: EPO-7 (shouldUpdateOffsetBetweenFirstTwoEpochBoundariesOnClearEarliest)."""
    assign_all(cache, (0, 0), (1, 7), (2, 10))
    cache.truncate_from_start(5)
    assert cache.epoch_entries() == E((0, 5), (1, 7), (2, 10))


def test_clear_and_flush__removes_everything_on_disk(
    cache: LeaderEpochCache, checkpoint_path: Path
) -> None:
    """Spec: EPO-9 (shouldClearAllEntries)."""
    assign_all(cache, (2, 6), (3, 8), (4, 11))
    cache.clear_and_flush()
    assert cache.epoch_entries() == ()
    assert LeaderEpochCheckpointFile(FS, checkpoint_path).read() == []


def test_empty_cache__queries_and_truncations_are_harmless(cache: LeaderEpochCache) -> None:
    """Spec: EPO-6, EPO-7, EPO-9 (shouldFetchLatestEpochOfEmptyCache, shouldClear*OnEmptyCache)."""
    assert cache.latest_epoch is None
    cache.truncate_from_start(7)
    cache.truncate_from_end(7)
    assert cache.epoch_entries() == ()


def test_persisted_epochs__survive_a_new_instance(checkpoint_path: Path) -> None:
    """Spec: EPO-1, FMT-39 (shouldPersistEpochsBetweenInstances)."""
    LeaderEpochCache(LeaderEpochCheckpointFile(FS, checkpoint_path)).assign(2, 6)
    again = LeaderEpochCache(LeaderEpochCheckpointFile(FS, checkpoint_path))
    assert again.epoch_entries() == E((2, 6))
    assert checkpoint_path.read_text() == "0\n1\n2 6\n"


def test_load__non_monotonic_file__is_normalised_like_assign(checkpoint_path: Path) -> None:
    """Spec: EPO-1 (loading replays assign)."""
    checkpoint_path.write_text("0\n3\n1 5\n2 6\n1 7\n")
    cache = LeaderEpochCache(LeaderEpochCheckpointFile(FS, checkpoint_path))
    assert cache.epoch_entries() == E((1, 7))


def test_next_epoch_entry_and_epoch_for_offset(cache: LeaderEpochCache) -> None:
    """Spec: EPO-8, EPO-9 (testFindNextEpoch, testGetEpochEntry, shouldFetchEpochForGivenOffset)."""
    assign_all(cache, (0, 0), (1, 100), (2, 200))
    assert [cache.next_epoch(e) for e in (-1, 0, 1, 2, 100)] == [0, 1, 2, None, None]
    assert cache.epoch_entry(1) == EpochEntry(1, 100)
    other = LeaderEpochCache(None)
    assign_all(other, (0, 10), (1, 20), (5, 30))
    assert [other.epoch_for_offset(o) for o in (25, 20, 30, 35, 10, 5)] == [1, 1, 5, 5, 0, None]


@pytest.mark.parametrize(("epoch", "offset"), [(-1, 0), (0, -1)])
def test_assign__negative_epoch_or_offset__raises_illegal_argument(
    cache: LeaderEpochCache, epoch: int, offset: int
) -> None:
    """Spec: EPO-2 step 1, ERR-27."""
    with pytest.raises(IllegalArgumentError):
        cache.assign(epoch, offset)
