"""The Z3 transition relations describe what the real model does (refinement check).

`test_z3_invariants.py` proves invariant preservation over the relations in
`formal_transitions.py`. Those relations are transcriptions, so this module runs the real model
(`kafkalog.model.log`) on random action sequences and asks Z3, after every successful step,
whether (offsets before, arguments, offsets after) satisfies the action's relation. A relation
that drifts from the code fails here with the step that disagrees.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

z3 = pytest.importorskip("z3", reason="z3-solver is a dev dependency; install '.[dev]'")

from formal_transitions import ACTIONS, Action, Offsets, invariant  # noqa: E402
from kafkalog.model import log  # noqa: E402
from kafkalog.model.errors import KafkalogError  # noqa: E402
from kafkalog.model.state import PartitionState  # noqa: E402
from kafkalog.model.values import (  # noqa: E402
    BatchSpec,
    Isolation,
    LogConfig,
    LogOffsetMetadata,
    Record,
)

BY_NAME = {a.name: a for a in ACTIONS}
CONFIG = LogConfig(
    segment_bytes=150, segment_ms=400, index_interval_bytes=60, segment_index_bytes=40,
    retention_ms=300, retention_bytes=100, file_delete_delay_ms=50,
)
NEUTRAL = {"assign_epoch", "end_offset_for_epoch", "read", "fetch_offset_by_timestamp",
           "advance_clock"}
# Appends, HW moves and retention are listed more than once so that sequences grow long enough
# for segments to become deletable; a full truncation resets everything, so it appears once.
NAMES = sorted([*NEUTRAL, "append_as_follower", "maybe_increment_high_watermark",
                "maybe_increment_log_start_offset", "roll", "truncate_to",
                "truncate_fully_and_start_at", "flush", "close_and_reopen",
                *["append_as_leader"] * 4, *["update_high_watermark"] * 2,
                *["delete_old_segments"] * 2])


def concrete(s: PartitionState) -> Offsets:
    """The abstraction function: a real state's offset facts as Z3 constants."""
    values = (s.log_start_offset, s.high_watermark.message_offset, s.log_end_offset,
              s.recovery_point, s.segments[0].base_offset)
    return Offsets(*(z3.IntVal(v) for v in values))


def _records(count: int, now: int) -> tuple[Record, ...]:
    return tuple(Record(None, b"v" * 10, now) for _ in range(count))


def draw_step(data: st.DataObject, s: PartitionState) -> tuple[str, tuple[Any, ...]]:
    """One action with arguments around the state's offsets (errors included)."""
    name = data.draw(st.sampled_from(NAMES))
    leo, x = s.log_end_offset, data.draw(st.integers(-1, s.log_end_offset + 3))
    count, epoch = data.draw(st.integers(1, 3)), data.draw(st.integers(0, 4))
    args: dict[str, tuple[Any, ...]] = {
        "append_as_leader": (_records(count, s.now_ms), epoch),
        "append_as_follower": ((BatchSpec(max(leo, s.active.base_offset) + x % 3, epoch,
                                          _records(count, s.now_ms)),),),
        "maybe_increment_high_watermark": (LogOffsetMetadata(max(x, 0)),),
        "roll": (None if x < 0 else x,),
        "flush": (None if x < 0 else x,),
        "truncate_fully_and_start_at": (max(x, 0),),
        "assign_epoch": (epoch, leo),
        "read": (s.log_start_offset, 200, Isolation.HIGH_WATERMARK, True),
        "end_offset_for_epoch": (epoch,),
        "fetch_offset_by_timestamp": (x,),
        "advance_clock": (100 * count,),
        "delete_old_segments": (),
        "close_and_reopen": (),
    }
    return name, args.get(name, (x,))


def relation_args(name: str, args: tuple[Any, ...], before: PartitionState,
                  after: PartitionState, result: Any) -> tuple[Action, dict[str, int]] | None:
    """The relation a successful step must satisfy and its concrete arguments (None: no-op)."""
    if name in NEUTRAL:
        return BY_NAME["offset_neutral"], {}
    if name.startswith("append_as_"):
        if result.first_offset < 0:
            return None
        return BY_NAME["append"], {"first": result.first_offset, "last": result.last_offset}
    if name == "delete_old_segments":
        return (BY_NAME["delete_old_segments"], {"b": after.segments[0].base_offset}) \
            if result > 0 else None
    if name == "close_and_reopen":
        return BY_NAME["close_and_reopen"], {"nx": before.segments[-1].next_offset}
    if name == "maybe_increment_high_watermark":
        return BY_NAME[name], {"x": args[0].message_offset}
    if name in ("roll", "flush"):
        default = 0 if name == "roll" else before.log_end_offset
        return BY_NAME[name], {"expected" if name == "roll" else "x":
                               default if args[0] is None else args[0]}
    return BY_NAME[name], {"x": args[0]}


def step_allowed(action: Action, before: Offsets, after: Offsets, args: dict[str, int]) -> bool:
    solver = z3.Solver()
    pinned = {k: z3.IntVal(v) for k, v in args.items()}
    solver.add(action.relation(before, after, pinned))
    return bool(solver.check() == z3.sat)


@given(st.data())
def test_model_steps__satisfy_their_z3_relations(data: st.DataObject) -> None:
    """Every successful model step is one the proved relation allows; errors change nothing."""
    s = log.empty_log(CONFIG, log_start_offset=data.draw(st.integers(0, 3)))
    for _ in range(data.draw(st.integers(10, 40))):
        name, args = draw_step(data, s)
        try:
            after, result = getattr(log, name)(s, *args)
        except KafkalogError:
            continue
        before_z3, after_z3 = concrete(s), concrete(after)
        picked = relation_args(name, args, s, after, result)
        if picked is None:
            assert z3.is_true(z3.simplify(before_z3.same(after_z3))), f"{name}{args}"
        else:
            action, pinned = picked
            assert step_allowed(action, before_z3, after_z3, pinned), f"{name}{args}"
        assert z3.is_true(z3.simplify(invariant(after_z3))), f"{name}{args}"
        s = after


@given(st.integers(1, 12), st.integers(0, 30), st.sampled_from([0, 200, 2000]))
def test_retention_steps__satisfy_the_delete_relation(appends: int, hw: int, clock: int) -> None:
    """Retention (rarely reached by random sequences) against its relation, deletions forced."""
    s = log.empty_log(CONFIG)
    for _ in range(appends):
        s, _ = log.append_as_leader(s, _records(2, s.now_ms), 0)
    s, _ = log.update_high_watermark(s, hw)
    s, _ = log.advance_clock(s, clock)
    after, count = log.delete_old_segments(s)
    if count == 0:
        assert z3.is_true(z3.simplify(concrete(s).same(concrete(after))))
        return
    pinned = {"b": after.segments[0].base_offset}
    assert step_allowed(BY_NAME["delete_old_segments"], concrete(s), concrete(after), pinned)
    if hw >= s.log_end_offset and clock == 2000:
        assert after.log_start_offset == s.log_end_offset  # everything below the HW went
