"""The power-loss explorer's CI slice: the strict implementation passes, every seeded bug fails.

The full exploration (every crash point, three seeds, ~1,160 crash points and ~12,800 recovered
states) runs with `python -m kafkalog.benchmarks.crash_explore`; this slice takes every seventh
crash point with one seed (~170 points, ~850 states) and each seeded bug on the workload that
reaches it quickest.
Rules: FLT-1..FLT-7 (images), CRP-4..CRP-12 (checks), RCV-5/6/10, DUR-13 (seeded bugs).
"""

from __future__ import annotations

import pytest
from kafkalog.benchmarks.crash_explore import WORKLOADS, run_exploration
from kafkalog.conformance.broken.crash import BROKEN_CRASH, patched
from kafkalog.conformance.crash.fault_fs import FaultModel

BY_NAME = {w.name: w for w in WORKLOADS}

# Each seeded bug, the workload that reaches it quickest, and the plant it needs (if any).
CATCHES = {
    "recovery_offset_error_escapes": ("roll-and-flush", "replayed_tail"),
    "recovery_index_wrong_batch": ("roll-and-flush", None),
    "recovery_keeps_torn_tail": ("truncate-across-segments", None),
    "recovery_skips_epoch_zero": ("roll-and-flush", None),
    "checkpoint_written_in_place": ("empty-at-log-start", None),
    "orphan_index_kept": ("truncate-after-flush", None),
    "recovery_not_durable": ("roll-and-flush", None),
    "epoch_trim_end_first": ("empty-at-log-start", None),  # defect 4
}


def test_the_strict_implementation_recovers_every_explored_crash_image() -> None:
    """Every seventh crash point of every workload, all four fault models: no CRP violation,
    and recovery is idempotent on every image (CRP-12)."""
    summary = run_exploration(WORKLOADS, seeds=(0,), stride=7)
    assert summary.examples == [] and summary.violations == 0
    assert summary.states_by_fault.keys() == {f.value for f in FaultModel}
    assert summary.crash_points >= 120


def test_the_loader_survives_a_replayed_stale_tail_in_every_image() -> None:
    """RCV-6 (KAFKA-905): offsets going back inside a segment never make the load fail."""
    summary = run_exploration((BY_NAME["roll-and-flush"],), seeds=(0,), stride=3,
                              plant="replayed_tail")
    assert summary.examples == []


# Crash-recovery defects 1-5 put back: strict durability elsewhere hides most of them from crash
# images, so tests/crash/test_defects.py pins each with its own reproduction instead.
DEFECTS = {"load_cut_keeps_later_segments", "no_checkpoint_after_truncation",
           "truncation_not_durable", "verify_epoch_missing_below_log_start"}


# Caught by the checker's idempotence sweep only (KL-CRASH-7 compares the whole view, the
# recovery point included; the explorer's CRP-12 check compares batches, offsets and epochs):
# tests/conformance/test_crash_sweep.py and its regression trace pin it.
CHECKER_ONLY = {"recovery_point_persisted_ahead"}


def test_every_seeded_crash_bug_has_a_catching_workload_or_defect_test() -> None:
    """The tables cover the whole registry of conformance/broken/crash.py."""
    assert set(CATCHES) | DEFECTS | CHECKER_ONLY == set(BROKEN_CRASH)
    assert not set(CATCHES) & DEFECTS and not (set(CATCHES) | DEFECTS) & CHECKER_ONLY


@pytest.mark.parametrize("name", sorted(CATCHES))
def test_the_explorer_catches_the_seeded_crash_bug(name: str) -> None:
    """Each broken crash-recovery implementation breaks at least one property."""
    workload, plant = CATCHES[name]
    summary = run_exploration((BY_NAME[workload],), seeds=(0,), stride=3,
                              patch=lambda: patched(name), plant=plant)
    assert summary.violations > 0, f"{name} escaped {summary.states} explored states"
