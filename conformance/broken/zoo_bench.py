"""Time to counterexample over every broken implementation.

`python -m kafkalog.conformance.broken.zoo_bench [NAME ...] [--json OUT]` runs, for each broken
implementation, exactly what default `kafkalog check --broken NAME` runs (seeds 0, 1, ...;
families cycled by seed; the default profile's examples and steps) and stops at the first run
that saves a shrunk trace. It reports the catching seed, the time from start to that trace, the
trace's length, and whether the trace pins the bug (diverges on the broken implementation and
conforms on the real one). A benchmark, not a test: tests/conformance/test_zoo.py replays the
seeds it found.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from kafkalog.conformance.gen.configs import DEFAULT_MIX

CHECK_EXAMPLES, CHECK_STEPS = 100, 40  # kafkalog check's default ("ci") profile


def catch(name: str, examples: int = CHECK_EXAMPLES, steps: int = CHECK_STEPS) -> dict[str, Any]:
    """The first default-check run that catches `name`, timed from the start of the check."""
    from kafkalog.conformance.check.runner import run_seed
    from kafkalog.conformance.traces.replay import replay_trace
    from kafkalog.conformance.traces.trace import Trace, loads_trace

    started = time.monotonic()
    for seed in range(examples):
        family = DEFAULT_MIX[seed % len(DEFAULT_MIX)]
        outcome = run_seed(seed, steps=steps, config_family=family, broken=name)
        if outcome.outcome != "diverged" or outcome.trace_jsonl is None:
            continue
        elapsed = time.monotonic() - started
        trace = loads_trace(outcome.trace_jsonl)
        real = Trace(dataclasses.replace(trace.header, broken=None), trace.steps)
        return {"name": name, "caught": True, "seed": seed, "family": family,
                "seconds": round(elapsed, 2), "run_seconds": outcome.duration_s,
                "steps": len(trace.steps), "signature": outcome.signature,
                "pins": not replay_trace(trace).conformed and replay_trace(real).conformed,
                "trace": outcome.trace_jsonl}
    return {"name": name, "caught": False, "seconds": round(time.monotonic() - started, 2)}


def _as_replayed(name: str, trace_jsonl: str) -> str:
    """The trace as replay sees it (verify after every step), ending at its first divergence.

    A run verifies the directory every tenth step only, so replay may find the same bug a step
    earlier; the regression corpus wants the trace to diverge exactly at its last step.
    """
    from kafkalog.conformance.adapter.json_codec import FEATURES
    from kafkalog.conformance.broken.registry import broken_factory
    from kafkalog.conformance.traces.minimise import _replay
    from kafkalog.conformance.traces.trace import Trace, dumps_trace, loads_trace

    trace = loads_trace(trace_jsonl)
    replayed = _replay(trace, list(trace.steps), broken_factory(name), frozenset(FEATURES), 1)
    if replayed is None:
        return trace_jsonl
    steps, signature = replayed
    header = dataclasses.replace(trace.header, signature=signature)
    return dumps_trace(Trace(header, tuple(steps)))


def main(argv: list[str] | None = None) -> int:
    from kafkalog.conformance.broken.registry import BROKEN

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="broken implementations (default: all)")
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--traces", help="save each pinned trace here as BUG-name.jsonl")
    args = parser.parse_args(argv)
    rows = []
    for name in args.names or sorted(BROKEN):
        row = catch(name)
        trace = row.pop("trace", None)
        if args.traces and trace and row.get("pins"):
            path = Path(args.traces) / f"{BROKEN[name].bug}-{name}.jsonl"
            path.write_text(_as_replayed(name, trace), encoding="utf-8")
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    caught = [r for r in rows if r["caught"]]
    times = [r["seconds"] for r in caught]
    summary = {
        "bugs": len(rows), "caught": len(caught),
        "pinned": sum(bool(r.get("pins")) for r in caught),
        "median_s": statistics.median(times) if times else None,
        "worst_s": max(times) if times else None,
        "median_steps": statistics.median(r["steps"] for r in caught) if caught else None,
    }
    print(json.dumps(summary))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"summary": summary, "rows": rows}, out, indent=1)
    return 0 if len(caught) == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
