"""The two append actions (LOG-14..LOG-24), re-exported by `log.py`.

Every check runs before anything changes, so an error leaves the state as it was (KL-APPEND-9).
"""

from __future__ import annotations

from dataclasses import replace

from . import epochs as epoch_cache
from .bounds import require_end_offset_fits, require_int32, require_int64, require_records
from .choices import choose
from .errors import (
    IllegalArgumentError,
    InvalidRecordError,
    OffsetsOutOfOrderError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
    UnexpectedAppendOffsetError,
)
from .helpers import (
    relative_offset_fits,
    roll_jitter_limit,
    should_roll_for_size,
    should_roll_for_time,
    time_waited_for_roll,
)
from .local_log import roll_log, update_high_watermark_with_log_end
from .producer.producer_entry import AppendOrigin, BatchMetadata
from .producer.producer_state import (
    apply_append,
    check_client_fields,
    validate,
)
from .producer.transaction_entry import CompletedTxn, marker_record, parse_marker
from .producer.transactions import index_completed, refresh_first_unstable_offset
from .segment import append_batches, indexes_full
from .sizes import batch_size
from .state import Batch, PartitionState, evolve
from .values import (
    INT32_MAX,
    INT64_MAX,
    NO_TIMESTAMP,
    BatchSpec,
    LogAppendInfo,
    LogConfig,
    Record,
    TimestampType,
)
from .versions import follower_skips_newer_epochs, index_entry_per_batch

EMPTY_APPEND_INFO = LogAppendInfo(-1, -1, NO_TIMESTAMP, -1, NO_TIMESTAMP, 0, 0)


def _check_timestamps(records: tuple[Record, ...], where: str) -> None:
    """FMT-47: a record timestamp is >= 0 or NO_TIMESTAMP (-1)."""
    for record in records:
        if record.timestamp < NO_TIMESTAMP:
            raise IllegalArgumentError(
                f"Invalid negative timestamp {record.timestamp}", where=where
            )


def check_producer_fields(producer_id: int, producer_epoch: int, base_sequence: int,
                          where: str, is_transactional: bool = False) -> None:
    """KL-PROD-2: producer fields must fit the v2 header (int64 / int16 / int32, -1 = none).
    KL-TXN-1: a transactional batch needs a producer id (MemoryRecordsBuilder, TXN-1)."""
    if not (-1 <= producer_id <= INT64_MAX and -1 <= producer_epoch <= 32767
            and -1 <= base_sequence <= INT32_MAX):
        raise IllegalArgumentError(
            f"producer fields out of range: id {producer_id}, epoch {producer_epoch}, "
            f"base sequence {base_sequence}",
            where=where,
        )
    if is_transactional and producer_id < 0:
        raise IllegalArgumentError(
            "Cannot write transactional messages without a valid producer ID", where=where
        )


def _check_keys_for_compaction(config: LogConfig, records: tuple[Record, ...]) -> None:
    """CLN-9 (KAFKA-1755): a compacted log's leader refuses keyless records (Kafka's
    `InvalidRecordException` inside a `RecordValidationException`). Spec: KL-CLEAN-12."""
    words = {w.strip() for w in config.cleanup_policy.split(",")}
    if "compact" in words and any(r.key is None for r in records):
        raise InvalidRecordError(
            "Compacted topic cannot accept message without key", where="append_as_leader")


def _make_batch(base_offset: int, epoch: int, records: tuple[Record, ...],
                timestamp_type: TimestampType, log_append_time: int,
                producer: tuple[int, int, int] = (-1, -1, -1), is_transactional: bool = False,
                is_control: bool = False) -> Batch:
    """One stored batch; its position is filled in when it is placed in a segment."""
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        max_ts = log_append_time
    else:
        max_ts = max((r.timestamp for r in records), default=NO_TIMESTAMP)
    return Batch(
        base_offset=base_offset,
        last_offset=base_offset + len(records) - 1,
        partition_leader_epoch=epoch,
        max_timestamp=max_ts,
        size=batch_size(records),
        position=0,
        records=records,
        timestamp_type=timestamp_type,
        producer_id=producer[0],
        producer_epoch=producer[1],
        base_sequence=producer[2],
        is_transactional=is_transactional,
        is_control=is_control,
    )


def _max_timestamp_and_offset(batches: tuple[Batch, ...]) -> tuple[int, int]:
    """KL-APPEND-3: the max timestamp and the last offset of the first batch carrying it.

    Kafka 3.8+ (`LogValidator.assignOffsetsNonCompressed`, `UnifiedLog.analyzeAndValidateRecords`):
    `shallowOffsetOfMaxTimestamp` is the batch's last offset, found without iterating records;
    (-1, -1) when no batch has a max timestamp above -1.
    """
    best = (NO_TIMESTAMP, -1)
    for batch in batches:
        if batch.max_timestamp > best[0]:
            best = (batch.max_timestamp, batch.last_offset)
    return best


def _time_roll(state: PartitionState, waited: int) -> tuple[PartitionState, bool]:
    """KL-ROLL-2 under Kafka's random jitter: roll iff `waited > segment_ms - jitter`.

    Spec: KL-ALLOW-2. kafkalog's jitter decides by default (KL-ROLL-4); when another jitter
    Kafka may have drawn, and that agrees with every earlier decision on this segment, decides the
    other way, that decision is allowed too. The decision taken narrows the segment's bounds.
    """
    active = state.active
    segment_ms = state.config.segment_ms
    default = should_roll_for_time(active.size, waited, segment_ms, active.roll_jitter_ms)
    lo, hi = active.roll_jitter_bounds
    if hi < lo:  # JITTER_UNCONSTRAINED: a new segment object (or one opened at load)
        lo, hi = 0, roll_jitter_limit(state.config.segment_jitter_ms, segment_ms) - 1
    threshold = segment_ms - waited  # roll iff jitter > threshold
    can_roll = active.size > 0 and hi > threshold
    can_stay = active.size == 0 or lo <= threshold
    other = not default
    options = [default, other] if (can_roll if other else can_stay) else [default]
    decision = choose("roll_jitter", options)
    if decision:
        return state, True  # the segment becomes inactive: its jitter no longer matters
    if active.size > 0 and hi > threshold:
        bounds = (lo, threshold)
        jitter = min(max(active.roll_jitter_ms, lo), threshold)
        narrowed = replace(active, roll_jitter_bounds=bounds, roll_jitter_ms=jitter)
        state = replace(state, segments=(*state.segments[:-1], narrowed))
    return state, False


def _maybe_roll(state: PartitionState, batches: tuple[Batch, ...]) -> PartitionState:
    """LOG-22 / SEG-6: roll before the append when size, time, index or offset range demand it.

    Spec: KL-ROLL-1, KL-ROLL-2, KL-ROLL-8, KL-ROLL-9, KL-ALLOW-2.
    """
    active = state.active
    messages_size = sum(b.size for b in batches)
    max_ts = max(b.max_timestamp for b in batches)
    rolling = active.rolling_based_timestamp
    waited = time_waited_for_roll(
        state.now_ms, max_ts, rolling if rolling is not None else -1, active.created_ms
    )
    config = state.config
    must_roll = (
        should_roll_for_size(active.size, messages_size, config.segment_bytes)
        or indexes_full(active)
        or not relative_offset_fits(batches[-1].last_offset, active.base_offset)
    )
    if not must_roll:
        state, must_roll = _time_roll(state, waited)
    if must_roll:
        # KAFKA-6530: v2 data always knows its first offset, so the new base is exactly it.
        state, _ = roll_log(state, batches[0].base_offset)
    return state


def _append(state: PartitionState, batches: tuple[Batch, ...],
            origin: AppendOrigin) -> tuple[PartitionState, BatchMetadata | None]:
    """LOG-20..LOG-24 and PST-7: epochs checked, size limit, producer state validated, roll,
    write, LEO, HW, producer state applied. A client duplicate still rolls and stamps the epoch
    cache (PST-7 step 3) but writes nothing and returns the original batch's metadata.

    Spec: KL-APPEND-5, KL-VERSION-4, KL-PROD-4, KL-PROD-5, KL-BOUND-1 (the new LEO must fit a
    long).
    """
    require_end_offset_fits(batches[-1].last_offset, "append")
    for batch in batches:
        if batch.partition_leader_epoch < 0:
            raise IllegalArgumentError(
                f"Received invalid partition leader epoch entry (epoch="
                f"{batch.partition_leader_epoch}, start_offset={batch.base_offset})",
                where="append",
            )
    total = sum(b.size for b in batches)
    if total > state.config.segment_bytes:
        raise RecordBatchTooLargeError(
            f"Message batch size is {total} bytes in append, which exceeds the maximum "
            f"configured segment size of {state.config.segment_bytes}",
            where="append",
        )
    producer_batches = [b.producer_batch() for b in batches]
    duplicate = None
    if origin is AppendOrigin.CLIENT:
        for pb in producer_batches:
            if pb.producer_id >= 0:
                duplicate = validate(state.producer_state.producers, pb, origin)
                if duplicate is not None:
                    break
    producers = state.producer_state.producers
    completed: tuple[CompletedTxn, ...] = ()
    if duplicate is None:
        producers, completed = apply_append(producers, producer_batches, origin)
    state = _maybe_roll(state, batches)
    entries = state.epochs
    for batch in batches:
        entries = epoch_cache.assign(entries, batch.partition_leader_epoch, batch.base_offset)
    if duplicate is not None:
        return replace(state, epochs=entries), duplicate
    position = state.active.size
    placed = []
    for batch in batches:
        placed.append(evolve(batch, position=position))
        position += batch.size
    active = append_batches(
        state.active, tuple(placed), state.now_ms, state.config.index_interval_bytes,
        index_entry_per_batch(state.config.kafka_version),
    )
    end = batches[-1].last_offset + 1
    state = evolve(
        state,
        segments=(*state.segments[:-1], active),
        log_end_offset=end,
        epochs=entries,
    )
    # PST-9: HW from the LEO, then PSM.update, completed transactions (index, unreplicated), the
    # map end, and the FUO.
    state = update_high_watermark_with_log_end(state)
    state = evolve(state, producer_state=evolve(state.producer_state, producers=producers))
    state = index_completed(state, completed)
    state = evolve(state, producer_state=evolve(state.producer_state, last_map_offset=end))
    return refresh_first_unstable_offset(state), None


def _leader_offset_of_max_timestamp(batch: Batch, version: str) -> int:
    """KL-VERSION-2: what a leader append of one uncompressed v2 batch reports.

    3.6 (`LogValidator.assignOffsetsNonCompressed` @ 3.6.2): CreateTime -> the first record whose
    timestamp is strictly greater than every earlier one from -1 (-1 if none); LogAppendTime ->
    the last offset. 3.7 (@ 3.7.1): `toMagic >= V2` -> the last offset, always. 3.8+ -> the last
    offset of the batch carrying the max (-1 if none), as `_max_timestamp_and_offset`.
    """
    if version == "3.7":
        return batch.last_offset
    if version == "3.6" and batch.timestamp_type is TimestampType.CREATE_TIME:
        best = (NO_TIMESTAMP, -1)
        for i, record in enumerate(batch.records):
            if record.timestamp > best[0]:
                best = (record.timestamp, batch.base_offset + i)
        return best[1]
    return _max_timestamp_and_offset((batch,))[1]


def _append_info(batches: tuple[Batch, ...], log_append_time: int,
                 leader_offset: int | None = None) -> LogAppendInfo:
    max_ts, max_offset = _max_timestamp_and_offset(batches)
    if leader_offset is not None:
        max_offset = leader_offset
    return LogAppendInfo(
        first_offset=batches[0].base_offset,
        last_offset=batches[-1].last_offset,
        max_timestamp=max_ts,
        offset_of_max_timestamp=max_offset,
        log_append_time=log_append_time,
        valid_bytes=sum(b.size for b in batches),
        record_count=sum(len(b.records) for b in batches),
    )


def append_as_leader(state: PartitionState, records: tuple[Record, ...], leader_epoch: int,
                     producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                     is_transactional: bool = False) -> tuple[PartitionState, LogAppendInfo]:
    """Append one v2 batch with offsets from the LEO, stamped with `leader_epoch`; a batch with
    a producer id is validated against the producer state and deduplicated (origin CLIENT).

    Spec: KL-APPEND-1, KL-APPEND-2, KL-APPEND-3, KL-APPEND-4, KL-APPEND-5, KL-APPEND-6,
    KL-APPEND-9, KL-APPEND-10, KL-VERSION-2, KL-PROD-2, KL-PROD-5, KL-BOUND-1. Raises
    IllegalArgumentError for an epoch outside int32, a record outside KL-BOUND-1 or producer
    fields out of range, RecordTooLargeError (ERR-23), InvalidRecordError (PSE-5),
    IllegalArgumentError for a negative epoch (ERR-27) or timestamp, RecordBatchTooLargeError
    (ERR-24), InvalidProducerEpochError (PSE-1), OutOfOrderSequenceError (PSE-2), in that order.
    """
    require_int32(leader_epoch, "leader epoch", "append_as_leader")
    if not records:
        return state, EMPTY_APPEND_INFO
    require_records(records, "append_as_leader")
    check_producer_fields(producer_id, producer_epoch, base_sequence, "append_as_leader",
                          is_transactional)
    _check_timestamps(records, "append_as_leader")
    config = state.config
    log_append = config.message_timestamp_type is TimestampType.LOG_APPEND_TIME
    batch = _make_batch(
        state.log_end_offset, leader_epoch, records, config.message_timestamp_type,
        state.now_ms if log_append else NO_TIMESTAMP,
        (producer_id, producer_epoch, base_sequence), is_transactional,
    )
    if batch.size > config.max_message_bytes:
        raise RecordTooLargeError(
            f"The record batch size {batch.size} exceeds max.message.bytes "
            f"{config.max_message_bytes}",
            where="append_as_leader",
        )
    _check_keys_for_compaction(config, records)
    reported = _leader_offset_of_max_timestamp(batch, config.kafka_version)
    if reported != batch.last_offset and batch.max_timestamp > NO_TIMESTAMP:
        batch = replace(batch, reported_max_offset=reported)  # KL-VERSION-6 reads it back
    check_client_fields(batch.producer_batch(), "append_as_leader")
    new_state, duplicate = _append(state, (batch,), AppendOrigin.CLIENT)
    info = _append_info((batch,), state.now_ms if log_append else NO_TIMESTAMP, reported)
    if duplicate is not None:
        # PST-10: the original offsets; logAppendTime = the cached batch's timestamp.
        info = replace(info, first_offset=duplicate.first_offset,
                       last_offset=duplicate.last_offset, log_append_time=duplicate.timestamp)
    return new_state, info


def _follower_batches(specs: tuple[BatchSpec, ...], leader_epoch: int | None,
                      version: str) -> tuple[Batch, ...]:
    """LOG-15a [TRUNK]: keep the prefix before the first batch from a newer leader epoch.

    Spec: KL-VERSION-5 (before 4.0, KAFKA-18723, every batch is kept).
    """
    if not follower_skips_newer_epochs(version):
        leader_epoch = None
    kept = []
    where = "append_as_follower"
    if leader_epoch is not None:
        require_int32(leader_epoch, "leader epoch", where)
    for spec in specs:
        require_int64(spec.base_offset, "base offset", where)
        require_int32(spec.partition_leader_epoch, "partition leader epoch", where)
        require_int64(spec.log_append_time, "log append time", where)
        require_records(spec.records, where)
    for spec in specs:
        epoch = spec.partition_leader_epoch
        if leader_epoch is not None and epoch != -1 and epoch > leader_epoch:
            break
        if not spec.records:
            raise IllegalArgumentError(
                f"batch at offset {spec.base_offset} holds no records", where="append_as_follower"
            )
        _check_timestamps(spec.records, "append_as_follower")
        check_producer_fields(spec.producer_id, spec.producer_epoch, spec.base_sequence,
                              "append_as_follower", spec.is_transactional or spec.is_control)
        if spec.is_control:
            # TXN-1: a control batch is transactional and carries exactly one marker record.
            where = f"control batch at offset {spec.base_offset}"
            if len(spec.records) != 1 or not spec.is_transactional:
                raise IllegalArgumentError(
                    "a control batch must be transactional and hold exactly one record",
                    where=where)
            parse_marker(spec.records[0], where)
        kept.append(_make_batch(spec.base_offset, epoch, spec.records, spec.timestamp_type,
                                spec.log_append_time,
                                (spec.producer_id, spec.producer_epoch, spec.base_sequence),
                                spec.is_transactional, spec.is_control))
    return tuple(kept)


def append_as_follower(state: PartitionState, batches: tuple[BatchSpec, ...],
                       leader_epoch: int | None = None) -> tuple[PartitionState, LogAppendInfo]:
    """Append batches that already carry offsets and epochs; gaps between batches are kept.

    Spec: KL-APPEND-5, KL-APPEND-6, KL-APPEND-7, KL-APPEND-8, KL-APPEND-9, KL-APPEND-10,
    KL-PROD-8 (replication: epochs may regress, no sequence checks, no deduplication).
    Raises OffsetsOutOfOrderError (ERR-25), UnexpectedAppendOffsetError (ERR-26),
    IllegalArgumentError for a negative epoch (ERR-27), RecordBatchTooLargeError (ERR-24).
    """
    kept = _follower_batches(batches, leader_epoch, state.config.kafka_version)
    if not kept:
        return state, EMPTY_APPEND_INFO
    for previous, batch in zip(kept, kept[1:], strict=False):
        if previous.last_offset >= batch.last_offset:
            raise OffsetsOutOfOrderError(
                f"Out of order offsets found in append: {previous.last_offset} then "
                f"{batch.last_offset}",
                where="append_as_follower",
            )
    first, last = kept[0].base_offset, kept[-1].last_offset
    if first < state.log_end_offset:
        raise UnexpectedAppendOffsetError(
            f"Unexpected offset in append: first offset {first} but the next offset is "
            f"{state.log_end_offset}",
            first,
            last,
        )
    new_state, _ = _append(state, kept, AppendOrigin.REPLICATION)
    return new_state, _append_info(kept, NO_TIMESTAMP)


def append_marker(state: PartitionState, producer_id: int, producer_epoch: int, commit: bool,
                  coordinator_epoch: int,
                  leader_epoch: int) -> tuple[PartitionState, LogAppendInfo]:
    """The partition leader writes an end-transaction marker for the coordinator (TXN-2): one
    78-byte control batch (transactional + control, sequence -1) whose record is stamped with the
    leader's clock, appended with origin COORDINATOR: epoch and coordinator-epoch regressions
    are fenced, no sequence check, no deduplication (PST-21, TXN-3).

    Spec: KL-TXN-1, KL-TXN-2, KL-TXN-4. Raises IllegalArgumentError (fields out of range, no
    producer id, negative leader epoch), InvalidProducerEpochError (PSE-1),
    TransactionCoordinatorFencedError (PSE-4).
    """
    check_producer_fields(producer_id, producer_epoch, -1, "append_marker", True)
    record = marker_record(commit, coordinator_epoch, state.now_ms)
    config = state.config
    log_append = config.message_timestamp_type is TimestampType.LOG_APPEND_TIME
    batch = _make_batch(state.log_end_offset, leader_epoch, (record,),
                        config.message_timestamp_type,
                        state.now_ms if log_append else NO_TIMESTAMP,
                        (producer_id, producer_epoch, -1), True, True)
    new_state, _ = _append(state, (batch,), AppendOrigin.COORDINATOR)
    return new_state, _append_info((batch,), state.now_ms if log_append else NO_TIMESTAMP)
