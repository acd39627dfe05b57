"""kafkalog's implementation with Kafka's weaker fsync choices, checked against the model's
kafka crash mode (specs/log.md KL-CRASH-1, KL-CRASH-3; the GAP entries of specs/sources.md).

kafkalog's implementation is strict: truncation, recovery's cuts and the removal of producer
snapshots are durable before they are acknowledged. Kafka's are not. This variant puts Kafka's
choices back, all at once:

- GAP-1 / DUR-23: `truncate_to` renames the later segments `.deleted` lowest first and cuts the
  last one with no fsync of the files or the directory (`LocalLog.truncateTo`);
- GAP-4 / DUR-25: recovery neither fsyncs what it cut or rebuilt nor the directory;
- DUR-29: producer snapshot files are never followed by a directory fsync (their removal by a
  load, a retention pass or a truncation may be undone by a power loss).

It keeps the loader's sync of `.swap` files before it deletes what they replace: Kafka's loader
has none, but Kafka's cleaner and split flush a segment before it is renamed `.swap`, while the
checker's planted `swap_completed` leftovers are page cache.

`kafkalog check --crash-mode kafka` runs it against the model in kafka mode: its recovered states
must be members of the kafka-mode allowed set (the set is not too narrow), while the strict
model rejects them (the two modes differ; `tests/conformance/test_kafka_mode.py`). Kafka-mode
outcomes the model cannot express are not enumerated (KL-CRASH-3: overlapping segments after
appends, holes after an index-rebuild cut); a run that reaches one reports it as a divergence,
tagged with its name when it is a known gap (kafka_gaps.py `KAFKA_GAPS`, e.g.
`resurrected_batch_epoch`).

Patches are process-wide, like broken implementations: never run this variant and the real
implementation at the same time in one process.
"""

from __future__ import annotations

from typing import Any

from kafkalog.conformance.broken.base import Broken, Patch, apply, restore
from kafkalog.conformance.broken.crash import BROKEN_CRASH
from kafkalog.conformance.check.impl_sut import ImplSut
from kafkalog.impl.log.deletion import LogDeletion
from kafkalog.impl.producer.producer_state_manager import ProducerStateManager
from kafkalog.model import values as v

#: The name `--broken`/trace headers use for this variant (it selects the kafka crash mode).
KAFKA_DURABILITY = "kafka_durability"


def _no_directory_fsync(self: Any) -> None:
    """DUR-29: Kafka never fsyncs the directory after snapshot files change."""


_TRUNCATION = BROKEN_CRASH["truncation_not_durable"]  # GAP-1, DUR-23
_RECOVERY = BROKEN_CRASH["recovery_not_durable"]  # GAP-4, DUR-25

#: Kafka's fsync choices as one broken implementation: the two crash bugs that are Kafka's own
#: behaviour, and no directory fsync after snapshot files change (DUR-29).
KAFKA_FSYNC_CHOICES = Broken(
    KAFKA_DURABILITY, "GAP-1", "KL-CRASH-1", "Kafka's fsync choices",
    _TRUNCATION.owner, _TRUNCATION.attribute, _TRUNCATION.replacement,
    also=(Patch(_RECOVERY.owner, _RECOVERY.attribute, _RECOVERY.replacement),
          Patch(LogDeletion, "_snapshot_removals_durable", _no_directory_fsync),
          Patch(ProducerStateManager, "make_snapshots_durable", _no_directory_fsync)),
)

_originals: list[tuple[Any, str, Any]] = []
_users = 0


def install() -> None:
    """Put Kafka's fsync choices in (reference-counted)."""
    global _users
    if _users == 0:
        _originals.extend(apply(KAFKA_FSYNC_CHOICES))
    _users += 1


def uninstall() -> None:
    """Take them out again once the last user is gone."""
    global _users
    _users -= 1
    if _users == 0:
        restore(_originals)
        _originals.clear()


class KafkaDurabilitySut(ImplSut):
    """The in-process implementation with Kafka's fsync choices, held to the kafka crash mode."""

    crash_mode = "kafka"

    def __init__(self, config: v.LogConfig, now_ms: int = 0, log_start_offset: int = 0) -> None:
        install()
        self.name = f"kafkalog-impl variant={KAFKA_DURABILITY}"
        try:
            super().__init__(config, now_ms, log_start_offset)
        except BaseException:
            uninstall()
            raise

    def close(self) -> None:
        try:
            super().close()
        finally:
            uninstall()
