"""The campaign job on Spark: Parquet schema, resume after a kill, de-duplication, bucketing.

Runs use the synthetic run function (conformance/campaign/synthetic.py), whose rows are
predictable, so the pipeline's bookkeeping is checked exactly; test_campaign_runs.py drives the
real run_seed.
"""

from __future__ import annotations

import functools
import math
import re
import shutil
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from kafkalog.conformance.campaign.aggregate import THROUGHPUT_POINTS, load_runs, summarize
from kafkalog.conformance.campaign.errors import CampaignJobError, CampaignOptionsError
from kafkalog.conformance.campaign.job import CampaignPlan, run_campaign
from kafkalog.conformance.campaign.synthetic import synthetic_run_seed
from kafkalog.conformance.campaign.task import SPARK_DDL, TaskSpec, trace_step_count

pytestmark = pytest.mark.spark


def plan(out: Path, runs: int, campaign_id: str = "c1", **spec: Any) -> CampaignPlan:
    values: dict[str, Any] = {
        "campaign_id": campaign_id,
        "steps": 8,
        "families": ("tiny", "index_full"),
        "run_fn": synthetic_run_seed,
    }
    return CampaignPlan(TaskSpec(**(values | spec)), runs, 0, str(out))


def test_campaign__rows_in_parquet__match_the_documented_schema(spark: Any, out_dir: Path) -> None:
    """Every run is one row partitioned under runs/campaign_id=<id>/, typed as SPARK_DDL says."""
    from pyspark.sql.types import _parse_datatype_string

    done = run_campaign(spark, plan(out_dir, 30, "0042"))
    assert (done.executed, done.already_recorded) == (30, 0)
    assert (out_dir / "runs" / "campaign_id=0042").is_dir()
    frame = spark.read.option("basePath", str(out_dir / "runs")).parquet(str(out_dir / "runs"))
    expected = _parse_datatype_string(SPARK_DDL)
    # Readers see the partition column last; "0042" stays a string (no type inference).
    assert {f.name: f.dataType for f in frame.schema.fields} == {
        f.name: f.dataType for f in expected.fields
    }
    rows = {row.seed: row for row in frame.collect()}
    assert sorted(rows) == list(range(30)) and rows[0].campaign_id == "0042"
    assert rows[7].outcome == "diverged" and rows[8].outcome == "conformed"


def test_campaign__rerun_same_id__runs_only_unrecorded_seeds(spark: Any, out_dir: Path) -> None:
    """A second invocation with a larger --runs executes only the new seeds."""
    first = run_campaign(spark, plan(out_dir, 20))
    second = run_campaign(spark, plan(out_dir, 32))
    third = run_campaign(spark, plan(out_dir, 32))
    assert (first.executed, second.already_recorded, second.executed) == (20, 20, 12)
    assert (third.executed, third.waves) == (0, 0)
    rows = load_runs(spark, str(out_dir / "runs"), "c1", dedup=False).collect()
    seeds = [row.seed for row in rows]
    assert sorted(seeds) == list(range(32))  # no seed written twice


def test_campaign__job_cancelled_mid_wave__resume_runs_exactly_the_rest(
    spark: Any, out_dir: Path
) -> None:
    """Cancelling the jobs in flight keeps the published waves; the resume runs just the rest."""
    slow = functools.partial(synthetic_run_seed, delay_s=0.05)
    killed = plan(out_dir, 200, run_fn=slow)
    timer: list[threading.Timer] = []

    def cancel_after_first_publish(finished: int, total: int) -> None:
        if finished > 0 and not timer:
            timer.append(threading.Timer(1.5, spark.sparkContext.cancelAllJobs))
            timer[0].start()

    with pytest.raises(CampaignJobError, match=r"wave \d+ .*cancel") as failed:
        run_campaign(spark, killed, cancel_after_first_publish, first_wave=12)
    kept = int(re.search(r"the (\d+) runs of published waves", str(failed.value)).group(1))
    assert 0 < kept < 200 and load_runs(spark, str(out_dir / "runs"), "c1").count() == kept
    resumed = run_campaign(spark, plan(out_dir, 200))
    assert (resumed.already_recorded, resumed.executed) == (kept, 200 - kept)
    rows = load_runs(spark, str(out_dir / "runs"), "c1", dedup=False)
    assert sorted(row.seed for row in rows.select("seed").collect()) == list(range(200))


def test_campaign__resume_with_other_steps__refused(spark: Any, out_dir: Path) -> None:
    """Rows of one campaign id must be comparable: other --steps is a typed error."""
    run_campaign(spark, plan(out_dir, 6))
    with pytest.raises(CampaignOptionsError, match=r"other parameters \(steps: 8 != 9\)"):
        run_campaign(spark, plan(out_dir, 6, steps=9))


def test_summarize__duplicate_rows__counted_once(spark: Any, out_dir: Path) -> None:
    """A retried task's second copy of rows (same campaign and seeds) is dropped by readers."""
    run_campaign(spark, plan(out_dir, 24))
    part = next((out_dir / "runs" / "campaign_id=c1").glob("*/part-*.parquet"))
    shutil.copy(part, part.with_name("part-99999-retried-attempt.snappy.parquet"))
    copied = spark.read.schema(SPARK_DDL).parquet(str(part)).count()
    summary = summarize(spark, str(out_dir / "runs"), "c1")
    assert copied > 0 and summary.duplicates_dropped == copied
    assert summary.runs == 24 and sum(summary.outcomes.values()) == 24


def test_summarize__buckets_coverage_and_counts__equal_a_plain_python_tally(
    spark: Any, out_dir: Path
) -> None:
    """Buckets (count, first seed, shortest trace), coverage and outcomes match a Python loop."""
    spec = plan(out_dir, 60).spec
    run_campaign(spark, plan(out_dir, 60))
    summary = summarize(spark, str(out_dir / "runs"), "c1")
    outcomes: dict[str, int] = defaultdict(int)
    buckets: dict[str, list[tuple[int, int]]] = defaultdict(list)
    actions: dict[str, int] = defaultdict(int)
    for seed in range(60):
        run = synthetic_run_seed(seed, steps=spec.steps, config_family="tiny")
        outcomes[run.outcome] += 1
        for name, count in run.actions.items():
            actions[name] += count
        if run.signature:  # bucketed without the rule ID (the minimiser's "same bug")
            key = "|".join(run.signature.split("|")[:4])
            buckets[key].append((trace_step_count(run.trace_jsonl) or 0, seed))
    assert summary.outcomes == dict(outcomes)
    assert {name: total for name, total, _ in summary.actions} == dict(actions)
    got = {b.signature: (b.count, b.first_seed, b.shortest_seed) for b in summary.buckets}
    # first seed = the lowest seed; shortest = fewest trace steps, ties to the lowest seed.
    expected = {s: (len(v), min(seed for _, seed in v), min(v)[1]) for s, v in buckets.items()}
    assert got == expected and len(got) == 2
    assert {b.rules for b in summary.buckets} == {("LOG-40",), ("SEG-8",)}
    for bucket in summary.buckets:
        assert trace_step_count(bucket.trace_jsonl) == bucket.shortest_steps
    assert sum(h[2] for h in summary.runtime.histogram) == 60
    width = max(1.0, math.ceil(summary.wall_s / THROUGHPUT_POINTS))
    assert round(sum(rate for _, rate in summary.throughput) * width) == 60
