"""Idempotent producers as generated actors: the producer machine and its families.

`ProducerLogMachine` is the conformance machine plus producer rules; `make_machine` picks it for
the producer config families when the adapter lists the `producer_state` feature, so the
default families keep exactly the machine (and the seeds) they had.

A producer's next batch is derived from the model's producer table (its epoch and newest cached
last sequence), so the generator follows the producer through reloads, truncations and expiry.
The kinds of batches a real client and a faulty network produce: the next batch in sequence;
a retry of one of the last batches sent (a duplicate while it is cached, else
OutOfOrderSequence); a re-batched retry; a gap; an epoch bump (sequence 0, or not); a stale
epoch (fenced); a sequence near Int.MAX (wrap-around); an epoch at Short.MAX; a producer id
without a sequence (-1). Producer batches also arrive as follower
appends (replication accepts any sequence and older epochs), and the clock jumps past
`producer_id_expiration_ms` (PST-22).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule
from kafkalog.conformance.adapter.json_codec import CRASH_FAULTS
from kafkalog.conformance.gen.machine import CRASH_POINTS, CRASH_SEEDS, LogMachine
from kafkalog.model import values as v

# Five producer ids: the large one lands in another bucket of the snapshot's hash order, 0 and
# Long.MAX are the smallest and largest legal ids (FMT-45: -1 is "no producer").
PRODUCER_IDS = (1, 2, 2**40 + 7, 0, 2**63 - 1)
PRODUCERS = st.integers(0, len(PRODUCER_IDS) - 1)
INT32_MAX = 2**31 - 1
EPOCH_MAX = 32767  # Short.MAX: the largest producer epoch (FMT-45)
KINDS = ("next", "retry", "rebatch", "gap", "bump", "bump_bad", "stale", "wrap", "epoch_max",
         "no_sequence")
#: Clock jumps around producer expiry (PST-22): the expiration itself, one check interval, and
#: both together, each a millisecond either side.
EXPIRY_ANCHORS = ("expiration", "interval", "both")
#: Bases far above Int.MAX a log may restart at (a follower takes its leader's log start):
#: 2^62, where a bound of 2^62 - 1 instead of Long.MAX would already cut a scan, and 2^20
#: below Long.MAX, with room for every offset a run appends.
FAR_BASES = (2**62, 2**63 - 2**20)

PRODUCER_BASE = v.LogConfig(
    segment_bytes=400,
    segment_ms=60_000,
    index_interval_bytes=100,
    segment_index_bytes=48,
    retention_ms=120_000,
    retention_bytes=-1,
    max_message_bytes=300,
    file_delete_delay_ms=1_000,
    producer_id_expiration_ms=20_000,
    producer_id_expiration_check_interval_ms=5_000,
)

#: Config families with producer actors (conformance/gen/configs.py registers them).
PRODUCER_FAMILIES: dict[str, v.LogConfig] = {
    # Rolls (and so snapshots) every few appends; producers expire after 20 s of clock.
    "producers": PRODUCER_BASE,
    # The leader's clock is the batch timestamp, so expiry follows the clock exactly (PST-20).
    "producers_append_time": v.LogConfig(
        **{**PRODUCER_BASE.__dict__,
           "message_timestamp_type": v.TimestampType.LOG_APPEND_TIME,
           "segment_bytes": 250, "max_message_bytes": 200}),
}


def increment(sequence: int, by: int) -> int:
    """PST-5 incrementSequence (the generator's own copy)."""
    return by - (INT32_MAX - sequence) - 1 if sequence > INT32_MAX - by else sequence + by


class ProducerLogMachine(LogMachine):
    """LogMachine plus producer rules (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[int, int, int, int]] = []  # (pid, epoch, base seq, record count)

    def _producer(self, index: int) -> tuple[int, int, int]:
        """(pid, stored epoch or 0, next sequence) from the model's table."""
        pid = PRODUCER_IDS[index % len(PRODUCER_IDS)]
        for p in self.view().producers or ():
            if p.producer_id == pid:
                last = p.batches[-1].last_seq if p.batches else -1
                return pid, max(p.producer_epoch, 0), increment(last, 1) if last >= 0 else 0
        return pid, 0, 0

    def _batch(self, kind: str, index: int, count: int, back: int) -> tuple[int, int, int, int]:
        pid, epoch, seq = self._producer(index)
        mine = [s for s in self.sent if s[0] == pid]
        if kind in ("retry", "rebatch") and mine:
            _, epoch, seq, count = mine[-1 - back % len(mine)]
            return pid, epoch, seq, count + (1 if kind == "rebatch" else 0)
        if kind == "gap":
            return pid, epoch, increment(seq, 1 + back % 2), count
        if kind in ("bump", "bump_bad"):
            return pid, min(epoch + 1, 32767), 0 if kind == "bump" else 1 + back % 3, count
        if kind == "stale":
            return pid, max(epoch - 1, 0), seq, count
        if kind == "wrap":
            return pid, epoch, INT32_MAX - back % 3, count
        if kind == "epoch_max":  # the last epoch a producer can have, or the one below it
            return pid, EPOCH_MAX - back % 2, 0, count
        if kind == "no_sequence":  # a producer id without a sequence: InvalidRecord (PST-7)
            return pid, epoch, -1, count
        return pid, epoch, seq, count

    def _records(self, count: int, stamp: str) -> tuple[v.Record, ...]:
        ts = self.now_ms if stamp == "now" else max(0, self.now_ms - 3 * self.config.segment_ms)
        return tuple(v.Record(None, b"test", ts) for _ in range(count))

    @precondition(lambda self: "producer_state" in self.session.features)
    @rule(index=PRODUCERS, kind=st.sampled_from(KINDS), count=st.integers(1, 3),
          back=st.integers(0, 5), stamp=st.sampled_from(("now", "old")))
    def produce(self, index: int, kind: str, count: int, back: int, stamp: str) -> None:
        """One client batch of a producer (PST-7..PST-17)."""
        pid, epoch, seq, count = self._batch(kind, index, count, back)
        self.do("append_as_leader", records=self._records(count, stamp),
                leader_epoch=self.epoch(("latest", 0, 0)), producer_id=pid,
                producer_epoch=epoch, base_sequence=seq)
        self.sent.append((pid, epoch, seq, count))

    @precondition(lambda self: "producer_state" in self.session.features
                  and "follower_append" in self.session.features)
    @rule(batches=st.lists(st.tuples(PRODUCERS, st.sampled_from(KINDS),
                                     st.integers(1, 3), st.integers(0, 5)),
                           min_size=1, max_size=3))
    def replicate_producer_batches(self, batches: list[tuple[int, str, int, int]]) -> None:
        """Producer batches arriving in one follower append at the LEO (PST-21: no checks;
        several batches of one producer build one working copy, PST-19)."""
        base = self.view().log_end_offset
        specs = []
        for index, kind, count, back in batches:
            pid, epoch, seq, count = self._batch(kind, index, count, back)
            specs.append(v.BatchSpec(base, self.epoch(("latest", 0, 0)),
                                     self._records(count, "now"), producer_id=pid,
                                     producer_epoch=epoch, base_sequence=seq))
            base += count
        self.do("append_as_follower", batches=tuple(specs), leader_epoch=None)

    @precondition(lambda self: "producer_state" in self.session.features)
    @rule(anchor=st.sampled_from(EXPIRY_ANCHORS), delta=st.sampled_from((-1, 0, 1)))
    def expire_producers(self, anchor: str, delta: int) -> None:
        """Jump the clock to a millisecond around producer.id.expiration.ms, one expiration
        check interval, or both (PST-22): a producer expires only at a check, and only once it
        is idle for longer than the expiration."""
        config = self.config
        ms = {"expiration": config.producer_id_expiration_ms,
              "interval": config.producer_id_expiration_check_interval_ms,
              "both": config.producer_id_expiration_ms
              + config.producer_id_expiration_check_interval_ms}[anchor]
        self.do("advance_clock", ms=ms + delta)

    @precondition(lambda self: "producer_state" in self.session.features
                  and "follower_append" in self.session.features)
    @rule(index=PRODUCERS, below=st.integers(0, 2), count=st.integers(1, 3),
          retry=st.booleans())
    def sequence_wrap(self, index: int, below: int, count: int, retry: bool) -> None:
        """A replicated batch ending `below` under Int.MAX (a follower takes any sequence,
        PST-21), then leader batches across the wrap to 0 (PST-5) and a retry of the first of
        them: a duplicate while cached, whatever side of the wrap it lies (PST-10)."""
        pid, epoch, _ = self._producer(index)
        first = INT32_MAX - below - count + 1
        self.do("append_as_follower", batches=(v.BatchSpec(
            self.view().log_end_offset, self.epoch(("latest", 0, 0)),
            self._records(count, "now"), producer_id=pid, producer_epoch=epoch,
            base_sequence=first),), leader_epoch=None)
        for _ in range(2):
            self.produce(index, "next", count, 0, "now")
        if retry:
            self.produce(index, "retry", 1, 1, "now")

    @precondition(lambda self: "producer_state" in self.session.features
                  and "follower_append" in self.session.features)
    @rule(index=PRODUCERS, count=st.integers(1, 3), inside=st.booleans())
    def replicate_overlapping_batches(self, index: int, count: int, inside: bool) -> None:
        """A follower append of a producer's batch and one more that ends at its last offset
        or inside it (a malformed fetch: offsets must strictly increase batch to batch); the
        whole append is refused with OffsetsOutOfOrderError (KL-APPEND-7), before any producer
        state is touched."""
        pid, epoch, seq = self._producer(index)
        base, leader = self.view().log_end_offset, self.epoch(("latest", 0, 0))
        first = v.BatchSpec(base, leader, self._records(count, "now"), producer_id=pid,
                            producer_epoch=epoch, base_sequence=seq)
        second = v.BatchSpec(base if inside else first.last_offset, leader,
                             self._records(1, "now"), producer_id=pid, producer_epoch=epoch,
                             base_sequence=increment(seq, count))
        self.do("append_as_follower", batches=(first, second), leader_epoch=None)

    @precondition(lambda self: "producer_state" in self.session.features)
    @rule(index=PRODUCERS, below=st.integers(0, 1), fence=st.booleans())
    def epoch_to_max(self, index: int, below: int, fence: bool) -> None:
        """A producer bumped to Short.MAX (or one below), the next batch, then another bump
        (capped, so the same epoch with sequence 0 again) or a fenced older epoch (PST-8)."""
        self.produce(index, "epoch_max", 1, below, "now")
        self.produce(index, "next", 1, 0, "now")
        self.produce(index, "stale" if fence else "bump", 1, 0, "now")

    @precondition(lambda self: "producer_state" in self.session.features
                  and "reopen" in self.session.features)
    @rule(indices=st.lists(PRODUCERS, min_size=2, max_size=4), roll=st.booleans(),
          truncate=st.booleans())
    def snapshot_round_trip(self, indices: list[int], roll: bool, truncate: bool) -> None:
        """Several producers' batches, a roll (a snapshot at its base, PSR-2) or none, a clean
        reload (the snapshot written at close, PSF-4), optionally a truncation to the newest
        snapshot (PSR-10), then each producer's next batch and a retry: the rebuilt table
        must predict both (PST-10, PST-11)."""
        for index in indices:
            self.produce(index, "next", 1 + index % 2, 0, "now")
        if roll:
            self.do("roll", expected_next_offset=None)
        self.do("close_and_reopen")
        snapshots = self.view().producer_snapshots
        if truncate and snapshots:
            self.do("truncate_to", offset=snapshots[-1])
        for index in indices:
            self.produce(index, "next", 1, 0, "now")
        self.produce(indices[0], "retry", 1, 1, "now")

    @precondition(lambda self: "producer_state" in self.session.features
                  and self.crash_enabled())
    @rule(index=PRODUCERS, base=st.sampled_from(FAR_BASES), roll=st.booleans(),
          point=CRASH_POINTS, fault=st.sampled_from(CRASH_FAULTS), seed=CRASH_SEEDS)
    def crash_at_far_offsets(self, index: int, base: int, roll: bool, point: int, fault: str,
                             seed: int) -> None:
        """The log restarted far above Int.MAX (KL-TRUNC-4), a producer's batches there with
        plain batches between and after them, over a roll or not, then a crash: the recovery
        walk and the producer rebuild read batches at offsets near Long.MAX (PSR-7), skipping
        the plain ones, and each recovered segment ends in a batch without a producer id."""
        plain = {"records": self._records(1, "now"), "leader_epoch": self.epoch(("latest", 0, 0))}
        self.do("truncate_fully_and_start_at", offset=base)
        self.produce(index, "next", 1, 0, "now")
        if roll:
            self.do("roll", expected_next_offset=None)
        self.do("append_as_leader", **plain)
        self.produce(index, "next", 2, 0, "now")
        self.do("append_as_leader", **plain)
        self.crash_now(point, fault, "none", seed)

    @precondition(lambda self: "producer_state" in self.session.features
                  and "reopen" in self.session.features)
    @rule(index=PRODUCERS, back=st.integers(0, 2))
    def retry_across_reload(self, index: int, back: int) -> None:
        """Two batches, a clean reload, then a retry: only the newest batch survives a snapshot
        (PSF-4, PST-11), so an older retry is OutOfOrderSequence after the reload."""
        for _ in range(2):
            self.produce(index, "next", 1, 0, "now")
        self.do("close_and_reopen")
        self.produce(index, "retry", 1, back, "now")

    @precondition(lambda self: "producer_state" in self.session.features)
    @rule(index=PRODUCERS, keep=st.integers(0, 3))
    def truncate_producer_history(self, index: int, keep: int) -> None:
        """Batches over a roll, truncation into them, then the next batch: state is rebuilt
        from the snapshot at or below the target plus replay (PSR-10)."""
        start = self.view().log_end_offset
        for _ in range(4):
            self.produce(index, "next", 1, 0, "now")
        self.do("truncate_to", offset=start + keep)
        self.produce(index, "next", 1, 0, "now")

    @precondition(lambda self: "producer_state" in self.session.features
                  and "reopen" in self.session.features)
    @rule(index=PRODUCERS)
    def reroll_after_truncation(self, index: int) -> None:
        """A roll at B, truncation below B (B's snapshot is deleted after the file-delete
        delay), a new roll at B, the delay passes, a reload: the new B snapshot must survive
        the old deletion timer (PSR-2, KAFKA-12964)."""
        self.produce(index, "next", 1, 0, "now")
        self.do("roll", expected_next_offset=None)
        base = self.view().log_end_offset
        self.produce(index, "next", 1, 0, "now")
        self.do("truncate_to", offset=max(base - 1, 0))
        self.produce(index, "next", 1, 0, "now")
        self.do("roll", expected_next_offset=None)
        self.do("advance_clock", ms=self.config.file_delete_delay_ms)
        self.do("close_and_reopen")

    @precondition(lambda self: "producer_state" in self.session.features)
    @rule(index=PRODUCERS, retain=st.booleans())
    def delete_records_past_snapshots(self, index: int, retain: bool) -> None:
        """Snapshots at two roll bases, then DeleteRecords past the first (and retention):
        the increment keeps producers and snapshots, retention deletes the segments' ones
        (PSR-2, PSR-12, PST-23)."""
        for _ in range(2):
            self.produce(index, "next", 1, 0, "now")
            self.do("roll", expected_next_offset=None)
        self.do("update_high_watermark", offset=self.view().log_end_offset)
        self.do("maybe_increment_log_start_offset", offset=self.view().segments[-1].base_offset)
        if retain:
            self.do("delete_old_segments")


def is_producer_config(config: Any) -> bool:
    """True for the configs of the producer families (the machine with producer rules), under
    any Kafka version profile (`--kafka-version`, a `--wire-broker`'s release)."""
    return any(replace(config, kafka_version=c.kafka_version) == c
               for c in PRODUCER_FAMILIES.values())
