"""`kafkalog vectors export|run|catalogue`: the conformance vector corpus (specs/vectors.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kafkalog.model.versions import DEFAULT_PROFILE, PROFILES


@click.group()
def vectors() -> None:
    """Export the conformance vectors, or run them against an adapter."""


@vectors.command()
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False))
@click.option("--no-verify", is_flag=True,
              help="Skip checking each vector against the built-in implementation.")
def export(directory: Path, no_verify: bool) -> None:
    """Write manifest.json, vectors.schema.json and vectors/*.jsonl into DIRECTORY."""
    from collections import Counter

    from kafkalog.conformance.vectors.corpus import export as export_corpus

    manifest = export_corpus(directory, verify=not no_verify)
    kinds = Counter(entry["kind"] for entry in manifest["vectors"])
    rules = {rule for entry in manifest["vectors"] for rule in entry["rules"]
             if rule.startswith("KL-")}
    click.echo(f"{len(manifest['vectors'])} vectors ({kinds['rule']} rule, {kinds['profile']} "
               f"profile, {kinds['broken']} broken) covering {len(rules)} spec rules "
               f"-> {directory}")


@vectors.command()
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--adapter", default=None, metavar="CMD",
              help="Adapter command (specs/adapter-protocol.md); default: the built-in log; "
                   "'model' runs the model against itself.")
@click.option("--kafka-version", type=click.Choice(PROFILES), default=DEFAULT_PROFILE,
              show_default=True,
              help="Run the vectors of this Kafka version profile.")
def run(directory: Path, adapter: str | None, kafka_version: str) -> None:
    """Replay every vector; exit 0 when none failed (skipped ones name the missing feature)."""
    from kafkalog.conformance.vectors.run import run as run_corpus

    report = run_corpus(directory, adapter, kafka_version)
    for result in report.results:
        if result.outcome != "passed":
            click.echo(f"{result.outcome:8} {result.id}: {result.detail}")
    click.echo(f"{report.count('passed')} passed, {report.count('failed')} failed, "
               f"{report.count('skipped')} skipped (profile {kafka_version})")
    sys.exit(0 if report.ok else 1)


@vectors.command()
@click.option("--seeds", type=click.IntRange(min=1), default=30, show_default=True)
@click.option("--steps", type=click.IntRange(min=1), default=40, show_default=True)
def catalogue(seeds: int, steps: int) -> None:
    """Regenerate conformance/vectors/catalogue.json (search + hand scenarios); review the diff."""
    from kafkalog.conformance.vectors.catalogue import build, save

    path = save(build(seeds, steps))
    click.echo(f"wrote {path}")
