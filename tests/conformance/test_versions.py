"""Kafka version profiles in the checker: a trace conforms under one profile, not another."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from kafkalog.conformance.check.runner import run_seed
from kafkalog.conformance.check.session import START_MS
from kafkalog.conformance.gen.configs import config_family
from kafkalog.conformance.traces.replay import replay_trace
from kafkalog.conformance.traces.scripted import scripted_trace
from kafkalog.conformance.traces.trace import read_trace, with_kafka_version, write_trace
from kafkalog.model.values import Isolation, Record

from kafkalog.cli.conformance_cmds import check, replay

REGRESSIONS = Path(__file__).resolve().parents[1] / "regressions"
BUG_12 = REGRESSIONS / "BUG-12-max_timestamp_last_offset.jsonl"


def test_bug_12_trace__conforms_under_3_7_and_diverges_under_trunk() -> None:
    """Spec: KL-VERSION-6 (3.7's MAX_TIMESTAMP answered the stored last offset: KAFKA-16310)."""
    trace = read_trace(BUG_12)
    assert trace.header.config.kafka_version == "trunk"
    assert replay_trace(trace).diverged_at == 2
    assert replay_trace(with_kafka_version(trace, "3.7")).conformed
    assert replay_trace(with_kafka_version(trace, "3.8")).diverged_at == 2


def test_mid_batch_read__builtin_trunk_impl__conforms_under_trunk_not_under_3_9(
    tmp_path: Path,
) -> None:
    """Spec: KL-VERSION-3 (KAFKA-17803 moved the read's metadata offset to the batch base)."""
    records = tuple(Record(None, b"test", START_MS) for _ in range(3))
    calls = [("append_as_leader", {"records": records, "leader_epoch": 0}),
             ("read", {"start_offset": 1, "max_bytes": 1000, "isolation": Isolation.LOG_END,
                       "min_one_message": False})]
    trace = scripted_trace(config_family("tiny"), calls)
    assert trace.header.outcome == "conformed"
    path = write_trace(trace, tmp_path / "mid_batch.jsonl")
    assert CliRunner().invoke(replay, [str(path)]).exit_code == 0
    result = CliRunner().invoke(replay, [str(path), "--kafka-version", "3.9"])
    assert result.exit_code == 1 and "FIRST DIVERGENCE" in result.output


def test_run_seed__kafka_version__travels_in_the_config_of_the_outcome() -> None:
    """Spec: KL-VERSION-1 (campaign rows and saved traces carry the profile in their config)."""
    from kafkalog.conformance.campaign.task import TaskSpec, run_one

    outcome = run_seed(0, steps=5, config_family="tiny", adapter="model", kafka_version="3.9")
    assert outcome.outcome == "conformed" and outcome.config["kafka_version"] == "3.9"
    row = run_one(0, TaskSpec("c1", steps=5, families=("tiny",), adapter="model",
                               kafka_version="3.6"))
    assert row["kafka_version"] == "3.6" and '"kafka_version": "3.6"' in row["config_json"]


def test_check_cli__unknown_kafka_version__is_a_usage_error() -> None:
    """Spec: KL-VERSION-1"""
    result = CliRunner().invoke(check, ["--kafka-version", "2.8", "--examples", "1"])
    assert result.exit_code == 2 and "2.8" in result.output
