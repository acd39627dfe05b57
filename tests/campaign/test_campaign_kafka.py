"""What a `--kafka` campaign adds: a kept adapter per worker, kafka-mode runs through Kafka's
loader, and labelled divergences (conformance/campaign/kafka_runs.py, kafka_summary.py)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

from kafkalog.conformance.adapter import subprocess_sut
from kafkalog.conformance.campaign import kafka_runs, kafka_summary
from kafkalog.conformance.campaign.aggregate import Bucket
from kafkalog.conformance.campaign.task import TaskSpec
from kafkalog.conformance.campaign.variety import KAFKA, STRICT, RunVariant
from kafkalog.conformance.check.runner import run_seed

from kafkalog.cli.campaign_cmds import _variety

SERVE = f"{shlex.quote(str(Path(sys.executable).parent / 'kafkalog'))} serve-adapter"
KAFKA_SPEC = TaskSpec(campaign_id="c", steps=10, families=("tiny",), adapter="java kafka",
                      kafka_loader="4.4.0")


def _options(**changes: Any) -> dict[str, Any]:
    return {"run_fn": None, "adapter": "java kafka", "broken": None, "kafka_version": "all",
            "crash_mode": "both", "crash_sweep": True, "crash_weight": 2,
            "kafka_profile": "4.4"} | changes


def test_variety__kafka_campaign__one_block_in_four_kafka_mode_no_in_load() -> None:
    variety = _variety(_options())
    assert variety.profiles == ("4.4",)
    assert variety.kafka_mode_every == 4 and variety.in_load_every == 0


def test_variety__kafka_campaign_strict__lockstep_only() -> None:
    assert _variety(_options(crash_mode="strict")).kafka_mode_every == 0


def test_run_adapter__kafka_mode_runs_the_builtin_strict_runs_kafkas_log() -> None:
    assert kafka_runs.run_adapter(KAFKA_SPEC, RunVariant("4.4", KAFKA, False)) is None
    assert kafka_runs.run_adapter(KAFKA_SPEC, RunVariant("4.4", STRICT, False)) == "java kafka"


def test_loader_scope__strict_run_or_no_loader__has_none() -> None:
    with kafka_runs.loader_scope(KAFKA_SPEC, RunVariant("4.4", STRICT, False)) as loader:
        assert loader is None
    assert kafka_runs.loader_columns(None)["kafka_loader_images"] is None


def test_kept_process__reused_across_runs_and_spared_by_kill_all() -> None:
    """Two runs on one kept adapter process; kill_all(spare_kept) leaves it, drop_kept ends it."""
    try:
        first = run_seed(0, steps=8, config_family="tiny", adapter=SERVE, keep_adapter=True)
        process = subprocess_sut.kept_process(SERVE)
        second = run_seed(1, steps=8, config_family="tiny", adapter=SERVE, keep_adapter=True)
        assert (first.outcome, second.outcome) == ("conformed", "conformed")
        assert subprocess_sut.kept_process(SERVE) is process and process.alive
        subprocess_sut.kill_all(spare_kept=True)
        assert process.alive
    finally:
        subprocess_sut.drop_kept(SERVE)
    assert not process.alive


def _trace(action: str, model: dict, impl: dict, divergence: str, **args: Any) -> str:
    step = {"step": 0, "action": action, "args": args, "model": model, "impl": impl,
            "divergence": divergence}
    return json.dumps({"kafkalog_trace": 1}) + "\n" + json.dumps(step)


def _bucket(signature: str) -> Bucket:
    return Bucket("diverged", signature, 2, 0, 0, 1, None, None)


def test_labelled_buckets__a_bucket_mixing_a_finding_and_new__shows_both() -> None:
    error = {"error": {"code": "IllegalArgumentError", "message": "x"}}
    finding = _trace("truncate_fully_and_start_at", error, error,
                     "state differs at log_start_offset: model 0 | impl -1", offset=-1)
    other = _trace("truncate_fully_and_start_at", error, error,
                   "state differs at log_start_offset: model 0 | impl 3", offset=3)
    key = "truncate_fully_and_start_at|IllegalArgumentError|IllegalArgumentError|state.x"
    labels = [(key, kafka_summary.label(finding)), (key, kafka_summary.label(other))]
    (bucket,) = kafka_summary.labelled_buckets((_bucket(key),), labels)
    assert bucket.labels == ("NEW (1)", "finding 4 (4.4.0-truncate_fully_negative_"
                                        "changes_log_then_throws) (1)")


def test_bucket_key__drops_the_rule_like_failure_buckets() -> None:
    assert kafka_summary.bucket_key("a|ok|ok|result|KL-X-1") == "a|ok|ok|result"
    assert kafka_summary.bucket_key("adapter_error|Crash") == "adapter_error|Crash"


def test_summary_lines__labels_and_loader_totals() -> None:
    class Summary:
        kafka_labels = {"NEW": 1, "finding 4 (x)": 3}
        kafka_loader = {"runs": 2, "images": 40, "outside": 0, "by_class": {}}

    lines = kafka_summary.summary_lines(Summary())
    assert "NEW: 1; finding 4 (x): 3" in lines[0]
    assert "40 images loaded by Kafka in 2 kafka-mode runs" in lines[1]
    assert "outside the kafka-mode set: 0" in lines[1]


def test_failures__recorded_divergences_pass_unexplained_loader_images_fail() -> None:
    from kafkalog.conformance.campaign.aggregate import CampaignSummary, RuntimeStats

    summary = CampaignSummary(
        campaign_id="c", runs=10, duplicates_dropped=0, outcomes={"conformed": 6, "diverged": 4},
        params={}, steps_total=0, run_time_total_s=0.0, wall_s=0.0, buckets=(), actions=(),
        rules=(), runtime=RuntimeStats(0, 0, 0, 0, 0, ()), throughput=(), recorded=3,
        kafka_loader={"by_class": {"epoch_recovery": 2, "resurrected_batch_epoch": 5,
                                   "index_rebuild_fails_load": 1, "kafkalog_too": 4}})
    assert summary.failures == 1 + 2  # one NEW divergence, two images of no triaged gap
