"""Compacted logs as generated runs: the `compact` family and its machine.

`CompactLogMachine` is the transaction machine (conformance/gen/transactions.py) on a log whose
`cleanup.policy` is `compact`: every record it writes carries a key from a small key space (so
compaction has duplicates to remove), some are tombstones, and a `clean` rule runs a cleaning
pass (specs/log.md KL-CLEAN-*) between appends, rolls, HW moves, truncations, clock steps and
reopens. A keyless record still reaches the log now and then through the plain rules, which
both sides must refuse (KL-CLEAN-12). Crash steps run in both crash modes, after and inside
a pass (KL-CRASH-15, `LogMachine.crash_enabled`).
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule
from kafkalog.conformance.gen.cleaning_scenarios import (
    KEYS,
    CleaningScenarios,
    cleans,
    scenario_rule,
)
from kafkalog.conformance.gen.producers import PRODUCER_BASE, PRODUCERS
from kafkalog.conformance.gen.transactions import TxnLogMachine, _uses_txn
from kafkalog.model import values as v

#: Config families with compaction (conformance/gen/configs.py registers them). A ratio of 0
#: makes any dirty segment eligible; tombstones outlive a pass by two seconds of clock.
COMPACT_FAMILIES: dict[str, v.LogConfig] = {
    "compact": replace(PRODUCER_BASE, segment_bytes=500, cleanup_policy="compact",
                       min_cleanable_dirty_ratio=0.0, delete_retention_ms=2_000),
}


def is_compact_config(config: v.LogConfig) -> bool:
    """True for the configs of the compaction families, under any Kafka version profile (a
    campaign rotates the profiles; `--kafka-version`, `--kafka`)."""
    return any(replace(config, kafka_version=c.kafka_version) == c
               for c in COMPACT_FAMILIES.values())


class CompactLogMachine(CleaningScenarios, TxnLogMachine):
    """TxnLogMachine with keyed records, tombstones and cleaning passes, and the cleaner's
    scenarios (cleaning_scenarios.py)."""

    key_cursor = 0
    # The transaction family's aborted-read scenario and the producers' crash at far offsets and
    # overlapping replicated batches are not drawn here: they are those families', and this
    # machine's seeds keep their cleaning passes (the cleaner zoo pins them).
    reads_across_aborts = None
    crash_at_far_offsets = None
    replicate_overlapping_batches = None
    # Three copies of the rule that runs one of the cleaner's scenarios (cleaning_scenarios.py).
    cleaning_scenario = scenario_rule(0)
    cleaning_scenario_1 = scenario_rule(1)
    cleaning_scenario_2 = scenario_rule(2)
    cleaning_scenario_3 = scenario_rule(3)
    cleaning_scenario_4 = scenario_rule(4)
    cleaning_scenario_5 = scenario_rule(5)

    def _next_key(self) -> bytes:
        self.key_cursor = (self.key_cursor + 1) % KEYS
        return b"k%d" % self.key_cursor

    def _records(self, count: int, stamp: str) -> tuple[v.Record, ...]:
        """The producers' records, keyed round-robin over the key space."""
        return tuple(replace(r, key=self._next_key()) for r in super()._records(count, stamp))

    def records(self, specs: list[tuple[str, int, str, int, int]]) -> tuple[v.Record, ...]:
        """The plain rules' records, keyed (shape 2 keeps its header and stays keyless, so
        some appends meet KL-CLEAN-12)."""
        return tuple(r if r.headers else replace(r, key=self._next_key())
                     for r in super().records(specs))

    @rule(key=st.integers(0, KEYS - 1), tombstone=st.booleans())
    def put(self, key: int, tombstone: bool) -> None:
        """One keyed record (or tombstone) at the current clock, in the latest epoch."""
        record = v.Record(b"k%d" % key, None if tombstone else b"v", self.now_ms)
        self.do("append_as_leader", records=(record,), leader_epoch=self.epoch(("latest", 0, 0)))

    @precondition(cleans)
    @rule()
    def clean(self) -> None:
        """One cleaning pass (KL-CLEAN-2..11)."""
        self.do("clean")

    @precondition(cleans)
    @rule()
    def seal_and_clean(self) -> None:
        """Roll, move the HW to the LEO and clean: everything written so far is cleanable."""
        self.do("roll")
        self.do("update_high_watermark", offset=self.view().log_end_offset)
        self.do("clean")

    @precondition(cleans)
    @rule(key=st.integers(0, KEYS - 1))
    def tombstone_then_clean(self, key: int) -> None:
        """A tombstone sealed and cleaned: the pass keeps it and stamps its batch with a delete
        horizon (KL-CLEAN-8), which a later pass past the horizon honours."""
        self.put(key, True)
        self.seal_and_clean()

    @precondition(lambda self: cleans(self) and _uses_txn(self))
    @rule(index=PRODUCERS)
    def clean_over_aborted_txn(self, index: int) -> None:
        """An aborted transaction, then a pass over it: its data goes, its `.txnindex` entry
        stays while its marker does (KL-CLEAN-7)."""
        self.txn_produce(index, 2)
        self.end_txn(index, False, 0, 0)
        self.seal_and_clean()

    @precondition(cleans)
    @rule(back=st.integers(1, 2))
    def truncate_below_checkpoint(self, back: int) -> None:
        """A pass, then a truncation `back` offsets below the cleaner checkpoint it wrote: the
        checkpoint comes down to the truncation offset (KL-CLEAN-13)."""
        self.seal_and_clean()
        view = self.view()
        checkpoint = view.cleaner_checkpoint
        if checkpoint is not None and checkpoint > view.log_start_offset:
            self.do("truncate_to", offset=max(view.log_start_offset, checkpoint - back))
