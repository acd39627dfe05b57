"""Re-run the searches and rewrite specs/counterexamples/*.jsonl; prints the effort numbers.

Run from the repository root: `python tests/replication/regenerate_counterexamples.py`. The
explanations (`*.md`) are written by hand and must be re-read when a trace changes.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from replication_machine import BUDGETS, STEPS, search  # noqa: E402

from kafkalog.cli.explain_cmd import COUNTEREXAMPLES, Counterexample, write_counterexample  # noqa: E402

# (policy, invariant) -> (file name, published scenario it reproduces)
SAVED = {
    ("truncate_to_high_watermark", "no_committed_data_loss"):
        ("kip-101-scenario-1-data-loss.jsonl", "KIP-101 scenario 1"),
    ("truncate_to_high_watermark", "logs_match_below_high_watermark"):
        ("kip-101-scenario-2-divergence.jsonl", "KIP-101 scenario 2"),
    ("leader_epoch_request", "logs_match_below_high_watermark"):
        ("kip-279-kafka-6361-divergence.jsonl", "KAFKA-6361 (KIP-279)"),
}


def main() -> None:
    for policy, budget in BUDGETS.items():
        outcome = search(policy, max_examples=budget)
        print(f"{policy}: {outcome.examples} examples in {outcome.seconds:.1f} s (steps {STEPS})")
        for invariant, (examples, seconds) in sorted(outcome.first.items()):
            steps = outcome.found.get(invariant, ())
            print(f"  first {invariant}: example {examples} after {seconds:.2f} s; "
                  f"shrunk to {len(steps)} steps")
            saved = SAVED.get((policy, invariant))
            if saved is not None and steps:
                name, scenario = saved
                example = Counterexample(policy, 2, invariant, scenario, steps)
                print(f"  wrote {write_counterexample(example, COUNTEREXAMPLES / name)}")


if __name__ == "__main__":
    main()
