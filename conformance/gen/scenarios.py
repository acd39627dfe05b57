"""Scenario rules for shapes random single steps rarely build.

Mixed into the conformance machine (machine.py). Each runs a few ordinary actions back to back,
every one its own trace step, so shrinking and replay treat them like any other steps:

- reads with HW isolation where the HW sits above the start inside its own segment with data
  above it, with a max_bytes of two batches or less than one, the start at the HW, and the HW
  inside a multi-record batch or just after a roll (LOC-4 steps 2 and 4, LOG-10; BUG-30, 31,
  33, 37);
- several follower batches at the LEO in one append, then a leader append: each batch's own
  index decision shows in the exact index entries (SEG-3, BUG-10, BUG-11);
- a batch exactly `index.interval.bytes` long, then more batches (SEG-3's strict `>`);
- retention right at its boundaries: a log exactly one first segment above `retention.bytes`
  (LOG-37) and a segment exactly `retention.ms` old (LOG-36);
- a gap in the epochs and a request for the missing epoch (EPO-4 step 5, BUG-51).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule
from kafkalog.conformance.check import black_box
from kafkalog.conformance.gen import picks
from kafkalog.model import values as v
from kafkalog.model.timestamps import EARLIEST_LOCAL_TIMESTAMP, EARLIEST_PENDING_UPLOAD_TIMESTAMP


class ReachRules:
    """The scenario rules; `LogMachine` provides do/view/epoch/records/now_ms/config/session."""

    do: Any
    view: Any
    epoch: Any
    records: Any
    now_ms: int
    config: v.LogConfig
    session: Any

    def _leader_batch(self, records: int, epoch: int | None = None) -> None:
        batch = tuple(v.Record(None, b"test", self.now_ms) for _ in range(records))
        self.do("append_as_leader", records=batch,
                leader_epoch=self.epoch(("latest", 0, 0)) if epoch is None else epoch)

    def _batches_and_hw(self, batches: int, records: int, back: int, roll: bool) -> int:
        """`batches` batches of `records` records, then the HW `back` offsets below the LEO
        (inside a batch when records > 1), or at the LEO followed by a roll; the new HW."""
        for _ in range(batches):
            self._leader_batch(records)
        leo = self.view().log_end_offset
        if roll:
            self.do("update_high_watermark", offset=leo)
            self.do("roll", expected_next_offset=None)
        else:
            self.do("update_high_watermark", offset=leo - back)
        return int(self.view().high_watermark)

    def _read_hw(self, offset: int, records: int, size: str, delta: int,
                 min_one_message: bool) -> None:
        one = picks.batch_size(tuple(v.Record(None, b"test", 0) for _ in range(records)))
        max_bytes = {"two_batches": 2 * one + delta, "below_one_batch": one // 2 + delta,
                     "large": 1 << 20}[size]
        self.do("read", start_offset=offset, max_bytes=max_bytes,
                isolation=v.Isolation.HIGH_WATERMARK, min_one_message=min_one_message)

    @rule(batches=st.integers(1, 3), records=st.integers(1, 3), back=st.integers(1, 3),
          size=st.sampled_from(("below_one_batch", "two_batches")), delta=st.integers(-1, 1),
          min_one_message=st.booleans(), roll=st.booleans())
    def read_at_high_watermark(self, batches: int, records: int, back: int, size: str,
                               delta: int, min_one_message: bool, roll: bool) -> None:
        """A read with HW isolation starting exactly at the HW, below the LEO (possibly inside
        a batch) or just after a roll at HW = LEO: the `start == bound` short-cut answers the
        HW's own metadata and no bytes (LOC-4 step 2, LOG-10; BUG-31, BUG-37)."""
        hw = self._batches_and_hw(batches, records, back, roll)
        self._read_hw(hw, records, size, delta, min_one_message)

    @rule(batches=st.integers(2, 4), records=st.integers(1, 3), back=st.integers(1, 3),
          start=st.sampled_from(("below", "segment_base")),
          size=st.sampled_from(("two_batches", "large")), delta=st.integers(-1, 1),
          min_one_message=st.booleans())
    def read_below_high_watermark(self, batches: int, records: int, back: int, start: str,
                                  size: str, delta: int, min_one_message: bool) -> None:
        """A read with HW isolation from below the HW in the HW's own segment, with data above
        the HW there: it must stop at the HW's position (LOC-4 step 4; BUG-30, BUG-33)."""
        hw = self._batches_and_hw(batches, records, back, False)
        view = self.view()
        segment_base = max(s.base_offset for s in view.segments if s.base_offset <= hw)
        lowest = max(segment_base, view.log_start_offset)
        offset = lowest if start == "segment_base" else max(lowest, hw - records - 1)
        self._read_hw(offset, records, size, delta, min_one_message)

    @precondition(lambda self: "follower_append" in self.session.features)
    @rule(batches=st.integers(2, 3), records=st.integers(1, 2), rising=st.booleans())
    def follower_batches_then_leader(self, batches: int, records: int, rising: bool) -> None:
        """Several follower batches at the LEO in one append (timestamps rising or not), then
        one leader batch: one index decision per batch, not per append (SEG-3, BUG-10)."""
        base = self.view().log_end_offset
        epoch = self.epoch(("latest", 0, 0))
        specs = []
        for n in range(batches):
            stamp = self.now_ms + (n if rising else 0)
            batch = tuple(v.Record(None, b"test", stamp) for _ in range(records))
            specs.append(v.BatchSpec(base, epoch, batch, v.TimestampType.CREATE_TIME,
                                     v.NO_TIMESTAMP))
            base = specs[-1].last_offset + 1
        self.do("append_as_follower", batches=tuple(specs), leader_epoch=None)
        self._leader_batch(1)

    @rule(delta=st.integers(-1, 1), after=st.integers(1, 2))
    def index_interval_boundary(self, delta: int, after: int) -> None:
        """A batch of `index.interval.bytes` + delta, then `after` one-record batches: the next
        index entry comes only once the bytes since the last one exceed the interval (SEG-3)."""
        self.do("append_as_leader", records=self.records([("index_interval", delta, "now", 0, 0)]),
                leader_epoch=self.epoch(("latest", 0, 0)))
        for _ in range(after):
            self._leader_batch(1)

    @precondition(lambda self: self.config.retention_bytes >= 0)
    @rule(delta=st.integers(-1, 1))
    def size_retention_boundary(self, delta: int) -> None:
        """Roll, then one batch that makes the log exactly retention.bytes plus its first
        segment (+ delta), HW at the LEO, retention: the first segment goes iff the log stays at
        or above retention.bytes without it (LOG-37)."""
        view = self.view()
        total = sum(s.size_in_bytes for s in view.segments)
        needed = self.config.retention_bytes + view.segments[0].size_in_bytes - total + delta
        if view.segments[-1].size_in_bytes:
            self.do("roll", expected_next_offset=None)
        if picks.BATCH_OVERHEAD + 7 <= needed <= self.config.max_message_bytes:
            record = v.Record(None, b"", self.now_ms)
            value = picks.fit_value([record], needed)
            self.do("append_as_leader", records=(v.Record(None, value, self.now_ms),),
                    leader_epoch=self.epoch(("latest", 0, 0)))
        self.do("update_high_watermark", offset=self.view().log_end_offset)
        self.do("delete_old_segments")

    @precondition(lambda self: self.config.retention_ms >= 0)
    @rule(delta=st.integers(-1, 1))
    def time_retention_boundary(self, delta: int) -> None:
        """A batch stamped now in a segment of its own, then the clock exactly retention.ms
        (+ delta) later: it goes only when strictly older than retention.ms (LOG-36)."""
        if self.view().segments[-1].size_in_bytes:
            self.do("roll", expected_next_offset=None)
        self._leader_batch(1)
        self.do("update_high_watermark", offset=self.view().log_end_offset)
        self.do("advance_clock", ms=picks.clock_step("retention_ms", delta, self.config))
        self.do("delete_old_segments")

    @precondition(lambda self: "leader_epochs" in self.session.features)
    @rule(gap=st.integers(2, 3))
    def epoch_gap(self, gap: int) -> None:
        """A batch in epoch e, one in e + gap, then the end offset of an epoch in between: the
        largest known epoch below it, ending where e + gap starts (EPO-4 step 5, BUG-51)."""
        first = self.epoch(("latest", 0, 0))
        self._leader_batch(1, first)
        self._leader_batch(1, first + gap)
        self.do("end_offset_for_epoch", epoch=first + 1)

    @precondition(lambda self: "timestamps" in self.session.features)
    @rule(into=st.integers(1, 2))
    def lookups_after_log_start_moves(self, into: int) -> None:
        """Records, the HW at the LEO, the log start `into` offsets past the first segment's
        base (inside it), then ListOffsets for EARLIEST, LATEST and MAX_TIMESTAMP: EARLIEST is
        the log start offset, not a segment base (LOG-44, LOG-45, LOG-48)."""
        for _ in range(into + 1):
            self._leader_batch(1)
        view = self.view()
        self.do("update_high_watermark", offset=view.log_end_offset)
        target = min(view.segments[0].base_offset + into, view.log_end_offset)
        self.do("maybe_increment_log_start_offset", offset=target)
        for special in (v.EARLIEST_TIMESTAMP, v.LATEST_TIMESTAMP, v.MAX_TIMESTAMP):
            self.do("fetch_offset_by_timestamp", timestamp=special)
        if not black_box.is_black_box(self.session.features):
            # EARLIEST_LOCAL (KL-TIME-1) and EARLIEST_PENDING_UPLOAD, special only from 4.2
            # (KL-VERSION-7); a broker's answer depends on the ListOffsets version its client
            # negotiates, so black boxes are asked the three above only. LATEST_TIERED (-5) is
            # left out until the model's profiles say from which release it is special.
            for special in (EARLIEST_LOCAL_TIMESTAMP, EARLIEST_PENDING_UPLOAD_TIMESTAMP):
                self.do("fetch_offset_by_timestamp", timestamp=special)

    @precondition(lambda self: "leader_epochs" in self.session.features)
    @rule(gap=st.integers(1, 2))
    def newer_epoch_at_the_same_offset(self, gap: int) -> None:
        """A new epoch assigned at the LEO, then a batch in a still newer epoch before any
        record of the first: its entry replaces the one starting at the same offset (EPO-2)."""
        assigned = self.epoch(("latest", 0, 1))
        self.do("assign_epoch", epoch=assigned, start_offset=self.view().log_end_offset)
        self._leader_batch(1, assigned + gap)
