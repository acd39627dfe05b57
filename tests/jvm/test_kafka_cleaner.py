"""Kafka's own log cleaner behind the adapter's `clean` (adapters/kafka/, feature `clean`):
LogCleanerManager selects the log and keeps the `cleaner-offset-checkpoint` in the log's parent
directory, `Cleaner.doClean` runs the pass. Held to the model step by step on hand-built
compacted logs, and through the `compact` family's lockstep for one line.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from typing import Any

import pytest
from kafkalog.conformance.adapter.subprocess_sut import AdapterProcess, SubprocessSut
from kafkalog.conformance.check.runner import run_seed
from kafkalog.conformance.check.sut import ModelSut
from kafkalog.conformance.check.view_checks import first_difference, masked_to
from kafkalog.conformance.gen.compaction import COMPACT_FAMILIES
from kafkalog.conformance.jvm import findings
from kafkalog.conformance.jvm.kafka_adapter import adapter_command, model_profile, resolve_version
from kafkalog.model import values as v

HAVE_JVM_TOOLS = shutil.which("java") is not None and shutil.which("mvn") is not None
needs_jvm = pytest.mark.skipif(not HAVE_JVM_TOOLS, reason="java or mvn is not installed: the "
                                                          "Kafka adapter cannot be built")
NOW = 1_700_000_000_000
LINES = ("3.9", "4.4")


@pytest.fixture(scope="module", params=LINES)
def kafka(request: pytest.FixtureRequest) -> tuple[str, str]:
    """(adapter command, model profile) of a line's newest release."""
    if not HAVE_JVM_TOOLS:
        pytest.skip("java or mvn is not installed: the Kafka adapter cannot be built")
    return adapter_command(request.param), model_profile(resolve_version(request.param))


class Lockstep:
    """Kafka's log and the model driven with the same calls; the answers of `clean`, `read` and
    `truncate_to`, and the state after every call, must agree (the model's view masked to the
    fields the adapter reports, as the checker compares; an append's result has fields a
    release leaves undefined, KL-VERSION-2, which the checker's own lockstep covers)."""

    COMPARED = frozenset({"clean", "read", "truncate_to"})

    def __init__(self, process: AdapterProcess, profile: str, **overrides: Any) -> None:
        config = replace(COMPACT_FAMILIES["compact"], kafka_version=profile, **overrides)
        self.kafka = SubprocessSut(process, config, NOW, 0)
        self.model = ModelSut(config, NOW, 0)

    def __call__(self, action: str, **args: Any) -> Any:
        ours = getattr(self.model, action)(**args)
        theirs = getattr(self.kafka, action)(**args)
        if action in self.COMPARED:
            assert theirs == ours, (action, first_difference(ours, theirs))
        kafka_state = self.kafka.state()
        model_state = masked_to(self.model.state(), kafka_state)
        assert kafka_state == model_state, (action, first_difference(model_state, kafka_state))
        return theirs

    def read_all(self) -> v.FetchDataInfo:
        result: v.FetchDataInfo = self(
            "read", start_offset=0, max_bytes=1 << 20, isolation="log_end", min_one_message=True)
        return result


def _keyed(*pairs: tuple[bytes, bytes | None]) -> tuple[v.Record, ...]:
    return tuple(v.Record(key, value, NOW) for key, value in pairs)


@needs_jvm
def test_clean__duplicates_and_tombstones__kafkas_cleaner_gives_the_models_pass(
        kafka: tuple[str, str]) -> None:
    """One `clean` through Kafka's LogCleanerManager and Cleaner: the dirty range, end offset
    and groups the model computes, the checkpoint written, superseded records gone with their
    batches' offsets kept (record_offsets), a kept tombstone stamped with a horizon and removed
    by a pass after it; a truncation lowers the checkpoint and a reopen keeps it.
    Spec: KL-CLEAN-2, KL-CLEAN-3, KL-CLEAN-4, KL-CLEAN-5, KL-CLEAN-8, KL-CLEAN-9, KL-CLEAN-11,
    KL-CLEAN-13"""
    command, profile = kafka
    process = AdapterProcess(command)
    try:
        assert "clean" in process.features
        log = Lockstep(process, profile)
        assert log("clean") is None  # an empty log is not selected (no bytes)
        assert log.kafka.state().cleaner_checkpoint == -1
        for i in range(6):
            log("append_as_leader", records=_keyed((b"k%d" % (i % 2), b"v%d" % i),
                                                   (b"k9", None if i == 5 else b"x")),
                leader_epoch=0)
            log("roll")
        log("update_high_watermark", offset=12)
        result = log("clean")
        assert result == v.CleanResult(first_dirty_offset=0, end_offset=12,
                                       first_uncleanable_offset=12, groups=result.groups)
        assert result.groups[0] == 0
        assert log.kafka.state().cleaner_checkpoint == 12
        batches = {b.base_offset: b for b in log.read_all().batches}
        assert batches[8].record_offsets == (8,)  # k0 at 8 kept, k9 at 9 superseded
        assert [r.value for r in batches[10].records] == [b"v5", None]  # the newest k9: kept
        assert log("clean") is None  # nothing dirty below the active segment
        # More data, then a pass once the tombstone's horizon (now + 2 s) has passed.
        log("append_as_leader", records=_keyed((b"k1", b"v6")), leader_epoch=0)
        log("roll")
        log("update_high_watermark", offset=13)
        log("advance_clock", ms=5_000)
        second = log("clean")
        assert second is not None and second.first_dirty_offset == 12
        assert all(r.key != b"k9" for b in log.read_all().batches for r in b.records)
        # A truncation below the active base lowers the checkpoint to the new active base (the
        # segment the passes merged below 13); a reopen keeps the file.
        assert log.kafka.state().cleaner_checkpoint == 13
        log("truncate_to", offset=12)
        state = log.kafka.state()
        assert state.cleaner_checkpoint == state.segments[-1].base_offset < 12
        log("close_and_reopen")
        assert log.kafka.state().cleaner_checkpoint == state.cleaner_checkpoint
        log.kafka.close()
    finally:
        process.close()


@needs_jvm
def test_clean__compaction_lags_and_dirty_ratio__kafkas_selection_is_the_models(
        kafka: tuple[str, str]) -> None:
    """LogCleanerManager's selection with `min.compaction.lag.ms` (the uncleanable bound at the
    first segment with data newer than now - lag), a dirty ratio the log does not reach, and
    `max.compaction.lag.ms` forcing a pass; then a full truncation lowers the checkpoint to the
    new start and a reopen keeps it. Spec: KL-CLEAN-2, KL-CLEAN-3, KL-CLEAN-13"""
    command, profile = kafka
    process = AdapterProcess(command)
    try:
        log = Lockstep(process, profile, min_compaction_lag_ms=10_000,
                       max_compaction_lag_ms=60_000, min_cleanable_dirty_ratio=0.9)
        for i in range(4):  # segments 0..3, one record each, 20 s apart
            log("append_as_leader", records=(v.Record(b"k%d" % (i % 2), b"v%d" % i,
                                                      NOW + i * 20_000),), leader_epoch=0)
            log("roll")
        log("update_high_watermark", offset=4)
        assert log("clean") is None  # every segment is within the minimum lag
        log("advance_clock", ms=30_000)  # segments 0 and 1 are older than now - 10 s
        assert log("clean") == v.CleanResult(0, 2, 2, (0,))
        log("advance_clock", ms=40_000)
        assert log("clean") is None  # ratio below 0.9, nothing past the maximum lag
        log("append_as_leader", records=(v.Record(b"k0", b"x", NOW),), leader_epoch=0)
        log("roll")
        log("update_high_watermark", offset=5)
        log("advance_clock", ms=100_000)
        assert log("clean") == v.CleanResult(2, 5, 5, (0,))
        assert log.kafka.state().cleaner_checkpoint == 5
        log("truncate_fully_and_start_at", offset=2)
        assert log.kafka.state().cleaner_checkpoint == 2
        log("close_and_reopen")
        assert log.kafka.state().cleaner_checkpoint == 2
        log.kafka.close()
    finally:
        process.close()


@needs_jvm
@pytest.mark.parametrize(("release", "kept"), [("3.9.0", False), ("3.9", True), ("4.4", True)])
def test_clean__round_ends_with_a_batch_that_keeps_nothing__kept_empty_from_kafka_3_9_2(
        release: str, kept: bool) -> None:
    """The pass's last batch before the first uncleanable offset (here a follower's keyless
    record, which the cleaner drops) stays as an empty batch in 3.9.2 and 4.x (KAFKA-17076),
    and goes in 3.9.0; each release's profile says which. Spec: KL-CLEAN-6, KL-CLEAN-9"""
    process = AdapterProcess(adapter_command(release))
    try:
        log = Lockstep(process, model_profile(resolve_version(release)))
        log("append_as_follower", batches=(v.BatchSpec(0, 0, (v.Record(b"k0", b"a", NOW),)),))
        log("roll")
        log("append_as_follower", batches=(v.BatchSpec(1, 0, (v.Record(None, b"x", NOW),)),))
        log("roll")
        log("update_high_watermark", offset=2)
        assert log("clean") == v.CleanResult(0, 2, 2, (0,))
        batches = [(b.base_offset, b.record_offsets) for b in log.read_all().batches]
        assert batches == ([(0, None), (1, ())] if kept else [(0, None)])
        log.kafka.close()
    finally:
        process.close()


@needs_jvm
def test_clean__not_compacted_log__answers_null_and_reports_no_checkpoint(
        kafka: tuple[str, str]) -> None:
    """A `delete` log is never selected (LogCleanerManager considers compacted logs only) and
    its state has no cleaner checkpoint. Spec: KL-CLEAN-1, KL-CLEAN-11"""
    command, profile = kafka
    process = AdapterProcess(command)
    try:
        config = replace(COMPACT_FAMILIES["compact"], cleanup_policy="delete",
                         kafka_version=profile)
        log = SubprocessSut(process, config, NOW, 0)
        log.append_as_leader(records=_keyed((b"k0", b"a"), (b"k0", b"b")), leader_epoch=0)
        log.roll()
        log.update_high_watermark(offset=2)
        assert log.clean() is None
        assert log.state().cleaner_checkpoint is None
        log.close()
    finally:
        process.close()


#: `kafkalog check --kafka 4.4 --family compact --crash-weight 0 --steps 40`, seeds 0-29: 25
#: conform, 12 of them with passes that meet KL-CLEAN-4, 5, 6 and 9 (3, 6, 10, 13, 14, 16, 19,
#: 21, 23, 25, 27, 29); seed 22 diverges on finding 4 after its passes, 4 on finding 5, and 0,
#: 2 and 15 on the adapter's negative-sequence limit.
COMPACT_CLEAN_SEEDS = (3, 21)
COMPACT_FINDING_SEED = 22


@needs_jvm
def test_check__kafka_cleaner__conforms_on_the_compact_family_with_passes() -> None:
    """The `compact` family with Kafka's cleaner behind `clean`: runs whose passes clean agree
    with the model step by step; a diverging seed of the recorded run is a triaged finding, not
    a pass. Spec: KL-CLEAN-4, KL-CLEAN-5, KL-CLEAN-6, KL-CLEAN-9"""
    command = adapter_command("4.4")
    for seed in COMPACT_CLEAN_SEEDS:
        outcome = run_seed(seed, steps=40, config_family="compact", adapter=command,
                           kafka_version="4.4", time_limit_s=120)
        assert outcome.outcome == "conformed", (seed, outcome.signature)
        assert outcome.actions.get("clean", 0) >= 1, seed
        assert {"KL-CLEAN-4", "KL-CLEAN-5", "KL-CLEAN-6", "KL-CLEAN-9"} <= set(outcome.rules), seed
    outcome = run_seed(COMPACT_FINDING_SEED, steps=40, config_family="compact", adapter=command,
                       kafka_version="4.4", time_limit_s=120)
    assert outcome.outcome == "diverged"
    assert findings.label(outcome.trace_jsonl).startswith("finding 4 "), outcome.signature
