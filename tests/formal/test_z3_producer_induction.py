"""One-step induction (Z3) for the producer batch-cache invariant (KL-INV-15, PST-3, PST-13).

Abstraction: one producer entry as a cache of at most 5 batch last offsets (slots `l0..l4`,
count `n`) plus the log end offset. Each action of the log is transcribed by what it does to
that cache (model/producer/producer_state.py): an append pushes a batch at or above the LEO,
evicting the
oldest of six, and moves the LEO past it; an epoch change clears the cache first; a duplicate,
retention, a log-start increment and a clock step without expiry change nothing; expiry removes
the entry; truncation keeps the batches below the target (the rebuild replays exactly those,
from a snapshot holding at most one of them) and sets the LEO to the target; a reload keeps only
the newest batch. Z3 proves, for every action, inv(before) and step => inv(after), with no bound
on offsets. The random sequences of tests/model/test_model_producers.py check the real model
against the same predicate (`producer_state_well_formed`). Spec: KL-INV-15.
"""

from __future__ import annotations

import pytest

z3 = pytest.importorskip("z3", reason="z3-solver is a dev dependency; install '.[dev]'")

SLOTS = 5


class Cache:
    """Symbolic cache: count n, last offsets l[0..4] (oldest first), LEO."""

    def __init__(self, name: str) -> None:
        self.n = z3.Int(f"{name}_n")
        self.last = [z3.Int(f"{name}_l{i}") for i in range(SLOTS)]
        self.leo = z3.Int(f"{name}_leo")


def inv(c: Cache) -> object:
    """At most 5 batches, strictly increasing last offsets, all in [0, LEO); LEO >= 0."""
    parts = [c.n >= 0, c.n <= SLOTS, c.leo >= 0]
    for i in range(SLOTS):
        parts.append(z3.Implies(i < c.n, z3.And(c.last[i] >= 0, c.last[i] < c.leo)))
        if i + 1 < SLOTS:
            parts.append(z3.Implies(i + 1 < c.n, c.last[i] < c.last[i + 1]))
    return z3.And(*parts)


def same(a: Cache, b: Cache) -> object:
    return z3.And(a.n == b.n, a.leo == b.leo, *[a.last[i] == b.last[i] for i in range(SLOTS)])


def push(a: Cache, b: Cache, last: object, cleared: object) -> object:
    """b = a with one batch (last offset `last` >= a.leo) pushed; `cleared` = epoch changed."""
    n0 = z3.If(cleared, 0, a.n)
    full = n0 == SLOTS
    slots = []
    for i in range(SLOTS):
        shifted = a.last[i + 1] if i + 1 < SLOTS else last
        kept = z3.If(i == n0, last, a.last[i])
        slots.append(b.last[i] == z3.If(full, shifted, kept))
    return z3.And(last >= a.leo, b.n == z3.If(full, SLOTS, n0 + 1), b.leo == last + 1, *slots)


def truncate(a: Cache, b: Cache, target: object) -> object:
    """b keeps the batches of a below `target` (a prefix, offsets increase); LEO = target."""
    keep = z3.Sum([z3.If(z3.And(i < a.n, a.last[i] < target), 1, 0) for i in range(SLOTS)])
    return z3.And(target >= 0, target <= a.leo, b.n == keep, b.leo == target,
                  *[b.last[i] == a.last[i] for i in range(SLOTS)])


def reload(a: Cache, b: Cache) -> object:
    """A snapshot keeps the newest batch only (PSF-4)."""
    newest = z3.Sum([z3.If(a.n == i + 1, a.last[i], 0) for i in range(SLOTS)])
    return z3.And(b.leo == a.leo, b.n == z3.If(a.n > 0, 1, 0), b.last[0] == newest)


def holds(step: object, a: Cache, b: Cache) -> bool:
    solver = z3.Solver()
    solver.add(inv(a), step, z3.Not(inv(b)))
    return bool(solver.check() == z3.unsat)


@pytest.mark.parametrize("action", ["append", "append_new_epoch", "duplicate_or_retention",
                                    "expiry", "truncate", "reload"])
def test_batch_cache_invariant__is_inductive_for_every_action(action: str) -> None:
    """inv(before) and the action's step imply inv(after). Spec: KL-INV-15"""
    a, b = Cache("a"), Cache("b")
    x = z3.Int("x")
    steps = {
        "append": push(a, b, x, z3.BoolVal(False)),
        "append_new_epoch": push(a, b, x, z3.BoolVal(True)),
        "duplicate_or_retention": same(a, b),
        "expiry": z3.And(b.n == 0, b.leo == a.leo),
        "truncate": truncate(a, b, x),
        "reload": reload(a, b),
    }
    assert holds(steps[action], a, b)


def test_negative_control__an_append_below_the_leo_breaks_the_invariant() -> None:
    """Without `last >= LEO` (a write below the end) the proof fails: the prover is live."""
    a, b = Cache("a"), Cache("b")
    x = z3.Int("x")
    step = z3.And(push(a, b, x, z3.BoolVal(False)), x >= 0)
    loose = z3.substitute(step, (x >= a.leo, z3.BoolVal(True)))
    assert not holds(z3.And(loose, x < a.leo), a, b)
