"""Deliberately broken implementations: the real one with one historical Kafka bug put back.

Each entry patches one method of `kafkalog.impl` so that it behaves like Kafka did before the fix
named by its bug ID (kafka-log-reference.md §10). `kafkalog check --broken NAME` and the tests in
tests/conformance/test_broken.py prove the machine catches every one with a short trace.

A patch is installed while at least one `BrokenImplSut` of that name is open and removed when the
last one closes, so a process that also runs the real implementation afterwards (pytest) gets the
real code back. Patches are process-wide: never run a broken and a real log at the same time in
one process (the runner and `serve-adapter --broken` never do).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafkalog.conformance.broken.base import Broken, defining_class
from kafkalog.conformance.check.impl_sut import ImplSut
from kafkalog.conformance.errors import UnknownBrokenImplError
from kafkalog.impl.checkpoint.epoch_cache import LeaderEpochCache
from kafkalog.impl.index.offset_index import OffsetIndex
from kafkalog.impl.log.local_log import LocalLog
from kafkalog.impl.log.log import Log
from kafkalog.impl.log.retention import deletable_segments
from kafkalog.impl.segment.log_segment import LogSegment
from kafkalog.model import values as v

# --- the buggy methods ---------------------------------------------------------------------------


def _delete_matching_ignoring_hw(self: Log, predicate: Any) -> int:
    """BUG-36: the oldest-first walk forgot the HW bound, so data at or above the HW can go."""
    if predicate is None:
        return 0
    segments = self.local_log.segments.values()
    leo = self.log_end_offset
    chosen = deletable_segments(segments, leo, leo, predicate)  # the LEO where the HW belongs
    return self._delete_segments(segments[: len(chosen)])  # type: ignore[no-any-return]


def _truncate_fully_keeping_hw(self: Log, new_offset: int) -> None:
    """BUG-38: full truncation moved the LSO and LEO but left the HW behind."""
    self.local_log.truncate_fully_and_start_at(new_offset)
    self.leader_epoch_cache.clear_and_flush()
    self._log_start_offset = new_offset


_REAL_TRUNCATE_TO = Log.truncate_to


def _truncate_to_keeping_hw(self: Log, target_offset: int) -> bool:
    """LOG-40 step 4: truncation below the HW did not clamp the HW to the new LEO."""
    hw = self._hw_metadata
    truncated = _REAL_TRUNCATE_TO(self, target_offset)
    self._hw_metadata = hw
    return truncated


def _index_truncate_keeping_target(self: OffsetIndex, offset: int) -> None:
    """BUG-1 (KAFKA-588): relative vs absolute comparison kept the entry exactly at `offset`."""
    with self._lock:
        slot = self._slot_range_for(offset, self._OFFSETS, True)
        self._truncate_to_entries(0 if slot < 0 else slot + 1)


_REAL_END_OFFSET_FOR = LeaderEpochCache.end_offset_for


def _end_offset_for_undefined_as_latest(self: LeaderEpochCache, requested_epoch: int,
                                        log_end_offset: int) -> tuple[int, int]:
    """BUG-50 (KAFKA-6857): a request for the undefined epoch -1 was answered with the LEO."""
    latest = self.latest_epoch
    if requested_epoch == v.UNDEFINED_EPOCH and latest is not None:
        return latest, log_end_offset
    return _REAL_END_OFFSET_FOR(self, requested_epoch, log_end_offset)  # type: ignore[no-any-return]


def _assign_non_monotonic(self: LeaderEpochCache, epoch: int, start_offset: int) -> bool:
    """BUG-52 (KAFKA-7415): the cache appended entries without removing conflicting ones."""
    entries = self._entries
    if entries and entries[-1].epoch == epoch:
        return False
    entries.append(v.EpochEntry(epoch, start_offset))
    return True


_REAL_SEGMENT_TRUNCATE = LogSegment.truncate_to


def _segment_truncate_keeping_clock(self: LogSegment, offset: int) -> int:
    """BUG-18 (KAFKA-596): a segment emptied by truncation kept its old roll clock."""
    created, rolling = self.created, self.rolling_based_timestamp
    removed = _REAL_SEGMENT_TRUNCATE(self, offset)
    self.created, self.rolling_based_timestamp = created, rolling
    return removed  # type: ignore[no-any-return]


def _retention_log_start_last(self: Log) -> int:
    """BUG-41 (KAFKA-12177): log-start retention ran after time and size retention."""
    with self.lock:
        return (
            self._delete_retention_ms_breached_segments()
            + self._delete_retention_size_breached_segments()
            + self._delete_log_start_offset_breached_segments()
        )


def _update_leo_keeping_recovery_point(self: LocalLog, end_offset: int) -> None:
    """BUG-60 (KAFKA-10101): truncation left the recovery point above the new LEO."""
    active = self.segments.active_segment()
    self.next_offset_metadata = v.LogOffsetMetadata(end_offset, active.base_offset, active.size())


_REAL_MAX_TIMESTAMP = Log._fetch_max_timestamp


def _max_timestamp_last_offset(self: Log) -> v.TimestampAndOffset | None:
    """BUG-12 (KAFKA-16310): MAX_TIMESTAMP answered the batch's last offset."""
    found = _REAL_MAX_TIMESTAMP(self)
    if found is None:
        return None
    for segment in self.local_log.segments.values():
        for batch in segment.log.batches(0):
            if batch.base_offset <= found.offset <= batch.last_offset:
                return v.TimestampAndOffset(found.timestamp, batch.last_offset, found.leader_epoch)
    return found


BROKEN: dict[str, Broken] = {
    b.name: b
    for b in (
        Broken("retention_ignores_hw", "BUG-36", "LOG-33",
               "retention deletes segments holding offsets at or above the HW",
               Log, "_delete_matching", _delete_matching_ignoring_hw),
        Broken("truncate_fully_keeps_hw", "BUG-38", "LOG-41",
               "full truncation moves the LSO but not the HW",
               Log, "_truncate_fully_and_start_at", _truncate_fully_keeping_hw),
        Broken("truncate_keeps_hw", "BUG-38", "LOG-40",
               "truncation below the HW does not clamp the HW",
               Log, "truncate_to", _truncate_to_keeping_hw),
        Broken("index_truncation_keeps_target", "BUG-1", "FMT-15",
               "offset-index truncation keeps the entry at the target",
               OffsetIndex, "truncate_to", _index_truncate_keeping_target),
        Broken("end_offset_undefined_is_latest", "BUG-50", "EPO-4",
               "end_offset_for(-1) returns the latest epoch and the LEO",
               LeaderEpochCache, "end_offset_for", _end_offset_for_undefined_as_latest),
        Broken("epoch_cache_non_monotonic", "BUG-52", "EPO-2",
               "the epoch cache accepts non-monotonic entries",
               LeaderEpochCache, "_assign", _assign_non_monotonic),
        Broken("truncation_keeps_roll_clock", "BUG-18", "SEG-13",
               "a segment emptied by truncation keeps its old roll clock",
               LogSegment, "truncate_to", _segment_truncate_keeping_clock),
        Broken("log_start_retention_last", "BUG-41", "LOG-32",
               "log-start retention runs after time and size retention",
               Log, "delete_old_segments", _retention_log_start_last),
        Broken("recovery_point_above_leo", "BUG-60", "LOC-2",
               "truncation leaves the recovery point above the LEO",
               LocalLog, "update_log_end_offset", _update_leo_keeping_recovery_point),
        Broken("max_timestamp_last_offset", "BUG-12", "LOG-48",
               "MAX_TIMESTAMP returns the batch's last offset",
               Log, "_fetch_max_timestamp", _max_timestamp_last_offset),
    )
}

def _register_zoo() -> None:
    """Add the bug zoo (broken_zoo.py): more bugs, written against the checker (issue #11)."""
    from kafkalog.conformance.broken.zoo import ZOO

    BROKEN.update((b.name, b) for b in ZOO)


_register_zoo()

_installed: dict[str, tuple[int, Any]] = {}  # name -> (open count, the original attribute)


def all_broken() -> dict[str, Broken]:
    """The historical bugs above plus the crash-recovery bugs of `broken_crash.py` (issue #10),
    which `--broken NAME` reaches the same way."""
    try:
        from kafkalog.conformance.broken.crash import BROKEN_CRASH
    except ImportError:  # the crash registry is optional
        return BROKEN
    return {**BROKEN, **BROKEN_CRASH}


def broken_class(name: str) -> Broken:
    """The Broken entry of `name`; raises UnknownBrokenImplError naming the known ones."""
    from kafkalog.conformance.broken.producer import (
        PRODUCER_BROKEN,  # issue 14's catalogue, same mechanism
    )
    from kafkalog.conformance.broken.txn import TXN_BROKEN  # issue 15's

    catalogue = {**all_broken(), **PRODUCER_BROKEN, **TXN_BROKEN}
    try:
        return catalogue[name]
    except KeyError:
        known = ", ".join(sorted(catalogue))
        raise UnknownBrokenImplError(
            f"unknown broken implementation {name!r} (known: {known})"
        ) from None


def install(name: str) -> None:
    """Put the bug in (reference-counted), where the patched method is defined."""
    broken = broken_class(name)
    count, original = _installed.get(name, (0, None))
    if count == 0:
        home = defining_class(broken)
        original = vars(home)[broken.attribute]
        setattr(home, broken.attribute, broken.replacement)
    _installed[name] = (count + 1, original)


def uninstall(name: str) -> None:
    """Take the bug out again once the last user is gone."""
    broken = broken_class(name)
    count, original = _installed[name]
    if count == 1:
        setattr(defining_class(broken), broken.attribute, original)
        del _installed[name]
    else:
        _installed[name] = (count - 1, original)


def broken_factory(name: str) -> Callable[[v.LogConfig, int, int], ImplSut]:
    """A factory of ImplSuts running with bug `name` installed."""
    broken_class(name)

    def open_log(config: v.LogConfig, now_ms: int, log_start_offset: int) -> ImplSut:
        return BrokenImplSut(name, config, now_ms, log_start_offset)

    return open_log


class BrokenImplSut(ImplSut):
    """The in-process implementation with one bug installed for as long as it is open."""

    def __init__(self, broken: str, config: v.LogConfig, now_ms: int = 0,
                 log_start_offset: int = 0) -> None:
        install(broken)
        self.broken = broken
        self.name = f"kafkalog-impl broken={broken}"
        try:
            super().__init__(config, now_ms, log_start_offset)
        except BaseException:
            uninstall(broken)
            raise

    def close(self) -> None:
        try:
            super().close()
        finally:
            uninstall(self.broken)
