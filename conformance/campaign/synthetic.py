"""A synthetic run function with `run_seed`'s signature, for pipeline tests and overhead benchmarks.

It does no conformance work at all: its result is a pure function of the seed, computed in
microseconds, so a campaign of these measures the pipeline's own per-run cost (Spark, Arrow,
Parquet), and tests can predict every row, every bucket and every count exactly. Seeds that are
multiples of DIVERGE_EVERY "diverge" with one of two signatures; seed % 1000 == 999 raises, to
exercise the task's error path. It is never a campaign's default (`campaign_task.run_one` calls
`kafkalog.conformance.check.runner.run_seed` unless a test or benchmark injects this one).
"""

from __future__ import annotations

import json
import time
from typing import Any

from kafkalog.conformance.check.runner import RunOutcome

DIVERGE_EVERY = 7
ACTIONS = ("append_as_leader", "read", "roll", "truncate_to", "advance_clock")
RULES = ("LOG-14", "LOG-27", "LOG-25", "LOG-40", "LOG-34", "SEG-8")
SIGNATURES = (
    "truncate_to|OffsetOutOfRangeError|ok|result|LOG-40",
    "roll|ok|InvalidRollError|result|SEG-8",
)


def synthetic_run_seed(
    seed: int,
    *,
    steps: int,
    config_family: str,
    adapter: str | None = None,
    time_limit_s: float = 120,
    broken: str | None = None,
    delay_s: float = 0.0,
    crash_weight: int = 0,  # accepted like run_seed's; a synthetic run never crashes anything
    crash_sweep: bool = False,
) -> RunOutcome:
    """A deterministic fake run of `steps` steps; see the module docstring for its failures.

    `delay_s` sleeps first, to stand in for real work (tests that interrupt a running wave).
    """
    if delay_s:
        time.sleep(delay_s)
    if seed % 1000 == 999:
        raise RuntimeError(f"synthetic crash for seed {seed}")
    executed = steps if seed % DIVERGE_EVERY else 1 + seed % min(steps, 5)
    actions = {name: 0 for name in ACTIONS}
    for step in range(executed):
        actions[ACTIONS[(seed + step) % len(ACTIONS)]] += 1
    rules = sorted({RULES[(seed + step) % len(RULES)] for step in range(min(executed, 3))})
    diverged = seed % DIVERGE_EVERY == 0
    signature = SIGNATURES[(seed // DIVERGE_EVERY) % 2] if diverged else None
    return RunOutcome(
        seed=seed,
        config_family=config_family,
        config={"segment_bytes": 256 + seed % 3, "family": config_family},
        adapter=adapter,
        steps_executed=executed,
        actions={name: count for name, count in actions.items() if count},
        rules=rules,
        duration_s=0.0001,
        outcome="diverged" if diverged else "conformed",
        signature=signature,
        trace_jsonl=_trace(seed, executed) if diverged else None,
    )


def _trace(seed: int, steps: int) -> str:
    """A JSONL text shaped like a trace: one header line, then `steps` step lines."""
    lines = [json.dumps({"format": "synthetic", "seed": seed})]
    lines += [json.dumps({"step": index, "action": ACTIONS[index % 5]}) for index in range(steps)]
    return "\n".join(lines) + "\n"


def slow_synthetic_run_seed(seed: int, **options: Any) -> RunOutcome:
    """`synthetic_run_seed` taking 20 ms per run: a campaign that can be killed mid-wave."""
    return synthetic_run_seed(seed, delay_s=0.02, **options)
