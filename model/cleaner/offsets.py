"""Pure integer helpers of the cleaner: policy, dirty range, eligibility, grouping (CLN-1..CLN-29).

Each takes plain ints and lists so that CrossHair checks their contracts and the Z3 tests run
them on symbolic integers (tests/formal/test_z3_compaction.py). Rules: KL-CLEAN-1..KL-CLEAN-5.
"""

from __future__ import annotations

from ..values import INT32_MAX

POLICIES = ("compact", "delete")


def policy_flags(policy: str) -> tuple[bool, bool] | None:
    """CLN-1: (compact, delete) of a comma-separated `cleanup.policy`; None if it is invalid
    (an unknown or repeated word). The empty policy sets neither. Spec: KL-CLEAN-1."""
    words = [w.strip() for w in policy.split(",")] if policy.strip() else []
    if any(w not in POLICIES for w in words) or len(set(words)) != len(words):
        return None
    return "compact" in words, "delete" in words


def first_dirty_offset(checkpoint: int, log_start: int, log_end: int) -> int:
    """CLN-15: the checkpoint (-1 = no entry), reset to the log start offset when it lies
    below it or above the LEO. Spec: KL-CLEAN-2.

    pre: 0 <= log_start <= log_end
    post: log_start <= __return__ <= log_end
    """
    if checkpoint < log_start or checkpoint > log_end:
        return log_start
    return checkpoint


def uncleanable_offset(first_dirty: int, last_stable: int, active_base: int,
                       lag_base: int) -> int:
    """CLN-16: max(first dirty, min(last stable offset, active base, lag base)); `lag_base` is
    -1 when `min.compaction.lag.ms` bounds nothing. Spec: KL-CLEAN-2.

    pre: lag_base >= -1
    post: __return__ >= first_dirty
    post: __return__ == first_dirty or __return__ <= min(last_stable, active_base)
    """
    bound = min(last_stable, active_base)
    if lag_base >= 0:
        bound = min(bound, lag_base)
    return max(first_dirty, bound)


def first_uncleanable_offset(bases: list[int], uncleanable: int) -> int:
    """CLN-17: the base of the segment holding `uncleanable` (the last base at or below it),
    unless that is the active (last) segment, whose base it is then. Spec: KL-CLEAN-2.

    pre: len(bases) >= 1
    pre: all(a < b for a, b in zip(bases, bases[1:]))
    post: __return__ in bases
    post: __return__ <= bases[-1]
    """
    found = bases[-1]
    for base in reversed(bases):
        found = base
        if base <= uncleanable:
            break
    return found


def dirty_ratio_eligible(clean_bytes: int, cleanable_bytes: int, min_ratio: float,
                         must_compact_now: bool) -> bool:
    """CLN-19: eligible iff forced with cleanable bytes, or cleanable / total > the minimum
    (Kafka's double arithmetic); nothing to clean is never eligible. Spec: KL-CLEAN-3.

    pre: clean_bytes >= 0 and cleanable_bytes >= 0
    pre: clean_bytes + cleanable_bytes < 2**63
    post: __return__ == False or cleanable_bytes > 0
    """
    total = clean_bytes + cleanable_bytes
    if total == 0 or cleanable_bytes == 0:
        return False
    if must_compact_now:
        return True
    return cleanable_bytes / float(total) > min_ratio


def group_segments(sizes: list[int], offset_index_bytes: list[int], time_index_bytes: list[int],
                   bases: list[int], first_uncleanable: int, max_size: int,
                   max_index_size: int) -> list[int]:
    """CLN-29 (BUG-C1..C4): the greedy grouping, as the lengths of consecutive groups. A group
    takes the next segment while the summed `.log`, offset-index and time-index sizes stay within
    `segment.bytes` / `segment.index.bytes` and the candidate is empty or its estimated last
    offset (the next base - 1, or `first_uncleanable` - 1 for the last) is within Int.MAX of
    the group's base. Spec: KL-CLEAN-5.

    pre: len(sizes) == len(offset_index_bytes) == len(time_index_bytes) == len(bases)
    post: sum(__return__) == len(bases)
    post: all(n >= 1 for n in __return__)
    """
    groups: list[int] = []
    i = 0
    while i < len(bases):
        log_size, offset_bytes, time_bytes = sizes[i], offset_index_bytes[i], time_index_bytes[i]
        j = i + 1
        while j < len(bases):
            estimated_last = (bases[j + 1] if j + 1 < len(bases) else first_uncleanable) - 1
            if (log_size + sizes[j] > max_size
                    or offset_bytes + offset_index_bytes[j] > max_index_size
                    or time_bytes + time_index_bytes[j] > max_index_size
                    or (sizes[j] > 0 and estimated_last - bases[i] > INT32_MAX)):
                break
            log_size += sizes[j]
            offset_bytes += offset_index_bytes[j]
            time_bytes += time_index_bytes[j]
            j += 1
        groups.append(j - i)
        i = j
    return groups


def must_compact_now(first_batch_timestamps: list[int], now_ms: int, max_lag_ms: int) -> bool:
    """CLN-18: some dirty non-active segment's first batch timestamp (values <= 0 ignored) is
    older than now - `max.compaction.lag.ms`. Spec: KL-CLEAN-3.

    post: __return__ == False or len(first_batch_timestamps) > 0
    """
    positive = [t for t in first_batch_timestamps if t > 0]
    return bool(positive) and min(positive) < now_ms - max_lag_ms


def require_compaction_config(policy: str, min_ratio: float, min_lag_ms: int,
                              max_lag_ms: int) -> str | None:
    """CLN-1..CLN-3: what is wrong with the compaction settings, or None: a policy outside
    KL-CLEAN-1, a ratio outside [0, 1], or a minimum lag above the maximum (Kafka's
    `InvalidConfigurationException`; the lags' own ranges are `bounds.CONFIG_BOUNDS`, checked
    before). Spec: KL-CLEAN-1.

    post: __return__ is None or len(__return__) > 0
    """
    if policy_flags(policy) is None:
        return f"cleanup.policy {policy!r} is not a list of distinct words from compact, delete"
    if not 0.0 <= min_ratio <= 1.0:
        return f"min.cleanable.dirty.ratio {min_ratio} is outside [0, 1]"
    if min_lag_ms > max_lag_ms:
        return (f"min.compaction.lag.ms {min_lag_ms} is above max.compaction.lag.ms "
                f"{max_lag_ms}")
    return None
