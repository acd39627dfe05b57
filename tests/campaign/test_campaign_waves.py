"""Pure helpers of the campaign job (no Spark): wave sizing, the plan's paths, the commit stamp."""

from __future__ import annotations

from pathlib import Path

from kafkalog.conformance.campaign.job import (
    MAX_WAVE,
    WAVE_TARGET_S,
    CampaignPlan,
    _next_wave_size,
    git_commit,
)
from kafkalog.conformance.campaign.task import TaskSpec


def test_next_wave_size__aims_at_the_target_time_in_whole_partitions() -> None:
    """At 10 runs/s the next wave holds ~WAVE_TARGET_S worth of runs, a multiple of partitions."""
    size = _next_wave_size(100, 10.0, 6)
    assert size % 6 == 0 and abs(size - 10 * WAVE_TARGET_S) < 6


def test_next_wave_size__clamped_between_two_rounds_and_the_maximum() -> None:
    """Very slow runs still give each partition two runs; very fast ones stop at MAX_WAVE."""
    assert _next_wave_size(6, 600.0, 6) == 12
    assert _next_wave_size(2000, 0.01, 6) == MAX_WAVE


def test_campaign_plan__rows_live_under_out_runs() -> None:
    """The Parquet dataset is <out>/runs, for local paths and URIs alike."""
    spec = TaskSpec("c", 5, ("tiny",))
    assert CampaignPlan(spec, 1, 0, "s3a://bucket/x/").runs_path == "s3a://bucket/x/runs"
    assert CampaignPlan(spec, 1, 0, "out").runs_path == "out/runs"


def test_git_commit__outside_a_checkout__is_unknown(tmp_path: Path) -> None:
    """Executors and zips have no git checkout: the stamp says `unknown`, it does not fail."""
    assert git_commit(tmp_path) == "unknown"
