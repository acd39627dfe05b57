"""Kafka version profiles (specs/log.md §19): each behaviour that changed, per profile."""

from __future__ import annotations

import dataclasses

import pytest
from kafkalog.model import log, versions
from kafkalog.model.errors import IllegalArgumentError
from kafkalog.model.values import BatchSpec, Isolation, LogConfig, Record, TimestampType

T = 1_700_000_000_000


def rec(ts: int) -> Record:
    return Record(None, b"test", ts)


def cfg(version: str, **kwargs: object) -> LogConfig:
    return dataclasses.replace(LogConfig(**kwargs), kafka_version=version)  # type: ignore[arg-type]


def test_kafka_version__unknown_profile__is_rejected_naming_the_known_ones() -> None:
    """Spec: KL-VERSION-1"""
    with pytest.raises(IllegalArgumentError,
                       match="3.6, 3.7, 3.8, 3.9, 3.9.2, 4.0, 4.1, 4.2, 4.3, 4.4"):
        log.empty_log(cfg("2.8"))


@pytest.mark.parametrize(("version", "expected"), [
    ("3.6", 1), ("3.7", 3), ("3.8", 3), ("3.9", 3), ("4.0", 3), ("4.4", 3)])
def test_leader_append__offset_of_max_timestamp__per_profile(version: str, expected: int) -> None:
    """Spec: KL-VERSION-2 (3.6: first record with the max; 3.7+: the batch's last offset)."""
    _, info = log.append_as_leader(log.empty_log(cfg(version)), (rec(5), rec(9), rec(9), rec(7)), 0)
    assert info.offset_of_max_timestamp == expected


@pytest.mark.parametrize(("version", "expected"), [("3.6", -1), ("3.7", 1), ("3.9", -1)])
def test_leader_append__no_timestamps__offset_per_profile(version: str, expected: int) -> None:
    """Spec: KL-VERSION-2 (3.7 reports the last offset even without timestamps)."""
    _, info = log.append_as_leader(log.empty_log(cfg(version)), (rec(-1), rec(-1)), 0)
    assert (info.max_timestamp, info.offset_of_max_timestamp) == (-1, expected)


def test_leader_append__log_append_time_on_3_6__reports_the_last_offset() -> None:
    """Spec: KL-VERSION-2"""
    config = cfg("3.6", message_timestamp_type=TimestampType.LOG_APPEND_TIME)
    _, info = log.append_as_leader(log.empty_log(config, now_ms=50), (rec(5), rec(9)), 0)
    assert (info.max_timestamp, info.offset_of_max_timestamp) == (50, 1)


@pytest.mark.parametrize(("version", "offset"), [("3.9", 2), ("4.0", 0), ("4.4", 0)])
def test_read_mid_batch__metadata_offset__start_offset_before_kafka_17803(
    version: str, offset: int
) -> None:
    """Spec: KL-VERSION-3"""
    s, _ = log.append_as_leader(log.empty_log(cfg(version)), (rec(1), rec(2), rec(3)), 0)
    _, info = log.read(s, 2, 1000, Isolation.LOG_END, False)
    assert info.fetch_offset_metadata.message_offset == offset


@pytest.mark.parametrize(("version", "entries"), [("3.9", 1), ("4.0", 3), ("4.4", 3)])
def test_follower_append_of_three_batches__index_entries_per_append_before_kafka_806(
    version: str, entries: int
) -> None:
    """Spec: KL-VERSION-4 (one decision per append before 4.0, one per batch from 4.0)."""
    s = log.empty_log(cfg(version, index_interval_bytes=0))
    s, _ = log.append_as_follower(s, (BatchSpec(0, 0, (rec(1),)),))
    batches = tuple(BatchSpec(i, 0, (rec(1 + i),)) for i in (1, 2, 3))
    s, _ = log.append_as_follower(s, batches)
    assert len(s.active.offset_index) == entries
    if entries == 1:
        assert s.active.offset_index[0] == (3, 72)


@pytest.mark.parametrize(("version", "leo"), [("3.9", 2), ("4.0", 1), ("4.4", 1)])
def test_follower_append__batch_from_a_newer_epoch__kept_before_kafka_18723(
    version: str, leo: int
) -> None:
    """Spec: KL-VERSION-5"""
    s, _ = log.append_as_follower(log.empty_log(cfg(version)),
                                  (BatchSpec(0, 1, (rec(1),)), BatchSpec(1, 5, (rec(2),))), 1)
    assert s.log_end_offset == leo


@pytest.mark.parametrize(("version", "answer"), [
    ("3.6", (T + 9, 1, 2)), ("3.7", (T + 9, 2, 2)), ("3.8", (T + 9, 1, 0)),
    ("4.0", (T + 9, 1, 0)), ("4.4", (T + 9, 1, 0))])
def test_max_timestamp__stored_offset_and_latest_epoch_before_3_8(
    version: str, answer: tuple[int, int, int]
) -> None:
    """Spec: KL-VERSION-6 (KAFKA-16310: 3.6/3.7 answer the stored pair with the latest epoch)."""
    s, _ = log.append_as_leader(log.empty_log(cfg(version)), (rec(T), rec(T + 9), rec(T + 2)), 0)
    s, _ = log.append_as_leader(s, (rec(T + 1),), 2)
    _, found = log.fetch_offset_by_timestamp(s, -3)
    assert found is not None
    assert (found.timestamp, found.offset, found.leader_epoch) == answer


def test_max_timestamp__no_timestamps_on_3_7__answers_the_first_segment_base() -> None:
    """Spec: KL-VERSION-6 (an empty time index's last entry is (-1, base offset))."""
    s, _ = log.append_as_leader(log.empty_log(cfg("3.7"), log_start_offset=4), (rec(-1),), 3)
    _, found = log.fetch_offset_by_timestamp(s, -3)
    assert found is not None
    assert (found.timestamp, found.offset, found.leader_epoch) == (-1, 4, 3)


def test_profiles__ordered_oldest_first__default_is_the_newest_release() -> None:
    """Spec: KL-VERSION-1 (4.0..4.4 follow 3.9; LogConfig's default is 4.4)."""
    assert versions.PROFILES == ("3.6", "3.7", "3.8", "3.9", "3.9.2", "4.0", "4.1", "4.2",
                                 "4.3", "4.4")
    assert LogConfig().kafka_version == versions.DEFAULT_PROFILE == versions.PROFILES[-1]


def test_trunk__legacy_name__behaves_as_4_0() -> None:
    """Spec: KL-VERSION-1 (traces recorded under `trunk` replay as 4.0: CHG-1..3 applied, no
    later rule's newer side)."""
    log.empty_log(cfg("trunk"))  # accepted
    for predicate in (versions.read_reports_batch_base, versions.index_entry_per_batch,
                      versions.follower_skips_newer_epochs,
                      versions.max_timestamp_searches_records,
                      versions.append_reports_offset_of_max_timestamp,
                      versions.earliest_pending_upload_is_special):
        assert predicate("trunk") == predicate("4.0"), predicate.__name__
    assert "trunk" not in versions.PROFILES


@pytest.mark.parametrize(("version", "reported"), [
    ("3.9", True), ("4.0", False), ("4.1", False), ("4.4", False)])
def test_append_result__offset_of_max_timestamp__defined_before_4_0_only(
    version: str, reported: bool
) -> None:
    """Spec: KL-VERSION-2 (KAFKA-806 removed the field from LogAppendInfo in 4.0.2)."""
    fields = versions.unobserved_result_fields(version, "append_as_leader")
    assert ("offset_of_max_timestamp" not in fields) == reported


@pytest.mark.parametrize(("version", "special"), [
    ("3.9", False), ("4.0", False), ("4.1", False), ("4.2", True), ("4.3", True), ("4.4", True)])
def test_earliest_pending_upload__special_target_from_4_2(version: str, special: bool) -> None:
    """Spec: KL-VERSION-7 (-6 answers (-1, -1, -1) without remote storage from 4.2; before, it
    is a timestamp to search, and every record's timestamp is >= -6)."""
    s, _ = log.append_as_leader(log.empty_log(cfg(version)), (rec(T), rec(T + 1)), 3)
    _, found = log.fetch_offset_by_timestamp(s, -6)
    assert found is not None
    expected = (-1, -1, -1) if special else (T, 0, 3)
    assert (found.timestamp, found.offset, found.leader_epoch) == expected


def test_recovery_on_3_6__pairs_the_max_with_the_batch_last_offset_not_the_reported_one() -> None:
    """Spec: KL-VERSION-2 (the reported offset is not on disk: SEG-15 re-derives the batch's last
    offset), KL-CRASH-5."""
    from kafkalog.model.recovery import rebuilt_segment

    config = cfg("3.6")
    s, info = log.append_as_leader(log.empty_log(config), (rec(5), rec(9), rec(9), rec(7)), 0)
    assert info.offset_of_max_timestamp == 1
    assert s.active.max_timestamp_and_offset == (9, 1)
    rebuilt = rebuilt_segment(s.active, config, 0, 0)
    assert rebuilt is not None and rebuilt.max_timestamp_and_offset == (9, 3)


@pytest.mark.parametrize(("version", "per_batch", "epoch_cut", "batch_base", "reports"), [
    ("3.9", False, False, False, True),
    ("3.9.2", True, True, False, False),
    ("4.0", True, True, True, False),
])
def test_profile_3_9_2__backports__per_batch_index_epoch_cut_no_offset_but_start_offset_reads(
        version: str, per_batch: bool, epoch_cut: bool, batch_base: bool, reports: bool) -> None:
    """3.9.1+ carry KL-VERSION-2, 4 and 5's newer side, not KL-VERSION-3's. Spec: KL-VERSION-2,
    KL-VERSION-3, KL-VERSION-4, KL-VERSION-5"""
    assert versions.index_entry_per_batch(version) is per_batch
    assert versions.follower_skips_newer_epochs(version) is epoch_cut
    assert versions.read_reports_batch_base(version) is batch_base
    assert versions.append_reports_offset_of_max_timestamp(version) is reports
