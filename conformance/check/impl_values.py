"""The implementation's read results as the shared values the checker compares (a read's
`FetchDataInfo` and its batches), kept apart from impl_sut.py, the in-process implementation."""

from __future__ import annotations

from typing import Any

from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.segment.log_segment import FetchDataInfo as ImplFetchDataInfo
from kafkalog.model import values as v


def fetch_data_value(info: ImplFetchDataInfo) -> v.FetchDataInfo:
    """The shared value of an impl read: the slice's size and the whole batches inside it."""
    records: MemoryRecords = info.records
    start = info.fetch_offset_metadata.relative_position_in_segment
    batches = tuple(batch_view(batch, max(start, 0), with_producer=True)
                    for batch in records.batches())
    return v.FetchDataInfo(
        fetch_offset_metadata=info.fetch_offset_metadata,
        size_in_bytes=records.size_in_bytes,
        batches=batches,
        first_entry_incomplete=info.first_entry_incomplete,
        aborted_transactions=info.aborted_transactions,
    )


def batch_view(batch: Any, slice_start: int, with_producer: bool = False) -> v.BatchView:
    """A decoded batch; `position` is in the segment file (slice start + position in slice).
    `with_producer` adds the header's producer fields (feature `producer_state`)."""
    producer = ((batch.producer_id, batch.producer_epoch, batch.base_sequence) if with_producer
                else (-1, -1, -1))
    decoded = list(batch.records())
    return v.BatchView(
        base_offset=batch.base_offset,
        last_offset=batch.last_offset,
        partition_leader_epoch=batch.partition_leader_epoch,
        max_timestamp=batch.max_timestamp,
        size_in_bytes=batch.size_in_bytes,
        position=slice_start + batch.position,
        records=tuple(record.to_value() for record in decoded),
        record_offsets=_record_offsets(batch, decoded),
        timestamp_type=batch.timestamp_type,
        producer_id=producer[0],
        producer_epoch=producer[1],
        base_sequence=producer[2],
        is_transactional=batch.is_transactional,
        is_control=batch.is_control_batch,
    )


def _record_offsets(batch: Any, decoded: list[Any]) -> tuple[int, ...] | None:
    """CLN-47: the records' offsets when cleaning left gaps in the batch, else None."""
    offsets = tuple(record.offset for record in decoded)
    if offsets == tuple(range(batch.base_offset, batch.last_offset + 1)):
        return None
    return offsets
