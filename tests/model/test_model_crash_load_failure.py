"""A crash whose recovery replay raises: the load fails, as a member of the set (KL-CRASH-13).

The log is one `kafkalog check --family transactions` reached:
producer 2 opens a transaction at offset 0; the log start moves to 1 and a clean reopen forgets
the producer (PSR-4 deletes the snapshot at the log start, PSR-8 leaves the table empty); its
non-transactional batch at 1 is then accepted. An unclean load replays segment 0 from its base
(PSR-7) and PST-18 step 3 throws at offset 1, which Kafka's recovery does not catch.
"""

from __future__ import annotations

from typing import Any

from kafkalog.model import log
from kafkalog.model.crash import crash
from kafkalog.model.crash import inside as crash_inside
from kafkalog.model.crash.crash import FaultModel, LoadFailure
from kafkalog.model.values import LogConfig, Record

# The transactions family's segment sizes (conformance/gen/configs.py): one segment holds both.
CONFIG = LogConfig(segment_bytes=500, index_interval_bytes=100, segment_index_bytes=48,
                   file_delete_delay_ms=1000)


class Tracked:
    """A model log with its durability, advanced like the checker's ModelSut."""

    def __init__(self) -> None:
        self.state = log.empty_log(CONFIG, 1_700_000_000_000)
        self.durable = crash.initial_durable(self.state)
        self.last: tuple[str, Any, crash.Durable] | None = None

    def do(self, action: str, *args: Any) -> Any:
        before, durable = self.state, self.durable
        self.last = (action, before, durable)
        self.state, result = getattr(log, action)(self.state, *args)
        self.durable = crash.observe(durable, action, before, self.state)
        return result

    def append(self, seq: int, transactional: bool) -> Any:
        return self.do("append_as_leader", (Record(None, b"test", 1_700_000_000_000),), 0, 2, 0,
                       seq, transactional)


def forgotten_transaction() -> Tracked:
    """The seed-5150 log: a transactional batch at 0, a non-transactional one at 1 (pid 2)."""
    t = Tracked()
    t.append(0, transactional=True)
    t.do("close_and_reopen")
    t.do("update_high_watermark", 1)
    t.do("maybe_increment_log_start_offset", 1)
    t.do("close_and_reopen")
    assert t.append(1, transactional=False).first_offset == 1  # PSR-4 + PSR-8: accepted
    return t


def test_clean_reopen_past_the_log_start__forgets_the_open_transaction() -> None:
    """PSR-4 deletes the snapshot at the log start, PSR-8 then loads nothing: no producer 2.
    Spec: KL-CRASH-13"""
    t = Tracked()
    t.append(0, transactional=True)
    t.do("close_and_reopen")
    t.do("update_high_watermark", 1)
    t.do("maybe_increment_log_start_offset", 1)
    assert [p.producer_id for p in log.view(t.state).producers] == [2]
    t.do("close_and_reopen")
    assert log.view(t.state).producers == ()


def test_crash_after_the_accepted_batch__allows_only_a_load_failing_with_invalid_txn_state(
) -> None:
    """Recovery replays segment 0 from its base and throws at offset 1 (PST-18 step 3); the
    set says so instead of raising out of the checker. Spec: KL-CRASH-13"""
    t = forgotten_transaction()
    members = crash.crash_states(t.state, t.durable, FaultModel.PROCESS_CRASH)
    assert crash.loaded_outcomes(members) == ()
    assert crash.load_failures(members) == {"InvalidTxnStateError"}
    failure = next(m for m in members if isinstance(m, LoadFailure))
    assert "producer 2 at offset 1" in failure.message
    assert crash.crash_allows(members, "InvalidTxnStateError")
    assert not crash.crash_allows(members, "CorruptRecordError")
    assert not crash.crash_allows(members, log.view(t.state))


def test_power_loss_inside_the_append__allows_the_load_without_the_batch_and_the_failure(
) -> None:
    """Inside the append the batch at 1 may be lost (a clean load of offset 0 only) or kept
    (recovery throws): both are members. Spec: KL-CRASH-13, KL-CRASH-8"""
    t = forgotten_transaction()
    assert t.last is not None
    action, before, durable_before = t.last
    members = crash_inside.crash_between(before, durable_before, t.state, t.durable, action,
                                         FaultModel.POWER_LOSS)
    assert crash.load_failures(members) == {"InvalidTxnStateError"}
    loaded = crash.loaded_outcomes(members)
    assert loaded and all(state.log_end_offset == 1 for state, _ in loaded)
