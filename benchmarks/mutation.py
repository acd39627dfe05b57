"""The killing test of mutation testing: default `kafkalog check`, or a bounded part of it.

`python -m kafkalog.benchmarks.mutation` runs what default `kafkalog check` runs (100 seeds of
40 steps, families cycled by seed, the built-in implementation in-process, one crash rule with
sweeps) and exits 1 at the first run that does not conform, 0 when all conform. Shrinking is
skipped: a mutation tool only needs the verdict. cosmic-ray mutates one `impl/` module at a
time in place and runs this as its test command (benchmarks/cosmic-ray-*.toml; the README
gives the commands). A benchmark-style job, not part of CI.

`--families a,b --runs N` keeps the first N of those runs whose family is one of the named
ones (the same seeds and families default `check` gives them): a bounded killing test for a
module only some families reach, e.g. the producer-state modules and
`--families producers,producers_append_time,transactions`.

`--first a,b` runs all of default check's runs, those of the named families first: the verdict
is default check's (a mutant survives only if all 100 runs conform), and a mutant of a module
only those families reach dies after a few runs instead of a whole check
(benchmarks/cosmic-ray-producer*.toml).
"""

from __future__ import annotations

import argparse
import signal
import sys

from kafkalog.conformance.check.runner import run_seed
from kafkalog.conformance.gen.configs import DEFAULT_MIX

EXAMPLES, STEPS = 100, 40  # kafkalog check's default profile


def plan(families: set[str] | None, runs: int | None,
         first: set[str] | None = None) -> list[tuple[int, str]]:
    """(seed, family) of the runs to make: default check's, filtered and cut, or all of them
    with the `first` families' runs ahead of the others."""
    chosen = [(seed, DEFAULT_MIX[seed % len(DEFAULT_MIX)]) for seed in range(EXAMPLES)]
    if first:
        chosen.sort(key=lambda run: run[1] not in first)
    if families:
        chosen = [(seed, family) for seed, family in chosen if family in families]
    return chosen[:runs] if runs is not None else chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default="", help="comma-separated config families")
    parser.add_argument("--runs", type=int, default=None, help="at most this many runs")
    parser.add_argument("--first", default="", help="comma-separated families to run first")
    args = parser.parse_args(argv)
    families = {f for f in args.families.split(",") if f} or None
    first = {f for f in args.first.split(",") if f} or None
    # A mutation tool stops a slow test with SIGTERM, which would end the interpreter without
    # unwinding: as a KeyboardInterrupt it leaves through run_seed's scratch scope instead.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    for seed, family in plan(families, args.runs, first):
        outcome = run_seed(seed, steps=STEPS, config_family=family, shrink_s=0.0,
                           time_limit_s=30, crash_weight=1, crash_sweep=True)
        if outcome.outcome != "conformed":
            print(f"seed {seed} ({family}): {outcome.outcome} {outcome.signature}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
