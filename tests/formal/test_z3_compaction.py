"""Z3 proofs about the cleaner's pure offset helpers (model/cleaner/offsets.py), run on symbolic
integers path by path (`formal_symbolic.py`), each with a seeded-bug negative control.

- the dirty range: first dirty in [log start, LEO], the uncleanable bound never below first
  dirty, the first uncleanable offset a segment base at or below the active base and at or below
  the bound unless that is below the first base (KL-CLEAN-2);
- grouping: the groups partition the listed segments and every group of more than one segment
  fits the size limits and the Int.MAX offset range (KL-CLEAN-5, BUG-C1, BUG-C3).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

z3 = pytest.importorskip("z3", reason="z3-solver is a dev dependency; install '.[dev]'")

from formal_symbolic import Explorer, prove_on_paths, strictly_increasing, term  # noqa: E402
from kafkalog.model.cleaner import offsets  # noqa: E402
from kafkalog.model.values import INT32_MAX  # noqa: E402

MAX_SEGMENTS = 4  # bound on segment-list lengths (all lengths 1..MAX_SEGMENTS)


def _dirty_range_lemma(first_dirty_fn: Callable[..., Any],
                       uncleanable_fn: Callable[..., Any]) -> bool:
    """first dirty in [LSO, LEO] and uncleanable >= first dirty, on every path."""
    names = ("checkpoint", "lso", "leo", "last_stable", "active", "lag")
    symbols = {n: z3.Int(n) for n in names}
    assumptions = z3.And(symbols["lso"] >= 0, symbols["lso"] <= symbols["leo"],
                         symbols["lag"] >= -1)

    def run(ex: Explorer) -> Any:
        s = {n: ex.sym(n) for n in names}
        dirty = first_dirty_fn(s["checkpoint"], s["lso"], s["leo"])
        return dirty, uncleanable_fn(dirty, s["last_stable"], s["active"], s["lag"])

    def claim(result: Any) -> Any:
        dirty, bound = term(result[0]), term(result[1])
        return z3.And(symbols["lso"] <= dirty, dirty <= symbols["leo"], bound >= dirty)
    return prove_on_paths(assumptions, run, claim).proved


def _first_uncleanable_lemma(fn: Callable[..., Any], n: int) -> bool:
    """The answer is one of the bases, <= the active base, and <= the bound when the bound is
    at or above the first base."""
    bases = [z3.Int(f"b{i}") for i in range(n)]
    bound = z3.Int("u")

    def run(ex: Explorer) -> Any:
        return fn([ex.sym(f"b{i}") for i in range(n)], ex.sym("u"))

    def claim(result: Any) -> Any:
        r = term(result)
        return z3.And(z3.Or(*(r == b for b in bases)), r <= bases[-1],
                      z3.Implies(bound >= bases[0], r <= bound))
    return prove_on_paths(strictly_increasing(bases), run, claim).proved


def _grouping_lemma(fn: Callable[..., Any], n: int) -> bool:
    """Group lengths partition the list; a group of several segments fits every limit."""
    names = [f"{kind}{i}" for i in range(n) for kind in ("size", "oi", "ti", "base")]
    sym = {name: z3.Int(name) for name in names}
    fu, max_size, max_index = z3.Int("fu"), z3.Int("max_size"), z3.Int("max_index")
    assumptions = z3.And(
        strictly_increasing([sym[f"base{i}"] for i in range(n)]), fu > sym[f"base{n - 1}"],
        *(sym[f"{k}{i}"] >= 0 for i in range(n) for k in ("size", "oi", "ti")))

    def run(ex: Explorer) -> Any:
        s = {name: ex.sym(name) for name in names}
        return fn([s[f"size{i}"] for i in range(n)], [s[f"oi{i}"] for i in range(n)],
                  [s[f"ti{i}"] for i in range(n)], [s[f"base{i}"] for i in range(n)],
                  ex.sym("fu"), ex.sym("max_size"), ex.sym("max_index"))

    def claim(lengths: Any) -> Any:
        if sum(lengths) != n or any(length < 1 for length in lengths):
            return z3.BoolVal(False)
        facts = []
        start = 0
        for length in lengths:
            members = range(start, start + length)
            if length > 1:
                facts.append(z3.Sum(*(sym[f"size{i}"] for i in members)) <= max_size)
                facts.append(z3.Sum(*(sym[f"oi{i}"] for i in members)) <= max_index)
                facts.append(z3.Sum(*(sym[f"ti{i}"] for i in members)) <= max_index)
                for i in members[1:]:
                    estimated = (sym[f"base{i + 1}"] if i + 1 < n else fu) - 1
                    facts.append(z3.Or(sym[f"size{i}"] == 0,
                                       estimated - sym[f"base{start}"] <= INT32_MAX))
            start += length
        return z3.And(True, *facts)
    return prove_on_paths(assumptions, run, claim).proved


def _uncleanable_ignoring_first_dirty(first_dirty: Any, last_stable: Any, active: Any,
                                      lag: Any) -> Any:
    """Seeded bug (KAFKA-9133, BUG-C9): the bound is not raised to the first dirty offset."""
    bound = last_stable if last_stable < active else active
    return bound


def _first_uncleanable_ceiling(bases: list[Any], uncleanable: Any) -> Any:
    """Seeded bug: the first base above the bound instead of the segment holding it."""
    for base in bases:
        if base > uncleanable:
            return base
    return bases[-1]


def _grouping_without_range_check(sizes: list[Any], oi: list[Any], ti: list[Any],
                                  bases: list[Any], fu: Any, max_size: Any,
                                  max_index: Any) -> list[int]:
    """Seeded bug (KAFKA-2024, BUG-C1): groups may span more than Int.MAX offsets."""
    groups, i = [], 0
    while i < len(bases):
        total, j = sizes[i], i + 1
        while j < len(bases) and total + sizes[j] <= max_size and oi[i] + oi[j] <= max_index \
                and ti[i] + ti[j] <= max_index:
            total = total + sizes[j]
            j += 1
        groups.append(j - i)
        i = j
    return groups


def test_dirty_range__real_helpers__stay_inside_the_log() -> None:
    """Spec: KL-CLEAN-2 (CLN-15, CLN-16; BUG-C9, BUG-C10)."""
    assert _dirty_range_lemma(offsets.first_dirty_offset, offsets.uncleanable_offset)


def test_dirty_range__seeded_bug__yields_counterexample() -> None:
    """Negative control: an uncleanable bound below the first dirty offset is caught."""
    assert not _dirty_range_lemma(offsets.first_dirty_offset, _uncleanable_ignoring_first_dirty)


@pytest.mark.parametrize("n", range(1, MAX_SEGMENTS + 1))
def test_first_uncleanable__real_helper__is_the_holding_segment_base(n: int) -> None:
    """Spec: KL-CLEAN-2 (CLN-17)."""
    assert _first_uncleanable_lemma(offsets.first_uncleanable_offset, n)


def test_first_uncleanable__seeded_bug__yields_counterexample() -> None:
    """Negative control: rounding up instead of down is caught."""
    assert any(not _first_uncleanable_lemma(_first_uncleanable_ceiling, n)
               for n in range(1, MAX_SEGMENTS + 1))


@pytest.mark.parametrize("n", range(1, MAX_SEGMENTS))
def test_group_segments__real_helper__partitions_within_limits(n: int) -> None:
    """Spec: KL-CLEAN-5 (CLN-29; BUG-C1, BUG-C3, BUG-C4)."""
    assert _grouping_lemma(offsets.group_segments, n)


def test_group_segments__seeded_bug__yields_counterexample() -> None:
    """Negative control: grouping without the offset-range check (KAFKA-2024) is caught."""
    assert not _grouping_lemma(_grouping_without_range_check, 2)
