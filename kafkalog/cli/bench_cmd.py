"""`kafkalog bench [--quick] [--runs N] [--json FILE]`: measure the log against raw-I/O baselines.

Runs every figure of the suite (`kafkalog.benchmarks.suite`), each beside its baseline measured
in the same run on the same files, and prints one table: absolute number, baseline, ratio, goal
and whether it is met. `--quick` uses small data (a smoke run, well under a minute); the full run
writes about 2 GiB of scratch data under the system temp directory and removes it afterwards.
`--runs N` runs the suite N times back to back, prints the last table and each goal figure
across the runs, and records every run in the JSON (`consecutive_runs`).
"""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from kafkalog.benchmarks.core import Figure
from kafkalog.benchmarks.suite import (
    GROUPS,
    consecutive_document,
    consecutive_lines,
    results_document,
    run_suite,
    write_json,
)


def _number(value: float | None) -> str:
    if value is None:
        return "—"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:,.3g}" if abs(value) < 10 else f"{value:,.1f}"


def _met(met: bool | None) -> str:
    return {None: "—", True: "[green]yes[/]", False: "[red]no[/]"}[met]


QUICK_NOTE = ("--quick is a smoke run on small data: it checks that every figure is produced; "
              "its numbers are not timings and no goal is judged")
_WIDE = 140  # columns the table needs; narrower output gets one block per figure


def results_table(figures: list[Figure], title: str, quick: bool = False) -> Table:
    """The rich table of `figures` (the README's table has the same columns)."""
    table = Table(title=title, show_lines=False)
    for column in ("figure", "workload", "value", "baseline", "ratio", "goal", "met"):
        table.add_column(column, overflow="fold")
    for f in figures:
        baseline = "—" if f.baseline is None else f"{_number(f.baseline)} ({f.baseline_name})"
        table.add_row(f.figure, f.workload, f"{_number(f.value)} {f.unit}", baseline,
                      _number(f.ratio), f.goal or "report", "n/a (quick)" if quick else _met(f.met))
    return table


def results_lines(figures: list[Figure], quick: bool = False) -> list[str]:
    """The same results as plain lines, one block per figure (logs, pipes, narrow terminals)."""
    lines = []
    for f in figures:
        baseline = "—" if f.baseline is None else f"{_number(f.baseline)} ({f.baseline_name})"
        met = "n/a (quick)" if quick else {None: "—", True: "yes", False: "no"}[f.met]
        lines += [f"{f.figure}: {_number(f.value)} {f.unit}",
                  f"  workload: {f.workload}",
                  f"  baseline: {baseline}; ratio {_number(f.ratio)}",
                  f"  goal: {f.goal or 'report'}; met: {met}"]
    return lines


@click.command()
@click.option("--quick", is_flag=True, help="Small data: every figure in well under a minute.")
@click.option("--runs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Run the whole suite N times back to back; report every goal figure "
                   "across the runs (a goal counts as met when every run meets it).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, writable=True,
                                                     path_type=Path),
              help="Also write the results (with the machine and every run) to FILE.")
def bench(quick: bool, runs: int, json_path: Path | None) -> None:
    """Measure the log against raw-I/O baselines."""
    scale = "quick" if quick else "full"
    documents = [_one_run(scale, run, runs) for run in range(1, runs + 1)]
    document = documents[-1] if runs == 1 else consecutive_document(documents)
    figures = [Figure(**f) for f in document["figures"]]
    machine = document["machine"]
    title = (f"kafkalog bench ({scale}) — {machine['cpu']}, {machine['cores']} cores, "
             f"Python {machine['python']}, {machine['date_utc']} UTC")
    out = Console()
    if out.is_terminal and out.width >= _WIDE:
        out.print(results_table(figures, title, quick))
    else:
        click.echo(title)
        for line in results_lines(figures, quick):
            click.echo(line)
    click.echo(f"batch scans (recovery, checked reads, appends, lookups): {machine['batch_scan']}")
    if runs > 1:
        for line in consecutive_lines(document):
            click.echo(line)
    if quick:
        click.echo(QUICK_NOTE)
    if json_path is not None:
        write_json(json_path, document)
        Console(stderr=True).print(f"wrote {json_path}")


def _one_run(scale: str, run: int, runs: int) -> dict:
    """One whole suite under a progress bar; its results document."""
    label = "bench" if runs == 1 else f"bench run {run}/{runs}"
    console = Console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as progress:
        task = progress.add_task(label, total=len(GROUPS))
        started: list[str] = []

        def step(name: str) -> None:
            if started:
                progress.advance(task)
            started.append(name)
            progress.update(task, description=f"{label}: {name}")

        figures = run_suite(scale, step)
        progress.advance(task)
    return results_document(scale, figures)
