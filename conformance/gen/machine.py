"""The conformance state machine: a rule per action, model and implementation in lockstep.

`LogMachine` is the machine for the plain config families; machines.py's `make_machine(session)`
binds it (or a subclass for producers and transactions) to one `Session` (the config, how to
build the system under test, and where the trace goes). Every rule resolves its
symbolic arguments (picks.py) against the model's view, runs the action on both sides through
`Lockstep.step`, and so checks results, `state()`, the view invariants and `check()` after every
step (lockstep.py).

Hypothesis shrinks toward lower-indexed rules, and orders rules by (targets, argument count,
name) (Hypothesis's `RuleBasedStateMachine`), so the simplest actions take no or few arguments:
`append_one` (one 72-byte record), `close_and_reopen` and `delete_old_segments` come first, the
four-argument `read` last.
"""

from __future__ import annotations

from typing import Any, ClassVar

from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule
from kafkalog.conformance.adapter.json_codec import CRASH_FAULTS, CRASH_LEFTOVERS
from kafkalog.conformance.check import black_box
from kafkalog.conformance.check.session import AdapterAbort, Session
from kafkalog.conformance.errors import AdapterError
from kafkalog.conformance.gen import picks
from kafkalog.conformance.gen.scenarios import ReachRules
from kafkalog.model import values as v

_DELTA = st.integers(-2, 2)
_INDEX = st.integers(0, 7)
OFFSETS = st.tuples(st.sampled_from(picks.OFFSET_ANCHORS), _INDEX, _DELTA)
OPTIONAL_OFFSETS = st.none() | OFFSETS
EPOCHS = st.tuples(st.sampled_from(picks.EPOCH_ANCHORS), _INDEX, st.integers(0, 2))
TIMESTAMPS = st.tuples(st.sampled_from(picks.TIMESTAMP_ANCHORS), _INDEX, _DELTA)
# (size mode, size delta, timestamp anchor, timestamp delta, shape: 0 plain, 1 key, 2 header)
RECORD_SPECS = st.tuples(
    st.sampled_from(picks.SIZE_MODES), st.integers(-1, 1),
    st.sampled_from(("now", "seen", "old", "future", "none")), _DELTA, st.integers(0, 2),
)
# The gap before a follower batch: none, small (compacted data), or past Int.MAX so the batch
# cannot be stored relative to the active segment's base (an overflow roll, SEG-6 (5), LOG-22).
GAPS = st.sampled_from((0, 1, 2, 2**31))
BATCH_SPECS = st.tuples(GAPS, EPOCHS, st.lists(RECORD_SPECS, min_size=1, max_size=3),
                        st.booleans())


# A crash cuts the last action after `point` of its operations; most crashes come after all of
# them (the point past any action's length), the rest inside the action.
CRASH_POINTS = st.one_of(st.just(1 << 20), st.integers(0, 40))
CRASH_SEEDS = st.integers(0, (1 << 16) - 1)


def crash_modelled(config: Any) -> bool:
    """Whether the crash model covers a crash in runs of `config` (KL-CRASH-1): every config
    family, producer state (KL-CRASH-11), transaction state (KL-CRASH-12) and compacted logs
    after and inside a cleaning pass (KL-CRASH-15) included, in both crash modes. Every path
    (check, campaign, serve-adapter) asks this via `crash_enabled`, so what the model cannot
    crash is switched off in one place."""
    return config is not None


def crash_rule(n: int) -> Any:
    """The n-th copy of the crash rule: rules are drawn uniformly, so copies weight crashes."""

    @precondition(lambda self: self.crash_enabled())
    @rule(point=CRASH_POINTS, fault=st.sampled_from(CRASH_FAULTS),
          leftover=st.sampled_from(CRASH_LEFTOVERS), seed=CRASH_SEEDS)
    def crash(self: LogMachine, point: int, fault: str, leftover: str, seed: int) -> None:
        self.crash_now(point, fault, leftover, seed)

    crash.__name__ = "crash" if n == 0 else f"crash_{n}"
    return crash


class LogMachine(ReachRules, RuleBasedStateMachine):
    """Model vs implementation, one rule per action of docs/design.md."""

    session: ClassVar[Session]

    def __init__(self) -> None:
        super().__init__()
        self.now_ms = 0
        self.seen_offsets: list[int] = [0]
        self.seen_epochs: list[int] = [0]
        self.seen_timestamps: list[int] = [0]

    # --- set-up ---------------------------------------------------------------------------

    @initialize(go=st.integers(0, 255))
    def open_log(self, go: int) -> None:
        # The all-zero choice sequence that Hypothesis always tries first is not a run: without
        # this every seed would start with the same trivial example (runner.run_seed).
        assume(go != 0)
        self.lockstep = self.session.start()
        self.actions_done = 0
        self.now_ms = self.session.now_ms
        self.seen_timestamps = [self.now_ms]

    def teardown(self) -> None:
        lockstep = getattr(self, "lockstep", None)
        if lockstep is not None:
            self.session.finish(lockstep)

    # --- helpers --------------------------------------------------------------------------

    @property
    def config(self) -> v.LogConfig:
        return self.session.config

    def view(self) -> v.LogStateView:
        return self.lockstep.model.state()

    def offset(self, pick: picks.OffsetPick) -> int:
        return picks.resolve_offset(pick, self.view(), self.seen_offsets)

    def epoch(self, pick: tuple[str, int, int]) -> int:
        return picks.resolve_epoch(pick, self.view(), self.seen_epochs)

    def do(self, action: str, **args: Any) -> None:
        budget = self.session.max_steps
        if budget is not None and self.actions_done >= budget:
            return  # a scenario rule ran past the run's step budget: the rest is not run
        if not black_box.asks(self.session.features, action):
            return  # the adapter's handshake left this action out (specs/adapter-protocol.md)
        self.actions_done += 1
        self.session.tick()
        try:
            results = self.lockstep.step(action, args)
        except AdapterError as error:
            raise AdapterAbort(error) from None
        if results is not None and results[0].ok:
            self._remember(action, args, results[0].value)
            if action in ("append_as_leader", "append_marker") and black_box.is_black_box(
                    self.session.features):
                # A broker moves its HW itself once acks=all is met (KL-WIRE-2; a coordinator's
                # marker too, KL-WIRE-12): the model follows in a step of its own, whose result
                # is the broker's observed HW.
                self.do("update_high_watermark", offset=self.view().log_end_offset)

    def _remember(self, action: str, args: dict[str, Any], result: Any) -> None:
        """Feed the seen-value pools from arguments and results (the machine's bundles)."""
        offsets = {value for key, value in args.items()
                   if "offset" in key and isinstance(value, int)}
        if isinstance(result, v.LogAppendInfo) and result.first_offset >= 0:
            offsets |= {result.first_offset, result.last_offset, result.last_offset + 1}
            if result.max_timestamp >= 0:
                self._add(self.seen_timestamps, result.max_timestamp)
        elif isinstance(result, v.EpochEndOffset):
            offsets.add(result.end_offset)
        elif isinstance(result, v.TimestampAndOffset):
            offsets.add(result.offset)
        elif action == "advance_clock":
            self.now_ms = result
        for offset in offsets:
            if offset >= 0:
                self._add(self.seen_offsets, offset)
        if isinstance(args.get("leader_epoch"), int) and args["leader_epoch"] >= 0:
            self._add(self.seen_epochs, args["leader_epoch"])
        if action == "assign_epoch":
            self._add(self.seen_epochs, args["epoch"])

    @staticmethod
    def _add(pool: list[int], value: int) -> None:
        if value not in pool and len(pool) < 64:
            pool.append(value)
            pool.sort()

    def records(self, specs: list[tuple[str, int, str, int, int]]) -> tuple[v.Record, ...]:
        """Concrete records from record specs; sizes aim at the boundaries the modes name."""
        out: list[v.Record] = []
        for mode, delta, ts_anchor, ts_delta, shape in specs:
            ts = picks.record_timestamp(ts_anchor, 0, ts_delta, self.now_ms, self.config,
                                        self.seen_timestamps)
            key = b"k" if shape == 1 else None
            headers = (v.Header("h", b"v"),) if shape == 2 else ()
            value: bytes | None = {"empty": b"", "null_value": None}.get(mode, b"test")
            out.append(v.Record(key, value, ts, headers))
            target = picks.target_size(mode, delta, self.view(), self.config)
            if target is not None:
                out[-1] = v.Record(key, picks.fit_value(out, target), ts, headers)
            elif mode == "small" and delta > 0:
                out[-1] = v.Record(key, b"test" * (1 + delta), ts, headers)
        return tuple(out)

    # --- rules without arguments: the simplest steps ----------------------------------------

    @rule()
    def append_one(self) -> None:
        """One 72-byte record at the current clock, in the latest epoch."""
        record = v.Record(None, b"test", self.now_ms)
        self.do("append_as_leader", records=(record,), leader_epoch=self.epoch(("latest", 0, 0)))

    @rule()
    def advance_high_watermark(self) -> None:
        """The HW moves to the LEO, as when every replica has caught up (retention needs it)."""
        self.do("update_high_watermark", offset=self.view().log_end_offset)

    @precondition(lambda self: "reopen" in self.session.features)
    @rule()
    def close_and_reopen(self) -> None:
        self.do("close_and_reopen")

    @rule()
    def delete_old_segments(self) -> None:
        self.do("delete_old_segments")

    # --- crashes (KL-CRASH-*): the rule itself is `crash_rule`, weighted per session --------

    def crash_enabled(self) -> bool:
        features = self.session.features
        if self.session.crash_weight <= 0 or not {"crash", "crash_kill"} & features:
            return False
        return crash_modelled(self.session.config)

    def crash_now(self, point: int, fault: str, leftover: str, seed: int) -> None:
        if "crash" not in self.session.features:
            # A kill-and-reopen adapter: a process crash after the last action, nothing planted.
            point, fault, leftover = 1 << 20, "process_crash", "none"
        if leftover in self.session.leftovers_off:
            leftover = "none"  # the trace records what was planted: it replays alone
        self.do("crash", point=point, fault=fault, seed=seed, leftover=leftover)

    crash = crash_rule(0)

    # --- one argument -------------------------------------------------------------------------

    @rule(step=st.tuples(st.sampled_from(picks.CLOCK_STEPS), st.integers(-1, 1)))
    def advance_clock(self, step: tuple[str, int]) -> None:
        self.do("advance_clock", ms=picks.clock_step(step[0], step[1], self.config))

    @precondition(lambda self: "leader_epochs" in self.session.features)
    @rule(epoch=EPOCHS)
    def end_offset_for_epoch(self, epoch: tuple[str, int, int]) -> None:
        self.do("end_offset_for_epoch",
                epoch=picks.resolve_query_epoch(epoch, self.view(), self.seen_epochs))

    @precondition(lambda self: "timestamps" in self.session.features)
    @rule(when=TIMESTAMPS)
    def fetch_offset_by_timestamp(self, when: tuple[str, int, int]) -> None:
        timestamp = picks.resolve_timestamp(when, self.now_ms, self.config, self.seen_timestamps)
        self.do("fetch_offset_by_timestamp", timestamp=timestamp)

    @rule(offset=OPTIONAL_OFFSETS)
    def flush(self, offset: picks.OffsetPick | None) -> None:
        self.do("flush", offset=None if offset is None else self.offset(offset))

    @precondition(lambda self: "hw_metadata" in self.session.features)
    @rule(offset=OFFSETS)
    def maybe_increment_high_watermark(self, offset: picks.OffsetPick) -> None:
        self.do("maybe_increment_high_watermark", hw=v.LogOffsetMetadata(self.offset(offset)))

    @rule(offset=OFFSETS)
    def maybe_increment_log_start_offset(self, offset: picks.OffsetPick) -> None:
        self.do("maybe_increment_log_start_offset", offset=self.offset(offset))

    @rule(offset=OPTIONAL_OFFSETS)
    def roll(self, offset: picks.OffsetPick | None) -> None:
        # Kafka rolls to an offset beyond the LEO only inside an append that continues there
        # (LOG-22, exercised by follower appends with gaps); a bare roll past the LEO would
        # leave an active segment starting above the log end, which no caller does.
        expected = None if offset is None else min(self.offset(offset), self.view().log_end_offset)
        self.do("roll", expected_next_offset=expected)

    @rule(offset=OFFSETS)
    def truncate_fully_and_start_at(self, offset: picks.OffsetPick) -> None:
        self.do("truncate_fully_and_start_at", offset=self.offset(offset))

    @rule(offset=OFFSETS)
    def truncate_to(self, offset: picks.OffsetPick) -> None:
        self.do("truncate_to", offset=self.offset(offset))

    @rule(offset=OFFSETS)
    def update_high_watermark(self, offset: picks.OffsetPick) -> None:
        self.do("update_high_watermark", offset=self.offset(offset))

    # --- two or more arguments ------------------------------------------------------------------

    @rule(specs=st.lists(RECORD_SPECS, min_size=0, max_size=4), epoch=EPOCHS)
    def append_as_leader(self, specs: list[Any], epoch: tuple[str, int, int]) -> None:
        self.do("append_as_leader", records=self.records(specs), leader_epoch=self.epoch(epoch))

    @precondition(lambda self: "leader_epochs" in self.session.features)
    @rule(epoch=EPOCHS, start=OFFSETS)
    def assign_epoch(self, epoch: tuple[str, int, int], start: picks.OffsetPick) -> None:
        # Kafka's callers assign an epoch at the LEO when a replica becomes leader (LOG-50); the
        # per-batch assignment of appends (LOG-20) is exercised by the append rules. An epoch
        # starting inside existing data would contradict the batches' own epochs, which no
        # caller does, so only a negative offset (the ERR-27 path) is kept as drawn.
        drawn = self.offset(start)
        start_offset = drawn if drawn < 0 else self.view().log_end_offset
        self.do("assign_epoch", epoch=self.epoch(epoch), start_offset=start_offset)

    @precondition(lambda self: "follower_append" in self.session.features)
    @rule(start=OFFSETS, batches=st.lists(BATCH_SPECS, min_size=0, max_size=3),
          request_epoch=st.none() | EPOCHS)
    def append_as_follower(self, start: picks.OffsetPick, batches: list[Any],
                           request_epoch: tuple[str, int, int] | None) -> None:
        # Follower batches come from a leader's log, so their offsets are never negative.
        base = max(0, self.offset(start))
        specs: list[v.BatchSpec] = []
        for gap, epoch, record_specs, append_time in batches:
            records = self.records(record_specs)
            kind = v.TimestampType.LOG_APPEND_TIME if append_time else v.TimestampType.CREATE_TIME
            stamp = self.now_ms if append_time else v.NO_TIMESTAMP
            specs.append(v.BatchSpec(base + gap, self.epoch(epoch), records, kind, stamp))
            base = specs[-1].last_offset + 1
        leader_epoch = None if request_epoch is None else self.epoch(request_epoch)
        self.do("append_as_follower", batches=tuple(specs), leader_epoch=leader_epoch)

    @rule(start=OFFSETS, size=st.tuples(st.sampled_from(picks.MAX_BYTES_MODES), _DELTA),
          isolation=st.sampled_from((v.Isolation.LOG_END, v.Isolation.HIGH_WATERMARK)),
          min_one_message=st.booleans())
    def read(self, start: picks.OffsetPick, size: tuple[str, int], isolation: v.Isolation,
             min_one_message: bool) -> None:
        self.do("read", start_offset=self.offset(start),
                max_bytes=picks.max_bytes(size[0], size[1], self.config),
                isolation=isolation, min_one_message=min_one_message)

    # --- targeted scenarios: short setups random single steps rarely line up ------------------
    # Each runs a few ordinary actions back to back (every one is its own trace step), aimed at
    # boundaries where Kafka's historical log bugs lived: retention right after the HW or the
    # log start moves (LOG-32, LOG-33), truncation exactly at a batch / index-entry boundary or
    # to an empty segment (FMT-15, SEG-13), and data spread over segments by size (SEG-6).

    @rule(stamps=st.lists(st.sampled_from(("now", "old", "future", "none")), min_size=1,
                          max_size=3), retain=st.booleans())
    def fill_segments(self, stamps: list[str], retain: bool = False) -> None:
        """One batch per stamp, each sized to end at segment_bytes (or as large as a message may
        be), so data spreads over segments with the given ages; with `retain`, retention runs
        at once, typically with the HW still below the new data (LOG-33, LOG-37)."""
        for stamp in stamps:
            room = self.config.segment_bytes - self.view().segments[-1].size_in_bytes
            mode = "fill_segment" if room <= self.config.max_message_bytes else "max_message"
            self.do("append_as_leader", records=self.records([(mode, 0, stamp, 0, 0)]),
                    leader_epoch=self.epoch(("latest", 0, 0)))
        if retain:
            self.do("delete_old_segments")

    @rule(third=st.booleans(), retain=st.booleans())
    def age_inversion(self, third: bool, retain: bool) -> None:
        """A new segment followed by an expired one: time retention must stop at the new one
        (LOG-33, LOG-36); with `retain`, the log start then moves to the expired segment's base and
        retention runs, so log-start retention must come first (LOG-32)."""
        before = len(self.view().segments)
        self.fill_segments(["now", "old", "now"] if third else ["now", "old"])
        if retain:
            self.retention_after_move(("log_end", 0, 0), before, "log_start")

    @precondition(lambda self: "timestamps" in self.session.features)
    @rule(specs=st.lists(RECORD_SPECS, min_size=1, max_size=2),
          when=st.sampled_from(("max_timestamp", "seen")))
    def append_then_lookup(self, specs: list[Any], when: str) -> None:
        """A batch whose newest record comes first, then a timestamp lookup that must name
        that record, not the batch's last offset (LOG-48)."""
        newest_first = [("small", 0, "future", 0, 0), *specs]
        self.do("append_as_leader", records=self.records(newest_first),
                leader_epoch=self.epoch(("latest", 0, 0)))
        timestamp = picks.resolve_timestamp((when, -1, 0), self.now_ms, self.config,
                                            self.seen_timestamps)
        self.do("fetch_offset_by_timestamp", timestamp=timestamp)

    @rule(offset=OFFSETS, segment=_INDEX,
          moves=st.sampled_from(("high_watermark", "log_start", "none")))
    def retention_after_move(self, offset: picks.OffsetPick, segment: int, moves: str) -> None:
        """Move the HW, or the log start offset to a segment base (the HW first if it is below),
        or nothing, then run retention at once (LOG-32, LOG-33)."""
        if moves == "high_watermark":
            self.do("update_high_watermark", offset=self.offset(offset))
        elif moves == "log_start":
            segments = self.view().segments
            target = segments[segment % len(segments)].base_offset
            if self.view().high_watermark < target:
                self.do("update_high_watermark", offset=self.view().log_end_offset)
            self.do("maybe_increment_log_start_offset", offset=target)
        self.do("delete_old_segments")

    @rule(segment=_INDEX, into=st.integers(0, 3), fully=st.booleans())
    def truncate_at_boundary(self, segment: int, into: int, fully: bool) -> None:
        """Truncate to a segment's base (empties it) or `into` offsets past it: with one-record
        batches those are batch boundaries and offset-index keys (FMT-15). With `fully`, the
        whole log restarts there instead (KL-TRUNC-4)."""
        segments = self.view().segments
        base = segments[segment % len(segments)].base_offset
        action = "truncate_fully_and_start_at" if fully else "truncate_to"
        self.do(action, offset=base + into)

    @rule(step=st.sampled_from(("segment_ms", "retention_ms", "one")))
    def roll_clock_after_truncate(self, step: str) -> None:
        """Append without a timestamp, age the active segment, truncate it to empty, append
        again: the roll clock must restart at the truncation (SEG-7, SEG-13)."""
        record = v.Record(None, b"test", v.NO_TIMESTAMP)
        epoch = self.epoch(("latest", 0, 0))
        self.do("append_as_leader", records=(record,), leader_epoch=epoch)
        self.do("advance_clock", ms=picks.clock_step(step, 1, self.config))
        self.do("truncate_to", offset=self.view().segments[-1].base_offset)
        self.do("append_as_leader", records=(record,), leader_epoch=self.epoch(("latest", 0, 0)))

    @precondition(lambda self: "follower_append" in self.session.features)
    @rule(gap=st.sampled_from((1, 2**31)), epoch=EPOCHS)
    def follower_gap(self, gap: int, epoch: tuple[str, int, int]) -> None:
        """A follower batch past the LEO: a compacted gap (KL-APPEND-8), or one past Int.MAX of
        the active segment's base, which must roll first (KL-ROLL-9)."""
        base = self.view().log_end_offset + gap
        records = (v.Record(None, b"test", self.now_ms),)
        batch = v.BatchSpec(base, self.epoch(epoch), records, v.TimestampType.CREATE_TIME,
                            v.NO_TIMESTAMP)
        self.do("append_as_follower", batches=(batch,), leader_epoch=None)

    @rule()
    def expire_everything(self) -> None:
        """HW at the LEO and the clock past retention: every segment is deletable, so retention
        rolls first (KL-RET-6) and the log is left with one empty segment."""
        self.do("update_high_watermark", offset=self.view().log_end_offset)
        self.do("advance_clock", ms=picks.clock_step("retention_ms", 1, self.config))
        self.do("delete_old_segments")

    @precondition(lambda self: "leader_epochs" in self.session.features)
    @rule()
    def epoch_boundaries(self) -> None:
        """One record, then end_offset_for_epoch at the boundary epochs: UNDEFINED (-1), the
        first, the latest and one past it (KL-EPOCH-2)."""
        self.append_one()
        for pick in (("undefined", 0, 0), ("first", 0, 0), ("latest", 0, 0), ("latest", 0, 1)):
            self.do("end_offset_for_epoch", epoch=self.epoch(pick))

    @rule(into=st.integers(1, 2), replicated=st.booleans())
    def cut_inside_segment(self, into: int, replicated: bool) -> None:
        """`into` + 1 one-record batches (with `replicated`, the HW then moves to the LEO), then
        truncate to the `into`-th of them: a batch boundary that is an offset-index key when
        every batch is indexed (FMT-15), below the HW when replicated (LOG-40 step 4)."""
        base = self.view().log_end_offset
        for _ in range(into + 1):
            self.append_one()
        if replicated:
            self.advance_high_watermark()
        self.do("truncate_to", offset=base + into)
