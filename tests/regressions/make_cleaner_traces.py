"""Find and save tests/regressions/ traces of the broken cleaners of conformance/broken/cleaner.py.

`python tests/regressions/make_cleaner_traces.py tests/regressions [NAME ...]` runs the seed
search of tests/conformance/test_broken_cleaner.py (pinned_search.caught: fixed seeds of the bug's
family, a shrunk trace of at most 10 steps that diverges on the bug and conforms on the real
implementation) and writes the first pinned trace as `<bug>-<name>.jsonl`. Review the diff like
any other change.
"""
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "conformance"))

from kafkalog.conformance.broken.cleaner import (  # noqa: E402
    CLEANER_BROKEN,
    CLEANER_BROKEN_FAMILY,
    CLEANER_CRASH_ONLY,
)
from kafkalog.conformance.traces.trace import write_trace  # noqa: E402
from pinned_search import caught  # noqa: E402

SEEDS = range(300)  # as test_broken_cleaner.py
MAX_STEPS = 10


def main(out: Path, only: tuple[str, ...] = ()) -> None:
    logging.disable(logging.WARNING)
    for name, broken in sorted(CLEANER_BROKEN.items()):
        if only and name not in only:
            continue
        started = time.monotonic()
        trace, tried = caught(name, CLEANER_BROKEN_FAMILY[name], SEEDS, MAX_STEPS,
                              crash_weight=1 if name in CLEANER_CRASH_ONLY else 0)
        if trace is None:
            print(f"{name}: not pinned in {len(tried)} seeds")
            continue
        path = write_trace(trace, out / f"{broken.bug}-{name}.jsonl")
        print(f"{name}: seed {trace.header.seed} ({len(tried)} seeds tried), "
              f"{len(trace.steps)} steps, {time.monotonic() - started:.1f} s -> {path}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), only=tuple(sys.argv[2:]))
