"""kafkalog's implementation with Kafka's weaker fsync choices, checked against the model's
kafka crash mode (specs/log.md KL-CRASH-1, KL-CRASH-3; crash-and-durability.md §5 GAP table).

kafkalog's implementation is strict: truncation, recovery's cuts and the removal of producer
snapshots are durable before they are acknowledged. Kafka's are not. This variant puts Kafka's
choices back, all at once:

- GAP-1 / DUR-23: `truncate_to` renames the later segments `.deleted` lowest first and cuts the
  last one with no fsync of the files or the directory (`LocalLog.truncateTo`);
- GAP-4 / DUR-25: recovery neither fsyncs what it cut or rebuilt nor the directory;
- DUR-29: producer snapshot files are never followed by a directory fsync (their removal by a
  load, a retention pass or a truncation may be undone by a power loss).

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

from kafkalog.conformance.broken.crash import _recovery_not_made_durable, _truncate_like_kafka
from kafkalog.conformance.check.impl_sut import ImplSut
from kafkalog.impl.load.log_loader import LogLoader
from kafkalog.impl.log.deletion import LogDeletion
from kafkalog.impl.log.local_log import LocalLog
from kafkalog.impl.producer.producer_state_manager import ProducerStateManager
from kafkalog.model import values as v

#: The name `--broken`/trace headers use for this variant (it selects the kafka crash mode).
KAFKA_DURABILITY = "kafka_durability"


def _no_directory_fsync(self: Any) -> None:
    """DUR-29: Kafka never fsyncs the directory after snapshot files change."""


PATCHES: tuple[tuple[type, str, Any], ...] = (
    (LocalLog, "truncate_to", _truncate_like_kafka),  # GAP-1, DUR-23
    (LogLoader, "_make_recovery_durable", _recovery_not_made_durable),  # GAP-4, DUR-25
    (LogDeletion, "_snapshot_removals_durable", _no_directory_fsync),  # DUR-29
    (ProducerStateManager, "make_snapshots_durable", _no_directory_fsync),  # DUR-29
)

_originals: list[tuple[type, str, Any]] = []
_users = 0


def install() -> None:
    """Put Kafka's fsync choices in (reference-counted)."""
    global _users
    if _users == 0:
        for owner, attribute, replacement in PATCHES:
            _originals.append((owner, attribute, vars(owner)[attribute]))
            setattr(owner, attribute, replacement)
    _users += 1


def uninstall() -> None:
    """Take them out again once the last user is gone."""
    global _users
    _users -= 1
    if _users == 0:
        while _originals:
            owner, attribute, original = _originals.pop()
            setattr(owner, attribute, original)


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
