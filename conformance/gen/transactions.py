"""Transactional producers as generated actors: the transaction machine and family.

`TxnLogMachine` is the producer machine (conformance/gen/producers.py) plus transaction rules;
`make_machine` picks it for the `transactions` family when the adapter lists the `transactions`
feature. What it generates: transactional batches of the five producers (interleaved with their
own and others' idempotent and plain batches, which are InvalidTxnState inside an open
transaction), COMMIT/ABORT markers from the coordinator with the stored, a bumped or a stale
producer epoch and coordinator epoch, markers and transactional batches arriving as follower
appends, HW moves past markers, read_committed reads, and truncation through an open or just
aborted transaction; and the scenarios where transaction state is richest: several
transactions open at once and ended in any order, a marker with none open, an abort in the
segment after its transaction's start, truncation across and between markers (with a reload
that reads the `.txnindex` back), and a crash over aborted, committed and open transactions.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule
from kafkalog.conformance.adapter.json_codec import CRASH_FAULTS
from kafkalog.conformance.gen import picks
from kafkalog.conformance.gen.machine import CRASH_POINTS, CRASH_SEEDS, OFFSETS
from kafkalog.conformance.gen.producers import PRODUCER_BASE, PRODUCERS, ProducerLogMachine
from kafkalog.model import values as v
from kafkalog.model.producer.transaction_entry import marker_record

#: Config families with transactional actors (conformance/gen/configs.py registers them).
TXN_FAMILIES: dict[str, v.LogConfig] = {
    # Producer-family limits with 500-byte segments: a 78-byte marker and a few batches roll.
    "transactions": replace(PRODUCER_BASE, segment_bytes=500),
    # The same, as a broker can run it (specs/wire.md KL-WIRE-12): a broker's coordinator stamps
    # each marker with its wall clock, years after the records' mock-clock timestamps, which
    # would roll a segment at every marker after 60 s of segment.ms and fill a 4-entry time
    # index early. With segment.ms 2^62 and 4 KiB indexes only size rolls, as in the model.
    "transactions_wire": replace(PRODUCER_BASE, segment_bytes=500, segment_ms=2**62,
                                 segment_index_bytes=4_096),
}

_TXN = "transactions"
EPOCH_DELTAS = st.sampled_from((0, 0, 0, 1, -1))  # mostly the current epoch; bumps; stale
COORDINATOR_DELTAS = st.sampled_from((0, 0, 1, -1))


def is_txn_config(config: v.LogConfig) -> bool:
    """True for the configs of the transactional families, under any Kafka version profile."""
    return any(replace(config, kafka_version=c.kafka_version) == c for c in TXN_FAMILIES.values())


def _uses_txn(machine: ProducerLogMachine) -> bool:
    return _TXN in machine.session.features


class TxnLogMachine(ProducerLogMachine):
    """ProducerLogMachine plus transaction rules (see the module docstring)."""

    def _coordinator_epoch(self, pid: int) -> int:
        for p in self.view().producers or ():
            if p.producer_id == pid:
                return max(p.coordinator_epoch, 0)
        return 0

    @precondition(_uses_txn)
    @rule(index=PRODUCERS, count=st.integers(1, 3))
    def txn_produce(self, index: int, count: int) -> None:
        """The next transactional batch of a producer (PST-18: opens a transaction)."""
        pid, epoch, seq = self._producer(index)
        self.do("append_as_leader", records=self._records(count, "now"),
                leader_epoch=self.epoch(("latest", 0, 0)), producer_id=pid,
                producer_epoch=epoch, base_sequence=seq, is_transactional=True)
        self.sent.append((pid, epoch, seq, count))

    @precondition(_uses_txn)
    @rule(index=PRODUCERS, commit=st.booleans(), epoch_delta=EPOCH_DELTAS,
          coordinator_delta=COORDINATOR_DELTAS)
    def end_txn(self, index: int, commit: bool, epoch_delta: int,
                coordinator_delta: int) -> None:
        """A COMMIT/ABORT marker from the coordinator (TXN-2, TXN-3): fenced below the stored
        epochs; a bumped epoch clears the sequence cache."""
        pid, epoch, _ = self._producer(index)
        self.do("append_marker", producer_id=pid,
                producer_epoch=min(max(epoch + epoch_delta, 0), 32767), commit=commit,
                coordinator_epoch=max(self._coordinator_epoch(pid) + coordinator_delta, 0),
                leader_epoch=self.epoch(("latest", 0, 0)))

    @precondition(lambda self: _uses_txn(self) and "follower_append" in self.session.features)
    @rule(index=PRODUCERS, commit=st.booleans(), with_data=st.booleans(),
          epoch_delta=EPOCH_DELTAS)
    def replicate_txn(self, index: int, commit: bool, with_data: bool, epoch_delta: int) -> None:
        """A transactional batch and/or a marker as a follower append (PST-21: older epochs and
        coordinator epochs are accepted)."""
        pid, epoch, seq = self._producer(index)
        base, leader = self.view().log_end_offset, self.epoch(("latest", 0, 0))
        epoch = min(max(epoch + epoch_delta, 0), 32767)
        specs = []
        if with_data:
            specs.append(v.BatchSpec(base, leader, self._records(1, "now"), producer_id=pid,
                                     producer_epoch=epoch, base_sequence=seq,
                                     is_transactional=True))
            base += 1
        specs.append(v.BatchSpec(base, leader, (marker_record(commit, 0, self.now_ms),),
                                 producer_id=pid, producer_epoch=epoch, is_transactional=True,
                                 is_control=True))
        self.do("append_as_follower", batches=tuple(specs), leader_epoch=None)

    @precondition(_uses_txn)
    @rule(delta=st.sampled_from((0, 0, -1, -2)))
    def hw_near_leo(self, delta: int) -> None:
        """Move the HW to (just below) the LEO: unreplicated transactions retire (TXN-7)."""
        self.do("update_high_watermark", offset=max(self.view().log_end_offset + delta, 0))

    @precondition(_uses_txn)
    @rule(start=OFFSETS, size=st.tuples(st.sampled_from(picks.MAX_BYTES_MODES),
                                        st.integers(-2, 2)),
          min_one_message=st.booleans())
    def read_committed(self, start: picks.OffsetPick, size: tuple[str, int],
                       min_one_message: bool) -> None:
        """A read_committed fetch: bounded by the LSO, with the aborted list (TXN-14..16)."""
        self.do("read", start_offset=self.offset(start),
                max_bytes=picks.max_bytes(size[0], size[1], self.config),
                isolation=v.Isolation.TXN_COMMITTED, min_one_message=min_one_message)

    @precondition(_uses_txn)
    @rule(index=PRODUCERS, lag=st.integers(0, 2))
    def read_below_open_txn(self, index: int, lag: int) -> None:
        """Plain data, then a transaction opened above a lagging HW, then read_committed from
        the log start: the read stops at the HW, not at the FUO above it (TXN-9, KAFKA-9807)."""
        self.do("append_as_leader", records=self._records(1, "now"),
                leader_epoch=self.epoch(("latest", 0, 0)))
        self.txn_produce(index, 1)
        self.hw_near_leo(-1 - lag)
        self.do("read", start_offset=self.view().log_start_offset, max_bytes=1 << 16,
                isolation=v.Isolation.TXN_COMMITTED, min_one_message=False)

    @precondition(_uses_txn)
    @rule(index=PRODUCERS, other=PRODUCERS, abort=st.booleans(),
          keep=st.integers(0, 5))
    def truncate_through_txn(self, index: int, other: int, abort: bool, keep: int) -> None:
        """Two producers' transactions, a marker, the HW to the LEO, then a truncation into them
        (PSF-10, PSR-10: the index is cut and transactions reopen) and a read_committed."""
        start = self.view().log_end_offset
        self.txn_produce(index, 1)
        self.txn_produce(other, 1)
        self.end_txn(index, not abort, 0, 0)
        self.hw_near_leo(0)
        self.do("truncate_to", offset=start + keep)
        self.do("read", start_offset=start, max_bytes=1 << 16,
                isolation=v.Isolation.TXN_COMMITTED, min_one_message=False)

    @precondition(_uses_txn)
    @rule(index=PRODUCERS, one_batch=st.booleans())
    def abort_across_roll(self, index: int, one_batch: bool) -> None:
        """A transaction opened in one segment and aborted in the next, then a read_committed
        from its first offset: the read segment's `.txnindex` holds no entry for it, so the
        aborted list needs the scan to go on into the next segment (TXN-15, TXN-16)."""
        start = self.view().log_end_offset
        self.txn_produce(index, 1)
        self.do("roll", expected_next_offset=None)
        self.txn_produce(index, 1)
        self.end_txn(index, False, 0, 0)
        self.hw_near_leo(0)
        self.do("read", start_offset=start, max_bytes=72 if one_batch else 1 << 16,
                isolation=v.Isolation.TXN_COMMITTED, min_one_message=True)

    @precondition(_uses_txn)
    @rule(index=PRODUCERS, first=st.booleans(), then=st.booleans())
    def marker_without_txn(self, index: int, first: bool, then: bool) -> None:
        """A coordinator's marker retried, or sent for a transaction that wrote nothing: the
        producer's open transaction (if any) ends, then a second marker finds none open. It
        bumps nothing and leaves no `.txnindex` entry nor an LSO hold behind (TXN-3,
        KAFKA-10702)."""
        self.end_txn(index, first, 0, 0)
        self.end_txn(index, then, 0, 0)
        self.hw_near_leo(0)

    @precondition(_uses_txn)
    @rule(order=st.permutations(range(3)), ends=st.lists(st.booleans(), min_size=1, max_size=3),
          lag=st.integers(0, 2), interleave=st.booleans())
    def several_open_txns(self, order: list[int], ends: list[bool], lag: int,
                          interleave: bool) -> None:
        """Three producers' transactions open at once (each with two batches, interleaved or
        one producer's after the other's), then markers one by one in `order`, each followed
        by an HW move and a read_committed from the log start: the LSO is the first offset of
        the oldest transaction still open below the HW and moves exactly when that one ends
        (TXN-9, TXN-10, TXN-11)."""
        batches = [*order, *order] if interleave else [i for i in order for _ in range(2)]
        for index in batches:
            self.txn_produce(index, 1)
        for index, commit in zip(order, ends, strict=False):
            self.end_txn(index, commit, 0, 0)
            self.hw_near_leo(-lag)
            self.do("read", start_offset=self.view().log_start_offset, max_bytes=1 << 16,
                    isolation=v.Isolation.TXN_COMMITTED, min_one_message=False)

    @precondition(lambda self: _uses_txn(self) and "reopen" in self.session.features)
    @rule(indices=st.lists(PRODUCERS, min_size=2, max_size=3, unique=True),
          abort=st.booleans(), keep=st.integers(0, 6), reload=st.booleans(), roll=st.booleans())
    def truncate_across_markers(self, indices: list[int], abort: bool, keep: int,
                                reload: bool, roll: bool) -> None:
        """Transactions of several producers ended alternately by ABORT and COMMIT, over a roll
        or in one segment, then a truncation to `keep` offsets past the start (through the
        markers and their `.txnindex` entries, PSF-10: a cut between two entries of one index
        keeps the first, on disk too), optionally a reload, then the same producers' next
        transactional batches (PSR-10: the rebuilt state reopens what the cut left open)."""
        start = self.view().log_end_offset
        for n, index in enumerate(indices):
            self.txn_produce(index, 1)
            self.end_txn(index, (n % 2 == 0) != abort, 0, 0)
            if n == 0 and roll:
                self.do("roll", expected_next_offset=None)
        self.hw_near_leo(0)
        self.do("truncate_to", offset=start + keep)
        if reload:
            self.do("close_and_reopen")
        for index in indices:
            self.txn_produce(index, 1)

    @precondition(lambda self: _uses_txn(self) and "reopen" in self.session.features)
    @rule(indices=st.lists(PRODUCERS, min_size=3, max_size=3, unique=True),
          keep=st.integers(2, 5))
    def cut_between_aborts(self, indices: list[int], keep: int) -> None:
        """ABORT, COMMIT, ABORT of three producers in one segment, a truncation that keeps the
        first `.txnindex` entry and drops the second (PSF-10), a clean reload that reads the
        index back from its file, then a read_committed over them (TXN-15)."""
        start = self.view().log_end_offset
        for n, index in enumerate(indices):
            self.txn_produce(index, 1)
            self.end_txn(index, n == 1, 0, 0)
        self.hw_near_leo(0)
        self.do("truncate_to", offset=start + keep)
        self.do("close_and_reopen")
        self.do("read", start_offset=start, max_bytes=1 << 16,
                isolation=v.Isolation.TXN_COMMITTED, min_one_message=False)

    @precondition(_uses_txn)
    @rule(indices=st.lists(PRODUCERS, min_size=3, max_size=3, unique=True),
          commits=st.lists(st.booleans(), min_size=3, max_size=3), skip=st.integers(1, 6))
    def reads_across_aborts(self, indices: list[int], commits: list[bool], skip: int) -> None:
        """Three transactions in one segment, each ended before the next begins (ABORT where
        `commits` says so), the HW to the LEO, then read_committed from the first of them and
        from `skip` offsets on: the aborted list holds every aborted transaction that ends at
        or after the fetch offset and begins below the read's end, however many one `.txnindex`
        holds, and none that ended before the fetch offset (TXN-15, TXN-16)."""
        start = self.view().log_end_offset
        for index, commit in zip(indices, commits, strict=True):
            self.txn_produce(index, 1)
            self.end_txn(index, commit, 0, 0)
        self.hw_near_leo(0)
        for offset in (start, start + skip):
            self.do("read", start_offset=offset, max_bytes=1 << 16,
                    isolation=v.Isolation.TXN_COMMITTED, min_one_message=False)

    @precondition(lambda self: _uses_txn(self) and self.crash_enabled())
    @rule(indices=st.lists(PRODUCERS, min_size=1, max_size=3, unique=True),
          point=CRASH_POINTS, fault=st.sampled_from(CRASH_FAULTS), seed=CRASH_SEEDS)
    def crash_over_aborts(self, indices: list[int], point: int, fault: str, seed: int) -> None:
        """Transactions aborted, committed and left open, then a crash: the unclean load
        rebuilds each recovered segment's `.txnindex` and the ongoing transactions from its
        batches (KL-CRASH-12, PSR-7), which no other crash of the machine is sure to meet."""
        for n, index in enumerate(indices):
            self.txn_produce(index, 1)
            if n < 2:
                self.end_txn(index, n == 1, 0, 0)
        self.crash_now(point, fault, "none", seed)

    @precondition(lambda self: _uses_txn(self) and "reopen" in self.session.features)
    @rule(index=PRODUCERS)
    def reload_with_open_txn(self, index: int) -> None:
        """An open transaction survives a clean reload through the snapshot (TXN-13, PSF-4)."""
        self.txn_produce(index, 1)
        self.do("close_and_reopen")
        self.hw_near_leo(0)
