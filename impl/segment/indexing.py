"""SEG-3's index decisions for an append, from batch header facts alone (no I/O).

`LogSegment.append` decides every offset- and time-index entry of an append first
(`index_decisions`) and then stores the offset-index entries in one bulk write; `Log` and the
segment check beforehand that the entries fit (`check_index_capacity`), so an append that would
overflow an index fails before anything is written (KL-APPEND-9).
"""

from __future__ import annotations

from kafkalog.impl.records.batch_scan import compiled_index_decisions
from kafkalog.impl.records.memory_records import BatchFacts
from kafkalog.model.errors import IllegalArgumentError

#: What `index_decisions` returns: offset-index offsets and positions, the time-index calls
#: (max timestamp, its offset), and the segment's counters after the append (bytes since the
#: last entry, max timestamp, its offset).
Decisions = tuple[list[int], list[int], list[tuple[int, int]], int, int, int]


def index_decisions(batches: list[BatchFacts], position: int, interval: int, since: int,
                    max_ts: int, max_off: int) -> Decisions:
    """SEG-3 [TRUNK] over `batches` appended at `position`: an offset-index entry (the batch's
    last offset, its start) for each batch that finds more than `interval` bytes since the last
    entry, and with it a time-index call for the max timestamp so far, made only when the max
    changed since the previous call (repeating it is a no-op, FMT-22). O(batches), pure: the
    compiled twin when built (None from it: integers beyond int64, the reference decides).
    """
    if compiled_index_decisions is not None:
        decided = compiled_index_decisions(batches, position, interval, since, max_ts, max_off)
        if decided is not None:
            return decided  # type: ignore[no-any-return]
    return py_index_decisions(batches, position, interval, since, max_ts, max_off)


def py_index_decisions(batches: list[BatchFacts], position: int, interval: int, since: int,
                       max_ts: int, max_off: int) -> Decisions:
    """`index_decisions` in Python: the reference of impl/records/_scan_append.c's twin."""
    offsets: list[int] = []
    positions: list[int] = []
    timed: list[tuple[int, int]] = []
    timed_ts, timed_off = None, None  # the last time-index call's arguments
    for _, size, base, delta, _, batch_max_ts, _, _ in batches:
        if batch_max_ts > max_ts:
            max_ts, max_off = batch_max_ts, base + delta
        if since > interval:
            offsets.append(base + delta)
            positions.append(position)
            if max_ts != timed_ts or max_off != timed_off:
                timed_ts, timed_off = max_ts, max_off
                timed.append((max_ts, max_off))
            since = 0
        position += size
        since += size
    return offsets, positions, timed, since, max_ts, max_off


def append_unit(batches: list[BatchFacts]) -> list[BatchFacts]:
    """SEG-4 (Kafka before 4.0, KL-VERSION-4): the whole append as one index unit, keyed by its
    last offset, sized by all its bytes, carrying its max timestamp. The unit's max-timestamp
    offset (the last offset of the first batch reaching the max) is `append_unit_max`'s."""
    last = batches[-1]
    max_ts = max(b[5] for b in batches)
    return [(last[0], sum(b[1] for b in batches), last[2], last[3], last[4], max_ts, last[6],
             last[7])]


def append_unit_max(batches: list[BatchFacts]) -> tuple[int, int]:
    """(max timestamp, last offset of the first batch whose max timestamp is strictly greater
    than every earlier one), from (-1, -1): what Kafka before 4.0 hands `LogSegment.append`."""
    max_ts, max_off = -1, -1
    for _, _, base, delta, _, batch_max_ts, _, _ in batches:
        if batch_max_ts > max_ts:
            max_ts, max_off = batch_max_ts, base + delta
    return max_ts, max_off


def per_append_decisions(batches: list[BatchFacts], position: int, interval: int, since: int,
                         max_ts: int, max_off: int, reported: int | None = None) -> Decisions:
    """SEG-4 (Kafka before 4.0, KL-VERSION-4): one decision for the whole append at `position`:
    the max so far takes the append's (max timestamp, its offset) when greater; then, when more
    than `interval` bytes came since the last entry, one offset-index entry (the append's last
    offset, its first batch's position) and a time-index call for the max so far. `reported` is
    the offset the append's result names (KL-VERSION-2), when the caller knows it."""
    unit_ts, unit_off = append_unit_max(batches)
    if reported is not None:
        unit_off = reported
    if unit_ts > max_ts:
        max_ts, max_off = unit_ts, unit_off
    offsets: list[int] = []
    positions: list[int] = []
    timed: list[tuple[int, int]] = []
    if since > interval:
        last = batches[-1]
        offsets, positions, timed = [last[2] + last[3]], [position], [(max_ts, max_off)]
        since = 0
    return offsets, positions, timed, since + sum(b[1] for b in batches), max_ts, max_off


def check_index_capacity(
    batches: list[BatchFacts],
    index_interval_bytes: int,
    bytes_since_last_index_entry: int,
    max_timestamp: int,
    offset_index: tuple[int, int],
    time_index: tuple[int, int, int],
    where: str,
) -> None:
    """Replay SEG-3's index decisions for `batches`; raise if an index would be full (ERR-3/7).

    `offset_index` is (entries, max entries); `time_index` is (entries, max entries, last
    timestamp). `batches` are `BatchFacts` (memory_records). Pure, O(batches) at worst.
    """
    since, max_ts = bytes_since_last_index_entry, max_timestamp
    off_entries, off_max = offset_index
    time_entries, time_max, last_ts = time_index
    n = len(batches)
    # Each batch adds at most one entry per index, so with room for n more nothing can fail.
    if off_entries + n <= off_max and time_entries + n < time_max:
        return
    for _, size, _, _, _, batch_max_ts, _, _ in batches:
        max_ts = max(max_ts, batch_max_ts)
        if since > index_interval_bytes:
            if off_entries >= off_max:
                raise IllegalArgumentError(
                    f"Attempt to append to a full index (size = {off_entries})", where=where)
            if time_entries >= time_max - 1:
                raise IllegalArgumentError(
                    f"Attempt to append to a full time index (size = {time_entries})",
                    where=where)
            off_entries += 1
            if max_ts > last_ts:
                time_entries, last_ts = time_entries + 1, max_ts
            since = 0
        since += size
