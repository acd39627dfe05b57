"""Keep a seeded sample of a cosmic-ray session's pending mutants, skip the rest.

`python -m kafkalog.benchmarks.mutation_sample SESSION.sqlite N [SEED]` leaves N of the pending
mutants (drawn by `random.Random(SEED)` from the job ids in order, so the same session gives
the same sample on every machine) and marks the others skipped with the output "not sampled".
A module's mutants number in the hundreds and a surviving one costs a whole default check, so
scripts/mutation.sh measures a sample when `SAMPLE=N` is set; the score it gives is an estimate,
reported with its Wilson interval (mutation_report.py).
"""

from __future__ import annotations

import random
import sys

from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import WorkerOutcome, WorkResult


def sample(db: WorkDB, keep: int, seed: int) -> tuple[int, int]:
    """(kept, skipped): all but `keep` seeded pending items marked skipped."""
    pending = sorted(item.job_id for item in db.pending_work_items)
    kept = set(random.Random(seed).sample(pending, min(keep, len(pending))))
    for job_id in pending:
        if job_id not in kept:
            db.set_result(job_id, WorkResult(output="not sampled",
                                             worker_outcome=WorkerOutcome.SKIPPED))
    return len(kept), len(pending) - len(kept)


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3) or not argv[1].isdigit():
        print("usage: mutation_sample SESSION.sqlite N [SEED]", file=sys.stderr)
        return 2
    with use_db(argv[0]) as db:
        kept, skipped = sample(db, int(argv[1]), int(argv[2]) if len(argv) > 2 else 0)
    print(f"sampled {kept} mutants, {skipped} not sampled")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
