"""Range checks at the action boundary: Kafka's integer widths and UTF-8 header keys.

Kafka stores epochs as int32 and offsets, timestamps and clock readings as int64 (FMT-45,
FMT-49); a value outside those widths cannot be written, so every action rejects it with an
`IllegalArgumentError` before any other check (KL-BOUND-1). A config value is held to the width of
its Java type in Kafka's `LogConfig` (`INT` or `LONG`) the same way. The implementation mirrors
these checks in `kafkalog.impl.bounds`, so both sides answer the same error type for the same
input.
"""

from __future__ import annotations

from collections.abc import Iterable

from .errors import IllegalArgumentError
from .values import LogConfig, Record

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

#: Each integer config: the width of its Java type and the minimum of its validator (None: no
#: validator). Kafka's `LogConfig.CONFIG` defines `segment.bytes`, `segment.index.bytes`,
#: `index.interval.bytes` and `max.message.bytes` as INT, and `segment.ms`, `segment.jitter.ms`,
#: `retention.ms`, `retention.bytes`, `file.delete.delay.ms`, `min.compaction.lag.ms`,
#: `max.compaction.lag.ms` and `delete.retention.ms` as LONG, with `atLeast(n)` ranges; the
#: broker's `producer.id.expiration.ms` and `producer.id.expiration.check.interval.ms` are INT,
#: `atLeast(1)`. Kafka's `segment.index.bytes` minimum is 4, but below 12 every time
#: index fails to open (ERR-1), so kafkalog refuses those up front (KL-STATE-2).
CONFIG_BOUNDS: tuple[tuple[str, int, int | None], ...] = (
    ("segment_bytes", 32, 14),
    ("segment_ms", 64, 1),
    ("segment_jitter_ms", 64, 0),
    ("index_interval_bytes", 32, 0),
    ("segment_index_bytes", 32, 12),
    ("retention_ms", 64, -1),
    ("retention_bytes", 64, None),
    ("max_message_bytes", 32, 0),
    ("file_delete_delay_ms", 64, 0),
    ("producer_id_expiration_ms", 32, 1),
    ("producer_id_expiration_check_interval_ms", 32, 1),
    ("min_compaction_lag_ms", 64, 0),
    ("max_compaction_lag_ms", 64, 1),
    ("delete_retention_ms", 64, 0),
)


def require_int32(value: int, what: str, where: str) -> None:
    """IllegalArgumentError unless `value` fits Java's int. Spec: KL-BOUND-1."""
    if not INT32_MIN <= value <= INT32_MAX:
        raise IllegalArgumentError(f"{what} {value} is outside the int32 range", where=where)


def require_int64(value: int, what: str, where: str) -> None:
    """IllegalArgumentError unless `value` fits Java's long. Spec: KL-BOUND-1."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise IllegalArgumentError(f"{what} {value} is outside the int64 range", where=where)


def require_config(config: LogConfig) -> None:
    """IllegalArgumentError for an integer config outside its Java type (KL-BOUND-1) or below
    its validator's minimum (KL-STATE-2), checked in that order, field by field."""
    for name, bits, minimum in CONFIG_BOUNDS:
        value = getattr(config, name)
        (require_int32 if bits == 32 else require_int64)(value, name, "LogConfig")
        if minimum is not None and value < minimum:
            raise IllegalArgumentError(f"{name} must be >= {minimum}", where="LogConfig")


def require_records(records: Iterable[Record], where: str) -> None:
    """Timestamps fit int64 and header keys encode as UTF-8 (no lone surrogates). KL-BOUND-1."""
    for record in records:
        require_int64(record.timestamp, "timestamp", where)
        for header in record.headers:
            try:
                header.key.encode("utf-8")
            except UnicodeEncodeError:
                raise IllegalArgumentError(
                    f"header key {header.key!r} is not valid Unicode (lone surrogate)",
                    where=where) from None


def require_end_offset_fits(last_offset: int, where: str) -> None:
    """The log end offset after an append (last offset + 1) must fit a long. KL-BOUND-1."""
    if last_offset >= INT64_MAX:
        raise IllegalArgumentError(
            f"append would move the log end offset past Long.MAX (last offset {last_offset})",
            where=where)
