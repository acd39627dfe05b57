"""The system under test: one protocol with the model's action vocabulary, and the model adapter.

Every adapter (the model itself here, the in-process implementation in `impl_sut.py`, a process
speaking the JSON-lines protocol in `subprocess_sut.py`) takes and returns the value types of
`kafkalog.model.values` and raises the typed errors of `kafkalog.model.errors`, so the machine
compares them with `==` and by error code. `execute` turns one call into a `StepResult`.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from kafkalog.conformance.adapter.json_codec import ACTIONS, FEATURES, Json, encode, encode_error
from kafkalog.conformance.errors import AdapterError, UnexpectedException
from kafkalog.model import errors, invariants, log
from kafkalog.model import values as v
from kafkalog.model.crash import crash
from kafkalog.model.crash import inside as crash_inside
from kafkalog.model.crash.torn import TornClues, torn_pairs
from kafkalog.model.errors import KafkalogError
from kafkalog.model.producer.producer_state import Producers, producer_views
from kafkalog.model.state import PartitionState

#: The error code of an exception that is not a typed KafkalogError (an implementation bug).
UNEXPECTED_EXCEPTION = UnexpectedException.__name__


class UnsupportedError(Exception):
    """The adapter answered `unsupported`: the step is skipped on both sides, never compared."""


@runtime_checkable
class Sut(Protocol):
    """A partition log driven by the conformance machine (docs/design.md, "action vocabulary")."""

    name: str
    features: frozenset[str]

    def append_as_leader(
        self, records: tuple[v.Record, ...], leader_epoch: int, producer_id: int = -1,
        producer_epoch: int = -1, base_sequence: int = -1, is_transactional: bool = False,
    ) -> v.LogAppendInfo: ...

    def append_as_follower(
        self, batches: tuple[v.BatchSpec, ...], leader_epoch: int | None = None
    ) -> v.LogAppendInfo: ...

    def append_marker(
        self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
        leader_epoch: int,
    ) -> v.LogAppendInfo: ...

    def read(
        self, start_offset: int, max_bytes: int, isolation: v.Isolation, min_one_message: bool
    ) -> v.FetchDataInfo: ...

    def update_high_watermark(self, offset: int) -> int: ...

    def maybe_increment_high_watermark(
        self, hw: v.LogOffsetMetadata
    ) -> v.LogOffsetMetadata | None: ...

    def maybe_increment_log_start_offset(self, offset: int) -> bool: ...

    def delete_old_segments(self) -> int: ...

    def roll(self, expected_next_offset: int | None = None) -> int: ...

    def truncate_to(self, offset: int) -> bool: ...

    def truncate_fully_and_start_at(self, offset: int) -> None: ...

    def flush(self, offset: int | None = None) -> int: ...

    def assign_epoch(self, epoch: int, start_offset: int) -> None: ...

    def end_offset_for_epoch(self, epoch: int) -> v.EpochEndOffset | None: ...

    def fetch_offset_by_timestamp(self, timestamp: int) -> v.TimestampAndOffset | None: ...

    def advance_clock(self, ms: int) -> int: ...

    def close_and_reopen(self) -> None: ...

    def crash(self, point: int, fault: str, seed: int, leftover: str = "none") -> int:
        """Crash after `point` operations of the last action (all of them when it had fewer)
        under `fault`, then load the directory the crash left; returns the operations lost."""

    def state(self) -> v.LogStateView:
        """The observable state compared after every step."""

    def check(self) -> list[str]:
        """Violated internal invariants (empty when all hold); O(n)."""

    def verify(self) -> list[str]:
        """Findings of a read-only check of the on-disk directory (empty when clean)."""

    def close(self) -> None:
        """Release every resource (files, temp directories, processes)."""


@dataclass(frozen=True)
class StepResult:
    """What one side answered to one action: a value, or an error code and message."""

    value: Any = None
    code: str | None = None  # None when the action succeeded
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.code is None

    def same_as(self, other: StepResult) -> bool:
        """Results conform when both succeed with equal values or both fail with the same code.

        An untyped failure (`UnexpectedException`) never conforms, not even with another one
        (specs/adapter-protocol.md): it is a crash of the log code, whatever the other side did.
        """
        if UNEXPECTED_EXCEPTION in (self.code, other.code):
            return False
        if self.ok and other.ok:
            return bool(self.value == other.value)
        return self.code == other.code

    def to_json(self) -> Json:
        """`{"ok": value}` or `{"error": {"code", "message"}}` (specs/trace-format.md)."""
        if self.ok:
            return {"ok": encode(self.value)}
        return {"error": {"code": self.code, "message": self.message}}

    def describe(self) -> str:
        """One readable line for replay output and divergence messages."""
        if self.ok:
            return f"ok {self.value!r}"
        return f"error {self.code}: {self.message}"


def execute(sut: Sut, action: str, args: dict[str, Any]) -> StepResult:
    """Call `action` on `sut`; typed errors become results, adapter failures propagate.

    Raises UnsupportedError when the adapter does not implement the action and AdapterError when
    it could not be driven. Any other exception is an implementation bug and becomes an
    `UnexpectedException` result, which never conforms with the model's answer.
    """
    assert action in ACTIONS, action
    if action == "crash" and "idempotence" in args:
        # The checker's flag (KL-CRASH-7), not an argument of the log: crash_steps.py re-crashes.
        args = {k: a for k, a in args.items() if k != "idempotence"}
    if action == "crash" and args.get("in_load") and not getattr(sut, "crashes_in_load", False):
        # KL-CRASH-14 needs the load's own journal: only the in-process ImplSut has it.
        raise UnsupportedError("crash in_load needs an implementation that records its load")
    if action == "crash" and "in_load" in args and not args["in_load"]:
        args = {k: a for k, a in args.items() if k != "in_load"}
    begin = getattr(sut, "begin_action", None)
    if begin is not None and action != "crash":
        begin()  # the operations a following crash may cut start here
    try:
        return StepResult(value=getattr(sut, action)(**args))
    except (AdapterError, UnsupportedError):
        raise
    except KafkalogError as error:
        return StepResult(code=error.code, message=str(error))
    except Exception as error:  # an untyped failure of the log is a conformance failure
        where = traceback.extract_tb(error.__traceback__)[-1]
        message = f"{type(error).__name__}: {error} at {where.filename}:{where.lineno}"
        return StepResult(code=UNEXPECTED_EXCEPTION, message=message)


def error_result(error: KafkalogError) -> StepResult:
    """A StepResult from an error object (used when decoding trace and protocol lines)."""
    body = encode_error(error)
    return StepResult(code=body["code"], message=body["message"])


#: Producer tables `TableViews` keeps before it starts afresh (a run keeps a few dozen live).
_TABLE_VIEWS_KEPT = 512


class TableViews:
    """`producer_views`, remembered per table object: tables are frozen tuples, and a state
    after a step shares every snapshot table it did not change with the state before, so a
    view after every step turns only new tables into views. Each table is kept with its
    views, so its id is never reused while the entry lives."""

    def __init__(self) -> None:
        self._known: dict[int, tuple[Producers, tuple[v.ProducerView, ...]]] = {}

    def __call__(self, table: Producers) -> tuple[v.ProducerView, ...]:
        known = self._known.get(id(table))
        if known is not None and known[0] is table:
            return known[1]
        if len(self._known) >= _TABLE_VIEWS_KEPT:
            self._known.clear()
        views = producer_views(table)
        self._known[id(table)] = (table, views)
        return views


class ModelSut:
    """The pure model (kafkalog.model.log) behind the Sut protocol; it holds the current state.

    Each action calls the model's pure function and keeps the new state only when it returns,
    so a raised error leaves the state unchanged, as the model promises.
    """

    name = "model"
    features = frozenset(FEATURES)

    def __init__(self, config: v.LogConfig, now_ms: int = 0, log_start_offset: int = 0,
                 mode: crash.CrashMode = crash.CrashMode.STRICT) -> None:
        self._log = log
        self._invariants = invariants
        self.mode = mode
        self.partition_state = log.empty_log(config, now_ms, log_start_offset)
        self._per_state: dict[str, tuple[Any, Any]] = {}
        self._table_views = TableViews()
        # What is durable (model/crash/crash.py) and the last action, for a crash inside it.
        self.durable = crash.initial_durable(self.partition_state)
        self.last: tuple[str, PartitionState, crash.Durable] | None = None

    def _step(self, action: str, *args: Any) -> Any:
        before, durable = self.partition_state, self.durable
        self.last = (action, before, durable)  # also when the action fails: nothing changed
        self.partition_state, result = getattr(self._log, action)(self.partition_state, *args)
        self.durable = crash.observe(durable, action, before, self.partition_state, self.mode)
        return result

    # --- crashes (model/crash/crash.py) ---------------------------------------------------------

    def crash_outcomes(self, fault: str, ops_lost: int, leftover: str = "none",
                       clues: TornClues | None = None) -> tuple[crash.Outcome, ...]:
        """The allowed set of a crash under `fault`: after the last action when no operation
        of it was lost, else inside it (KL-CRASH-8). Of the leftovers only `offsets_back`
        changes the set (KL-CRASH-9). `clues`: what the recovered state shows of a header a
        garbage page tore (KL-ALLOW-10, model/crash/torn.py)."""
        model = crash.FaultModel(fault)
        back = leftover == "offsets_back"
        if ops_lost > 0 and self.last is not None:
            action, before, durable = self.last
            return crash_inside.crash_between(before, durable, self.partition_state, self.durable,
                                              action, model, self.mode, back, clues)
        return crash.crash_states(self.partition_state, self.durable, model, self.mode,
                                  offsets_back=back, clues=clues)

    def torn_headers(self) -> bool:
        """KL-ALLOW-10: whether a torn power loss now may mix two batches' headers (kafka mode,
        a batch re-appended where an undoable cut left one with the same CRC-covered bytes)."""
        return self.mode is crash.CrashMode.KAFKA and bool(
            torn_pairs((self.partition_state.segments, *self.durable.layouts)))

    def adopt(self, outcome: tuple[PartitionState, crash.Durable]) -> None:
        """Continue from one state of the allowed set (the one the implementation recovered)."""
        self.partition_state, self.durable = outcome
        self.last = None

    def snapshot(self) -> tuple[PartitionState, crash.Durable, Any]:
        return self.partition_state, self.durable, self.last

    def restore(self, snapshot: tuple[PartitionState, crash.Durable, Any]) -> None:
        self.partition_state, self.durable, self.last = snapshot

    def crash(self, point: int, fault: str, seed: int, leftover: str = "none") -> int:
        """As an implementation (model against itself): a crash after the last action that
        recovers to the seed's choice among the allowed states."""
        outcomes = self.crash_outcomes(fault, 0, leftover)
        loaded = crash.loaded_outcomes(outcomes)
        if not loaded:  # KL-CRASH-13: every load of this crash fails; fail as the first does
            failure = next(o for o in outcomes if isinstance(o, crash.LoadFailure))
            raise getattr(errors, failure.code)(failure.message)
        self.adopt(loaded[seed % len(loaded)])
        return 0

    def append_as_leader(
        self, records: tuple[v.Record, ...], leader_epoch: int, producer_id: int = -1,
        producer_epoch: int = -1, base_sequence: int = -1, is_transactional: bool = False,
    ) -> v.LogAppendInfo:
        return self._step(  # type: ignore[no-any-return]
            "append_as_leader", records, leader_epoch, producer_id, producer_epoch,
            base_sequence, is_transactional,
        )

    def append_as_follower(
        self, batches: tuple[v.BatchSpec, ...], leader_epoch: int | None = None
    ) -> v.LogAppendInfo:
        return self._step("append_as_follower", batches, leader_epoch)  # type: ignore[no-any-return]

    def append_marker(
        self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
        leader_epoch: int,
    ) -> v.LogAppendInfo:
        return self._step(  # type: ignore[no-any-return]
            "append_marker", producer_id, producer_epoch, commit, coordinator_epoch, leader_epoch
        )

    def read(
        self, start_offset: int, max_bytes: int, isolation: v.Isolation, min_one_message: bool
    ) -> v.FetchDataInfo:
        return self._step(  # type: ignore[no-any-return]
            "read", start_offset, max_bytes, isolation, min_one_message
        )

    def update_high_watermark(self, offset: int) -> int:
        return self._step("update_high_watermark", offset)  # type: ignore[no-any-return]

    def maybe_increment_high_watermark(
        self, hw: v.LogOffsetMetadata
    ) -> v.LogOffsetMetadata | None:
        return self._step("maybe_increment_high_watermark", hw)  # type: ignore[no-any-return]

    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        return self._step("maybe_increment_log_start_offset", offset)  # type: ignore[no-any-return]

    def delete_old_segments(self) -> int:
        return self._step("delete_old_segments")  # type: ignore[no-any-return]

    def roll(self, expected_next_offset: int | None = None) -> int:
        return self._step("roll", expected_next_offset)  # type: ignore[no-any-return]

    def truncate_to(self, offset: int) -> bool:
        return self._step("truncate_to", offset)  # type: ignore[no-any-return]

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self._step("truncate_fully_and_start_at", offset)

    def flush(self, offset: int | None = None) -> int:
        return self._step("flush", offset)  # type: ignore[no-any-return]

    def assign_epoch(self, epoch: int, start_offset: int) -> None:
        self._step("assign_epoch", epoch, start_offset)

    def end_offset_for_epoch(self, epoch: int) -> v.EpochEndOffset | None:
        return self._step("end_offset_for_epoch", epoch)  # type: ignore[no-any-return]

    def fetch_offset_by_timestamp(self, timestamp: int) -> v.TimestampAndOffset | None:
        return self._step("fetch_offset_by_timestamp", timestamp)  # type: ignore[no-any-return]

    def advance_clock(self, ms: int) -> int:
        return self._step("advance_clock", ms)  # type: ignore[no-any-return]

    def close_and_reopen(self) -> None:
        self._step("close_and_reopen")

    def clean(self) -> v.CleanResult | None:
        return self._step("clean")  # type: ignore[no-any-return]

    def state(self) -> v.LogStateView:
        return self._remembered("view", self._view)  # type: ignore[no-any-return]

    def _view(self, state: PartitionState) -> v.LogStateView:
        return self._log.view(state, self._table_views)

    def check(self) -> list[str]:
        return list(self._remembered("check", self._invariants.check_all))

    def _remembered(self, what: str, of_state: Any) -> Any:
        """`of_state(partition_state)`, computed once per state: states are frozen values, and a
        step that changes nothing (a read, a refused call) returns the very same object."""
        state = self.partition_state
        known = self._per_state.get(what)
        if known is None or known[0] is not state:
            known = self._per_state[what] = (state, of_state(state))
        return known[1]

    def verify(self) -> list[str]:
        return []  # the model has no directory

    def close(self) -> None:
        """Nothing to release: the model is a value."""
