"""Run the model's real helper code on symbolic integers and hand each path to Z3.

`Sym` stands in for an `int`: arithmetic builds a Z3 term, and every comparison asks the
`Explorer` which way to go. The explorer enumerates every feasible sequence of branch decisions
(depth first, pruning infeasible branches with Z3), so for inputs of a fixed length the model's own
Python (loops included) is unrolled into finitely many paths. A lemma then states, per path,
"assumptions and path condition imply the property", and Z3 proves it or returns a counterexample.
This is how the bounded lookup proofs check the code in `kafkalog.model`, not a transcription.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import z3


def term(value: object, like: z3.ExprRef | None = None) -> Any:
    """The Z3 term of a `Sym` or a plain `int` (a bit-vector constant when `like` is one)."""
    if isinstance(value, Sym):
        return value.expr
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"cannot lift {value!r} into a Z3 integer")
    if like is not None and z3.is_bv(like):
        return z3.BitVecVal(value, like.size())
    return z3.IntVal(value)


class Sym:
    """An integer whose comparisons branch through an `Explorer` (truthiness is refused)."""

    __slots__ = ("expr", "explorer")

    def __init__(self, expr: Any, explorer: Explorer) -> None:
        self.expr = expr
        self.explorer = explorer

    def _decide(self, other: object, op: Callable[[Any, Any], Any]) -> bool:
        if not isinstance(other, Sym | int) or isinstance(other, bool):
            return NotImplemented  # type: ignore[return-value]
        return self.explorer.decide(op(self.expr, term(other, self.expr)))

    def _arith(self, other: object, op: Callable[[Any, Any], Any]) -> Sym:
        return Sym(op(self.expr, term(other, self.expr)), self.explorer)

    def __lt__(self, other: object) -> bool:
        return self._decide(other, operator.lt)

    def __le__(self, other: object) -> bool:
        return self._decide(other, operator.le)

    def __gt__(self, other: object) -> bool:
        return self._decide(other, operator.gt)

    def __ge__(self, other: object) -> bool:
        return self._decide(other, operator.ge)

    def __eq__(self, other: object) -> bool:  # type: ignore[override]
        return self._decide(other, operator.eq)

    def __ne__(self, other: object) -> bool:  # type: ignore[override]
        return self._decide(other, operator.ne)

    def __add__(self, other: object) -> Sym:
        return self._arith(other, operator.add)

    def __radd__(self, other: object) -> Sym:
        return Sym(term(other, self.expr) + self.expr, self.explorer)

    def __sub__(self, other: object) -> Sym:
        return self._arith(other, operator.sub)

    def __rsub__(self, other: object) -> Sym:
        return Sym(term(other, self.expr) - self.expr, self.explorer)

    def __neg__(self) -> Sym:
        return Sym(-self.expr, self.explorer)

    def __bool__(self) -> bool:
        # A hidden truth test would silently pick one branch; the code under proof must compare.
        raise TypeError("a symbolic integer has no truth value; compare it explicitly")

    __hash__ = None  # type: ignore[assignment]


@dataclass
class Explorer:
    """Decides branches along one path; remembers the untaken feasible alternatives."""

    assumptions: z3.BoolRef
    forced: list[bool] = field(default_factory=list)
    decisions: list[bool] = field(default_factory=list)
    path: list[z3.BoolRef] = field(default_factory=list)
    alternatives: list[list[bool]] = field(default_factory=list)

    def sym(self, name: str, bits: int = 0) -> Sym:
        """A fresh symbolic integer: unbounded, or a `bits`-wide signed bit-vector."""
        return Sym(z3.BitVec(name, bits) if bits else z3.Int(name), self)

    def _feasible(self, condition: z3.BoolRef) -> bool:
        solver = z3.Solver()
        solver.add(self.assumptions, *self.path, condition)
        return bool(solver.check() == z3.sat)

    def decide(self, condition: z3.BoolRef) -> bool:
        index = len(self.decisions)
        if index < len(self.forced):
            choice = self.forced[index]
        else:
            can_true = self._feasible(condition)
            can_false = self._feasible(z3.Not(condition))
            choice = can_true
            if can_true and can_false:
                self.alternatives.append([*self.decisions, False])
        self.decisions.append(choice)
        self.path.append(condition if choice else z3.Not(condition))
        return choice


@dataclass(frozen=True)
class Path:
    """One feasible path: its condition and what the code returned along it."""

    condition: z3.BoolRef
    result: Any


def explore(assumptions: z3.BoolRef, run: Callable[[Explorer], Any]) -> Iterator[Path]:
    """Every feasible path of `run` under `assumptions`, depth first."""
    pending: list[list[bool]] = [[]]
    while pending:
        explorer = Explorer(assumptions, forced=pending.pop())
        result = run(explorer)
        pending.extend(explorer.alternatives)
        yield Path(z3.And(*explorer.path) if explorer.path else z3.BoolVal(True), result)


@dataclass(frozen=True)
class Verdict:
    """The outcome of a lemma: proved, or the first counterexample found."""

    paths: int
    counterexample: z3.ModelRef | None

    @property
    def proved(self) -> bool:
        return self.counterexample is None


def prove_on_paths(
    assumptions: z3.BoolRef,
    run: Callable[[Explorer], Any],
    claim: Callable[[Any], z3.BoolRef],
) -> Verdict:
    """Prove `assumptions and path => claim(result)` on every path (negation is unsat)."""
    count = 0
    for path in explore(assumptions, run):
        count += 1
        solver = z3.Solver()
        solver.add(assumptions, path.condition, z3.Not(claim(path.result)))
        if solver.check() == z3.sat:
            return Verdict(count, solver.model())
    return Verdict(count, None)


def strictly_increasing(values: Sequence[z3.ArithRef]) -> z3.BoolRef:
    """values[0] < values[1] < ... (True for fewer than two)."""
    return z3.And(True, *(a < b for a, b in zip(values, values[1:], strict=False)))


def count_if(conditions: Sequence[z3.BoolRef]) -> z3.ArithRef:
    """How many of `conditions` hold, as a Z3 integer term."""
    return z3.Sum(z3.IntVal(0), *(z3.If(c, 1, 0) for c in conditions))
