"""rules_exercised classifies steps by the spec rules they exercised."""

from __future__ import annotations

from kafkalog.model import log
from kafkalog.model.coverage.rules import rules_exercised
from kafkalog.model.errors import (
    IllegalArgumentError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
)
from kafkalog.model.values import Isolation, LogConfig, Record


def rec(ts: int = 0) -> Record:
    return Record(None, b"test", ts)


def test_rules_exercised__append_that_rolled_for_size__names_the_size_roll() -> None:
    """Spec: KL-ROLL-1, KL-APPEND-1"""
    s = log.empty_log(LogConfig(segment_bytes=100))
    s, _ = log.append_as_leader(s, (rec(),), 0)
    after, info = log.append_as_leader(s, (rec(),), 0)
    rules = rules_exercised("append_as_leader", s, after, info)
    assert {"KL-ROLL-1", "KL-APPEND-1", "KL-APPEND-2"} <= rules
    assert "KL-ROLL-2" not in rules and "KL-ROLL-8" not in rules


def test_rules_exercised__append_that_rolled_for_time__names_the_time_roll() -> None:
    """Spec: KL-ROLL-2"""
    s = log.empty_log(LogConfig(segment_ms=10))
    s, _ = log.append_as_leader(s, (rec(0),), 0)
    after, info = log.append_as_leader(s, (rec(11),), 0)
    assert "KL-ROLL-2" in rules_exercised("append_as_leader", s, after, info)


def test_rules_exercised__index_full_replacement__names_both_rules() -> None:
    """Spec: KL-ROLL-8, KL-ROLL-6"""
    s = log.empty_log(LogConfig(segment_index_bytes=12))
    after, info = log.append_as_leader(s, (rec(),), 0)
    assert {"KL-ROLL-8", "KL-ROLL-6"} <= rules_exercised("append_as_leader", s, after, info)


def test_rules_exercised__plain_append__names_no_roll() -> None:
    """Spec: KL-APPEND-5"""
    s = log.empty_log(LogConfig())
    after, info = log.append_as_leader(s, (rec(),), 0)
    rules = rules_exercised("append_as_leader", s, after, info)
    assert "KL-APPEND-5" in rules and not any(r.startswith("KL-ROLL") for r in rules)


def test_rules_exercised__errors_map_to_the_rule_that_raises_them() -> None:
    """Spec: KL-APPEND-4, KL-READ-1, KL-LSO-1"""
    s = log.empty_log(LogConfig())
    assert rules_exercised("append_as_leader", s, s, RecordTooLargeError("x")) == {"KL-APPEND-4"}
    error = OffsetOutOfRangeError("x")
    assert rules_exercised("read", s, s, error) == {"KL-READ-1"}
    assert rules_exercised("maybe_increment_log_start_offset", s, s, error) == {"KL-LSO-1"}


def test_rules_exercised__timestamp_targets_by_argument() -> None:
    """Spec: KL-TIME-1, KL-TIME-2, KL-TIME-3, KL-TIME-4"""
    s = log.empty_log(LogConfig())
    for target, rule in ((-2, "KL-TIME-1"), (-1, "KL-TIME-2"), (-3, "KL-TIME-3"), (5, "KL-TIME-4")):
        _, result = log.fetch_offset_by_timestamp(s, target)
        got = rules_exercised("fetch_offset_by_timestamp", s, s, result, {"timestamp": target})
        assert {r for r in got if r.startswith("KL-TIME")} == {rule}


def test_rules_exercised__profile_dependent_steps__name_their_version_rules() -> None:
    """Spec: KL-VERSION-1..7: a step whose answer or state the profile decides names the
    version rule (and KL-VERSION-1, the profile chosen); others name none."""
    s = log.empty_log(LogConfig(kafka_version="3.6"))
    after, info = log.append_as_leader(s, (rec(0),), 0)
    assert {"KL-VERSION-1", "KL-VERSION-2", "KL-VERSION-4"} <= rules_exercised(
        "append_as_leader", s, after, info)
    for target, rule in ((-3, "KL-VERSION-6"), (-6, "KL-VERSION-7")):
        _, result = log.fetch_offset_by_timestamp(after, target)
        got = rules_exercised("fetch_offset_by_timestamp", after, after, result,
                              {"timestamp": target})
        assert {r for r in got if r.startswith("KL-VERSION")} == {"KL-VERSION-1", rule}
    _, result = log.fetch_offset_by_timestamp(after, -2)
    assert not any(r.startswith("KL-VERSION") for r in rules_exercised(
        "fetch_offset_by_timestamp", after, after, result, {"timestamp": -2}))


def test_rules_exercised__retention_that_rolled__names_roll_when_all_go() -> None:
    """Spec: KL-RET-6, KL-RET-7, KL-RET-5"""
    s = log.empty_log(LogConfig(retention_ms=0))
    s, _ = log.append_as_leader(s, (rec(0),), 0)
    s, _ = log.update_high_watermark(s, 1)
    s, _ = log.advance_clock(s, 5)
    after, count = log.delete_old_segments(s)
    assert {"KL-RET-6", "KL-RET-7", "KL-RET-5"} <= rules_exercised(
        "delete_old_segments", s, after, count)


def test_rules_exercised__hw_read_materialising__names_materialisation() -> None:
    """Spec: KL-HW-4, KL-READ-2"""
    s = log.empty_log(LogConfig())
    s, _ = log.append_as_leader(s, (rec(),), 0)
    s, _ = log.append_as_leader(s, (rec(),), 0)
    s, _ = log.update_high_watermark(s, 1)
    after, info = log.read(s, 0, 100, Isolation.HIGH_WATERMARK, False)
    assert {"KL-HW-4", "KL-READ-2", "KL-READ-4"} <= rules_exercised("read", s, after, info)


def test_rules_exercised__append_argument_errors__name_the_check_that_failed() -> None:
    """Spec: KL-APPEND-6, KL-APPEND-2, KL-EPOCH-1"""
    s = log.empty_log(LogConfig())
    cases = {
        "Attempt to append to a full index": "KL-APPEND-6",
        "Invalid negative timestamp -5": "KL-APPEND-2",
        "Received invalid partition leader epoch entry": "KL-EPOCH-1",
    }
    for message, rule in cases.items():
        error = IllegalArgumentError(message)
        assert rules_exercised("append_as_follower", s, s, error) == {rule}


def test_rules_exercised__reopen_with_epoch_entries__names_epoch_durability() -> None:
    """Spec: KL-EPOCH-6"""
    empty = log.empty_log(LogConfig())
    assert "KL-EPOCH-6" not in rules_exercised("close_and_reopen", empty, empty, None)
    s, _ = log.append_as_leader(empty, (rec(),), 3)
    rules = rules_exercised("close_and_reopen", s, s, None)
    assert {"KL-EPOCH-6", "KL-RELOAD-1"} <= rules
