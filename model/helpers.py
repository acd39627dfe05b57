"""Small pure helpers over ints and tuples: the decisions the actions are built from.

Each helper states its contract as PEP 316 `pre:` / `post:` lines, which CrossHair checks
(tests/formal/). They take plain ints and tuples so a solver can reason about them; the actions in
`log.py` and friends only glue these together.
"""

from __future__ import annotations

from collections.abc import Sequence

INT32_MAX = 2**31 - 1
OFFSET_INDEX_ENTRY_SIZE = 8  # FMT-10
TIME_INDEX_ENTRY_SIZE = 12  # FMT-19
FILE_NAME_DIGITS = 20  # FMT-4


def clamp_high_watermark(hw: int, log_start_offset: int, log_end_offset: int) -> int:
    """LOG-5: the HW an update stores, clamped into [log start, LEO]. Spec: KL-HW-1.

    pre: 0 <= log_start_offset <= log_end_offset
    post: log_start_offset <= __return__ <= log_end_offset
    post: (log_start_offset <= hw <= log_end_offset) == (__return__ == hw)
    """
    if hw < log_start_offset:
        return log_start_offset
    if hw >= log_end_offset:
        return log_end_offset
    return hw


def floor_index(bases: Sequence[int], offset: int) -> int:
    """MAP-2 floorSegment: index of the largest base <= offset, or -1. Spec: KL-READ-1.

    pre: all(bases[i] < bases[i + 1] for i in range(len(bases) - 1))
    post: __return__ == -1 or bases[__return__] <= offset
    post: __return__ == len(bases) - 1 or bases[__return__ + 1] > offset
    """
    found = -1
    lo, hi = 0, len(bases) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if bases[mid] <= offset:
            found = mid
            lo = mid + 1
        else:
            hi = mid - 1
    return found


def higher_index(bases: Sequence[int], offset: int) -> int:
    """MAP-2 higherSegment: index of the smallest base > offset, or -1.

    pre: all(bases[i] < bases[i + 1] for i in range(len(bases) - 1))
    post: __return__ == -1 or bases[__return__] > offset
    post: __return__ <= 0 or bases[__return__ - 1] <= offset
    post: __return__ != -1 or all(b <= offset for b in bases)
    """
    index = floor_index(bases, offset) + 1
    return index if index < len(bases) else -1


def index_floor_position(keys: Sequence[int], positions: Sequence[int], target: int) -> int:
    """FMT-13 offset-index lookup: the position of the largest key <= target, else 0.

    pre: len(keys) == len(positions)
    pre: all(keys[i] < keys[i + 1] for i in range(len(keys) - 1))
    post: __return__ == 0 or __return__ in positions
    """
    slot = floor_index(keys, target)
    return positions[slot] if slot >= 0 else 0


def index_entries_after_truncation(keys: Sequence[int], offset: int) -> int:
    """FMT-15 / FMT-24: how many index entries survive `truncateTo(offset)`. Spec: KL-TRUNC-3.

    pre: all(keys[i] < keys[i + 1] for i in range(len(keys) - 1))
    post: 0 <= __return__ <= len(keys)
    post: all(k < offset for k in keys[:__return__])
    post: all(k >= offset for k in keys[__return__:])
    """
    slot = floor_index(keys, offset)
    if slot < 0:
        return 0
    return slot if keys[slot] == offset else slot + 1


def relative_offset_fits(offset: int, base_offset: int) -> bool:
    """FMT-11 / SEG-2: `offset - base` is storable as a relative offset in [0, Int.MAX].

    post: __return__ == (0 <= offset - base_offset <= 2147483647)
    """
    return 0 <= offset - base_offset <= INT32_MAX


def file_name_prefix(offset: int) -> str:
    """FMT-4: the base offset zero-padded to at least 20 digits.

    pre: offset >= 0
    post: len(__return__) >= 20 and int(__return__) == offset
    post: offset_from_file_name(_ + ".log") == offset
    """
    return str(offset).zfill(FILE_NAME_DIGITS)


def offset_from_file_name(name: str) -> int | None:
    """FMT-5: the decimal before the first `.`, or None when it is not a number (ERR-48).

    post: _ is None or _ >= 0
    post: _ is None or _ == int(name.split(".", 1)[0])
    post: _ is None or len(name.split(".", 1)[0]) != 20 or file_name_prefix(_) + name[20:] == name
    """
    prefix = name.split(".", 1)[0]
    if not prefix or not prefix.isascii() or not prefix.isdigit():
        return None
    return int(prefix)


def roll_jitter_limit(segment_jitter_ms: int, segment_ms: int) -> int:
    """SEG-8: Kafka draws the jitter in [0, limit): `min(segment_jitter_ms, segment_ms)`, or 1
    (only 0) when jitter is off. Spec: KL-ALLOW-2.

    pre: segment_jitter_ms >= 0 and segment_ms >= 1
    post: __return__ >= 1
    """
    return 1 if segment_jitter_ms == 0 else min(segment_jitter_ms, segment_ms)


def roll_jitter_ms(base_offset: int, segment_jitter_ms: int, segment_ms: int) -> int:
    """KL-ROLL-4: kafkalog's deterministic stand-in for SEG-8's random jitter.

    pre: base_offset >= 0 and segment_jitter_ms >= 0 and segment_ms >= 1
    post: __return__ == 0 or 0 <= __return__ < min(segment_jitter_ms, segment_ms)
    """
    if segment_jitter_ms == 0:
        return 0
    return base_offset % min(segment_jitter_ms, segment_ms)


def index_max_entries(segment_index_bytes: int, entry_size: int) -> int:
    """FMT-26: entries a freshly preallocated index file holds.

    pre: segment_index_bytes >= 0 and entry_size > 0
    post: __return__ * entry_size <= segment_index_bytes < (__return__ + 1) * entry_size
    """
    return segment_index_bytes // entry_size


def regained_capacity(segment_index_bytes: int, entry_size: int, entries: int) -> int:
    """REC-12, SEG-13: an index's capacity after a resize to `segment_index_bytes`, never below
    the entries it holds (an index recovery rebuilt may hold more than fit, KL-CRASH-5).

    pre: segment_index_bytes >= 0 and entry_size > 0 and entries >= 0
    post: __return__ >= entries
    post: __return__ >= index_max_entries(segment_index_bytes, entry_size)
    """
    return max(index_max_entries(segment_index_bytes, entry_size), entries)


def should_roll_for_size(size: int, messages_size: int, segment_bytes: int) -> bool:
    """SEG-6 (1): the subtraction form that avoids 32-bit overflow (KAFKA-1670). Spec: KL-ROLL-1.

    post: __return__ == (size + messages_size > segment_bytes)
    """
    return size > segment_bytes - messages_size


def time_waited_for_roll(
    now_ms: int, max_timestamp_in_messages: int, rolling_based_timestamp: int, created_ms: int
) -> int:
    """SEG-7: message-time based when the first batch has a timestamp, else wall-clock.

    post: rolling_based_timestamp < 0 or _ == max_timestamp_in_messages - rolling_based_timestamp
    post: rolling_based_timestamp >= 0 or _ == now_ms - created_ms
    """
    if rolling_based_timestamp >= 0:
        return max_timestamp_in_messages - rolling_based_timestamp
    return now_ms - created_ms


def should_roll_for_time(
    size: int, waited_ms: int, segment_ms: int, jitter_ms: int
) -> bool:
    """SEG-6 (2): only a non-empty segment rolls on time. Spec: KL-ROLL-2.

    post: __return__ == (size > 0 and waited_ms > segment_ms - jitter_ms)
    """
    return size > 0 and waited_ms > segment_ms - jitter_ms


def offset_index_full(entries: int, max_entries: int) -> bool:
    """SEG-6 (3) / FMT-14: the offset index holds no more entries.

    post: __return__ == (entries >= max_entries)
    """
    return entries >= max_entries


def time_index_full(entries: int, max_entries: int) -> bool:
    """SEG-6 (4) / FMT-21: the last time-index slot is reserved for the roll/close entry.

    post: __return__ == (entries >= max_entries - 1)
    """
    return entries >= max_entries - 1


def retention_time_breached(now_ms: int, largest_timestamp: int, retention_ms: int) -> bool:
    """LOG-36: a segment whose newest timestamp is older than retention.ms. Spec: KL-RET-5.

    post: __return__ == (retention_ms >= 0 and now_ms - largest_timestamp > retention_ms)
    """
    return retention_ms >= 0 and now_ms - largest_timestamp > retention_ms


def retention_size_deletable(sizes: Sequence[int], retention_bytes: int) -> int:
    """LOG-37: how many leading segments the stateful size predicate accepts. Spec: KL-RET-4.

    Counted without the HW bound and the walk's other stop conditions, which `deletable_prefix`
    applies; the predicate itself is evaluated oldest first and stops at its first refusal.

    pre: all(s >= 0 for s in sizes)
    post: 0 <= __return__ <= len(sizes)
    post: retention_bytes < 0 or sum(sizes) < retention_bytes or sum(sizes[_:]) >= retention_bytes
    post: _ == len(sizes) or retention_bytes < 0 or sum(sizes[_ + 1:]) < retention_bytes
    """
    total = sum(sizes)
    if retention_bytes < 0 or total < retention_bytes:
        return 0
    diff = total - retention_bytes
    count = 0
    for size in sizes:
        if diff - size < 0:
            break
        diff -= size
        count += 1
    return count


def deletable_prefix(
    upper_bounds: Sequence[int],
    sizes: Sequence[int],
    predicate_ok: Sequence[bool],
    high_watermark: int,
) -> int:
    """LOG-33 deletableSegments: the length of the deletable oldest-first prefix. Spec: KL-RET-2.

    `upper_bounds[i]` is the next segment's base (the LEO for the last one); `predicate_ok[i]` is
    the retention predicate for segment i. The walk stops at the first segment whose offsets are
    not all below the HW, that fails the predicate, or that is the last segment and empty.

    pre: len(upper_bounds) == len(sizes) == len(predicate_ok)
    post: 0 <= __return__ <= len(sizes)
    post: all(upper_bounds[i] <= high_watermark for i in range(__return__))
    post: len(sizes) == 0 or __return__ < len(sizes) or sizes[-1] != 0
    """
    count = 0
    last = len(sizes) - 1
    for i, upper in enumerate(upper_bounds):
        if high_watermark < upper or not predicate_ok[i]:
            break
        if i == last and sizes[i] == 0:
            break
        count += 1
    return count


def truncation_cut(last_offsets: Sequence[int], offset: int) -> int:
    """SEG-14: index of the first batch whose last offset >= offset (batches kept before it).

    Spec: KL-TRUNC-2.

    pre: all(last_offsets[i] < last_offsets[i + 1] for i in range(len(last_offsets) - 1))
    post: all(x < offset for x in last_offsets[:__return__])
    post: all(x >= offset for x in last_offsets[__return__:])
    """
    for i, last in enumerate(last_offsets):
        if last >= offset:
            return i
    return len(last_offsets)
