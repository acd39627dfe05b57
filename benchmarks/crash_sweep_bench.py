"""Crash sweep throughput: crash points checked per CPU-minute of crash steps, against a naive
sweep measured in the same run.

Both sides run the same seeds of `kafkalog check`'s mix through `run_seed` with the default
sweep; the naive side turns off the image memo (`Sweeper.memo = False`), so every (point,
fault, seed) is written to its scratch directory and loaded, as a sweep did before images were
hashed. Seeds whose run diverges are left out of both sides (their shrinking is not crash work).
A third side measures the cost of the idempotence check (KL-CRASH-7: every distinct image is
loaded a second time after a crash right after its load): the hashed sweep with
`Sweeper.idempotence = False` is its same-run baseline. With `--in-load`, a fourth side runs
the hashed sweep with `--crash-in-load` (KL-CRASH-14: every distinct image's load is crashed
after each of its operations under every fault model): its crash CPU against the hashed sweep's
is `in_load_cost`, and it reports the crash points inside loads per CPU-minute.

python -m kafkalog.benchmarks.crash_sweep_bench [--runs N] [--steps S] [--in-load] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kafkalog.conformance.check.runner import run_seed
from kafkalog.conformance.crash import sweep as crash_sweep
from kafkalog.conformance.gen.configs import DEFAULT_MIX


@contextmanager
def _memo(enabled: bool, idempotence: bool = True) -> Iterator[None]:
    previous = crash_sweep.Sweeper.memo, crash_sweep.Sweeper.idempotence
    crash_sweep.Sweeper.memo, crash_sweep.Sweeper.idempotence = enabled, idempotence
    try:
        yield
    finally:
        crash_sweep.Sweeper.memo, crash_sweep.Sweeper.idempotence = previous


def measure(seeds: Sequence[int], steps: int, memo: bool,
            idempotence: bool = True, in_load: bool = False) -> dict[str, Any]:
    """Crash points, distinct images, idempotence checks, CPU seconds in crash steps and runs."""
    points: Counter[str] = Counter()
    images, checks, crash_s, diverged, inside = 0, 0, 0.0, [], 0
    started = time.process_time()
    with _memo(memo, idempotence):
        for seed in seeds:
            family = DEFAULT_MIX[seed % len(DEFAULT_MIX)]
            outcome = run_seed(seed, steps=steps, config_family=family, crash_weight=1,
                               crash_sweep=True, crash_in_load=in_load)
            if outcome.outcome != "conformed":
                diverged.append(seed)
                continue
            points.update(outcome.crashes)
            images += outcome.crash_images
            checks += outcome.crash_idempotence
            crash_s += outcome.crash_s
            inside += outcome.crash_in_load
    total = sum(points.values())
    return {
        "memo": memo, "idempotence": idempotence, "in_load": in_load,
        "in_load_points": inside,
        "in_load_points_per_cpu_minute": round(60 * inside / crash_s) if crash_s else 0,
        "runs": len(seeds) - len(diverged),
        "diverged_seeds": diverged, "crash_points": total, "by_fault": dict(sorted(points.items())),
        "distinct_images": images, "idempotence_checks": checks, "crash_cpu_s": round(crash_s, 2),
        "run_cpu_s": round(time.process_time() - started, 2),
        "points_per_cpu_minute": round(60 * total / crash_s) if crash_s else 0,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="crash_sweep_bench", description=__doc__)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--in-load", action="store_true",
                        help="also measure --crash-in-load against the hashed sweep")
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)  # recovery logs every cut it makes
    seeds = range(args.runs)
    naive = measure(seeds, args.steps, memo=False)
    hashed = measure(seeds, args.steps, memo=True)
    no_idempotence = measure(seeds, args.steps, memo=True, idempotence=False)
    result = {"naive": naive, "hashed": hashed, "hashed_without_idempotence": no_idempotence,
              "speedup": round(hashed["points_per_cpu_minute"]
                               / max(1, naive["points_per_cpu_minute"]), 2),
              "idempotence_cost": round(hashed["crash_cpu_s"]
                                        / max(0.01, no_idempotence["crash_cpu_s"]), 2)}
    if args.in_load:
        in_load = measure(seeds, args.steps, memo=True, in_load=True)
        result["hashed_with_in_load"] = in_load
        result["in_load_cost"] = round(in_load["crash_cpu_s"] / max(0.01, hashed["crash_cpu_s"]),
                                       2)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
