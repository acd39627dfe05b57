"""Scenario rules of the compaction machine: the states where Kafka's cleaner went wrong.

Each rule is a short sequence that ends in a cleaning pass over one of the situations the
cleaner bugs of Kafka's history needed (kafka-log-compaction.md BUG-Cn): nothing cleanable
while a transaction holds the LSO, a gap between the last batch and the first uncleanable
offset, an HW inside the active segment, a log restarted above the cleaner checkpoint, a
segment and a batch more than Int.MAX offsets apart, tombstones and markers before and past
their delete horizon, a transaction over a roll or over a full segment. A random run meets each
only now and then; these make the few compacted runs of a default `check` meet them all
(docs/checker.md). `CompactLogMachine` (compaction.py) mixes them in.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule
from kafkalog.conformance.gen.producers import PRODUCERS
from kafkalog.model import values as v

INT32_MAX = 2**31 - 1
KEYS = 4  # the compaction machine's key space: b"k0" .. b"k3" (few keys, many duplicates)


def cleans(machine: Any) -> bool:
    """Whether the implementation under test offers the `clean` action (KL-CLEAN-2)."""
    return "clean" in machine.session.features


def _cleans_txns(machine: Any) -> bool:
    return cleans(machine) and "transactions" in machine.session.features


class CleaningScenarios:
    """Rules mixed into the compaction machine; they use its `put`, `seal_and_clean`,
    `txn_produce`, `end_txn` and `do`."""

    put: Any
    seal_and_clean: Any
    txn_produce: Any
    end_txn: Any
    do: Any
    view: Any
    epoch: Any
    config: v.LogConfig
    now_ms: int

    @precondition(_cleans_txns)
    @rule(index=PRODUCERS, key=st.integers(0, KEYS - 1))
    def clean_under_open_txn(self, index: int, key: int) -> None:
        """A transaction open at the first dirty offset, the HW at the LEO, a pass: the LSO
        leaves nothing cleanable, so the pass does nothing (KL-CLEAN-2, BUG-C8)."""
        self.txn_produce(index, 1)
        self.put(key, False)
        self.do("update_high_watermark", offset=self.view().log_end_offset)
        self.do("clean")

    @precondition(cleans)
    @rule(key=st.integers(0, KEYS - 1), cut=st.integers(1, 2))
    def clean_before_a_gap(self, key: int, cut: int) -> None:
        """A keyed record, a batch of three, a truncation `cut` offsets below the LEO (inside
        the batch: the whole batch goes and the LEO stays at the target, a gap the segment ends
        in), a roll, the HW there and a pass: the offset map covers the gap up to the first
        uncleanable offset (KL-CLEAN-4, BUG-C7)."""
        self.put(key, False)
        records = tuple(v.Record(b"k%d" % ((key + n) % KEYS), b"v", self.now_ms)
                        for n in range(3))
        self.do("append_as_leader", records=records, leader_epoch=self.epoch(("latest", 0, 0)))
        self.do("truncate_to", offset=self.view().log_end_offset - cut)
        self.do("roll")
        self.do("update_high_watermark", offset=self.view().log_end_offset)
        self.do("clean")

    @precondition(cleans)
    @rule(key=st.integers(0, KEYS - 1), more=st.integers(1, 2))
    def clean_with_hw_in_active(self, key: int, more: int) -> None:
        """Records, a roll, `more` records in the new active segment and the HW at the LEO: the
        pass ends at the active base, and so does the checkpoint it writes, not at the LSO
        above it (KL-CLEAN-11, CLN-22)."""
        self.put(key, False)
        self.put(key, True)
        self.do("roll")
        for n in range(more):
            self.put((key + n) % KEYS, False)
        self.do("update_high_watermark", offset=self.view().log_end_offset)
        self.do("clean")

    @precondition(cleans)
    @rule(key=st.integers(0, KEYS - 1), above=st.integers(1, 3))
    def restart_above_checkpoint(self, key: int, above: int) -> None:
        """A pass, then the log restarted `above` offsets past its end (a follower taking its
        leader's log start) and another pass: the checkpoint below the new log start is reset
        and written (KL-CLEAN-2, BUG-C10)."""
        self.put(key, False)
        self.seal_and_clean()
        self.do("truncate_fully_and_start_at", offset=self.view().log_end_offset + above)
        self.do("clean")

    @precondition(cleans)
    @rule(key=st.integers(0, KEYS - 1), first=st.booleans(), past=st.integers(1, 3))
    def clean_across_int_max(self, key: int, first: bool, past: int) -> None:
        """A keyed record or none, a roll, then a follower batch `past` offsets beyond Int.MAX
        above the LEO (an overflow roll or a batch alone in its segment), sealed and cleaned: no
        group spans more than Int.MAX offsets, and an empty segment still joins its
        neighbour's group (KL-CLEAN-5, BUG-C1, BUG-C3)."""
        if first:
            self.put(key, False)
            self.do("roll")
        base = self.view().log_end_offset + INT32_MAX + past
        record = v.Record(b"k%d" % key, b"v", self.now_ms)
        batch = v.BatchSpec(base, self.epoch(("latest", 0, 0)), (record,))
        self.do("append_as_follower", batches=(batch,), leader_epoch=None)
        self.seal_and_clean()

    @precondition(cleans)
    @rule(key=st.integers(0, KEYS - 1), aged=st.booleans())
    def tombstone_past_horizon(self, key: int, aged: bool) -> None:
        """A tombstone (written `aged`: its timestamp already older than the delete retention)
        sealed and cleaned, so the pass stamps its horizon and keeps it; then the clock past
        the horizon and another pass, which removes it (KL-CLEAN-8, BUG-C12, BUG-C13)."""
        self.put(key, True)
        if aged:
            self.do("advance_clock", ms=2 * self.config.delete_retention_ms + 1)
        self.seal_and_clean()
        self.do("advance_clock", ms=self.config.delete_retention_ms + 1)
        self.put((key + 1) % KEYS, False)
        self.seal_and_clean()

    @precondition(_cleans_txns)
    @rule(index=PRODUCERS, roll=st.booleans(), seal=st.booleans())
    def marker_past_horizon(self, index: int, roll: bool, seal: bool) -> None:
        """An aborted transaction over a roll or within one segment, cleaned sealed (its marker
        in the pass) or not (only what lies below the active segment: with a roll, the
        transaction's first batch, whose segment the pass empties but for that batch, kept
        empty as the round's last), then the clock past the delete horizon and a sealed pass,
        which removes the marker (KL-CLEAN-6, KL-CLEAN-8, BUG-C13, BUG-C24)."""
        self.txn_produce(index, 1)
        if roll:
            self.do("roll")
        self.txn_produce(index, 1)
        self.end_txn(index, False, 0, 0)
        if seal:
            self.seal_and_clean()
        else:
            self.do("update_high_watermark", offset=self.view().log_end_offset)
            self.do("clean")
        self.do("advance_clock", ms=self.config.delete_retention_ms + 1)
        self.put(index % KEYS, False)
        self.seal_and_clean()

    @precondition(cleans)
    @rule(key=st.integers(0, KEYS - 1), back=st.integers(1, 2))
    def clean_then_truncate(self, key: int, back: int) -> None:
        """A keyed record and a sealed pass, then a truncation `back` offsets below the
        checkpoint the pass wrote: the checkpoint comes down with it (KL-CLEAN-13, BUG-C11)."""
        self.put(key, False)
        self.seal_and_clean()
        view = self.view()
        checkpoint = view.cleaner_checkpoint
        if checkpoint is not None:
            self.do("truncate_to", offset=max(view.log_start_offset, checkpoint - back))

    @precondition(lambda self: cleans(self) and "reopen" in self.session.features)
    @rule(key=st.integers(0, KEYS - 1), tombstone=st.booleans())
    def clean_twice_and_reload(self, key: int, tombstone: bool) -> None:
        """Two sealed passes, the second over the segment the first swapped in, then a clean
        reload: each swap leaves plain file names only (KL-CLEAN-10, CLN-57)."""
        self.put(key, tombstone)
        self.seal_and_clean()
        self.put((key + 1) % KEYS, tombstone)
        self.seal_and_clean()
        self.do("close_and_reopen")

    @precondition(cleans)
    @rule(key=st.integers(0, KEYS - 1))
    def delete_records_then_retention(self, key: int) -> None:
        """Two keyed records, a roll, DeleteRecords to the new base and retention: a compacted
        log still deletes the segments below its log start (KL-CLEAN-14, BUG-C25)."""
        self.put(key, False)
        self.put((key + 1) % KEYS, False)
        self.do("roll")
        end = self.view().log_end_offset
        self.do("update_high_watermark", offset=end)
        self.do("maybe_increment_log_start_offset", offset=end)
        self.do("delete_old_segments")

    @precondition(_cleans_txns)
    @rule(index=PRODUCERS, commit=st.booleans(), fill=st.integers(6, 8))
    def txn_across_groups(self, index: int, commit: bool, fill: int) -> None:
        """A transaction opened at the start of a segment that `fill` keyed records fill (the
        log rolls by size inside them), ended in the next segment, then a pass with one group
        per segment: the transaction's state carries from the first group to the second
        (KL-CLEAN-7, BUG-C21)."""
        self.do("roll")
        self.txn_produce(index, 1)
        for n in range(fill):
            self.put(n % KEYS, False)
        self.end_txn(index, commit, 0, 0)
        self.seal_and_clean()


#: The scenarios above, by name: `scenario_rule` copies draw one of them.
SCENARIOS = ("clean_under_open_txn", "clean_before_a_gap", "clean_with_hw_in_active",
             "restart_above_checkpoint", "clean_across_int_max", "tombstone_past_horizon",
             "marker_past_horizon", "txn_across_groups", "clean_then_truncate",
             "clean_twice_and_reload", "delete_records_then_retention")


def scenario_rule(n: int) -> Any:
    """The n-th copy of a rule that runs one of SCENARIOS whose preconditions hold, its
    arguments drawn from the scenario's own strategies. Rules are drawn uniformly and a
    scenario spends several of a run's steps, so a compacted run of default `check` meets few
    of them by their own rules alone; copies of this one weight them, as `crash_rule`'s copies
    weight crashes."""

    @precondition(cleans)
    @rule(data=st.data())
    def cleaning_scenario(self: Any, data: st.DataObject) -> None:
        rules = {name: getattr(type(self), name).hypothesis_stateful_rule for name in SCENARIOS}
        ready = [name for name, r in rules.items() if all(p(self) for p in r.preconditions)]
        chosen = rules[data.draw(st.sampled_from(ready), label="scenario")]
        args = {key: data.draw(strategy, label=key) for key, strategy in chosen.arguments.items()}
        chosen.function(self, **args)

    cleaning_scenario.__name__ = "cleaning_scenario" if n == 0 else f"cleaning_scenario_{n}"
    return cleaning_scenario
