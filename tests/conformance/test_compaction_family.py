"""The `compact` family: the implementation's cleaner conforms, in-process and over
serve-adapter, and a cleaner with a seeded bug is caught.

Spec: KL-CLEAN-4, KL-CLEAN-6, KL-CLEAN-7, KL-CLEAN-12 (keyed appends, tombstones, producers,
transactions and cleaning passes are generated and compared on every step).
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
from kafkalog.conformance.check.runner import run_seed
from kafkalog.impl.cleaner import filter as impl_filter


@pytest.mark.parametrize("seed", range(3))
def test_compact_family__in_process__conforms(seed: int) -> None:
    """Cleaning between appends, rolls, truncations and reopens: no divergence."""
    outcome = run_seed(seed, steps=60, config_family="compact", time_limit_s=60)
    assert outcome.outcome == "conformed", (outcome.signature, outcome.trace_jsonl)


def test_compact_family__over_serve_adapter__conforms() -> None:
    """The same family through the JSON-lines protocol (the `clean` feature)."""
    adapter = f"{shlex.quote(str(Path(sys.executable).parent / 'kafkalog'))} serve-adapter"
    outcome = run_seed(0, steps=40, config_family="compact", adapter=adapter, time_limit_s=60)
    assert outcome.outcome == "conformed", (outcome.signature, outcome.trace_jsonl)


def test_compact_family__cleaner_dropping_superseded_check__diverges(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative control: a cleaner that keeps every record below the map's latest offset
    (no dedupe, CLN-31 step 5) is caught within a few seeds."""
    monkeypatch.setattr(impl_filter, "_retain_record", lambda batch, record, facts: True)
    outcomes = [run_seed(seed, steps=60, config_family="compact", time_limit_s=60).outcome
                for seed in range(6)]
    assert "diverged" in outcomes, outcomes
