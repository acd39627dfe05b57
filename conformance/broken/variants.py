"""Implementation variants for allowed sets: Kafka's own choice, and one Kafka never makes.

`conformance/broken*.py` holds bugs the checker must catch. This module holds variants of
kafkalog's implementation that behave as Kafka does where kafkalog decides differently on purpose
(specs/log.md §17, §18): the checker must accept them (`conforms=True`). Next to each, a
look-alike that does something no Kafka version does, which the checker must reject
(`conforms=False`), so the allowed set is shown to be no wider than Kafka.

Patches are process-wide, like broken implementations: never run a variant and the real
implementation at the same time in one process.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kafkalog.conformance.errors import UnknownBrokenImplError
from kafkalog.impl.load.log_loader import LogLoader

_INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class Variant:
    """One implementation variant: what it patches, the rule it exercises, whether it conforms."""

    name: str
    rule: str
    summary: str
    owner: type
    attribute: str
    replacement: Any
    conforms: bool


def _recover_keeping_later_segments(self: LogLoader) -> None:
    """RCV-6 undone the way no Kafka does: recovery cuts the torn segment but leaves every later
    segment in the map, so the data after the cut stays readable past a hole."""
    unflushed = self.segments.values(self.recovery_point_checkpoint, _INT64_MAX)
    if unflushed:
        self.epoch_cache.truncate_from_end(self.recovery_point_checkpoint)
    for segment in unflushed:
        if self._recover_or_empty(segment) > 0:
            return


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("recovery_cut_deletes_async", "KL-ALLOW-5",
                "recovery's cut renames the later segments `.deleted` and deletes them after "
                "file_delete_delay_ms (Kafka's removeAndDeleteSegmentsAsync)",
                LogLoader, "defer_cut_deletion", True, conforms=True),
        Variant("recovery_cut_keeps_later_segments", "KL-ALLOW-5",
                "recovery's cut keeps the later segments readable (no Kafka version does)",
                LogLoader, "_recover_unflushed_segments", _recover_keeping_later_segments,
                conforms=False),
    )
}


@contextmanager
def patched_variant(name: str) -> Iterator[Variant]:
    """Install variant `name` for the duration of the block."""
    try:
        variant = VARIANTS[name]
    except KeyError:
        known = ", ".join(sorted(VARIANTS))
        raise UnknownBrokenImplError(
            f"unknown implementation variant {name!r} (known: {known})") from None
    original = vars(variant.owner)[variant.attribute]
    setattr(variant.owner, variant.attribute, variant.replacement)
    try:
        yield variant
    finally:
        setattr(variant.owner, variant.attribute, original)


def variant_names(conforming: bool) -> list[str]:
    """The variants the checker must accept (True) or reject (False)."""
    return sorted(n for n, v in VARIANTS.items() if v.conforms is conforming)
