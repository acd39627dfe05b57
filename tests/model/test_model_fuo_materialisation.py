"""KL-ALLOW-4 for the first unstable offset: Kafka caches the log start's lookup metadata.

`UnifiedLog.maybeIncrementFirstUnstableOffset` clamps a first unstable offset below the log
start up to it with `convertToOffsetMetadataOrThrow(logStartOffset)` and caches the result as
is; from 4.0 a lookup's offset is the base of the batch it lands in (KL-VERSION-3), so a log
start in a gap before a batch moves the FUO and the LSO to that batch. Found by a 1,000-run
`kafkalog campaign --kafka 4.4` (seed 414), kept as
tests/regressions/kafka/KL-ALLOW-4-4.4.0-fuo_clamped_to_log_start_moves_to_next_batch.jsonl.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from kafkalog.conformance.adapter.json_codec import decode_args
from kafkalog.conformance.traces.trace import read_trace
from kafkalog.model import log
from kafkalog.model.choices import outcomes
from kafkalog.model.producer.transactions import last_stable_offset

TRACE = (Path(__file__).resolve().parents[1] / "regressions" / "kafka"
         / "KL-ALLOW-4-4.4.0-fuo_clamped_to_log_start_moves_to_next_batch.jsonl")


def _state_before_last_step(version: str) -> log.PartitionState:
    """The trace's log before its last step (the HW update to 25), under `version`."""
    trace = read_trace(TRACE)
    config = dataclasses.replace(trace.header.config, kafka_version=version)
    state = log.empty_log(config, trace.header.now_ms, trace.header.log_start_offset)
    for step in trace.steps[:-1]:
        args = decode_args(step.action, step.args, where=step.action)
        state, _ = getattr(log, step.action)(state, **args)
    return state


@pytest.mark.parametrize(("version", "allowed"), [("4.4", {23, 24}), ("3.9.2", {23})])
def test_fuo_below_the_log_start_in_a_gap__may_move_to_the_next_batch_from_4_0(
        version: str, allowed: set[int]) -> None:
    """The log start 23 is in a gap before the batch at 24; an ongoing transaction began at 0.
    Spec: KL-ALLOW-4, KL-TXN-5"""
    state = _state_before_last_step(version)
    assert state.log_start_offset == 23
    lsos = {last_stable_offset(o.value[0]) for o in outcomes(log.update_high_watermark, state, 25)}
    assert lsos == allowed
