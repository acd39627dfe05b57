"""Range checks at the action boundary: Kafka's integer widths and UTF-8 header keys.

Kafka stores epochs as int32 and offsets, timestamps and clock readings as int64 (FMT-45,
FMT-49); a value outside those widths cannot be written, so every action rejects it with an
`IllegalArgumentError` before any other check (KL-BOUND-1). The implementation mirrors these
checks in `kafkalog.impl.bounds`, so both sides answer the same error type for the same input.
"""

from __future__ import annotations

from collections.abc import Iterable

from .errors import IllegalArgumentError
from .values import Record

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def require_int32(value: int, what: str, where: str) -> None:
    """IllegalArgumentError unless `value` fits Java's int. Spec: KL-BOUND-1."""
    if not INT32_MIN <= value <= INT32_MAX:
        raise IllegalArgumentError(f"{what} {value} is outside the int32 range", where=where)


def require_int64(value: int, what: str, where: str) -> None:
    """IllegalArgumentError unless `value` fits Java's long. Spec: KL-BOUND-1."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise IllegalArgumentError(f"{what} {value} is outside the int64 range", where=where)


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
