"""The labels a `--kafka` campaign gives divergences (conformance/jvm/findings.py).

Each recorded finding's trace (tests/regressions/kafka/KAFKA-*.jsonl) must match its own
signature and no other; a divergence that differs in the step's action, an error code, the
diverging field or the step's shape must be NEW.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kafkalog.conformance.jvm import findings
from kafkalog.conformance.jvm.findings import KNOWN, NEW, label, match

CORPUS = Path(__file__).resolve().parents[1] / "regressions" / "kafka"
PREFIX = findings.FINDING_PREFIX
TRACED = {k.trace: k for k in KNOWN if k.trace} | findings.EXTRA_TRACES


def _with_last_step(text: str, **changes: object) -> str:
    """The trace with its last step's top-level keys replaced (args, model, impl, divergence)."""
    lines = text.splitlines()
    step = json.loads(lines[-1]) | changes
    return "\n".join([*lines[:-1], json.dumps(step)])


def _last_step(text: str) -> dict:
    return json.loads(text.splitlines()[-1])


def test_every_finding_trace_has_a_signature() -> None:
    assert sorted(TRACED) == sorted(p.name for p in CORPUS.glob("KAFKA-*.jsonl"))


@pytest.mark.parametrize("name", sorted(TRACED))
def test_recorded_trace__matches_its_own_signature_only(name: str) -> None:
    text = (CORPUS / name).read_text()
    divergence = findings.divergence_of(text)
    assert divergence is not None
    assert [k for k in KNOWN if k.matches(divergence)] == [TRACED[name]]


@pytest.mark.parametrize("name", sorted(TRACED))
def test_recorded_trace__in_another_field__is_new(name: str) -> None:
    text = (CORPUS / name).read_text()
    moved = _with_last_step(text, divergence="state differs at high_watermark: model 0 | impl 1")
    assert label(moved) == NEW


@pytest.mark.parametrize("name", sorted(TRACED))
def test_recorded_trace__with_another_kafka_error__is_new(name: str) -> None:
    text = (CORPUS / name).read_text()
    other = {"error": {"code": "CorruptRecordError", "message": "CorruptRecordException: x"}}
    assert label(_with_last_step(text, impl=other)) == NEW


def test_truncate_fully__at_a_non_negative_offset__is_new() -> None:
    """Finding 4's step shape is the negative offset: the same error elsewhere is not it."""
    text = (CORPUS / f"{PREFIX}-4.4.0-truncate_fully_negative_changes_log_then_throws.jsonl"
            ).read_text()
    assert label(text).startswith("finding 4")
    assert label(_with_last_step(text, args={"offset": 5})) == NEW


def test_epoch_minus_1__in_the_first_batch__is_new() -> None:
    """Finding 2 needs an earlier batch whose epoch Kafka assigned before failing."""
    name = f"{PREFIX}-3.9.2-follower_epoch_minus_1_leaves_earlier_epoch_entries.jsonl"
    text = (CORPUS / name).read_text()
    args = _last_step(text)["args"]
    first_bad = args | {"batches": [b | {"partition_leader_epoch": -1} for b in args["batches"]]}
    assert label(_with_last_step(text, args=first_bad)) == NEW


def _step(action: str, args: dict, model: dict, impl: dict, divergence: str) -> str:
    header = json.dumps({"kafkalog_trace": 1})
    step = {"step": 0, "action": action, "args": args, "model": model, "impl": impl,
            "divergence": divergence}
    return f"{header}\n{json.dumps(step)}"


def _ok(first: int, last: int, count: int) -> dict:
    return {"ok": {"first_offset": first, "last_offset": last, "record_count": count}}


def test_gapped_follower_record_count__is_the_adapter_limit() -> None:
    text = _step("append_as_follower", {"batches": []}, _ok(0, 7, 6), _ok(0, 7, 8),
                 "results differ at record_count: model 6 | impl 8; ...")
    assert label(text) == "adapter limit: record_count of a gapped follower append"


def test_gapless_follower_record_count_difference__is_new() -> None:
    text = _step("append_as_follower", {"batches": []}, _ok(0, 7, 8), _ok(0, 7, 7),
                 "results differ at record_count: model 8 | impl 7; ...")
    assert match(text) is None


def test_negative_base_sequence__is_the_adapter_limit_and_a_positive_one_is_new() -> None:
    model = {"error": {"code": "InvalidRecordError", "message": "negative sequence"}}
    impl = {"error": {"code": "IllegalArgumentError",
                      "message": "IllegalArgumentException: Invalid negative sequence number used"}}
    args = {"records": [], "producer_id": 1, "producer_epoch": 0, "base_sequence": -1}
    text = _step("append_as_leader", args, model, impl, "results differ: model x | impl y")
    assert label(text) == "adapter limit: negative base sequence"
    positive = _step("append_as_leader", args | {"base_sequence": 3}, model, impl,
                     "results differ: model x | impl y")
    assert label(positive) == NEW


def test_a_trace_without_a_divergence__has_no_match() -> None:
    assert match(None) is None
    assert match('{"kafkalog_trace": 1}') is None


def test_field_of__drops_indexes_and_names_the_side() -> None:
    assert findings.field_of("state differs at segments[0].size_in_bytes: model 1 | impl 2") \
        == "state.segments[].size_in_bytes"
    assert findings.field_of("results differ at record_count: model 6 | impl 8; m | k") \
        == "result.record_count"
    assert findings.field_of("results differ: model ok | impl error") == "result"


def test_gapped_record_count__first_raw_difference_an_undefined_max_timestamp_offset() -> None:
    """The message names the first raw field (offset_of_max_timestamp, which Kafka leaves -1
    and the checker does not compare); the limit still matches, and a real third field not."""
    model = {"ok": {"first_offset": 0, "last_offset": 2, "offset_of_max_timestamp": 0,
                    "valid_bytes": 144, "record_count": 2}}
    kafka = {"ok": {"first_offset": 0, "last_offset": 2, "offset_of_max_timestamp": -1,
                    "valid_bytes": 144, "record_count": 3}}
    text = _step("append_as_follower", {"batches": []}, model, kafka,
                 "results differ at offset_of_max_timestamp: model 0 | impl -1; ...")
    assert label(text) == "adapter limit: record_count of a gapped follower append"
    kafka["ok"]["valid_bytes"] = 145
    assert label(_step("append_as_follower", {"batches": []}, model, kafka, "results differ at"
                       " offset_of_max_timestamp: model 0 | impl -1; ...")) == NEW


def test_offset_overflow__within_one_segment_range__is_new() -> None:
    """Finding 6 needs batches spanning more than a segment's 32-bit relative offsets."""
    name = f"{PREFIX}-4.4.0-follower_offset_overflow_leaves_roll_and_epochs.jsonl"
    text = (CORPUS / name).read_text()
    assert label(text).startswith("finding 6")
    args = _last_step(text)["args"]
    near = args | {"batches": [b | {"base_offset": 3 + i} for i, b in enumerate(args["batches"])]}
    assert label(_with_last_step(text, args=near)) == NEW


def test_lso_not_below_the_new_log_start__is_new() -> None:
    """Finding 7 is an LSO below the log start the step set; an LSO above it is another thing."""
    name = f"{PREFIX}-4.4.0-lso_below_log_start_inside_a_batch.jsonl"
    text = (CORPUS / name).read_text()
    assert label(text).startswith("finding 7")
    above = "state differs at last_stable_offset: model 9 | impl 10"
    assert label(_with_last_step(text, divergence=above)) == NEW
