"""Compaction settings (CLN-1..CLN-3), checked when a log is opened; no other imports, so
`kafkalog.impl.bounds` can use it."""

from __future__ import annotations

from kafkalog.model.errors import IllegalArgumentError
from kafkalog.model.values import LogConfig


def policy_flags(policy: str) -> tuple[bool, bool] | None:
    """CLN-1: (compact, delete); None for an unknown or repeated word; empty sets neither."""
    words = [w.strip() for w in policy.split(",")] if policy.strip() else []
    if any(w not in ("compact", "delete") for w in words) or len(set(words)) != len(words):
        return None
    return "compact" in words, "delete" in words


def validate_compaction_config(config: LogConfig) -> None:
    """CLN-1..CLN-3: IllegalArgumentError for a policy or ratio Kafka's `LogConfig` refuses, or
    a minimum lag above the maximum (the lags' own ranges are `CONFIG_BOUNDS`, checked first)."""
    problem = None
    if policy_flags(config.cleanup_policy) is None:
        problem = f"cleanup.policy {config.cleanup_policy!r} is not a list of compact, delete"
    elif not 0.0 <= config.min_cleanable_dirty_ratio <= 1.0:
        problem = f"min.cleanable.dirty.ratio {config.min_cleanable_dirty_ratio} not in [0, 1]"
    elif config.min_compaction_lag_ms > config.max_compaction_lag_ms:
        problem = "min.compaction.lag.ms is above max.compaction.lag.ms"
    if problem is not None:
        raise IllegalArgumentError(problem, where="LogConfig")


def is_compacted(config: LogConfig) -> bool:
    """CLN-1: the policy contains `compact` (the cleaner takes the log)."""
    flags = policy_flags(config.cleanup_policy)
    return flags is not None and flags[0]


def deletes(config: LogConfig) -> bool:
    """CLN-1, LOG-32: the policy contains `delete` (size and time retention run)."""
    flags = policy_flags(config.cleanup_policy)
    return flags is None or flags[1]
