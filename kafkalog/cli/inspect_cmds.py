"""`kafkalog dump` and `kafkalog verify`: read-only views of Kafka log files (kafka-dump-log.sh).

`dump PATH` prints what `kafkalog.impl.verify.dump.dump_path` reads of a `.log`, an index, a
checkpoint, a snapshot, a partition directory or a whole log directory, followed by the
consistency notes the verifier finds. `verify LOGDIR` prints every finding and exits 0 when there
is no problem, 1 when there is one. Both take `--json`.

Nothing here writes. A missing path or unreadable input is a typed `KafkalogError`, which `main`
prints as one line with exit status 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.verify.dump import IndexRows, dump_path
from kafkalog.impl.verify.dump_text import render_findings, render_text
from kafkalog.impl.verify.target import verify_path
from kafkalog.impl.verify.verifier import Severity


def echo_json(dumped: dict[str, Any]) -> None:
    """Print a dump as one JSON document, streaming index rows one line each."""
    rows = dumped.get("entries")
    if not isinstance(rows, IndexRows):
        click.echo(json.dumps(dumped, indent=2))
        return
    head = json.dumps({k: v for k, v in dumped.items() if k != "entries"}, indent=2)
    click.echo(head[: head.rindex("}")].rstrip() + ',\n  "entries": [')
    out = click.get_text_stream("stdout")
    batch: list[str] = []  # rows are written a thousand at a time: fast, and bounded
    separator = ""
    for row in rows:
        batch.append(json.dumps(row))
        if len(batch) == 1000:
            out.write(separator + "    " + ",\n    ".join(batch))
            separator, batch = ",\n", []
    if batch:
        out.write(separator + "    " + ",\n    ".join(batch))
        separator = ",\n"
    out.write("\n" if separator else "")
    click.echo("  ]\n}")


# --- commands ---


@click.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--deep", is_flag=True, help="Decode every record (decompressing as needed).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def dump(path: Path, deep: bool, as_json: bool) -> None:
    """Print a .log, .index, .timeindex, .txnindex, .snapshot, checkpoint file, partition dir
    or log dir.

    Exits 1 when the findings include a problem (as verify does), else 0.
    """
    dumped = dump_path(FileSystem(), path, deep)
    if as_json:
        echo_json(dumped)
    else:
        for line in render_text(dumped):
            click.echo(line)
    problem = any(f["severity"] == Severity.PROBLEM.value for f in dumped["findings"])
    sys.exit(1 if problem else 0)


@click.command()
@click.argument("logdir", type=click.Path(path_type=Path))
@click.option("--deep", is_flag=True, help="Also decode every record of every batch.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON document.")
def verify(logdir: Path, deep: bool, as_json: bool) -> None:
    """Check a log directory (or one partition directory) read-only; exit 0 when clean, 1 when
    there is a problem, 2 when it cannot be read or is empty."""
    report = verify_path(FileSystem(), logdir, deep)
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        for line in render_findings([f.to_json() for f in report.all_findings()]):
            click.echo(line)
        segments = sum(len(p.segments) for p in report.partitions)
        notes = len(report.all_findings()) - len(report.problems)
        click.echo(f"{report.path}: {len(report.partitions)} partitions, {segments} segments, "
                   f"{len(report.problems)} problems, {notes} notes")
    # `main` runs click with standalone_mode=False, which drops a returned exit code; exit here.
    sys.exit(1 if report.problems else 0)


__all__ = ["dump", "verify"]
