"""The seed search shared by the family broken-implementation tests (producer, transaction).

A bug counts as pinned when some fixed seed of its family diverges with a shrunk trace of at most
`max_steps` steps that still diverges on the broken implementation and conforms on the real one.
"""

from __future__ import annotations

import dataclasses

from kafkalog.conformance.check.runner import run_seed
from kafkalog.conformance.traces.replay import replay_trace
from kafkalog.conformance.traces.trace import Trace, loads_trace


def caught(name: str, family: str, seeds: range, max_steps: int,
           crash_weight: int = 0) -> tuple[Trace | None, list[str]]:
    """The first seed's shrunk trace that pins bug `name`, and what each seed gave (with crash
    steps for a bug only a crash shows)."""
    tried: list[str] = []
    for seed in seeds:
        outcome = run_seed(seed, steps=40, config_family=family, broken=name, time_limit_s=4,
                           crash_weight=crash_weight, crash_sweep=crash_weight > 0)
        tried.append(f"seed {seed}: {outcome.outcome} {outcome.signature}")
        if outcome.outcome != "diverged" or outcome.trace_jsonl is None:
            continue
        trace = loads_trace(outcome.trace_jsonl)
        if len(trace.steps) > max_steps:
            continue
        real = Trace(dataclasses.replace(trace.header, broken=None), trace.steps)
        if not replay_trace(trace).conformed and replay_trace(real).conformed:
            return trace, tried
    return None, tried
