"""Coverage of rule combinations: which pairs of spec rules met in one run.

A bug that needs two behaviours in one log (a roll and then a truncation below the HW, say)
is only found by a run that exercises both rules. `rule_pairs` counts, over a set of runs, the
distinct pairs of KL rules exercised by at least one run; the rules every run exercises by
construction (KL-STATE-1..3 and the KL-INV invariants checked after each step) are left out, as
they pair with everything. `kafkalog check` and the campaign report print the result.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass

from kafkalog.conformance.check.coverage import RUN_RULES, all_rule_ids, invariant_rule_ids


@dataclass(frozen=True)
class PairCoverage:
    """Distinct rule pairs met in one run, out of the pairs of rules the spec defines."""

    covered: int
    possible: int  # C(n, 2) over the spec's rules that are not exercised by every run
    rules: int  # those n rules

    @property
    def percent(self) -> float:
        return 100.0 * self.covered / self.possible if self.possible else 0.0

    def describe(self) -> str:
        return (f"rule pairs met in one run: {self.covered} of {self.possible} "
                f"({self.percent:.1f}%, over {self.rules} rules)")


def _always() -> frozenset[str]:
    try:
        return RUN_RULES | invariant_rule_ids()
    except ImportError:  # a model without invariants: only the run rules are constant
        return RUN_RULES


def rule_pairs(runs: Iterable[Iterable[str]]) -> PairCoverage:
    """The pair coverage of runs given as their exercised rule IDs."""
    always = _always()
    known = all_rule_ids() - always
    pairs: set[tuple[str, str]] = set()
    for rules in runs:
        chosen = sorted(set(rules) - always)
        if known:
            chosen = [rule for rule in chosen if rule in known]
        pairs.update(itertools.combinations(chosen, 2))
    n = len(known)
    return PairCoverage(len(pairs), n * (n - 1) // 2, n)
