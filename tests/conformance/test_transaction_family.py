"""The `transactions` family: the implementation conforms, in-process and over serve-adapter.

Spec: KL-TXN-2, KL-TXN-5, KL-TXN-6, KL-TXN-9 (markers, FUO/LSO movement and read_committed
reads are generated and compared on every step; the runs must conform).
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
from kafkalog.conformance.check.runner import run_seed
from kafkalog.conformance.gen.configs import CONFIG_FAMILIES
from kafkalog.conformance.gen.machine import crash_modelled


@pytest.mark.parametrize("seed", range(3))
def test_transactions_family__in_process__conforms(seed: int) -> None:
    """Transactional producers, markers, follower markers, truncations: no divergence."""
    outcome = run_seed(seed, steps=60, config_family="transactions", time_limit_s=30)
    assert outcome.outcome == "conformed", (outcome.signature, outcome.trace_jsonl)


def test_transactions_family__over_serve_adapter__conforms() -> None:
    """The same family through the JSON-lines protocol (the `transactions` feature)."""
    adapter = f"{shlex.quote(str(Path(sys.executable).parent / 'kafkalog'))} serve-adapter"
    outcome = run_seed(0, steps=40, config_family="transactions", adapter=adapter,
                       time_limit_s=60)
    assert outcome.outcome == "conformed", (outcome.signature, outcome.trace_jsonl)


@pytest.mark.parametrize("first_seed", [0, 54])
def test_transactions_family__with_crash_weight__crashes_and_conforms(first_seed: int) -> None:
    """Transaction state is in the crash model (KL-CRASH-12): crash steps are drawn and every
    recovered state (ongoing transactions, last stable offset, rebuilt `.txnindex`) conforms.
    The seeds from `first_seed` on until one draws crashes (Hypothesis leaves a random set of
    rules out of each run, sometimes every crash copy)."""
    crashed = 0
    for seed in range(first_seed, first_seed + 12):
        outcome = run_seed(seed, steps=60, config_family="transactions", time_limit_s=30,
                           crash_weight=5)
        assert outcome.outcome == "conformed", (outcome.signature, outcome.trace_jsonl)
        crashed = sum(outcome.crashes.values())
        if crashed:
            break
    assert crashed > 0


def test_transactions_family__over_serve_adapter_with_crash_weight__crashes_and_conforms(
) -> None:
    """The serve-adapter path (which speaks `crash`) crashes in this family too."""
    adapter = f"{shlex.quote(str(Path(sys.executable).parent / 'kafkalog'))} serve-adapter"
    # The first seeds until one draws a crash among the family's many rules (Hypothesis leaves
    # a random set of rules out of each run, sometimes every crash copy): which seed does moves
    # with every rule the transaction machine gains.
    crashed = 0
    for seed in range(12):
        outcome = run_seed(seed, steps=60, config_family="transactions", adapter=adapter,
                           time_limit_s=60, crash_weight=5)
        assert outcome.outcome == "conformed", (outcome.signature, outcome.trace_jsonl)
        crashed = sum(outcome.crashes.values())
        if crashed:
            break
    assert crashed > 0


@pytest.mark.parametrize("family", sorted(CONFIG_FAMILIES))
def test_crash_modelled__is_on_for_every_family(family: str) -> None:
    """The crash rule's gate: on for every family, producers (KL-CRASH-11), transactions
    (KL-CRASH-12) and compacted logs after and inside a pass (KL-CRASH-15) included, in both
    crash modes; off for a run without a config (an adapter that opened nothing)."""
    assert crash_modelled(CONFIG_FAMILIES[family])
    assert not crash_modelled(None)
