"""The killing test of mutation testing: default `kafkalog check`, nothing else.

`python -m kafkalog.benchmarks.mutation` runs what default `kafkalog check` runs (100 seeds of
40 steps, families cycled by seed, the built-in implementation in-process) and exits 1 at the
first run that does not conform, 0 when all conform. Shrinking is skipped: a mutation tool only
needs the verdict. cosmic-ray mutates one `impl/` module at a time in place and runs this as its
test command (benchmarks/cosmic-ray-*.toml; the README gives the commands). A benchmark-style
job, not part of CI.
"""

from __future__ import annotations

import sys

from kafkalog.conformance.check.runner import run_seed
from kafkalog.conformance.gen.configs import DEFAULT_MIX

EXAMPLES, STEPS = 100, 40  # kafkalog check's default profile


def main() -> int:
    for seed in range(EXAMPLES):
        family = DEFAULT_MIX[seed % len(DEFAULT_MIX)]
        outcome = run_seed(seed, steps=STEPS, config_family=family, shrink_s=0.0,
                           time_limit_s=30)
        if outcome.outcome != "conformed":
            print(f"seed {seed} ({family}): {outcome.outcome} {outcome.signature}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
