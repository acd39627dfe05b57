"""Z3 proofs about the model: invariant preservation by induction, lookups equal their specs.

Three kinds of lemma, each with a negative control that must produce a counterexample:
- one-step induction over the offset facts (`formal_transitions.py`): from any state satisfying
  KL-INV-1..3, every action's successful step lands in such a state again;
- the real epoch-cache code (`kafkalog.model.epochs`), run on symbolic integers path by path
  (`formal_symbolic.py`), keeps entries strictly increasing and inside [LSO, LEO) / [LSO, LEO];
- the real lookup helpers equal declarative specifications for every input up to a length bound,
  and the wire-format facts hold in 64/32-bit arithmetic (`BitVec`), where overflow matters.
Plain `Int` is used for model facts; `BitVec` only where Kafka stores fixed-width integers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

z3 = pytest.importorskip("z3", reason="z3-solver is a dev dependency; install '.[dev]'")

from formal_symbolic import (  # noqa: E402
    Explorer,
    Sym,
    count_if,
    prove_on_paths,
    strictly_increasing,
    term,
)
from formal_transitions import ACTIONS, Action, Offsets, arguments, invariant  # noqa: E402
from kafkalog.model import epochs  # noqa: E402
from kafkalog.model.helpers import (  # noqa: E402
    floor_index,
    index_entries_after_truncation,
    index_floor_position,
    relative_offset_fits,
    should_roll_for_size,
    truncation_cut,
)
from kafkalog.model.values import INT64_MAX, EpochEntry  # noqa: E402

MAX_LEN = 8  # bound on list lengths for the path-by-path proofs (all lengths 0..MAX_LEN)
EPOCH_LEN = 6  # bound on epoch-cache length


def _negation_model(claim: z3.BoolRef) -> z3.ModelRef | None:
    """None if `claim` is valid, else a counterexample."""
    solver = z3.Solver()
    solver.add(z3.Not(claim))
    return solver.model() if solver.check() == z3.sat else None


def _step_claim(action: Action, relation: Any) -> tuple[z3.BoolRef, Offsets]:
    s, t = Offsets.named("s"), Offsets.named("t")
    step = relation(s, t, arguments(action))
    return z3.Implies(z3.And(invariant(s), step), invariant(t)), t


# --- one-step induction over the offset facts -------------------------------------------------


@pytest.mark.parametrize("action", ACTIONS, ids=lambda a: a.name)
def test_induction__each_action__preserves_offset_invariants(action: Action) -> None:
    """Spec: KL-INV-1, KL-INV-2, KL-INV-3 are inductive over every action's successful step."""
    claim, _ = _step_claim(action, action.relation)
    assert _negation_model(claim) is None


@pytest.mark.parametrize("action", [a for a in ACTIONS if a.mutant], ids=lambda a: a.name)
def test_induction__seeded_bug__yields_counterexample_to_induction(action: Action) -> None:
    """Negative control: each action's seeded bug breaks an offset invariant in one step."""
    claim, t = _step_claim(action, action.mutant)
    model = _negation_model(claim)
    assert model is not None, f"no counterexample for the seeded bug: {action.bug}"
    assert z3.is_false(model.eval(invariant(t), model_completion=True))


def test_induction__every_action__has_a_step_relation() -> None:
    """The relations are satisfiable from a valid state, so no proof holds vacuously."""
    for action in ACTIONS:
        s, t = Offsets.named("s"), Offsets.named("t")
        solver = z3.Solver()
        solver.add(invariant(s), action.relation(s, t, arguments(action)), s.leo > s.lso)
        assert solver.check() == z3.sat, action.name


# --- the real epoch-cache code, symbolically ---------------------------------------------------


def _entries(explorer: Explorer, n: int) -> tuple[EpochEntry, ...]:
    return tuple(
        EpochEntry(explorer.sym(f"e{i}"), explorer.sym(f"s{i}")) for i in range(n)  # type: ignore[arg-type]
    )


def _epoch_terms(n: int) -> tuple[list[z3.ArithRef], list[z3.ArithRef]]:
    return [z3.Int(f"e{i}") for i in range(n)], [z3.Int(f"s{i}") for i in range(n)]


def _cache_ok(n: int, lso: z3.ArithRef, leo: z3.ArithRef) -> z3.BoolRef:
    """EPO-1 ordering, non-negative epochs (EPO-2) and KL-INV-10 bounds [lso, leo]."""
    es, ss = _epoch_terms(n)
    inside = [z3.And(lso <= s, s <= leo) for s in ss]
    return z3.And(strictly_increasing(es), strictly_increasing(ss), *[e >= 0 for e in es], *inside)


def _result_ok(entries: Sequence[EpochEntry], low: z3.ArithRef, high: z3.ArithRef,
               high_inclusive: bool) -> z3.BoolRef:
    es = [term(e.epoch) for e in entries]
    ss = [term(e.start_offset) for e in entries]
    upper = [(s <= high) if high_inclusive else (s < high) for s in ss]
    return z3.And(strictly_increasing(es), strictly_increasing(ss),
                  *[low <= s for s in ss], *upper)


LSO, HW, LEO, X, EPOCH = z3.Ints("lso hw leo x epoch")
OFFSETS_OK = z3.And(LSO >= 0, LSO <= HW, HW <= LEO)


def _assign_at_leo(assign: Callable[..., Any]) -> Callable[[int], Any]:
    """KL-INV-10 for a leader append or election: assign(epoch, LEO), then LEO grows by >= 1."""
    def lemma(n: int) -> Any:
        def run(ex: Explorer) -> Any:
            return assign(_entries(ex, n), ex.sym("epoch"), ex.sym("leo"))
        assumptions = z3.And(OFFSETS_OK, EPOCH >= 0, _cache_ok(n, LSO, LEO))
        return prove_on_paths(assumptions, run, lambda r: _result_ok(r, LSO, LEO + 1, False))
    return lemma


def _truncate_to_below_leo(truncate: Callable[..., Any]) -> Callable[[int], Any]:
    """truncate_to(x < LEO) cuts the cache at x: entries land in [min(lso, x), x)."""
    def lemma(n: int) -> Any:
        def run(ex: Explorer) -> Any:
            return truncate(_entries(ex, n), ex.sym("x"))
        assumptions = z3.And(OFFSETS_OK, X >= 0, X < LEO, _cache_ok(n, LSO, LEO))
        low = z3.If(X <= LSO, X, LSO)
        return prove_on_paths(assumptions, run, lambda r: _result_ok(r, low, X, False))
    return lemma


def _increment_log_start(truncate: Callable[..., Any]) -> Callable[[int], Any]:
    """The LSO moves to x in (lso, hw]: truncate_from_start keeps entries in [x, LEO]."""
    def lemma(n: int) -> Any:
        def run(ex: Explorer) -> Any:
            return truncate(_entries(ex, n), ex.sym("x"))
        assumptions = z3.And(OFFSETS_OK, LSO < X, X <= HW, _cache_ok(n, LSO, LEO))
        return prove_on_paths(assumptions, run, lambda r: _result_ok(r, X, LEO, True))
    return lemma


def _assign_without_start_check(entries: Any, epoch: Any, start_offset: Any) -> Any:
    """Seeded bug: EPO-2 step 3.1 pops only by epoch (KAFKA-7415's non-monotonic cache)."""
    kept = list(entries)
    if kept and kept[-1].epoch == epoch:
        return entries
    while kept and kept[-1].epoch >= epoch:
        kept.pop()
    kept.append(EpochEntry(epoch, start_offset))
    return tuple(kept)


def _truncate_from_end_inclusive(entries: Any, end_offset: Any) -> Any:
    """Seeded bug: keeps an entry starting exactly at the new LEO (EPO-6 drops >= end)."""
    return tuple(e for e in entries if e.start_offset <= end_offset)


def _truncate_from_start_no_move(entries: Any, start_offset: Any) -> Any:
    """Seeded bug: keeps the covering epoch at its old start, below the new LSO (EPO-7)."""
    removed = [e for e in entries if e.start_offset <= start_offset]
    kept = tuple(e for e in entries if e.start_offset > start_offset)
    return (removed[-1], *kept) if removed else entries


EPOCH_LEMMAS = {
    "assign_at_leo": (_assign_at_leo(epochs.assign), _assign_at_leo(_assign_without_start_check)),
    "truncate_to": (_truncate_to_below_leo(epochs.truncate_from_end),
                    _truncate_to_below_leo(_truncate_from_end_inclusive)),
    "increment_log_start": (_increment_log_start(epochs.truncate_from_start),
                            _increment_log_start(_truncate_from_start_no_move)),
}


@pytest.mark.parametrize("name", EPOCH_LEMMAS)
def test_epoch_cache__real_code__keeps_entries_ordered_and_within_log(name: str) -> None:
    """Spec: KL-INV-9, KL-INV-10, KL-EPOCH-1, KL-EPOCH-3, KL-EPOCH-4 (caches up to EPOCH_LEN)."""
    lemma, _ = EPOCH_LEMMAS[name]
    for n in range(EPOCH_LEN + 1):
        verdict = lemma(n)
        assert verdict.proved, f"n={n}: {verdict.counterexample}"


@pytest.mark.parametrize("name", EPOCH_LEMMAS)
def test_epoch_cache__seeded_bug__yields_counterexample(name: str) -> None:
    """Negative control: the same lemma fails on a cache with one seeded bug."""
    _, mutant = EPOCH_LEMMAS[name]
    assert any(not mutant(n).proved for n in range(EPOCH_LEN + 1))


# --- lookups equal their specifications (bounded) ---------------------------------------------


def _floor_spec(n: int) -> Callable[..., Any]:
    """MAP-2 floor: count(b <= off) - 1 over sorted bases."""
    def lemma(floor: Callable[..., int]) -> Any:
        bs, off = [z3.Int(f"b{i}") for i in range(n)], z3.Int("off")
        def run(ex: Explorer) -> int:
            return floor([Sym(b, ex) for b in bs], Sym(off, ex))
        spec = count_if([b <= off for b in bs]) - 1
        return prove_on_paths(strictly_increasing(bs), run, lambda r: term(r) == spec)
    return lemma


def _index_lookup_spec(n: int) -> Callable[..., Any]:
    """FMT-13: the position of the largest key <= target; 0 when there is none."""
    def lemma(lookup: Callable[..., Any]) -> Any:
        ks = [z3.Int(f"k{i}") for i in range(n)]
        ps = [z3.Int(f"p{i}") for i in range(n)]
        target = z3.Int("target")
        def run(ex: Explorer) -> Any:
            return lookup([Sym(k, ex) for k in ks], [Sym(p, ex) for p in ps], Sym(target, ex))
        def claim(r: Any) -> z3.BoolRef:
            largest = [z3.And(ks[i] <= target, *[ks[j] > target for j in range(i + 1, n)])
                       for i in range(n)]
            none = z3.And(True, *[k > target for k in ks])
            return z3.And(z3.Implies(none, term(r) == 0),
                          *[z3.Implies(largest[i], term(r) == ps[i]) for i in range(n)])
        return prove_on_paths(strictly_increasing(ks), run, claim)
    return lemma


def _count_below_spec(n: int) -> Callable[..., Any]:
    """FMT-15 / SEG-14: how many sorted keys are < offset (the kept prefix)."""
    def lemma(cut: Callable[..., int]) -> Any:
        ks, off = [z3.Int(f"k{i}") for i in range(n)], z3.Int("off")
        def run(ex: Explorer) -> int:
            return cut([Sym(k, ex) for k in ks], Sym(off, ex))
        spec = count_if([k < off for k in ks])
        return prove_on_paths(strictly_increasing(ks), run, lambda r: term(r) == spec)
    return lemma


def _end_offset_spec(n: int) -> Callable[..., Any]:
    """EPO-4 stated declaratively: undefined, latest, or (largest epoch <= req, next start)."""
    def lemma(end_offset_for: Callable[..., Any]) -> Any:
        es, ss = _epoch_terms(n)
        req, leo = z3.Ints("req leo")
        def run(ex: Explorer) -> Any:
            return end_offset_for(_entries(ex, n), ex.sym("req"), ex.sym("leo"))
        def claim(r: Any) -> z3.BoolRef:
            epoch, end = term(r.epoch), term(r.end_offset)
            undefined = z3.And(epoch == -1, end == -1)
            latest = z3.And(req == es[-1]) if n else z3.BoolVal(False)
            higher = [z3.And(e > req, *[z3.Implies(f > req, e <= f) for f in es]) for e in es]
            floor = [z3.And(e <= req, *[z3.Implies(f <= req, f <= e) for f in es]) for e in es]
            has_floor = z3.Or(False, *[e <= req for e in es])
            answer = z3.And(
                *[z3.Implies(h, end == s) for h, s in zip(higher, ss, strict=True)],
                z3.If(has_floor, z3.And(True, *[z3.Implies(f, epoch == e)
                                               for f, e in zip(floor, es, strict=True)]),
                      epoch == req),
            )
            return z3.If(req == -1, undefined, z3.If(latest, z3.And(epoch == req, end == leo),
                         z3.If(z3.Or(False, *higher), answer, undefined)))
        return prove_on_paths(z3.And(strictly_increasing(es), strictly_increasing(ss),
                                     *[e >= 0 for e in es]), run, claim)
    return lemma


def _floor_bisect_left(bases: Any, offset: Any) -> int:
    """Seeded bug: `<` where MAP-2 needs `<=` (misses a segment starting exactly at offset)."""
    found, lo, hi = -1, 0, len(bases) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if bases[mid] < offset:
            found, lo = mid, mid + 1
        else:
            hi = mid - 1
    return found


def _lookup_strictly_below(keys: Any, positions: Any, target: Any) -> Any:
    """Seeded bug: the largest key < target (FMT-13 is <=)."""
    slot = _floor_bisect_left(keys, target)
    return positions[slot] if slot >= 0 else 0


def _entries_kept_off_by_one(keys: Any, offset: Any) -> int:
    """Seeded bug: keeps an index entry whose key equals the truncation offset (FMT-15)."""
    return floor_index(keys, offset) + 1


def _end_offset_without_floor(entries: Any, requested_epoch: Any, log_end_offset: Any) -> Any:
    """Seeded bug: pre-KIP-279 answer (requested epoch, next start) (KAFKA-6361)."""
    result = epochs.end_offset_for(entries, requested_epoch, log_end_offset)
    if result.epoch != -1 and result.end_offset != log_end_offset:
        return epochs.EpochEndOffset(requested_epoch, result.end_offset)
    return result


LOOKUPS = {
    "floor_index": (_floor_spec, floor_index, _floor_bisect_left),
    "index_floor_position": (_index_lookup_spec, index_floor_position, _lookup_strictly_below),
    "index_entries_after_truncation": (
        _count_below_spec, index_entries_after_truncation, _entries_kept_off_by_one),
    "truncation_cut": (_count_below_spec, truncation_cut, _entries_kept_off_by_one),
    "end_offset_for": (_end_offset_spec, epochs.end_offset_for, _end_offset_without_floor),
}


@pytest.mark.parametrize("name", LOOKUPS)
def test_lookup__real_helper__equals_specification_up_to_bound(name: str) -> None:
    """Spec: KL-READ-1, KL-TRUNC-2, KL-TRUNC-3, KL-EPOCH-2 (every length 0..MAX_LEN)."""
    spec, real, _ = LOOKUPS[name]
    bound = EPOCH_LEN if name == "end_offset_for" else MAX_LEN
    for n in range(bound + 1):
        verdict = spec(n)(real)
        assert verdict.proved, f"n={n}: {verdict.counterexample}"


@pytest.mark.parametrize("name", LOOKUPS)
def test_lookup__seeded_bug__yields_counterexample(name: str) -> None:
    """Negative control: the same specification rejects a lookup with one seeded bug."""
    spec, _, mutant = LOOKUPS[name]
    assert any(not spec(n)(mutant).proved for n in range(EPOCH_LEN + 1))


# --- wire-format facts in fixed-width arithmetic -----------------------------------------------


def _relative_offset_lemma(fits: Callable[[Any, Any], bool]) -> Any:
    """FMT-11: a fitting offset survives the int32 relative field: base + sext(rel32) == off.

    Offsets are non-negative int64s, run through the helper as 64-bit vectors; the claim also
    shows the helper's own subtraction cannot wrap, so its 64-bit answer is its Python answer.
    """
    off, base = z3.BitVecs("off base", 64)
    rel32 = z3.Extract(31, 0, off - base)
    roundtrip = z3.And(base + z3.SignExt(32, rel32) == off, rel32 >= 0)
    no_wrap = z3.And(z3.BVSubNoOverflow(off, base), z3.BVSubNoUnderflow(off, base, True))
    def run(ex: Explorer) -> bool:
        return fits(ex.sym("off", 64), ex.sym("base", 64))
    return prove_on_paths(z3.And(off >= 0, base >= 0), run,
                          lambda r: z3.And(no_wrap, z3.Implies(z3.BoolVal(r), roundtrip)))


def _size_roll_lemma(should_roll: Callable[[Any, Any, Any], bool]) -> Any:
    """SEG-6 (1) / KAFKA-1670: in Kafka's int32 arithmetic, a no-roll decision is exact.

    The helper runs on 32-bit vectors (Kafka's `int`); its subtraction never wraps, and when it
    decides not to roll, the new segment size (the next batch's position) fits an int32 field.
    """
    size, msgs, limit = z3.BitVecs("size msgs limit", 32)
    in_range = z3.And(size >= 0, msgs >= 0, limit >= 14)
    exact = z3.And(z3.BVSubNoOverflow(limit, msgs), z3.BVSubNoUnderflow(limit, msgs, True))
    fits = z3.BVAddNoOverflow(size, msgs, True)
    def run(ex: Explorer) -> bool:
        return should_roll(ex.sym("size", 32), ex.sym("msgs", 32), ex.sym("limit", 32))
    return prove_on_paths(in_range, run,
                          lambda r: z3.And(exact, z3.Implies(z3.Not(z3.BoolVal(r)), fits)))


def _fits_unsigned_32(offset: Any, base_offset: Any) -> bool:
    """Seeded bug: checks the unsigned 32-bit range, but the field is a signed int32."""
    return 0 <= offset - base_offset <= 2**32 - 1


def _should_roll_int32_addition(size: Any, messages_size: Any, segment_bytes: Any) -> bool:
    """Seeded bug (KAFKA-1670): the addition form, which wraps in 32-bit ints."""
    return size + messages_size > segment_bytes  # type: ignore[no-any-return]


WIRE_LEMMAS = {
    "relative_offset_fits": (_relative_offset_lemma, relative_offset_fits, _fits_unsigned_32),
    "should_roll_for_size": (_size_roll_lemma, should_roll_for_size,
                             _should_roll_int32_addition),
}


@pytest.mark.parametrize("name", WIRE_LEMMAS)
def test_wire_format__real_helper__never_overflows_fixed_width_fields(name: str) -> None:
    """Spec: KL-APPEND-9, KL-ROLL-1 (64-bit offsets, int32 relative offsets and positions)."""
    lemma, real, _ = WIRE_LEMMAS[name]
    verdict = lemma(real)
    assert verdict.proved, verdict.counterexample


@pytest.mark.parametrize("name", WIRE_LEMMAS)
def test_wire_format__seeded_bug__yields_counterexample(name: str) -> None:
    """Negative control: the unsigned-range fit and the int32 addition form both overflow."""
    lemma, _, mutant = WIRE_LEMMAS[name]
    assert not lemma(mutant).proved


def test_wire_format__next_offset__stays_above_leo_below_long_max() -> None:
    """LEO + 1 > LEO in int64 iff LEO < Long.MAX; unguarded, Z3 finds LEO = 2^63 - 1."""
    leo = z3.BitVec("leo", 64)
    guarded = z3.Implies(z3.And(leo >= 0, leo < INT64_MAX), leo + 1 > leo)
    assert _negation_model(guarded) is None
    model = _negation_model(z3.Implies(leo >= 0, leo + 1 > leo))
    assert model is not None
    assert model.eval(leo).as_long() == INT64_MAX
