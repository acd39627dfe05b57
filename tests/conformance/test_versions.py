"""Kafka version profiles in the checker: a trace conforms under one profile, not another."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from kafkalog.conformance.check.runner import run_seed
from kafkalog.conformance.check.session import START_MS
from kafkalog.conformance.gen.configs import config_family
from kafkalog.conformance.traces.replay import replay_trace
from kafkalog.conformance.traces.scripted import Call, scripted_trace
from kafkalog.conformance.traces.trace import read_trace, with_kafka_version, write_trace
from kafkalog.impl import versions as impl_versions
from kafkalog.model import log, versions
from kafkalog.model.values import BatchSpec, Isolation, Record

from kafkalog.cli.conformance_cmds import check, replay

REGRESSIONS = Path(__file__).resolve().parents[1] / "regressions"
BUG_12 = REGRESSIONS / "BUG-12-max_timestamp_last_offset.jsonl"


def test_bug_12_trace__conforms_under_3_7_and_diverges_under_the_default() -> None:
    """Spec: KL-VERSION-6 (3.7's MAX_TIMESTAMP answered the stored last offset: KAFKA-16310)."""
    trace = read_trace(BUG_12)  # its header names no profile: the default
    assert trace.header.config.kafka_version == versions.DEFAULT_PROFILE
    assert replay_trace(trace).diverged_at == 2
    assert replay_trace(with_kafka_version(trace, "3.7")).conformed
    assert replay_trace(with_kafka_version(trace, "3.8")).diverged_at == 2


def _answers(version: str, calls: list[Call]) -> list[Any]:
    """The model's answers to `calls` under profile `version`; the built-in implementation,
    which follows the same profile, must conform."""
    config = dataclasses.replace(config_family("tiny"), kafka_version=version)
    trace = scripted_trace(config, calls)
    assert trace.header.outcome == "conformed", trace.steps[-1].divergence
    return [step.model for step in trace.steps]


def _model_state(version: str, calls: list[Call]) -> Any:
    state = log.empty_log(dataclasses.replace(config_family("tiny"), kafka_version=version),
                          now_ms=START_MS)
    for action, args in calls:
        state, _ = getattr(log, action)(state, **args)
    return state


def test_mid_batch_read__builtin_impl__follows_the_profile(tmp_path: Path) -> None:
    """Spec: KL-VERSION-3 (KAFKA-17803 moved the read's metadata offset to the batch base in
    4.0; before, it is the offset asked for)."""
    records = tuple(Record(None, b"test", START_MS) for _ in range(3))
    calls: list[Call] = [
        ("append_as_leader", {"records": records, "leader_epoch": 0}),
        ("read", {"start_offset": 1, "max_bytes": 1000, "isolation": Isolation.LOG_END,
                  "min_one_message": False})]
    offsets = {version: _answers(version, calls)[1]["ok"]["fetch_offset_metadata"]
               ["message_offset"] for version in ("3.9", "4.0", "4.4")}
    assert offsets == {"3.9": 1, "4.0": 0, "4.4": 0}
    path = write_trace(scripted_trace(config_family("tiny"), calls), tmp_path / "mid.jsonl")
    assert CliRunner().invoke(replay, [str(path)]).exit_code == 0
    assert CliRunner().invoke(replay, [str(path), "--kafka-version", "3.9"]).exit_code == 0


def test_follower_append__builtin_impl__index_and_epoch_filter_follow_the_profile() -> None:
    """Spec: KL-VERSION-4, KL-VERSION-5 (before 4.0: one index decision per append, and every
    batch appended whatever its epoch; from 4.0: one per batch, newer epochs cut)."""
    def batch(base: int, epoch: int) -> BatchSpec:
        return BatchSpec(base, epoch, (Record(None, b"x" * 10, START_MS + base),))

    calls: list[Call] = [
        ("append_as_follower", {"batches": (batch(0, 0),), "leader_epoch": 0}),
        ("append_as_follower", {"batches": tuple(batch(i, 0) for i in (1, 2, 3, 4)),
                                "leader_epoch": 0}),
        ("append_as_follower", {"batches": (batch(5, 0), batch(6, 3)), "leader_epoch": 0})]
    last = {version: _answers(version, calls)[2]["ok"]["last_offset"]
            for version in ("3.9", "4.0", "4.4")}
    assert last == {"3.9": 6, "4.0": 5, "4.4": 5}
    # The index decisions differ too (the four-batch append finds too few bytes since the last
    # entry before 4.0; from 4.0 its batches are indexed one by one); lockstep compares both
    # sides' indexes after every step.
    entries = {version: len(_model_state(version, calls).segments[0].offset_index)
               for version in ("3.9", "4.0")}
    assert entries == {"3.9": 0, "4.0": 2}


@pytest.mark.parametrize(("version", "special"), [("4.1", False), ("4.2", True), ("4.4", True)])
def test_earliest_pending_upload__builtin_impl__follows_the_profile(
    version: str, special: bool
) -> None:
    """Spec: KL-VERSION-7 (-6 is special from 4.2, a timestamp search before)."""
    calls: list[Call] = [
        ("append_as_leader", {"records": (Record(None, b"t", START_MS),), "leader_epoch": 2}),
        ("fetch_offset_by_timestamp", {"timestamp": -6})]
    found = _answers(version, calls)[1]["ok"]
    assert (found["offset"], found["leader_epoch"]) == ((-1, -1) if special else (0, 2))


def test_impl_profiles__same_names_order_and_ranges_as_the_model() -> None:
    """Spec: KL-VERSION-1 (impl/versions.py mirrors model/versions.py: the implementation may
    not import the model's operations)."""
    assert impl_versions.PROFILES == versions.PROFILES
    assert impl_versions.ALIASES == versions.ALIASES
    for name in ("read_reports_batch_base", "index_entry_per_batch",
                 "follower_skips_newer_epochs", "earliest_pending_upload_is_special"):
        for version in (*versions.PROFILES, *versions.ALIASES):
            assert getattr(impl_versions, name)(version) == getattr(versions, name)(version)


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


@pytest.mark.parametrize("version", ["3.6", "3.7", "3.8", "4.4"])
def test_max_timestamp__builtin_impl__reports_and_answers_as_the_profile(version: str) -> None:
    """Spec: KL-VERSION-2, KL-VERSION-6 (3.6: the first record with the max; 3.7: the last
    offset; before 3.8 MAX_TIMESTAMP answers that stored pair with the latest epoch)."""
    def records(*timestamps: int) -> tuple[Record, ...]:
        return tuple(Record(None, b"test", START_MS + t) for t in timestamps)

    calls: list[Call] = [
        ("append_as_leader", {"records": records(5, 9, 9, 7), "leader_epoch": 0}),
        ("append_as_leader", {"records": records(1), "leader_epoch": 2}),
        ("fetch_offset_by_timestamp", {"timestamp": -3})]
    answers = _answers(version, calls)
    found = answers[2]["ok"]
    reported = {"3.6": 1, "3.7": 3, "3.8": 3, "4.4": 3}[version]
    assert answers[0]["ok"]["offset_of_max_timestamp"] == reported
    assert (found["offset"], found["leader_epoch"]) == {
        "3.6": (1, 2), "3.7": (3, 2), "3.8": (1, 0), "4.4": (1, 0)}[version]
