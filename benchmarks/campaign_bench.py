"""Campaign pipeline numbers: per-run overhead, local[1] vs local[2], time to first bug.

    python -m kafkalog.benchmarks.campaign_bench [--runs 200] [--steps 60] [--trivial 2000]
        [--only overhead,scaling,first_failure] [--json out/bench/campaign.json]

- **overhead**: `--trivial` runs of the synthetic run function (microseconds each) through the
  whole pipeline at local[1] (Spark job, Arrow, Parquet commit, per wave) versus the same runs
  in a plain Python loop; the difference divided by the runs is the pipeline's per-run cost.
- **scaling**: `--runs` real `run_seed` runs (built-in implementation, `--steps` steps) at
  local[1] and at local[2]: runs/s and the speedup.
- **first_failure**: for every broken implementation (broken/registry.py), seeds 0, 1, ... in a
  plain loop until the first divergence that the real implementation does not also show: seeds
  tried, seconds (shrinking included), shrunk trace length.

Each Spark measurement runs in its own process (one SparkSession per process, as in campaigns),
with a warm-up wave first, so session start and first-job JIT costs are reported separately.
Numbers on a shared 2-core VM are noisy; the load average is recorded next to them.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kafkalog.conformance.campaign.task import trace_step_count

SYNTHETIC = "kafkalog.conformance.campaign.synthetic:synthetic_run_seed"
FAMILIES = ("tiny", "index_full", "size_retention", "time_roll")


def child(
    master: str, run_fn_name: str | None, runs: int, steps: int, adapter: str | None = None
) -> dict[str, Any]:
    """In a fresh process: start a session, warm it up, time one campaign of `runs` runs."""
    from kafkalog.conformance.campaign.job import CampaignPlan, build_session, run_campaign
    from kafkalog.conformance.campaign.task import TaskSpec

    run_fn = _load(run_fn_name)
    started = time.monotonic()
    spark = build_session(master, app_name="campaign-bench")
    session_s = time.monotonic() - started
    with tempfile.TemporaryDirectory() as out:
        warm = TaskSpec("warmup", steps, FAMILIES, adapter=adapter, run_fn=run_fn)
        started = time.monotonic()
        run_campaign(spark, CampaignPlan(warm, 8, 10_000_000, out))
        warmup_s = time.monotonic() - started
        spec = TaskSpec("bench", steps, FAMILIES, adapter=adapter, run_fn=run_fn)
        done = run_campaign(spark, CampaignPlan(spec, runs, 0, out))
        rows = spark.read.parquet(out + "/runs/campaign_id=bench")
        outcomes = {row.outcome: row["count"] for row in rows.groupBy("outcome").count().collect()}
        run_time = rows.agg({"duration_s": "sum"}).first()[0]
    spark.stop()
    return {
        "master": master,
        "runs": done.executed,
        "waves": done.waves,
        "session_start_s": round(session_s, 2),
        "warmup_wave_s": round(warmup_s, 2),
        "campaign_s": round(done.wall_s, 2),
        "runs_per_s": round(done.executed / done.wall_s, 2),
        # summed run time / wall time: how many cores the runs really got (load from others!)
        "effective_parallelism": round(run_time / done.wall_s, 2),
        "outcomes": outcomes,
    }


def plain_loop(
    run_fn_name: str | None, runs: int, steps: int, adapter: str | None = None
) -> dict[str, Any]:
    """The same runs as `child` in one Python process, no Spark: the baseline."""
    from kafkalog.conformance.campaign.task import TaskSpec, run_one

    spec = TaskSpec("loop", steps, FAMILIES, adapter=adapter, run_fn=_load(run_fn_name))
    started = time.monotonic()
    for seed in range(runs):
        run_one(seed, spec)
    wall = time.monotonic() - started
    return {"runs": runs, "wall_s": round(wall, 3), "runs_per_s": round(runs / wall, 1)}


def overhead(trivial: int) -> dict[str, Any]:
    """Pipeline vs plain loop for trivially short runs; per-run overhead in milliseconds."""
    loop = plain_loop(SYNTHETIC, trivial, 10)
    spark = _spawn("local[1]", SYNTHETIC, trivial, 10)
    per_run_ms = (spark["campaign_s"] - loop["wall_s"]) / trivial * 1000
    return {
        "plain_loop": loop,
        "pipeline_local1": spark,
        "overhead_ms_per_run": round(per_run_ms, 3),
    }


def scaling(runs: int, steps: int, adapter: str | None) -> dict[str, Any]:
    """Real runs in a plain loop, at local[1] and at local[2]."""
    loop = plain_loop(None, runs, steps, adapter)
    one = _spawn("local[1]", None, runs, steps, adapter)
    two = _spawn("local[2]", None, runs, steps, adapter)
    speedup = round(two["runs_per_s"] / one["runs_per_s"], 2)
    adapter_name = adapter or "builtin"
    return {
        "adapter": adapter_name,
        "plain_loop": loop,
        "local1": one,
        "local2": two,
        "speedup": speedup,
    }


def first_failure(steps: int = 60, limit_s: float = 120.0) -> dict[str, Any]:
    """Seeds and seconds until the first divergence caused by each broken implementation.

    A plain loop over seeds 0, 1, ...; a divergence counts only if the real implementation
    conforms on the same seed (else it is the real log's own bug, counted in `real_divergences`).
    """
    from kafkalog.conformance.broken.registry import BROKEN
    from kafkalog.conformance.check.runner import DEFAULT_MIX, run_seed

    results: dict[str, Any] = {}
    for name in sorted(BROKEN):
        started, seed, real = time.monotonic(), 0, 0
        found: dict[str, Any] = {"found": False}
        while time.monotonic() - started < limit_s:
            family = DEFAULT_MIX[seed % len(DEFAULT_MIX)]
            run = functools.partial(run_seed, seed, steps=steps, config_family=family)
            outcome = run(broken=name, time_limit_s=30)
            if outcome.outcome == "diverged" and run(time_limit_s=30).outcome == "conformed":
                found = {
                    "found": True,
                    "seed": seed,
                    "signature": outcome.signature,
                    "trace_steps": trace_step_count(outcome.trace_jsonl),
                }
                break
            real += outcome.outcome == "diverged"
            seed += 1
        found |= {
            "seeds_tried": seed + 1 if found["found"] else seed,
            "real_divergences": real,
            "seconds": round(time.monotonic() - started, 2),
        }
        results[name] = found
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--trivial", type=int, default=2000)
    parser.add_argument("--adapter", default=None, help="scaling runs' adapter (model: no impl)")
    parser.add_argument("--only", default="overhead,scaling,first_failure")
    parser.add_argument("--failure-limit-s", type=float, default=120.0, help="per broken impl")
    parser.add_argument("--json", default=None, help="also write the results here")
    parser.add_argument(
        "--child",
        nargs=5,
        metavar=("MASTER", "FN", "RUNS", "STEPS", "ADAPTER"),
        help=argparse.SUPPRESS,
    )
    args = parser.parse_args(argv)
    if args.child:
        master, run_fn, runs, steps, adapter = args.child
        fn = None if run_fn == "-" else run_fn
        result = child(master, fn, int(runs), int(steps), None if adapter == "-" else adapter)
        print(json.dumps(result))
        return
    results: dict[str, Any] = {"load_average_before": os.getloadavg()}
    parts = args.only.split(",")
    if "overhead" in parts:
        results["overhead"] = overhead(args.trivial)
    if "scaling" in parts:
        results["scaling"] = scaling(args.runs, args.steps, args.adapter)
    if "first_failure" in parts:
        results["first_failure"] = first_failure(args.steps, args.failure_limit_s)
    results["load_average_after"] = os.getloadavg()
    text = json.dumps(results, indent=2)
    print(text)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(text + "\n")


def _spawn(
    master: str, run_fn: str | None, runs: int, steps: int, adapter: str | None = None
) -> dict[str, Any]:
    """Run `child` in a new process and parse its JSON line."""
    command = [
        sys.executable,
        "-m",
        "kafkalog.benchmarks.campaign_bench",
        "--child",
        master,
        run_fn or "-",
        str(runs),
        str(steps),
        adapter or "-",
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _load(name: str | None) -> Any:
    """A `module:function` run function, or None for run_seed."""
    if name is None:
        return None
    import importlib

    module, _, attribute = name.partition(":")
    return getattr(importlib.import_module(module), attribute)


if __name__ == "__main__":
    main()
