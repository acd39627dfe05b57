"""The model's actions as Z3 transition relations over the offset facts of a partition state.

An abstract state is `Offsets(lso, hw, leo, rp, fb)`: log start offset, high watermark, log end
offset, recovery point and the first segment's base. Each relation `T(s, t, args)` states what a
*successful* call of the action does to those five integers, transcribed from `kafkalog.model`
(the function named in each docstring); an action that raises leaves the state unchanged, which
preserves any invariant. `tests/formal/test_z3_invariants.py` proves one-step induction over these
relations and checks, on real model runs, that every step the model takes satisfies its relation,
so the transcription cannot drift from the code unnoticed.

Each action also has a `mutant`: the same relation with one seeded bug that Kafka or kafkalog
guards against. The proofs must find a counterexample for every mutant (negative controls).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import z3

Args = dict[str, z3.ArithRef]
Relation = Callable[["Offsets", "Offsets", Args], z3.BoolRef]
FIELDS = ("lso", "hw", "leo", "rp", "fb")


@dataclass(frozen=True)
class Offsets:
    """The offset facts of one partition state as Z3 integers."""

    lso: z3.ArithRef  # log start offset
    hw: z3.ArithRef  # high watermark (its message offset)
    leo: z3.ArithRef  # log end offset (exclusive)
    rp: z3.ArithRef  # recovery point
    fb: z3.ArithRef  # base offset of the first segment

    @staticmethod
    def named(prefix: str) -> Offsets:
        return Offsets(*(z3.Int(f"{prefix}.{name}") for name in FIELDS))

    def same(self, other: Offsets, *except_fields: str) -> z3.BoolRef:
        """Every field equal to `other`'s, except the ones named."""
        kept = [f for f in FIELDS if f not in except_fields]
        return z3.And(True, *(getattr(self, f) == getattr(other, f) for f in kept))


def invariant(s: Offsets) -> z3.BoolRef:
    """KL-INV-1, KL-INV-2, KL-INV-3: 0 <= fb <= lso <= hw <= leo and 0 <= rp <= leo."""
    return z3.And(s.fb >= 0, s.fb <= s.lso, s.lso <= s.hw, s.hw <= s.leo, s.rp >= 0, s.rp <= s.leo)


def zmax(a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
    return z3.If(a >= b, a, b)


def zmin(a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
    return z3.If(a <= b, a, b)


def clamp(hw: z3.ArithRef, lso: z3.ArithRef, leo: z3.ArithRef) -> z3.ArithRef:
    """helpers.clamp_high_watermark, branch for branch."""
    return z3.If(hw < lso, lso, z3.If(hw >= leo, leo, hw))


def _hw_follows_leo(hw: z3.ArithRef, leo: z3.ArithRef) -> z3.ArithRef:
    """local_log.update_high_watermark_with_log_end: HW >= LEO takes the LEO."""
    return z3.If(hw >= leo, leo, hw)


def append(s: Offsets, t: Offsets, a: Args, *, check_first: bool = True) -> z3.BoolRef:
    """append._append via either append action: maybe roll at `first`, then LEO = last + 1.

    `append_as_leader` is the case first = LEO. The roll's flush moves the recovery point to
    min(first, LEO) (local_log.roll_log); `roll` is the solver's free choice.
    """
    first, last = a["first"], a["last"]
    rolled = z3.Bool("append.rolled")
    rp = z3.If(rolled, zmax(s.rp, zmin(first, s.leo)), s.rp)
    guard = z3.And(first <= last, first >= s.leo) if check_first else first <= last
    return z3.And(
        guard, t.leo == last + 1, t.hw == _hw_follows_leo(s.hw, last + 1), t.rp == rp,
        t.same(s, "leo", "hw", "rp"),
    )


def update_high_watermark(s: Offsets, t: Offsets, a: Args, *, lower: bool = True) -> z3.BoolRef:
    """log.update_high_watermark: clamp into [lso, leo]."""
    hw = clamp(a["x"], s.lso, s.leo) if lower else zmin(a["x"], s.leo)
    return z3.And(t.hw == hw, t.same(s, "hw"))


def maybe_increment_high_watermark(
    s: Offsets, t: Offsets, a: Args, *, guard: bool = True
) -> z3.BoolRef:
    """log.maybe_increment_high_watermark: monotone; above the LEO raises (ERR-28)."""
    m = a["x"]
    return z3.And(m <= s.leo if guard else True, t.hw == zmax(s.hw, m), t.same(s, "hw"))


def maybe_increment_log_start_offset(
    s: Offsets, t: Offsets, a: Args, *, guard: bool = True
) -> z3.BoolRef:
    """log.maybe_increment_log_start_offset: above the HW raises (ERR-30); HW/rp raised to it."""
    x = a["x"]
    moves = x > s.lso
    hw = z3.If(z3.And(moves, s.hw < x), clamp(x, x, s.leo), s.hw)
    return z3.And(
        x <= s.hw if guard else True,
        t.lso == z3.If(moves, x, s.lso), t.hw == hw,
        t.rp == z3.If(moves, zmax(s.rp, x), s.rp), t.same(s, "lso", "hw", "rp"),
    )


def delete_pass(s: Offsets, t: Offsets, a: Args, *, hw_bound: bool = True) -> z3.BoolRef:
    """retention._delete_pass with count > 0; `b` is the base of the first surviving segment.

    LOG-33 only deletes segments whose upper bound (the next base) is <= HW, so b <= HW. If all
    segments go, roll_log(None) first makes a new active segment at the LEO and flushes to it.
    """
    b = a["b"]
    rolled = z3.Bool("delete.rolled")
    rp = z3.If(rolled, zmax(s.rp, s.leo), s.rp)
    lso = zmax(s.lso, b)
    bound = b <= s.hw if hw_bound else b <= s.leo
    return z3.And(
        s.fb < b, bound, t.fb == b, t.lso == lso, t.rp == zmax(rp, lso),
        t.same(s, "fb", "lso", "rp"),
    )


def roll(s: Offsets, t: Offsets, a: Args, *, clamp_flush: bool = True) -> z3.BoolRef:
    """local_log.roll_log: new base B = max(expected, LEO); the flush goes to min(B, LEO)."""
    base = zmax(a["expected"], s.leo)
    flushed = zmin(base, s.leo) if clamp_flush else base
    return z3.And(t.rp == zmax(s.rp, flushed), t.same(s, "rp"))


def truncate_to(s: Offsets, t: Offsets, a: Args, *, clamp_hw: bool = True) -> z3.BoolRef:
    """log.truncate_to: nothing at or above the LEO, full truncation below the first base."""
    x = a["x"]
    # Below the first base it is a full truncation (KL-TRUNC-4): the recovery point only lowers.
    everything_at_x = z3.And(
        *(getattr(t, f) == x for f in ("lso", "hw", "leo", "fb")), t.rp == zmin(s.rp, x)
    )
    partial = z3.And(
        t.leo == x, t.rp == zmin(s.rp, x), t.lso == zmin(x, s.lso),
        t.hw == (z3.If(s.hw >= x, x, s.hw) if clamp_hw else s.hw), t.fb == s.fb,
    )
    return z3.And(
        x >= 0,
        z3.If(x >= s.leo, t.same(s), z3.If(s.fb > x, everything_at_x, partial)),
    )


def truncate_fully_and_start_at(
    s: Offsets, t: Offsets, a: Args, *, lower_rp: bool = True
) -> z3.BoolRef:
    """log.truncate_fully_and_start_at: one empty segment at x; LSO = HW = LEO = x.

    The recovery point is lowered to x when above it and otherwise kept (KL-TRUNC-4, LOC-2).
    """
    x = a["x"]
    rp = zmin(s.rp, x) if lower_rp else s.rp
    return z3.And(x >= 0, t.lso == x, t.hw == x, t.leo == x, t.fb == x, t.rp == rp)


def flush(s: Offsets, t: Offsets, a: Args, *, upper: bool = True) -> z3.BoolRef:
    """log.flush: x in [0, LEO] (else IllegalArgumentError); rp = max(rp, x)."""
    x = a["x"]
    return z3.And(x >= 0, x <= s.leo if upper else True, t.rp == zmax(s.rp, x), t.same(s, "rp"))


def close_and_reopen(s: Offsets, t: Offsets, a: Args, *, clamp_hw: bool = True) -> z3.BoolRef:
    """reload.close_and_reopen; `nx` is the last segment's next offset (>= its base >= fb).

    The LSO checkpoint holds the LSO only when it is above the first base (FMT-40); data wholly
    below it is dropped (REC-9); the HW checkpoint is clamped (LOG-4/5); rp = max(LEO, LSO).
    """
    nx = a["nx"]
    checkpoint = z3.If(s.lso > s.fb, s.lso, 0)
    gone = nx < checkpoint
    fb = z3.If(gone, checkpoint, s.fb)
    leo = z3.If(gone, checkpoint, nx)
    lso = zmax(checkpoint, fb)
    hw = clamp(s.hw, lso, leo) if clamp_hw else s.hw
    return z3.And(
        nx >= s.fb, t.fb == fb, t.leo == leo, t.lso == lso, t.hw == hw, t.rp == zmax(leo, lso)
    )


def offset_neutral(s: Offsets, t: Offsets, a: Args) -> z3.BoolRef:
    """assign_epoch, end_offset_for_epoch, read, fetch_offset_by_timestamp, advance_clock."""
    return t.same(s)


@dataclass(frozen=True)
class Action:
    """One action's relation, its argument names, its seeded bug and the rules it cites."""

    name: str
    relation: Relation
    args: tuple[str, ...]
    mutant: Relation | None
    bug: str


ACTIONS: tuple[Action, ...] = (
    Action("append", append, ("first", "last"),
           lambda s, t, a: append(s, t, a, check_first=False),
           "follower append below the LEO accepted (no UnexpectedAppendOffset, ERR-26)"),
    Action("update_high_watermark", update_high_watermark, ("x",),
           lambda s, t, a: update_high_watermark(s, t, a, lower=False),
           "HW clamped only to the LEO, not up to the log start (LOG-5)"),
    Action("maybe_increment_high_watermark", maybe_increment_high_watermark, ("x",),
           lambda s, t, a: maybe_increment_high_watermark(s, t, a, guard=False),
           "HW above the LEO accepted (ERR-28 missing)"),
    Action("maybe_increment_log_start_offset", maybe_increment_log_start_offset, ("x",),
           lambda s, t, a: maybe_increment_log_start_offset(s, t, a, guard=False),
           "log start moved above the HW (ERR-30 missing)"),
    Action("delete_old_segments", delete_pass, ("b",),
           lambda s, t, a: delete_pass(s, t, a, hw_bound=False),
           "retention bounded by the LEO instead of the HW (KAFKA-5634)"),
    Action("roll", roll, ("expected",),
           lambda s, t, a: roll(s, t, a, clamp_flush=False),
           "roll flush to the new base without min(base, LEO) (KL-FLUSH-3)"),
    Action("truncate_to", truncate_to, ("x",),
           lambda s, t, a: truncate_to(s, t, a, clamp_hw=False),
           "truncation forgets to clamp the HW (LOG-40)"),
    Action("truncate_fully_and_start_at", truncate_fully_and_start_at, ("x",),
           lambda s, t, a: truncate_fully_and_start_at(s, t, a, lower_rp=False),
           "recovery point not lowered by a full truncation (LOC-2, LOG-41)"),
    Action("flush", flush, ("x",),
           lambda s, t, a: flush(s, t, a, upper=False),
           "flush beyond the LEO accepted"),
    Action("close_and_reopen", close_and_reopen, ("nx",),
           lambda s, t, a: close_and_reopen(s, t, a, clamp_hw=False),
           "HW checkpoint not clamped at load (LOG-4/5)"),
    Action("offset_neutral", offset_neutral, (), None, "none: the offsets do not change"),
)


def arguments(action: Action) -> Args:
    """Fresh Z3 integers for the action's arguments."""
    return {name: z3.Int(f"{action.name}.{name}") for name in action.args}
