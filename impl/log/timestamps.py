"""ListOffsets on a `Log` (LOG-43..49): a mixin of `impl/log/log.py`.
"""

from __future__ import annotations

from kafkalog.impl.bounds import require_int64
from kafkalog.impl.checkpoint.epoch_cache import LeaderEpochCache
from kafkalog.impl.log.local_log import LocalLog
from kafkalog.impl.versions import (
    earliest_pending_upload_is_special,
    max_timestamp_searches_records,
)
from kafkalog.model.values import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    NO_TIMESTAMP,
    LogConfig,
    TimestampAndOffset,
)

EARLIEST_LOCAL_TIMESTAMP = -4  # LOG-43
LATEST_TIERED_TIMESTAMP = -5
EARLIEST_PENDING_UPLOAD_TIMESTAMP = -6  # KL-VERSION-7: special from 4.2, a search before


class LogTimestamps:
    """Offsets by timestamp: the special targets and the segment search."""

    local_log: LocalLog
    config: LogConfig
    leader_epoch_cache: LeaderEpochCache
    _log_start_offset: int

    # --- offsets by timestamp ---------------------------------------------------------------

    def fetch_offset_by_timestamp(self, target_timestamp: int) -> TimestampAndOffset | None:
        """ListOffsets for one partition (LOG-43..49): special targets or a timestamp search."""
        require_int64(target_timestamp, "timestamp", "fetch_offset_by_timestamp")
        cache = self.leader_epoch_cache
        if target_timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            earliest = cache.earliest_entry
            lso = self._log_start_offset
            known = earliest is not None and earliest.start_offset <= lso
            epoch = earliest.epoch if known and earliest is not None else None
            return TimestampAndOffset(NO_TIMESTAMP, lso, epoch)
        if target_timestamp == LATEST_TIMESTAMP:
            return TimestampAndOffset(NO_TIMESTAMP, self.log_end_offset, cache.latest_epoch)
        if target_timestamp == LATEST_TIERED_TIMESTAMP or (
                target_timestamp == EARLIEST_PENDING_UPLOAD_TIMESTAMP
                and earliest_pending_upload_is_special(self.config.kafka_version)):
            return TimestampAndOffset(NO_TIMESTAMP, -1, -1)  # no remote storage
        if target_timestamp == MAX_TIMESTAMP:
            return self._fetch_max_timestamp()
        for segment in self.local_log.segments.values():
            if segment.largest_timestamp() >= target_timestamp:
                found: TimestampAndOffset | None = segment.find_offset_by_timestamp(
                    target_timestamp, self._log_start_offset
                )
                return found
        return None

    def _fetch_max_timestamp(self) -> TimestampAndOffset | None:
        """LOG-48 (KAFKA-16310): the first record carrying the log's max timestamp."""
        segments = self.local_log.segments.values()
        best = segments[0]
        for segment in segments[1:]:
            if segment.max_timestamp_so_far() > best.max_timestamp_so_far():
                best = segment
        max_ts, shallow = best.max_timestamp_and_offset_so_far
        if not max_timestamp_searches_records(self.config.kafka_version):
            # KL-VERSION-6: before 3.8 the stored pair answers, with the latest epoch; a segment
            # without timestamps answers its empty time index's last entry (-1, base offset).
            offset = best.base_offset if max_ts == NO_TIMESTAMP else shallow
            return TimestampAndOffset(max_ts, offset, self.leader_epoch_cache.latest_epoch)
        position = best.offset_index.lookup(shallow).position
        for batch in best.log.batches(position):
            if batch.max_timestamp == max_ts:
                offset = batch.offset_of_max_timestamp()
                if offset is None:
                    return None
                epoch = batch.partition_leader_epoch
                return TimestampAndOffset(max_ts, offset, epoch if epoch >= 0 else None)
        return None
