"""Many hostile cases in a row: the engine of `kafkalog fuzz` and of the CI slice.

Cases are drawn by Hypothesis (generation only: nothing is shrunk, every case is judged and
counted) from the strategies in `mutators`, in proportions set by `KINDS`, and each is judged by
`harness`. `run` returns a `Summary`: cases per kind and verdict, and the ungraceful ones with
their inputs, so any finding can be reproduced from the printed case.
"""

from __future__ import annotations

import logging
import resource
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from kafkalog.conformance.fuzz.harness import (
    CaseResult,
    Sandbox,
    Verdict,
    run_adapter_case,
    run_file_case,
    run_trace_case,
)
from kafkalog.conformance.fuzz.mutators import adapter_sessions, file_mutations, trace_texts

KINDS = ("files", "adapter", "trace")
REGRESSIONS = Path(__file__).resolve().parents[2] / "tests" / "regressions"
BUILTIN_TRACE = (
    '{"kafkalog_trace":1,"config":{"segment_bytes":300,"index_interval_bytes":1}}\n'
    '{"step":1,"action":"append_as_leader","args":{"records":[{"key":null,"value":"eA==",'
    '"timestamp":5}],"leader_epoch":0}}\n'
    '{"step":2,"action":"roll","args":{}}\n'
    '{"step":3,"action":"truncate_to","args":{"offset":0}}\n'
    '{"step":4,"action":"close_and_reopen","args":{}}\n')


@dataclass
class Summary:
    """Counts per (kind, verdict) and the ungraceful cases with their inputs."""

    counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    ungraceful: list[tuple[str, str, list[str]]] = field(default_factory=list)

    @property
    def cases(self) -> int:
        return sum(self.counts.values())

    @property
    def ungraceful_count(self) -> int:
        return sum(n for (_, verdict), n in self.counts.items() if verdict == Verdict.UNGRACEFUL)

    def add(self, result: CaseResult, case: str) -> None:
        self.counts[(result.kind, result.verdict.value)] += 1
        if result.verdict is Verdict.UNGRACEFUL and len(self.ungraceful) < 50:
            self.ungraceful.append((result.kind, case, result.details))


def seed_traces() -> tuple[str, ...]:
    """Short stored traces to damage (the regressions when present), plus a built-in one."""
    found = sorted(REGRESSIONS.glob("*.jsonl")) if REGRESSIONS.is_dir() else []
    texts = [p.read_text() for p in found]
    return (BUILTIN_TRACE, *[t for t in texts if len(t.splitlines()) <= 16])


def limit_memory(mib: int) -> None:
    """Cap this process's data segment (heap and anonymous maps, not file maps): a case that
    allocates beyond it fails with MemoryError, which the harness judges ungraceful."""
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    soft = mib << 20
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


def run(cases: int, seed: int = 0, kinds: tuple[str, ...] = KINDS,
        progress: Callable[[int, Summary], None] | None = None,
        summary: Summary | None = None) -> Summary:
    """Run `cases` cases (split between `kinds` 3:1:1 files:adapter:trace) and summarise into
    `summary` (a fresh one by default; pass one to keep the counts if the run is interrupted)."""
    summary = Summary() if summary is None else summary
    sandbox = Sandbox() if "files" in kinds else None
    traces = seed_traces()
    weighted = [k for k in kinds for _ in range(3 if k == "files" else 1)]

    @settings(max_examples=cases, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @hypothesis_seed(seed)
    @given(st.data())
    def one_case(data: st.DataObject) -> None:
        n = summary.cases
        kind = data.draw(st.sampled_from(weighted), label="kind")
        if kind == "files":
            assert sandbox is not None
            mutations = data.draw(st.lists(file_mutations(), min_size=1, max_size=3))
            deep = data.draw(st.booleans())
            summary.add(run_file_case(sandbox, n, mutations, deep), repr((mutations, deep)))
        elif kind == "adapter":
            lines = data.draw(adapter_sessions())
            summary.add(run_adapter_case(lines), repr(lines)[:2000])
        else:
            text = data.draw(trace_texts(traces))
            summary.add(run_trace_case(text), repr(text)[:2000])
        if progress is not None:
            progress(summary.cases, summary)

    logging.disable(logging.WARNING)  # recovery warns about every damaged file
    try:
        one_case()
    finally:
        logging.disable(logging.NOTSET)
        if sandbox is not None:
            sandbox.close()
    return summary
