"""Range checks at the log's API boundary, mirroring `kafkalog.model.bounds` (KL-BOUND-1).

Kafka writes epochs as int32 and offsets, timestamps and clock readings as int64; a value
outside those widths would otherwise surface as a `struct.error` (or an `OverflowError` from the
file system) deep inside an append. These checks run first and raise `IllegalArgumentError`, the
type the model raises for the same input. A config is checked when a log is opened, as Kafka's
`LogConfig` parses it: each integer within its Java type, then its validator (KL-STATE-2).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kafkalog.impl.cleaner.config import validate_compaction_config
from kafkalog.model.errors import IllegalArgumentError
from kafkalog.model.values import LogConfig

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

#: (config, width of its Java type, its validator's minimum or None): `LogConfig.CONFIG`'s
#: INT/LONG definitions and `atLeast(n)` ranges. Kafka's `segment.index.bytes` minimum is 4;
#: below 12 every time index fails to open (ERR-1), so kafkalog refuses it up front.
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
    """IllegalArgumentError unless `value` fits Java's int."""
    if not INT32_MIN <= value <= INT32_MAX:
        raise IllegalArgumentError(f"{what} {value} is outside the int32 range", where=where)


def require_int64(value: int, what: str, where: str) -> None:
    """IllegalArgumentError unless `value` fits Java's long."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise IllegalArgumentError(f"{what} {value} is outside the int64 range", where=where)


def validate_config(config: LogConfig) -> None:
    """IllegalArgumentError for a config Kafka's `LogConfig` refuses (or kafkalog cannot index).

    `kafka_version` is checked by `kafkalog.impl.versions.check_profile`.
    """
    for name, bits, minimum in CONFIG_BOUNDS:
        value = getattr(config, name)
        (require_int32 if bits == 32 else require_int64)(value, name, "LogConfig")
        if minimum is not None and value < minimum:
            raise IllegalArgumentError(f"{name} must be >= {minimum}", where="LogConfig")
    validate_compaction_config(config)  # KL-CLEAN-1


def require_records(records: Iterable[Any], where: str) -> None:
    """Timestamps fit int64 and header keys encode as UTF-8 (no lone surrogates)."""
    for record in records:
        require_int64(record.timestamp, "timestamp", where)
        for header in getattr(record, "headers", ()):
            try:
                header.key.encode("utf-8")
            except UnicodeEncodeError:
                raise IllegalArgumentError(
                    f"header key {header.key!r} is not valid Unicode (lone surrogate)",
                    where=where) from None


def require_end_offset_fits(last_offset: int, where: str) -> None:
    """The log end offset after an append (last offset + 1) must fit a long."""
    if last_offset >= INT64_MAX:
        raise IllegalArgumentError(
            f"append would move the log end offset past Long.MAX (last offset {last_offset})",
            where=where)
