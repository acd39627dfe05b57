"""`kafkalog fuzz`: the long form of the hostile-input suite.

Runs N cases of damaged log files, adapter sessions and traces against the reliability
invariants (`kafkalog.conformance.fuzz.harness`), under a memory cap, printing progress to
stderr; exits 1 when any case was ungraceful, printing each with its input so it reproduces.
"""

from __future__ import annotations

import json
import signal
import sys
import time

import click

from kafkalog.cli.main import unwind_on_sigterm


@click.command()
@click.option("--cases", default=1000, show_default=True, help="How many cases to run.")
@click.option("--seed", default=0, show_default=True,
              help="Hypothesis seed (same seed, same cases).")
@click.option("--kinds", default="files,adapter,trace", show_default=True,
              help="Comma-separated case kinds: files, adapter, trace.")
@click.option("--memory-limit-mib", default=512, show_default=True,
              help="RLIMIT_DATA for this process; a case beyond it is ungraceful (0: no cap).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON document.")
def fuzz(cases: int, seed: int, kinds: str, memory_limit_mib: int, as_json: bool) -> None:
    """Run the hostile-input fuzz suite; exit 1 if any case broke an invariant."""
    from kafkalog.conformance.fuzz import campaign

    chosen = tuple(k.strip() for k in kinds.split(",") if k.strip())
    unknown = set(chosen) - set(campaign.KINDS)
    if unknown or not chosen:
        raise click.BadParameter(f"unknown kinds {sorted(unknown)}; choose from "
                                 f"{', '.join(campaign.KINDS)}", param_hint="--kinds")
    if memory_limit_mib > 0:
        campaign.limit_memory(memory_limit_mib)
    started = time.monotonic()
    step = max(1, cases // 100)

    def progress(done: int, summary: campaign.Summary) -> None:
        if done % step == 0 or done == cases:
            rate = done / max(time.monotonic() - started, 1e-9)
            click.echo(f"fuzz: {done}/{cases} cases, {summary.ungraceful_count} ungraceful, "
                       f"{rate:.1f} cases/s", err=True)

    summary = campaign.Summary()
    interrupted = False
    # SIGTERM (and SIGINT, even when a shell started this in the background with SIGINT
    # ignored) stops the run and still prints the counts of the cases run so far. `main` has set
    # SIGTERM up already; a caller that runs the command without it (click's test runner) has not.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    unwind_on_sigterm()
    try:
        campaign.run(cases, seed=seed, kinds=chosen, progress=progress, summary=summary)
    except KeyboardInterrupt:  # Ctrl-C (SIGINT): report the cases run so far
        interrupted = True
    elapsed = time.monotonic() - started
    counts = {f"{kind}/{verdict}": n for (kind, verdict), n in sorted(summary.counts.items())}
    if as_json:
        click.echo(json.dumps({"cases": summary.cases, "seed": seed, "seconds": round(elapsed, 1),
                               "interrupted": interrupted,
                               "ungraceful": summary.ungraceful_count, "counts": counts,
                               "findings": [{"kind": k, "case": c, "details": d}
                                            for k, c, d in summary.ungraceful]}, indent=2))
    else:
        for kind, case, details in summary.ungraceful:
            click.echo(f"UNGRACEFUL {kind}: {'; '.join(details)[:500]}\n  case: {case[:1000]}")
        stopped = " (interrupted)" if interrupted else ""
        click.echo(f"{summary.cases} cases in {elapsed:.0f} s (seed {seed}){stopped}: "
                   + ", ".join(f"{k} {n}" for k, n in counts.items())
                   + f"; {summary.ungraceful_count} ungraceful")
    sys.exit(1 if summary.ungraceful_count else 0)
