"""Every broken cleaner is caught by the compacted runs of a default `kafkalog check`.

Default `check` runs 100 seeds of 40 steps, each seed's family from DEFAULT_MIX; the compacted
family takes two entries of the cycle and its machine draws the cleaner's scenarios
(conformance/gen/cleaning_scenarios.py). Each broken cleaner of conformance/broken/cleaner.py
must make one of exactly those runs diverge (test_broken_cleaner.py pins a short trace per bug;
this is the claim that the defaults find it). The bugs only a crash inside a pass shows
(`CLEANER_CRASH_ONLY`) need more crash steps than default check's eleven compacted runs draw:
`check --family compact` (every run compacted, the same steps and crash weight) finds them.
Spec: KL-CLEAN-2..14 (the rules the bugs break), KL-CRASH-15.
"""

from __future__ import annotations

import logging

import pytest
from kafkalog.conformance.broken.cleaner import CLEANER_BROKEN, CLEANER_CRASH_ONLY
from kafkalog.conformance.check.runner import run_seed
from kafkalog.conformance.gen.configs import DEFAULT_MIX

DEFAULT_RUNS, DEFAULT_STEPS = 100, 40  # `kafkalog check`'s --examples and --steps
COMPACT_SEEDS = [s for s in range(DEFAULT_RUNS) if DEFAULT_MIX[s % len(DEFAULT_MIX)] == "compact"]


def test_default_mix__gives_the_compacted_family_ten_runs_or_more() -> None:
    assert len(COMPACT_SEEDS) >= 10


@pytest.mark.parametrize("name", sorted(set(CLEANER_BROKEN) - CLEANER_CRASH_ONLY))
def test_default_check__broken_cleaner__diverges_in_one_of_its_compacted_runs(name: str) -> None:
    logging.disable(logging.WARNING)  # recovery's log lines, thousands of them
    try:
        tried = []
        for seed in COMPACT_SEEDS:
            outcome = run_seed(seed, steps=DEFAULT_STEPS, config_family="compact", broken=name,
                               crash_weight=1, crash_sweep=True, shrink_s=0.05)
            if outcome.outcome == "diverged":
                return
            tried.append(f"seed {seed}: {outcome.outcome}")
        pytest.fail(f"{name} escaped default check's compacted runs: " + ", ".join(tried))
    finally:
        logging.disable(logging.NOTSET)


@pytest.mark.parametrize("name", sorted(CLEANER_CRASH_ONLY))
def test_compact_check__crash_only_broken_cleaner__diverges_within_its_runs(name: str) -> None:
    """`kafkalog check --family compact` (100 runs of 40 steps, crash weight 1, sweeps on)
    finds a bug only a crash inside a pass shows."""
    logging.disable(logging.WARNING)
    try:
        for seed in range(DEFAULT_RUNS):
            outcome = run_seed(seed, steps=DEFAULT_STEPS, config_family="compact", broken=name,
                               crash_weight=1, crash_sweep=True, shrink_s=0.05)
            if outcome.outcome == "diverged":
                assert outcome.signature is not None and outcome.signature.startswith("crash|")
                return
        pytest.fail(f"{name} escaped {DEFAULT_RUNS} runs of check --family compact")
    finally:
        logging.disable(logging.NOTSET)
