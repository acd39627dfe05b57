"""KL-ALLOW-8: a kafka-mode load may keep the checkpointed epoch cache, Kafka's RCV-10 walk.

Kafka's `LogLoader` reads the leader-epoch checkpoint, recovers the segments from the one
holding the recovery point with `LogSegment.recover`, which assigns a batch's epoch only when it
is above the cache's latest, then truncates the cache from the end at the recovered LEO and from
the start at the log-start checkpoint. kafkalog re-derives the entries from the recovery point on
(KL-CRASH-6). The sweeps of `kafkalog check --crash-mode kafka --kafka-loader` found Kafka's
loads outside the kafka-mode set by the epoch cache only (class `epoch_recovery`), all after a
log-start advance that trimmed the epoch checkpoint durably while the crash lost the log-start
checkpoint (GAP-12).
"""

from __future__ import annotations

from kafkalog.model import log
from kafkalog.model.crash import crash
from kafkalog.model.crash.crash import CrashMode, FaultModel
from kafkalog.model.recovery import Checkpoints, recover_unclean
from kafkalog.model.values import EpochEntry, LogConfig, Record

CONFIG = LogConfig()


def _two_batches_of_epoch_0() -> log.PartitionState:
    state = log.empty_log(CONFIG)
    for _ in range(2):
        state, _ = log.append_as_leader(state, (Record(None, b"x", 100),), 0)
    return state


def test_kafka_walk__keeps_the_trimmed_checkpoint_entry_and_adds_none_for_its_epoch() -> None:
    """The checkpoint says (0, 1) after a log-start advance to 1 the crash lost: Kafka keeps it
    (batch 0 of epoch 0 adds nothing under latest epoch 0), kafkalog re-derives (0, 0).
    Spec: KL-ALLOW-8, KL-CRASH-6"""
    state = _two_batches_of_epoch_0()
    checkpoints = Checkpoints(recovery_point=0, epochs=(EpochEntry(0, 1),))
    ours, _, _ = recover_unclean(state.segments, checkpoints, CONFIG, 0)
    theirs, _, _ = recover_unclean(state.segments, checkpoints, CONFIG, 0, kafka_walk=True)
    assert ours.epochs == (EpochEntry(0, 0),)
    assert theirs.epochs == (EpochEntry(0, 1),)
    assert replace_epochs(theirs, ours.epochs) == ours  # only the cache differs


def test_kafka_walk__an_entry_at_the_recovered_end_is_trimmed_there() -> None:
    """The advance went to the LEO 2: Kafka's cut at the LEO leaves an empty cache (the case
    tests/jvm/test_kafka_loader_on_images.py pins on Kafka 4.4). Spec: KL-ALLOW-8"""
    state = _two_batches_of_epoch_0()
    checkpoints = Checkpoints(recovery_point=0, epochs=(EpochEntry(0, 2),))
    theirs, _, _ = recover_unclean(state.segments, checkpoints, CONFIG, 0, kafka_walk=True)
    assert theirs.epochs == ()


def test_kafka_walk__a_recovered_batch_of_a_higher_epoch_adds_its_entry() -> None:
    """Spec: KL-ALLOW-8"""
    state = _two_batches_of_epoch_0()
    state, _ = log.append_as_leader(state, (Record(None, b"x", 100),), 3)
    checkpoints = Checkpoints(recovery_point=0, epochs=(EpochEntry(0, 1),))
    theirs, _, _ = recover_unclean(state.segments, checkpoints, CONFIG, 0, kafka_walk=True)
    assert theirs.epochs == (EpochEntry(0, 1), EpochEntry(3, 2))


def test_crash_states__kafka_mode_offers_both_caches_strict_mode_only_kafkalogs() -> None:
    """A log-start advance whose checkpoint a power loss lost, the epoch checkpoint trimmed.
    Spec: KL-ALLOW-8, KL-CRASH-1"""
    state = _two_batches_of_epoch_0()
    for mode in CrashMode:
        durable = crash.initial_durable(state)
        durable = crash.observe(durable, "flush", state, state, mode)
        trimmed = Checkpoints(recovery_point=0, epochs=(EpochEntry(0, 1),))
        durable = replace_durable(durable, trimmed)
        caches = {s.epochs for s, _ in crash.loaded_outcomes(
            crash.crash_states(state, durable, FaultModel.POWER_LOSS, mode))
            if s.log_end_offset == 2}
        expected = {(EpochEntry(0, 0),)} | ({(EpochEntry(0, 1),)} if mode is CrashMode.KAFKA
                                            else set())
        assert caches == expected, mode


def replace_epochs(state: log.PartitionState, epochs: tuple[EpochEntry, ...]
                   ) -> log.PartitionState:
    from dataclasses import replace

    return replace(state, epochs=epochs)


def replace_durable(durable: crash.Durable, checkpoints: Checkpoints) -> crash.Durable:
    """The durability with these checkpoints and only their epoch cache on disk."""
    from dataclasses import replace

    return replace(durable, checkpoints=checkpoints, epoch_options=(checkpoints.epochs,))
