"""Z3 proofs of the producer sequence arithmetic (PST-5, PST-10, PST-14, PST-16).

The Z3 terms below transcribe `increment_sequence`, `decrement_sequence` and `in_sequence` of
model/producer/producer_entry.py; a Hypothesis refinement test evaluates them against the model's
and the implementation's Python functions, so a transcription that drifts from the code fails here.
Proved over all 32-bit sequences (no bound):

- increment stays in [0, Int.MAX] and decrement undoes it: a cached batch's first sequence
  (derived from its last sequence and offset delta, PST-4) is the batch's base sequence, also
  for batches that wrap past Int.MAX (KAFKA-7692), so a retry is recognised (PST-10);
- `in_sequence(l, n)` holds exactly when `n` is the wrap-aware successor of `l` (PST-14, PST-16),
  and for `l = -1` (no cached batch) exactly when `n = 0`;
- a retry that re-batches the same first sequence with another record count never matches the
  cached range (PST-11: OutOfOrderSequence, not a duplicate).

Spec: KL-PROD-3, KL-PROD-5, KL-PROD-7.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

z3 = pytest.importorskip("z3", reason="z3-solver is a dev dependency; install '.[dev]'")

from kafkalog.impl.producer import producer_state_manager as impl  # noqa: E402
from kafkalog.model.producer import producer_entry as model  # noqa: E402

MAX = 2**31 - 1


def inc(s: object, k: object) -> object:
    return z3.If(s > MAX - k, k - (MAX - s) - 1, s + k)


def dec(s: object, k: object) -> object:
    return z3.If(s < k, MAX - (k - s) + 1, s - k)


def in_seq(last: object, nxt: object) -> object:
    return z3.Or(nxt == last + 1, z3.And(nxt == 0, last == MAX))


def seq(name: str) -> object:
    return z3.Int(name)


def in_range(*xs: object) -> object:
    return z3.And(*[z3.And(x >= 0, x <= MAX) for x in xs])


def proved(claim: object) -> bool:
    solver = z3.Solver()
    solver.add(z3.Not(claim))
    return bool(solver.check() == z3.unsat)


def test_increment__stays_in_range_and_decrement_undoes_it() -> None:
    """For every base sequence and offset delta: first_seq(last_seq(b)) = base. KL-PROD-3"""
    s, k = seq("s"), seq("k")
    assert proved(z3.Implies(in_range(s, k), in_range(inc(s, k))))
    assert proved(z3.Implies(in_range(s, k), dec(inc(s, k), k) == s))


def test_in_sequence__is_the_wrap_aware_successor() -> None:
    """inSequence(l, n) iff n = increment(l, 1); with no batch (l = -1) iff n = 0. KL-PROD-7"""
    last, nxt = seq("last"), seq("next")
    assert proved(z3.Implies(in_range(last, nxt), in_seq(last, nxt) == (nxt == inc(last, 1))))
    assert proved(z3.Implies(in_range(nxt), in_seq(-1, nxt) == (nxt == 0)))


def test_rebatched_retry__never_matches_the_cached_range() -> None:
    """Same first sequence, different record count (both < 2**31): the last sequences differ,
    so the duplicate test (PST-10) cannot match. KL-PROD-5"""
    base, d1, d2 = seq("base"), seq("d1"), seq("d2")
    assert proved(z3.Implies(z3.And(in_range(base, d1, d2), d1 != d2),
                             inc(base, d1) != inc(base, d2)))


def test_negative_control__plain_subtraction_breaks_the_round_trip() -> None:
    """KAFKA-7692's arithmetic (first = last - delta) fails the proof: the prover is live."""
    s, k = seq("s"), seq("k")
    assert not proved(z3.Implies(in_range(s, k), inc(s, k) - k == s))


@given(st.integers(0, MAX), st.integers(0, MAX), st.integers(-1, MAX))
def test_z3_terms__agree_with_model_and_impl(s: int, k: int, last: int) -> None:
    """Refinement: the transcriptions evaluate as the Python functions do. KL-PROD-3"""
    def value(term: object) -> object:
        simplified = z3.simplify(term)
        return simplified.as_long() if z3.is_int_value(simplified) else z3.is_true(simplified)

    assert value(inc(z3.IntVal(s), z3.IntVal(k))) == model.increment_sequence(s, k) \
        == impl.increment_sequence(s, k)
    assert value(dec(z3.IntVal(s), z3.IntVal(k))) == model.decrement_sequence(s, k) \
        == impl.decrement_sequence(s, k)
    assert value(in_seq(z3.IntVal(last), z3.IntVal(s))) == model.in_sequence(last, s)
