"""Symbolic arguments ("picks") and how they become concrete values against the model's state.

The machine draws small symbols such as `("log_end", 0, -1)` (one below the log end offset) or
`("fill_segment", 0)` (a record that makes the batch end exactly at `segment_bytes`) and resolves
them against the model's current view. Shrinking then moves toward the first anchor with a zero
delta, and arguments stay meaningful as the log changes: offsets come from the log's own anchors
and from a pool of values seen in earlier results, sizes cluster at segment and index boundaries.
"""

from __future__ import annotations

from kafkalog.model import values as v

OFFSET_ANCHORS = ("zero", "log_end", "high_watermark", "log_start", "segment_base", "seen",
                  "recovery_point")
EPOCH_ANCHORS = ("latest", "seen", "undefined", "first")
TIMESTAMP_ANCHORS = ("now", "seen", "latest", "earliest", "max_timestamp", "old", "future")
SIZE_MODES = ("small", "fill_segment", "index_interval", "max_message", "segment_bytes", "empty",
              "null_value")
CLOCK_STEPS = ("one", "delete_delay", "segment_ms", "retention_ms", "minute")
MAX_BYTES_MODES = ("large", "one_batch", "one_byte", "zero", "segment")

OffsetPick = tuple[str, int, int]  # (anchor, index into a list anchor, delta)


def resolve_offset(pick: OffsetPick, view: v.LogStateView, seen: list[int]) -> int:
    """The concrete offset a pick names in `view` (may be negative or past the end on purpose)."""
    anchor, index, delta = pick
    if anchor == "zero":
        base = 0
    elif anchor == "log_end":
        base = view.log_end_offset
    elif anchor == "high_watermark":
        base = view.high_watermark
    elif anchor == "log_start":
        base = view.log_start_offset
    elif anchor == "recovery_point":
        base = view.recovery_point
    elif anchor == "segment_base":
        base = view.segments[index % len(view.segments)].base_offset
    else:
        base = seen[index % len(seen)] if seen else view.log_end_offset
    return base + delta


#: One past Java's int: an epoch every side refuses with IllegalArgumentError (KL-BOUND-1).
BEYOND_INT32 = 2**31


def resolve_query_epoch(pick: tuple[str, int, int], view: v.LogStateView, seen: list[int]) -> int:
    """`resolve_epoch` for a query, except that UNDEFINED drawn with delta 2 (a delta UNDEFINED
    otherwise ignores) asks one past Java's int. A query changes no state and the draw is the
    same, so every run keeps the steps it had and only that answer becomes the refusal."""
    anchor, _, delta = pick
    if anchor == "undefined" and delta == 2:
        return BEYOND_INT32
    return resolve_epoch(pick, view, seen)


def resolve_epoch(pick: tuple[str, int, int], view: v.LogStateView, seen: list[int]) -> int:
    """A leader epoch near the latest known one, a seen one, the first, or UNDEFINED (-1)."""
    anchor, index, delta = pick
    entries = view.epoch_entries
    if anchor == "undefined":
        return v.UNDEFINED_EPOCH
    if anchor == "first":
        base = entries[0].epoch if entries else 0
    elif anchor == "seen" and seen:
        base = seen[index % len(seen)]
    else:
        base = entries[-1].epoch if entries else 0
    return max(0, base + delta)


def resolve_timestamp(pick: tuple[str, int, int], now_ms: int, config: v.LogConfig,
                      seen: list[int]) -> int:
    """A fetch-by-timestamp target: a special value (-1/-2/-3) or a time near interesting ones."""
    anchor, index, delta = pick
    special = {"latest": v.LATEST_TIMESTAMP, "earliest": v.EARLIEST_TIMESTAMP,
               "max_timestamp": v.MAX_TIMESTAMP}
    if anchor in special:
        return special[anchor]
    return max(0, record_timestamp(anchor, index, delta, now_ms, config, seen))


def record_timestamp(anchor: str, index: int, delta: int, now_ms: int, config: v.LogConfig,
                     seen: list[int]) -> int:
    """A record's CreateTime: now, a seen time, older than retention, in the future, or none.

    "none" is NO_TIMESTAMP (-1, FMT-22): time-based rolls then fall back to the segment's
    creation time (SEG-7), the path of BUG-18.
    """
    if anchor == "none":
        return v.NO_TIMESTAMP
    if anchor == "seen" and seen:
        # Never below 0: a producer cannot send a timestamp below -1 (the batch builder rejects
        # it before the log sees it), and -1 is the "none" anchor.
        return max(0, seen[index % len(seen)] + delta)
    if anchor == "old":
        retention = config.retention_ms if config.retention_ms > 0 else 60_000
        return max(0, now_ms - retention - 1 + delta)
    if anchor == "future":
        return now_ms + 1_000 + delta
    return max(0, now_ms + delta)


def clock_step(name: str, delta: int, config: v.LogConfig) -> int:
    """Milliseconds to advance: one tick or just past a configured delay."""
    base = {
        "one": 1,
        "delete_delay": config.file_delete_delay_ms,
        "segment_ms": config.segment_ms,
        "retention_ms": config.retention_ms if config.retention_ms > 0 else 60_000,
        "minute": 60_000,
    }[name]
    return max(0, base + delta)


def max_bytes(mode: str, delta: int, config: v.LogConfig) -> int:
    """A read's max_bytes: unlimited-ish, about one batch, one byte, zero, or a segment."""
    base = {"large": 1 << 20, "one_batch": 72, "one_byte": 1, "zero": 0,
            "segment": config.segment_bytes}[mode]
    return max(0, base + delta)


# --- record batch sizes (FMT-49), to aim batches at segment and index boundaries ---------------

BATCH_OVERHEAD = 61  # v2 batch header bytes (FMT-45)


def varint_size(value: int) -> int:
    """Bytes of a zig-zag varint (FMT-48); varlongs use the same encoding."""
    encoded = (value << 1) ^ (value >> 63)
    size = 1
    while encoded >= 0x80:
        encoded >>= 7
        size += 1
    return size


def record_size(record: v.Record, offset_delta: int, base_timestamp: int) -> int:
    """Bytes of one v2 record including its length prefix (FMT-49)."""
    body = 1 + varint_size(record.timestamp - base_timestamp) + varint_size(offset_delta)
    body += _bytes_size(record.key) + _bytes_size(record.value) + varint_size(len(record.headers))
    for header in record.headers:
        key = header.key.encode("utf-8")
        body += varint_size(len(key)) + len(key) + _bytes_size(header.value)
    return varint_size(body) + body


def batch_size(records: tuple[v.Record, ...]) -> int:
    """Bytes of one uncompressed v2 batch holding `records` (72 for one 4-byte value)."""
    if not records:
        return 0
    base = records[0].timestamp
    return BATCH_OVERHEAD + sum(record_size(r, i, base) for i, r in enumerate(records))


def _bytes_size(data: bytes | None) -> int:
    return 1 if data is None else varint_size(len(data)) + len(data)


def fit_value(records: list[v.Record], target: int) -> bytes:
    """A value for the last record so the batch is as close to `target` bytes as possible.

    The length varint may grow by a byte as the value grows, so the search corrects once.
    """
    last = records[-1]
    length = 0
    for _ in range(3):
        trial = (*records[:-1], v.Record(last.key, b"x" * length, last.timestamp, last.headers))
        gap = target - batch_size(trial)
        if gap == 0:
            break
        length = max(0, length + gap)
    return b"x" * length


def target_size(mode: str, delta: int, view: v.LogStateView, config: v.LogConfig) -> int | None:
    """The batch size a size mode aims at (at most 2 MiB), or None for modes without a target."""
    size = _target_size(mode, delta, view, config)
    return None if size is None else min(size, MAX_TARGET_BYTES)


MAX_TARGET_BYTES = 2 << 20  # a huge configured segment must not make the machine allocate it


def _target_size(mode: str, delta: int, view: v.LogStateView, config: v.LogConfig) -> int | None:
    if mode == "fill_segment":
        room = config.segment_bytes - view.segments[-1].size_in_bytes
        return max(BATCH_OVERHEAD + 7, room + delta)
    if mode == "index_interval":
        return max(BATCH_OVERHEAD + 7, config.index_interval_bytes + delta)
    if mode == "max_message":
        return config.max_message_bytes + delta
    if mode == "segment_bytes":
        return config.segment_bytes + delta
    return None
