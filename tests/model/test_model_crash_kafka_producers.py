"""KL-ALLOW-9: a kafka-mode load may start its producer recovery at the log-start checkpoint.

Kafka's `LogLoader.recoverSegment` rebuilds the temporary producer-state manager with
`rebuildProducerState(..., logStartOffsetCheckpoint, segment.baseOffset, ...)`, whose
`truncateAndReload` deletes only the snapshots at or below that start; when the checkpoint has
no entry (FMT-40 writes none while the log start is the first segment's base) or the crash lost
it, it reads 0, the snapshot at the loaded log start survives, the pass reads the producers it
holds and writes them into the snapshot at the recovered end, which the final rebuild loads.
kafkalog starts both passes at the loaded log start (KL-CRASH-11). The sweeps of `kafkalog check
--crash-mode kafka --kafka-loader 4.4.0 --family producers --seed 115 --crash-weight 2` found
Kafka's loads outside the kafka-mode set by those producers only.
"""

from __future__ import annotations

from typing import Any

from kafkalog.model import log
from kafkalog.model.crash import crash
from kafkalog.model.crash.crash import CrashMode, FaultModel
from kafkalog.model.recovery import Checkpoints, recover_unclean
from kafkalog.model.values import LogConfig, Record

CONFIG = LogConfig(segment_bytes=300, index_interval_bytes=100, segment_index_bytes=48,
                   file_delete_delay_ms=1000)


def _producer_only_below_the_log_start(mode: CrashMode) -> tuple[Any, crash.Durable]:
    """Producer 7 wrote offset 0 only; the log start moved to 1 and retention deleted segment 0,
    so the snapshot at 1 is the only file that knows producer 7 (KAFKA-7190 keeps it)."""
    state = log.empty_log(CONFIG)
    durable = crash.initial_durable(state)

    def do(action: str, *args: Any) -> None:
        nonlocal state, durable
        before = state
        state, _ = getattr(log, action)(state, *args)
        durable = crash.observe(durable, action, before, state, mode)

    do("append_as_leader", (Record(None, b"test", 100),), 0, 7, 0, 0)
    do("roll", None)
    do("append_as_leader", (Record(None, b"test", 100),), 0)
    do("close_and_reopen")
    do("update_high_watermark", 2)
    do("maybe_increment_log_start_offset", 1)
    do("delete_old_segments")
    return state, durable


def _producer_ids(state: Any) -> tuple[int, ...]:
    return tuple(p.producer_id for p in log.view(state).producers)


def test_kafka_producers__pass_from_a_lost_log_start_checkpoint_keeps_the_snapshots_producer(
) -> None:
    """Checkpoint 0 (no entry), loaded log start 1: Kafka's pass reads snapshot 1 and keeps producer
    7; kafkalog's deletes it first. Spec: KL-ALLOW-9, KL-CRASH-11"""
    state, _ = _producer_only_below_the_log_start(CrashMode.KAFKA)
    checkpoints = Checkpoints(recovery_point=0, log_start=0)
    files = state.producer_state.snapshots
    ours, _, _ = recover_unclean(state.segments, checkpoints, CONFIG, 0, snapshots=files)
    theirs, _, _ = recover_unclean(state.segments, checkpoints, CONFIG, 0, snapshots=files,
                                   kafka_producers=True)
    assert _producer_ids(ours) == ()
    assert _producer_ids(theirs) == (7,)
    assert theirs.log_start_offset == ours.log_start_offset == 1


def test_kafka_producers__the_next_load_from_the_same_checkpoint_drops_the_producer() -> None:
    """The first load deleted snapshot 1 (at the loaded log start) and wrote the producer into
    the one at the LEO, which the next pass, rebuilt up to the base 1, deletes: Kafka's loads are
    not idempotent in producer state (KL-CRASH-7 excepts it). Spec: KL-ALLOW-9, KL-CRASH-7"""
    state, _ = _producer_only_below_the_log_start(CrashMode.KAFKA)
    checkpoints = Checkpoints(recovery_point=0, log_start=0)
    first, _, _ = recover_unclean(state.segments, checkpoints, CONFIG, 0,
                                  snapshots=state.producer_state.snapshots,
                                  kafka_producers=True)
    second, _, _ = recover_unclean(first.segments, checkpoints, CONFIG, 0,
                                   snapshots=first.producer_state.snapshots,
                                   kafka_producers=True)
    assert _producer_ids(first) == (7,)
    assert _producer_ids(second) == ()


def test_kafka_producers__a_checkpoint_at_the_log_start_changes_nothing() -> None:
    """Kafka's start equals kafkalog's when the checkpoint holds the log start. Spec: KL-ALLOW-9"""
    state, _ = _producer_only_below_the_log_start(CrashMode.KAFKA)
    checkpoints = Checkpoints(recovery_point=0, log_start=1)
    files = state.producer_state.snapshots
    ours, _, _ = recover_unclean(state.segments, checkpoints, CONFIG, 0, snapshots=files)
    theirs, _, _ = recover_unclean(state.segments, checkpoints, CONFIG, 0, snapshots=files,
                                   kafka_producers=True)
    assert ours == theirs


def test_crash_states__kafka_mode_offers_both_producer_tables_strict_mode_only_kafkalogs(
) -> None:
    """A power loss after retention: the log-start checkpoint has no entry (FMT-40), so Kafka's
    pass starts at 0. Spec: KL-ALLOW-9, KL-CRASH-11, KL-CRASH-1"""
    for mode in CrashMode:
        state, durable = _producer_only_below_the_log_start(mode)
        assert durable.checkpoints.log_start == 0  # FMT-40: the first base is the log start
        tables = {_producer_ids(s) for s, _ in crash.loaded_outcomes(
            crash.crash_states(state, durable, FaultModel.POWER_LOSS, mode))}
        assert tables == ({(), (7,)} if mode is CrashMode.KAFKA else {()}), mode
