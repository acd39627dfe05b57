"""The divergences of Kafka's own log already triaged: its findings and the adapter's limits.

A `--kafka` campaign labels every divergence, and never filters one out: with the recorded
finding (docs/kafka.md; its trace is tests/regressions/kafka/`KAFKA-<release>-<what>`) or
adapter limit (adapters/kafka/README.md) whose signature it matches, else `NEW`, which fails the
campaign's verdict. A signature is precise, derived from the recorded traces' diverging steps:
the step's action, the error code on each side (`ok` when a side did not raise), the field that
differed first (a prefix of it, indexes dropped), and the step's shape that makes the finding
happen (a predicate on its arguments, results or Kafka's error message). A finding that shows in
another field, or a Kafka error in another step shape, is NEW until triaged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

NEW = "NEW"
FINDING_PREFIX = "KAFKA"  # a finding's trace is tests/regressions/kafka/KAFKA-<release>-<what>
_INDEX = re.compile(r"\[\d+\]")
FINDING, ADAPTER_LIMIT = "Kafka finding", "adapter limit"


@dataclass(frozen=True)
class Divergence:
    """The diverging (last) step of a trace, as the signature needs it."""

    action: str
    model: str  # the model's error code, or "ok"
    kafka: str  # Kafka's error code, or "ok"
    field: str  # "state.epoch_entries[].epoch", "result.record_count", "result", ...
    args: Mapping[str, Any]
    model_result: Mapping[str, Any]  # the model's `ok` value ({} for an error)
    kafka_result: Mapping[str, Any]  # Kafka's `ok` value ({} for an error)
    kafka_message: str  # Kafka's error message ("" when it did not raise)
    divergence: str = ""  # the checker's message ("state differs at ...: model X | impl Y")


@dataclass(frozen=True)
class Known:
    """One triaged divergence: what it is and the signature that recognises it."""

    label: str  # e.g. "finding 4 (4.4.0-truncate_fully_negative_changes_log_then_throws)"
    kind: str  # FINDING or ADAPTER_LIMIT
    actions: frozenset[str]
    codes: frozenset[tuple[str, str]]  # (model code, Kafka code) pairs; model "*": any
    fields: tuple[str, ...]  # prefixes of the first differing field
    shape: Callable[[Divergence], bool]  # the step shape that makes it happen
    trace: str | None = None  # the recorded trace it was derived from (tests/regressions/kafka/)

    def matches(self, divergence: Divergence) -> bool:
        return (divergence.action in self.actions
                and ((divergence.model, divergence.kafka) in self.codes
                     or ("*", divergence.kafka) in self.codes)
                and divergence.field.startswith(self.fields)
                and self.shape(divergence))


def _trace(name: str) -> str:
    """The file name of a finding's trace, `<release>-<what>` given."""
    return f"{FINDING_PREFIX}-{name}.jsonl"


def _batches(d: Divergence) -> list[Mapping[str, Any]]:
    return list(d.args.get("batches") or [])


def _epoch_minus_1_after_assigned(d: Divergence) -> bool:
    """A batch with epoch -1 after a batch whose epoch Kafka already assigned (KAFKA-18723 kin)."""
    epochs = [b.get("partition_leader_epoch", -1) for b in _batches(d)]
    return any(e < 0 for e in epochs[1:]) and epochs[0] >= 0 and "epoch" in d.kafka_message


def _full_time_index_mid_append(d: Divergence) -> bool:
    return len(_batches(d)) >= 2 and "full time index" in d.kafka_message


def _negative_start(d: Divergence) -> bool:
    return int(d.args.get("offset", 0)) < 0


def _negative_sequence(d: Divergence) -> bool:
    """A producer batch (producer id >= 0) without a sequence (absent means -1, NO_SEQUENCE),
    which Kafka's MemoryRecordsBuilder refuses to build before the log sees it."""
    batches = _batches(d) or [d.args]
    return (any(b.get("producer_id", -1) >= 0 and b.get("base_sequence", -1) < 0
                for b in batches)
            and "negative sequence" in d.kafka_message)


def _gapped_record_count(d: Divergence) -> bool:
    """Kafka's `numMessages()` (last - first + 1) against the model's exact count of a gap, and
    no other field differs but the offset of the max timestamp Kafka leaves undefined (-1,
    KL-VERSION-2), which the checker does not compare (the message names the first raw field)."""
    first, last = d.model_result.get("first_offset"), d.model_result.get("last_offset")
    if first is None or last is None:
        return False
    span = last - first + 1
    others = {key for key in d.model_result.keys() | d.kafka_result.keys()
              if d.model_result.get(key) != d.kafka_result.get(key)} - {"record_count"}
    undefined = d.kafka_result.get("offset_of_max_timestamp") == -1
    return (d.model_result.get("record_count", span) < span
            and d.kafka_result.get("record_count") == span
            and others <= ({"offset_of_max_timestamp"} if undefined else set()))


def _offsets_beyond_one_segment(d: Divergence) -> bool:
    """The append's batches span more offsets from its first base than a segment can index
    (relative offsets are 32-bit), so the segment rolled for it refuses the write."""
    batches = _batches(d)
    if not batches:
        return False
    last = max(b["base_offset"] + len(b.get("records") or ()) - 1 for b in batches)
    return last - batches[0]["base_offset"] > 2**31 - 1


def _lso_below_new_log_start(d: Divergence) -> bool:
    """Kafka's LSO ("impl Y" of the message) is below the log start the step moved to."""
    found = re.search(r"\| impl (-?\d+)$", d.divergence)
    return found is not None and int(found.group(1)) < int(d.args.get("offset", -1))


def _any(d: Divergence) -> bool:
    return True


# Finding 4 replaces the segments and sets the log start offset (docs/kafka.md).
_NEW_START = ("state.log_start_offset", "state.segments")
_EPOCHS = ("state.epoch_entries",)
# Findings 3 and 5 leave written bytes or a roll (segments) and the roll's flush.
_ROLL_AND_FLUSH = ("state.segments", "state.recovery_point")
_FOLLOWER, _LEADER = frozenset({"append_as_follower"}), frozenset({"append_as_leader"})

KNOWN: tuple[Known, ...] = (
    # UnifiedLog.append assigns the epochs before the segment.bytes check on both paths.
    Known("finding 1 (4.4.0-*_batch_too_large_leaves_epoch_entr*)", FINDING,
          _LEADER | _FOLLOWER,
          frozenset({("RecordBatchTooLargeError", "RecordBatchTooLargeError")}),
          _EPOCHS, _any, _trace("4.4.0-follower_batch_too_large_leaves_epoch_entries")),
    Known("finding 2 (3.9.2-follower_epoch_minus_1_leaves_earlier_epoch_entries)",
          FINDING, _FOLLOWER, frozenset({("IllegalArgumentError", "IllegalArgumentError")}),
          _EPOCHS, _epoch_minus_1_after_assigned,
          _trace("3.9.2-follower_epoch_minus_1_leaves_earlier_epoch_entries")),
    Known("finding 3 (4.4.0-full_time_index_*)", FINDING, _FOLLOWER,
          frozenset({("IllegalArgumentError", "IllegalArgumentError")}), _ROLL_AND_FLUSH,
          _full_time_index_mid_append, _trace("4.4.0-full_time_index_leaves_written_batches")),
    Known("finding 4 (4.4.0-truncate_fully_negative_changes_log_then_throws)", FINDING,
          frozenset({"truncate_fully_and_start_at"}),
          frozenset({("IllegalArgumentError", "IllegalArgumentError")}), _NEW_START,
          _negative_start,
          _trace("4.4.0-truncate_fully_negative_changes_log_then_throws")),
    # maybeRoll runs before every producer-state check: a sequence, a producer epoch, a
    # transaction state or a marker's coordinator epoch refused afterwards leaves the roll.
    Known("finding 5 (4.4.0-*_producer_batch_leaves_roll)", FINDING,
          _LEADER | _FOLLOWER | frozenset({"append_marker"}),
          frozenset({(code, code) for code in ("OutOfOrderSequenceError", "InvalidTxnStateError",
                                               "InvalidProducerEpochError",
                                               "TransactionCoordinatorFencedError")}),
          _ROLL_AND_FLUSH, _any, _trace("4.4.0-rejected_producer_batch_leaves_roll")),
    Known("finding 6 (4.4.0-follower_offset_overflow_leaves_roll_and_epochs)", FINDING,
          _FOLLOWER,
          frozenset({("LogSegmentOffsetOverflowError", "LogSegmentOffsetOverflowError")}),
          (*_ROLL_AND_FLUSH, "state.epoch_entries", "state.producer_snapshots"),
          _offsets_beyond_one_segment,
          _trace("4.4.0-follower_offset_overflow_leaves_roll_and_epochs")),
    # From 4.0 (KL-VERSION-3) the FUO clamped to a log start inside a batch is that batch's base.
    Known("finding 7 (4.4.0-lso_below_log_start_inside_a_batch)", FINDING,
          frozenset({"maybe_increment_log_start_offset"}), frozenset({("ok", "ok")}),
          ("state.last_stable_offset",), _lso_below_new_log_start,
          _trace("4.4.0-lso_below_log_start_inside_a_batch")),
    # Kafka's log never sees the batch, so the model's answer may be anything: the leader's
    # InvalidRecordError (KL-PROD-2), a follower's success, a size check that comes first.
    Known("adapter limit: negative base sequence", ADAPTER_LIMIT, _LEADER | _FOLLOWER,
          frozenset({("*", "IllegalArgumentError")}), ("result",), _negative_sequence),
    Known("adapter limit: record_count of a gapped follower append", ADAPTER_LIMIT, _FOLLOWER,
          frozenset({("ok", "ok")}), ("result",), _gapped_record_count),
)
# The further recorded traces of findings 1, 3 and 5 are recognised by the same signatures.
EXTRA_TRACES = {_trace("4.4.0-leader_batch_too_large_leaves_epoch_entry"): KNOWN[0],
                _trace("4.4.0-fenced_producer_batch_leaves_roll"): KNOWN[4],
                _trace("4.4.0-full_time_index_after_roll_leaves_roll_and_flush"): KNOWN[2]}


def divergence_of(trace_jsonl: str) -> Divergence | None:
    """The last step of a trace (JSON Lines text) when it carries a divergence, else None."""
    lines = [line for line in trace_jsonl.splitlines() if line.strip()]
    if len(lines) < 2:
        return None
    step = json.loads(lines[-1])
    if not step.get("divergence"):
        return None
    model, kafka = step.get("model") or {}, step.get("impl") or {}
    return Divergence(
        action=str(step.get("action")), model=_code(model), kafka=_code(kafka),
        field=field_of(step["divergence"]), args=step.get("args") or {},
        model_result=model.get("ok") if isinstance(model.get("ok"), dict) else {},
        kafka_result=kafka.get("ok") if isinstance(kafka.get("ok"), dict) else {},
        kafka_message=str((kafka.get("error") or {}).get("message", "")),
        divergence=str(step["divergence"]))


def _code(result: Mapping[str, Any]) -> str:
    error = result.get("error")
    return str(error.get("code")) if isinstance(error, dict) else "ok"


def field_of(text: str) -> str:
    """The first differing field of a divergence message, indexes dropped:
    "state differs at segments[0].size_in_bytes: ..." -> "state.segments[].size_in_bytes"."""
    found = re.match(r"(state|results) differ(?:s)? at ([^:\s]+):", text)
    if found is None:
        return "result" if text.startswith("results differ") else text.split(":", 1)[0]
    prefix = "state" if found.group(1) == "state" else "result"
    return f"{prefix}.{_INDEX.sub('[]', found.group(2))}"


def match(trace_jsonl: str | None) -> Known | None:
    """The recorded finding or adapter limit a diverged trace is, or None (NEW)."""
    divergence = divergence_of(trace_jsonl) if trace_jsonl else None
    if divergence is None:
        return None
    return next((known for known in KNOWN if known.matches(divergence)), None)


def label(trace_jsonl: str | None) -> str:
    """The label of a Kafka divergence: its recorded finding's or limit's, else NEW."""
    known = match(trace_jsonl)
    return NEW if known is None else known.label
