"""The model's kafka crash mode checked at implementation level (KL-CRASH-1, KL-CRASH-3).

`conformance/broken/kafka_durability.py` puts Kafka's fsync choices back into kafkalog's
implementation (GAP-1 truncation not durable, GAP-4 recovery not durable, DUR-29 snapshot removals
never dir-fsynced). Its crash outcomes must be members of the kafka-mode allowed set (the set is
not too narrow), the strict set must reject them (the modes differ), and a recovery no Kafka
version performs must be rejected in kafka mode too (the set is not everything).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from kafkalog.conformance.adapter.json_codec import FEATURES, decode_args
from kafkalog.conformance.broken.kafka_durability import KafkaDurabilitySut
from kafkalog.conformance.broken.registry import install, uninstall
from kafkalog.conformance.check.lockstep import DivergenceError, Lockstep
from kafkalog.conformance.check.runner import run_seed
from kafkalog.conformance.check.session import START_MS, Session, close_sides
from kafkalog.conformance.gen.configs import CONFIG_FAMILIES
from kafkalog.conformance.traces.replay import replay_trace
from kafkalog.conformance.traces.trace import Trace, read_trace
from kafkalog.model import values as v
from kafkalog.model.crash.crash import CrashMode

TINY = CONFIG_FAMILIES["tiny"]
ROOMY = CONFIG_FAMILIES["roomy"]


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    logging.disable(logging.WARNING)  # recovery logs every cut it makes
    yield
    logging.disable(logging.NOTSET)


class _StrictlyHeld(KafkaDurabilitySut):
    """The same Kafka-like implementation, held to the strict model instead."""

    crash_mode = "strict"


def _truncated_then_crashed(factory: object, seed: int) -> tuple[Lockstep, int | None]:
    """Truncation not durable, in one segment: four flushed batches truncated to 1, then a power
    loss. Returns the lockstep and the recovered LEO (None when the crash step diverged)."""
    ls = Session(ROOMY, factory, frozenset(FEATURES), verify_every=1).start()  # type: ignore[arg-type]
    one = {"records": (v.Record(None, b"test", START_MS),), "leader_epoch": 0}
    try:
        for _ in range(4):
            ls.step("append_as_leader", one)
        ls.step("flush", {"offset": None})
        ls.step("truncate_to", {"offset": 1})
        try:
            ls.step("crash", {"point": 1 << 20, "fault": "power_loss", "seed": seed,
                              "leftover": "none"})
        except DivergenceError:
            return ls, None
        return ls, ls.sut.state().log_end_offset
    finally:
        ls.sut.close()


def test_kafka_fsync_variant__resurrects_truncated_batches__which_only_kafka_mode_allows() -> None:
    """GAP-1: after a truncation Kafka never fsyncs, a power loss brings the cut batches back.
    The kafka-mode set holds that state; the strict set does not. Spec: KL-CRASH-1, KL-CRASH-3"""
    resurrected = []
    for seed in range(40):
        ls, leo = _truncated_then_crashed(KafkaDurabilitySut, seed)
        assert ls.model.mode is CrashMode.KAFKA
        assert leo is not None, ls.steps[-1].divergence  # every image is a kafka-mode member
        if leo > 1:
            resurrected.append(seed)
    assert resurrected, "no crash seed brought the truncated batches back"
    strict, leo = _truncated_then_crashed(_StrictlyHeld, resurrected[0])
    assert strict.model.mode is CrashMode.STRICT and leo is None
    assert "recovered state not allowed" in (strict.steps[-1].divergence or "")


def test_kafka_mode__still_rejects_a_recovery_no_kafka_performs() -> None:
    """The kafka-mode set is not everything: keeping a torn tail (CBUG-2) is caught there too.
    Spec: KL-CRASH-1"""

    class TornTailKept(KafkaDurabilitySut):
        def __init__(self, config: v.LogConfig, now_ms: int = 0,
                     log_start_offset: int = 0) -> None:
            install("recovery_keeps_torn_tail")  # for this object's life, like BrokenImplSut
            super().__init__(config, now_ms, log_start_offset)

        def close(self) -> None:
            try:
                super().close()
            finally:
                uninstall("recovery_keeps_torn_tail")

    ls = Session(TINY, TornTailKept, frozenset(FEATURES), verify_every=1).start()
    try:
        ls.step("append_as_leader", {"records": (v.Record(None, b"test", START_MS),),
                                     "leader_epoch": 0})
        assert ls.model.mode is CrashMode.KAFKA
        with pytest.raises(DivergenceError):
            ls.step("crash", {"point": 1 << 20, "fault": "process_crash", "seed": 0,
                              "leftover": "torn_tail"})
    finally:
        ls.sut.close()


def test_kafka_crash_mode_runs__check_the_variant_with_crash_steps() -> None:
    """`kafkalog check --crash-mode kafka` in small: runs of the variant draw crash steps and
    conform (outcomes the model cannot express, KL-CRASH-3, are rare; these seeds meet none)."""
    crashes = 0
    for seed in range(4):
        outcome = run_seed(seed, steps=40, config_family="tiny", broken="kafka_durability",
                           time_limit_s=30, crash_weight=3)
        assert outcome.outcome == "conformed", (outcome.signature, outcome.trace_jsonl)
        crashes += sum(outcome.crashes.values())
    assert crashes > 0


def test_kafka_gap__epoch_cache_alone_differs__named_in_kafka_mode_only() -> None:
    """Seed 763's shape (an undone recovery cut brings back a batch whose epoch the CRC does
    not cover) is a named kafka-mode gap; any other difference, or strict mode, is not."""
    from dataclasses import replace

    from kafkalog.conformance.crash.kafka_gaps import KAFKA_GAPS, kafka_gap
    from kafkalog.model import values as v

    member = v.LogStateView(4, 4, 5, 4, (v.SegmentView(4, 72, 5),), (v.EpochEntry(3, 4),))
    epoch_72 = replace(member, epoch_entries=(v.EpochEntry(72, 4),))
    assert kafka_gap("kafka", [member], epoch_72) == "resurrected_batch_epoch" in KAFKA_GAPS
    assert kafka_gap("strict", [member], epoch_72) is None
    assert kafka_gap("kafka", [member], replace(epoch_72, log_end_offset=6)) is None


def test_kafka_gap__planted_batches_back__named_only_after_a_plant_and_for_extra_bytes() -> None:
    """Seeds 53/174/778's shape: after an `offsets_back` plant, a recovered segment holding a
    member's batches and then more bytes and offsets (no time-index entry, no epoch: the
    planted batches) is `planted_batches_back`; without the plant, or with a new time-index
    entry (a real batch), it is not. Spec: KL-CRASH-3"""
    from kafkalog.conformance.crash.kafka_gaps import kafka_gap, leftovers_at_risk

    member = v.LogStateView(0, 0, 2, 0, (v.SegmentView(0, 4167, 2, (), ((START_MS, 0),)),),
                            (v.EpochEntry(0, 0),))
    planted = replace(member, log_end_offset=3,
                      segments=(v.SegmentView(0, 8334, 3, ((2, 4167),), ((START_MS, 0),)),))
    risk = leftovers_at_risk("kafka", "offsets_back")
    assert kafka_gap("kafka", [member], planted, risk) == "planted_batches_back"
    assert kafka_gap("kafka", [member], planted) is None
    assert leftovers_at_risk("strict", "offsets_back") == frozenset()
    stamped = replace(planted, segments=(replace(planted.segments[0],
                                                 time_index=((START_MS + 1, 2),)),))
    assert kafka_gap("kafka", [member], stamped, risk) is None


def test_kafka_gap__resurrected_batch_offset__last_segment_same_bytes_other_offsets() -> None:
    """Seeds 821/1483/1556's shape: the last segment has the member's base and size but ends
    at another offset (a torn base-offset field); other sizes or segments are not it.
    Spec: KL-CRASH-3"""
    from kafkalog.conformance.crash.kafka_gaps import kafka_gap

    member = v.LogStateView(0, 0, 4, 0, (v.SegmentView(0, 144, 4, ((3, 72),), ((START_MS, 0),)),),
                            (v.EpochEntry(0, 0), v.EpochEntry(3, 3)))
    torn = replace(member, log_end_offset=225, epoch_entries=(v.EpochEntry(0, 0),
                                                               v.EpochEntry(3, 224)),
                   segments=(v.SegmentView(0, 144, 225, ((224, 72),), ((START_MS, 0),)),))
    assert kafka_gap("kafka", [member], torn) == "resurrected_batch_offset"
    assert kafka_gap("strict", [member], torn) is None
    longer = replace(torn, segments=(replace(torn.segments[0], size_in_bytes=216),))
    assert kafka_gap("kafka", [member], longer) is None


def test_kafka_gap__swap_index_lost__an_earlier_segments_time_index_empty_after_a_swap() -> None:
    """Seed 100780's shape: after a `swap_completed` plant, a member but for the empty time
    index of a segment before the last is `swap_index_lost`; without the plant, for the last
    segment, or with another difference, it is not. Spec: KL-CRASH-3"""
    from kafkalog.conformance.crash.kafka_gaps import kafka_gap, leftovers_at_risk

    first = v.SegmentView(0, 400, 5, ((4, 328),), ((START_MS, 0), (START_MS + 1, 3)))
    member = v.LogStateView(0, 0, 7, 5, (first, v.SegmentView(5, 144, 7, (), ((START_MS, 5),))),
                            ())
    lost = replace(member, segments=(replace(first, time_index=()), member.segments[1]))
    risk = leftovers_at_risk("kafka", "swap_completed")
    assert kafka_gap("kafka", [member], lost, risk) == "swap_index_lost"
    assert kafka_gap("kafka", [member], lost) is None
    assert kafka_gap("strict", [member], lost, risk) is None
    last_lost = replace(member, segments=(first, replace(member.segments[1], time_index=())))
    assert kafka_gap("kafka", [member], last_lost, risk) is None
    assert kafka_gap("kafka", [member], replace(lost, log_end_offset=6), risk) is None


def test_diverse_first__one_member_per_durable_core_before_the_repeats() -> None:
    """Members alike but for kafka mode's layouts come after one of each distinct checkpoint
    content, so the few the checker keeps span what a later crash tells apart (seed 1505).
    Spec: KL-CRASH-1"""
    from kafkalog.conformance.crash.kafka_gaps import diverse_first
    from kafkalog.model.crash.crash import Durable
    from kafkalog.model.recovery import Checkpoints

    state = object()
    plain = [(state, Durable(0, Checkpoints(recovery_point=rp), layouts=layouts))
             for rp in (0, 2) for layouts in ((), ((),))]
    ordered = diverse_first([plain[0], plain[1], plain[2], plain[3]])
    assert [m[1].checkpoints.recovery_point for m in ordered[:2]] == [0, 2]
    assert sorted(map(id, ordered)) == sorted(map(id, plain))


def test_kafka_load_gap__swap_back__only_a_planted_swap_read_by_the_load() -> None:
    """Seeds 154/517's shape: after a `cleaned_swap` plant, a load failing while it reads a
    `.swap` file is `swap_back`; another failure, or no plant, is not. Spec: KL-CRASH-3"""
    from kafkalog.conformance.crash.kafka_gaps import kafka_load_gap, leftovers_at_risk

    risk = leftovers_at_risk("kafka", "cleaned_swap")
    error = "error CorruptRecordError: record size 0 (/d/p-0/00000000000000000000.log.swap@0)"
    assert kafka_load_gap("kafka", error, risk) == "swap_back"
    assert kafka_load_gap("kafka", error, frozenset()) is None
    assert kafka_load_gap("strict", error, risk) is None
    assert kafka_load_gap("kafka", error.replace(".swap", ""), risk) is None


def test_kafka_load_gap__resurrected_batch_below_base__torn_offset_under_the_segment_base() -> None:
    """Seed 102582's shape: after a torn power loss, a load failing on a batch whose offset is
    below its segment's base (a torn base-offset field; Kafka's split precondition fails too)
    is `resurrected_batch_below_base`; an offset above the base range, another fault, or
    strict mode is not. Spec: KL-CRASH-3, SEG-2"""
    from kafkalog.conformance.crash.kafka_gaps import kafka_load_gap

    error = ("error LogSegmentOffsetOverflowError: Detected offset overflow at offset 0 in "
             "segment with base offset 2 (/d/p-0/00000000000000000002.log)")
    torn = "power_loss_torn"
    assert kafka_load_gap("kafka", error, frozenset(), torn) == "resurrected_batch_below_base"
    assert kafka_load_gap("kafka", error, frozenset(), "power_loss") is None
    assert kafka_load_gap("strict", error, frozenset(), torn) is None
    above = error.replace("offset 0 in", f"offset {2 + (1 << 31)} in")
    assert kafka_load_gap("kafka", above, frozenset(), torn) is None


KAFKA_MODE_TRACES = sorted(
    (Path(__file__).resolve().parents[1] / "regressions" / "kafka_mode").glob("*.jsonl"))
#: Traces whose fix was in the checker, not the kafka set (lockstep keeps the matching members
#: diverse, kafka_gaps.py `diverse_first`; a planted leftover's files carry the log's clock,
#: impl_sut `_stamp_planted`; a reload's last stable offset follows its producer table,
#: sweep.py `same_after_reload`): held strictly, the variant conforms on them too.
CHECKER_FIXES = {"KL-CRASH-1-kafka_diverse_alternatives-seed1505",
                 "KL-DEL-1-kafka_planted_file_mtime-seed1494",
                 "KL-CRASH-7-kafka_lso_follows_a_reloaded_producer_table-seed8498"}


def _held_strictly(trace: Trace) -> int | None:
    """Replay `trace` on the Kafka-like variant held to the strict model: the step (1-based)
    of the first divergence, or None when every step conforms."""
    header = trace.header
    ls = Session(header.config, _StrictlyHeld, frozenset(FEATURES), now_ms=header.now_ms,
                 log_start_offset=header.log_start_offset).start()
    try:
        for index, step in enumerate(trace.steps, start=1):
            try:
                ls.step(step.action, decode_args(step.action, step.args))
            except DivergenceError:
                return index
        return None
    finally:
        close_sides(ls)


@pytest.mark.parametrize("path", KAFKA_MODE_TRACES, ids=lambda p: p.stem)
def test_kafka_mode_trace__the_kafka_fsync_variant_conforms__held_strictly_it_diverges(
        path: Path) -> None:
    """A former kafka-mode divergence the kafka set now covers (tests/regressions/kafka_mode):
    the variant conforms on it in kafka mode, the strict model rejects what it recovers, and
    the strict implementation conforms on the same steps. Spec: KL-CRASH-1, KL-CRASH-3,
    KL-CRASH-8, KL-CRASH-11"""
    trace = read_trace(path)
    assert trace.header.broken == "kafka_durability"
    result = replay_trace(trace)
    assert result.conformed, (result.diverged_at, result.signature, result.adapter_error)
    assert (_held_strictly(trace) is None) is (path.stem in CHECKER_FIXES)
    strict = replay_trace(Trace(replace(trace.header, broken=None), trace.steps))
    assert strict.conformed, (strict.diverged_at, strict.signature)


def test_kafka_mode_traces__cover_every_widened_shape() -> None:
    """One trace per shape this branch widened the kafka set for (their README lists them)."""
    shapes = {p.stem.split("-seed")[0] for p in KAFKA_MODE_TRACES}
    assert {"KL-CRASH-8-kafka_truncation_hole", "KL-CRASH-11-kafka_removed_snapshot_back",
            "KL-CRASH-1-kafka_power_loss_image_back", "KL-CRASH-1-kafka_load_removals_undone",
            "KL-CRASH-1-kafka_diverse_alternatives",
            "KL-CRASH-8-kafka_retention_inside_resurrected_layout",
            "KL-CRASH-8-kafka_truncation_over_resurrected_layout",
            "KL-CRASH-9-kafka_planted_batches_back",
            "KL-CRASH-9-kafka_planted_batches_emptied_again"} <= shapes
