"""The Kafka-peer rows alone, several runs back to back: their JSON and docs/benchmarks.md table.

    python -m kafkalog.benchmarks.kafka_runs --runs 3 --json benchmarks/kafka-peer-results.json
    python -m kafkalog.benchmarks.table      # then regenerates the doc's tables, this one too

`kafkalog bench` runs the same rows once as part of the suite; this module runs only them, N
times back to back, each in fresh scratch data and a fresh JVM, and keeps every run (with the
load average at its end), because on a shared machine one run's ratio says little alone.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from pathlib import Path
from typing import Any

from .core import SCALES, scratch_dir
from .kafka_peer import kafka_figures
from .suite import machine_info

FORMAT = "kafkalog-kafka-peer/1"


def run_once(scale_name: str, version: str | None) -> dict[str, Any]:
    """One run of every Kafka-peer row: its figures, date and load average."""
    with scratch_dir("kafka") as root:
        figures = kafka_figures(SCALES[scale_name], root, version)
    return {"date_utc": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M"),
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "figures": [f.to_dict() for f in figures]}


def runs_document(scale_name: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"format": FORMAT, "scale": scale_name, "machine": machine_info(), "runs": runs}


def _ratio(figure: dict[str, Any]) -> str:
    if figure["ratio"] is None:
        return "skipped"
    return f"{figure['ratio']:.3g} / {figure['extra']['cpu_ratio']:.3g}"


def _number(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _warmup(figure: dict[str, Any]) -> str:
    """Each side's warm-up: runs, seconds, and whether its timings settled."""
    cells = []
    for side, name in (("kafka", "Kafka"), ("kafkalog", "kafkalog")):
        warm = figure["extra"]["warmup"].get(side)
        if warm is not None:
            settled = "" if warm["stable"] else ", not settled"
            cells.append(f"{name}: {len(warm['runs_s'])} runs, {warm['total_s']:.2f} s{settled}")
    return "; ".join(cells)


def markdown_table(document: dict[str, Any]) -> str:
    """The doc's table: each row's numbers in the last run, and its ratio in every run."""
    m, runs = document["machine"], document["runs"]
    loads = ", ".join(f"{r['load_average'][0]:.1f}" for r in runs)
    header = " | ".join(f"run {i}" for i in range(1, len(runs) + 1))
    lines = [
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB RAM; Python "
        f"{m['python']}; {runs[-1]['date_utc']} UTC; scale `{document['scale']}`; "
        f"{len(runs)} consecutive runs, load average at the end of each: {loads}.",
        "",
        f"| workload | kafkalog (last run) | Kafka (last run) | {header} | warm-up, excluded "
        "(last run) |",
        "|---|---|---|" + "---|" * len(runs) + "---|",
    ]
    for i, last in enumerate(runs[-1]["figures"]):
        cells = " | ".join(_ratio(r["figures"][i]) for r in runs)
        kafka = "—" if last["baseline"] is None else f"{_number(last['baseline'])} {last['unit']}"
        lines.append(f"| {last['workload']} | {_number(last['value'])} {last['unit']} | {kafka} "
                     f"| {cells} | {_warmup(last)} |")
    lines += ["", "Each run's cell: throughput ratio kafkalog / Kafka, wall clock / CPU time "
              "(above 1: kafkalog is faster)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkalog.benchmarks.kafka_runs")
    parser.add_argument("--quick", action="store_true", help="small data (a smoke run)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--kafka", default=None, help="Kafka line or release (default 4.4)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    scale = "quick" if args.quick else "full"
    runs = []
    for number in range(1, args.runs + 1):
        runs.append(run_once(scale, args.kafka))
        ratios = "; ".join(f"{f['key']} {_ratio(f)}" for f in runs[-1]["figures"])
        print(f"run {number}: load {runs[-1]['load_average']}: {ratios}", flush=True)
    document = runs_document(scale, runs)
    if args.json is not None:
        args.json.write_text(json.dumps(document, indent=2) + "\n")
    print(markdown_table(document))
    return 0


if __name__ == "__main__":
    sys.exit(main())
