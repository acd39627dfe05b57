"""KL-ALLOW-11: Kafka's load keeps a cleaner-checkpoint entry above the loaded log end offset
until its cleaner's next selection resets it; kafkalog's load lowers it to the active base.
Kafka mode allows both (the kafka-mode set of a crash holds Kafka's load beside kafkalog's)."""

from __future__ import annotations

from kafkalog.model import log
from kafkalog.model.log import view
from kafkalog.model.recovery import Checkpoints, recover_unclean
from kafkalog.model.state import PartitionState
from kafkalog.model.values import LogConfig, Record

COMPACT = LogConfig(cleanup_policy="compact", min_cleanable_dirty_ratio=0.0)


def _sealed() -> PartitionState:
    """Keys 0..2 twice over two sealed segments and an active one."""
    state = log.empty_log(COMPACT)
    for i in range(6):
        state, _ = log.append_as_leader(state, (Record(b"k%d" % (i % 3), b"v", i),), 0)
        if i % 3 == 2:
            state, _ = log.roll(state)
    state, _ = log.update_high_watermark(state, state.log_end_offset)
    return state


def _load(state: PartitionState, entry: int, kafka: bool) -> PartitionState:
    checkpoints = Checkpoints(recovery_point=0, cleaner=entry)
    loaded, _, _ = recover_unclean(state.segments, checkpoints, COMPACT, state.now_ms,
                                   kafka_walk=kafka, kafka_producers=kafka, kafka_cleaner=kafka)
    return loaded


def test_load__entry_above_the_log_end__kafka_keeps_it_kafkalog_lowers_it() -> None:
    """A crash inside a truncation after its cut and before CLN-68 lowered the entry leaves it
    above the log end: Kafka's LogCleanerManager reads the file as it is (nothing at startup
    resets it); kafkalog lowers it to the active base at load. Spec: KL-ALLOW-11, KL-CRASH-15"""
    state = _sealed()
    above = state.log_end_offset + 5
    ours, kafkas = _load(state, above, kafka=False), _load(state, above, kafka=True)
    assert view(ours).cleaner_checkpoint == state.active.base_offset
    assert ours.cleaner_entry_kept is None
    assert view(kafkas).cleaner_checkpoint == above
    assert kafkas.cleaner_checkpoint == state.active.base_offset  # KL-INV-18 still holds
    assert _load(state, state.active.base_offset, kafka=True).cleaner_entry_kept is None


def test_kept_entry__the_next_selection_resets_it_to_the_log_start() -> None:
    """Kafka's `cleanableOffsets` resets an entry above the log end to the log start (CLN-15)
    and writes it; the kept entry is gone from then on. Spec: KL-ALLOW-11, KL-CLEAN-2"""
    state = _sealed()
    kafkas = _load(state, state.log_end_offset + 5, kafka=True)
    kafkas, _ = log.update_high_watermark(kafkas, kafkas.log_end_offset)  # the HW checkpoint
    cleaned, result = log.clean(kafkas)
    assert result is not None and result.first_dirty_offset == kafkas.log_start_offset
    assert cleaned.cleaner_entry_kept is None
    assert view(cleaned).cleaner_checkpoint == cleaned.cleaner_checkpoint


def test_kept_entry__a_truncation_lowers_it_as_the_file_reads() -> None:
    """CLN-68 compares the entry the file holds with the new active base. Spec: KL-ALLOW-11,
    KL-CLEAN-13"""
    state = _sealed()
    kafkas = _load(state, state.log_end_offset + 5, kafka=True)
    truncated, _ = log.truncate_to(kafkas, kafkas.log_end_offset - 1)
    assert truncated.cleaner_entry_kept is None
    assert view(truncated).cleaner_checkpoint == truncated.active.base_offset
