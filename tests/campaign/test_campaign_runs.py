"""Campaigns of real conformance runs (conformance.runner.run_seed) on Spark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kafkalog.conformance.campaign.aggregate import summarize
from kafkalog.conformance.campaign.job import CampaignPlan, run_campaign
from kafkalog.conformance.campaign.report import write_report
from kafkalog.conformance.campaign.task import TaskSpec
from kafkalog.conformance.traces.replay import replay_trace
from kafkalog.conformance.traces.trace import read_trace

pytestmark = pytest.mark.spark
BROKEN = "truncate_keeps_hw"  # BUG-38: truncation below the HW does not clamp the HW


def test_campaign__broken_impl__bucket_trace_replays_the_divergence(
    spark: Any, out_dir: Path
) -> None:
    """Against a broken log, a bucket appears whose shrunk trace file replays to a divergence."""
    spec = TaskSpec("bug38", 30, ("tiny",), broken=BROKEN, time_limit_s=10.0)
    run_campaign(spark, CampaignPlan(spec, 6, 0, str(out_dir)))
    summary = summarize(spark, str(out_dir / "runs"), "bug38")
    assert summary.runs == 6 and summary.outcomes.get("adapter_error", 0) == 0
    assert summary.params["broken"] == BROKEN and summary.rules
    diverged = [b for b in summary.buckets if b.outcome == "diverged"]
    assert diverged, f"no divergence found in 6 runs against {BROKEN}: {summary.outcomes}"
    paths = write_report(summary, out_dir)
    trace_file = paths[f"trace:{diverged[0].signature}"]
    trace = read_trace(trace_file)
    assert trace.header.broken == BROKEN and len(trace.steps) == diverged[0].shortest_steps
    replayed = replay_trace(trace)
    assert replayed.diverged_at is not None, "the bucket's trace did not reproduce on replay"


def test_campaign__model_against_model__rows_carry_coverage_and_mix(
    spark: Any, out_dir: Path
) -> None:
    """Real runs (model driven against itself) fill actions, rules, families and steps."""
    spec = TaskSpec("self", 15, ("tiny", "time_roll", "size_retention"), adapter="model")
    done = run_campaign(spark, CampaignPlan(spec, 6, 100, str(out_dir)))
    summary = summarize(spark, str(out_dir / "runs"), "self")
    assert done.executed == 6 and summary.outcomes.get("adapter_error", 0) == 0
    assert summary.params["adapter"] == "model" and summary.steps_total > 0
    assert len(summary.actions) >= 5 and len(summary.rules) >= 5
    exercised = {rule for rule, _ in summary.rules}
    assert summary.rules_known > len(summary.rules_never) > 0  # 6 short runs miss some rules
    assert exercised.isdisjoint(summary.rules_never)
    assert 0 < summary.rule_pairs <= summary.rule_pairs_possible  # combos.py
    assert summary.families == {"tiny": 2, "time_roll": 2, "size_retention": 2}
    assert all(b.trace_jsonl for b in summary.buckets)  # every divergence kept its trace
