"""`run_suite`: every figure of `kafkalog bench` in one run, and the JSON document of them.

The suite runs the groups in a fixed order on scratch data under the system temp directory and
reports progress through an optional callback (the CLI draws a rich progress bar with it).
`REQUIRED_KEYS` lists every figure the issue asks for; the smoke test checks the suite produces
each of them, never that a timing meets its goal.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafkalog.impl.records.batch_scan import ACTIVE as BATCH_SCAN

from . import append, clean, kafka_peer, lockstep_bench, peer, read, reopen
from .core import SCALES, Figure, Scale, scratch_dir

REQUIRED_KEYS: tuple[str, ...] = (
    "append.leader.1mib", "append.leader.16kib", "append.leader.rec100x1",
    "append.leader.rec100x10", "append.leader.rec100x100", "append.leader.1mib_flush",
    "append.follower.1mib", "append.follower.16kib", "append.follower.rec100x1",
    "append.follower.rec100x10", "append.follower.rec100x100",
    "read.sequential", "lookup.translate_offset", "recovery.unclean",
    "open.clean.small", "open.clean.large", "memory.open_read", "clean.pass",
    "conformance.lockstep", "conformance.end_to_end", "conformance.model", "conformance.impl",
    # The same workloads through independent codecs (kafkalog's number alone, marked
    # "skipped", when a peer is not installed)
    "peer.build.kafka_python", "peer.read.kafka_python", "peer.append.kafka_python",
    "peer.build.aiokafka", "peer.read.aiokafka", "peer.append.aiokafka",
    # Kafka's own UnifiedLog in a child JVM on the goal workloads (kafkalog's number alone,
    # marked "skipped", without java/mvn or an adapter build)
    *kafka_peer.KEYS,
)

Progress = Callable[[str], None]
GROUPS: tuple[str, ...] = ("append (leader)", "append (follower)", "append + flush",
                           "sequential read", "offset lookup", "recovery", "clean open + memory",
                           "cleaning", "conformance", "peer codecs", "Kafka peer")


def _clean_open_and_memory(scale: Scale, root: Path) -> list[Figure]:
    figures, directory, offsets, segment_bytes = reopen.clean_open_figures(scale, root)
    figures[0].key, figures[-1].key = "open.clean.small", "open.clean.large"
    return [*figures, reopen.memory_figure(directory, offsets, segment_bytes)]


def _group(name: str, scale: Scale, root: Path) -> list[Figure]:
    if name == "append (leader)":
        return append.leader_figures(scale, root)
    if name == "append (follower)":
        return append.follower_figures(scale, root)
    if name == "append + flush":
        return [append.flush_figure(scale, root)]
    if name == "sequential read":
        return [read.sequential_read_figure(scale, root)]
    if name == "offset lookup":
        return [read.offset_lookup_figure(scale, root)]
    if name == "recovery":
        return [reopen.recovery_figure(scale, root)]
    if name == "clean open + memory":
        return _clean_open_and_memory(scale, root)
    if name == "cleaning":
        return [clean.cleaning_figure(scale, root)]
    if name == "peer codecs":
        return peer.peer_figures(scale, root)
    if name == "Kafka peer":
        return kafka_peer.kafka_figures(scale, root)
    return lockstep_bench.conformance_figures(scale)


def run_suite(scale_name: str, progress: Progress | None = None) -> list[Figure]:
    """Every figure at `scale_name` ("quick" or "full"), in GROUPS order."""
    scale = SCALES[scale_name]
    figures: list[Figure] = []
    for name in GROUPS:
        if progress is not None:
            progress(name)
        with scratch_dir(name.split()[0]) as root:
            figures.extend(_group(name, scale, root))
    return figures


def machine_info() -> dict[str, Any]:
    """What ran the benchmark: CPU, cores, memory, OS, Python, date (UTC)."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {
        "cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(memory_gib, 1),
        "os": platform.platform(), "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "date_utc": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M"),
        "load_average": list(os.getloadavg()),
        "batch_scan": BATCH_SCAN,
    }


def results_document(scale_name: str, figures: list[Figure]) -> dict[str, Any]:
    """The JSON document `kafkalog bench --json` writes."""
    return {"format": "kafkalog-bench/1", "scale": scale_name, "machine": machine_info(),
            "figures": [f.to_dict() for f in figures]}


# The goal figures a run of several consecutive suites summarises (a goal counts as met when
# every consecutive run meets it), in docs/benchmarks.md's order.
GOAL_KEYS: tuple[str, ...] = (
    "append.leader.1mib", "append.follower.1mib", "read.sequential", "lookup.translate_offset",
    "recovery.unclean", "conformance.lockstep", "open.clean.large", "memory.open_read",
)


def run_record(document: dict[str, Any]) -> dict[str, Any]:
    """One run's goal figures as `consecutive_runs` keeps them: value, ratio, CPU ratio, the
    figure's own verdict (`met`, wall clock) and the verdict on the CPU view (`met_cpu`)."""
    figures = {f["key"]: f for f in document["figures"]}
    return {
        "date_utc": document["machine"]["date_utc"],
        "load_average": document["machine"]["load_average"],
        "figures": {key: _goal_record(figures[key]) for key in GOAL_KEYS if key in figures},
    }


def _goal_record(figure: dict[str, Any]) -> dict[str, Any]:
    # Ratio goals are judged on the CPU view: on a shared machine a descheduled process
    # loses wall time that says nothing about the code. Other goals keep the figure's verdict.
    cpu_ratio, goal_ratio = figure["extra"].get("cpu_ratio"), figure["extra"].get("goal_ratio")
    met_cpu = figure["met"] if cpu_ratio is None or goal_ratio is None else cpu_ratio >= goal_ratio
    return {"value": figure["value"], "ratio": figure["ratio"], "cpu_ratio": cpu_ratio,
            "met": figure["met"], "met_cpu": met_cpu}


def consecutive_document(documents: list[dict[str, Any]]) -> dict[str, Any]:
    """The last run's document, with every run's goal figures under `consecutive_runs` and,
    per goal figure, whether its goal was met in every run (ratio goals on the CPU view)."""
    runs = [run_record(d) for d in documents]
    keys = [k for k in GOAL_KEYS if all(k in r["figures"] for r in runs)]
    return {**documents[-1], "consecutive_runs": {
        "note": f"{len(runs)} consecutive runs of `kafkalog bench --runs {len(runs)}`; the "
                "figures above are the last of them.",
        "runs": runs,
        "met_in_every_run": {k: all(r["figures"][k]["met_cpu"] is not False for r in runs)
                             for k in keys},
    }}


def consecutive_lines(document: dict[str, Any]) -> list[str]:
    """One line per goal figure across the runs: ratio / CPU ratio (or value) of each run."""
    runs = document["consecutive_runs"]["runs"]
    names = {f["key"]: (f["figure"], f["goal"]) for f in document["figures"]}
    lines = [f"goal figures in {len(runs)} consecutive runs (ratio / CPU view, or value; "
             "ratio goals judged on the CPU view):"]
    for key, met in document["consecutive_runs"]["met_in_every_run"].items():
        cells = []
        for run in runs:
            f = run["figures"][key]
            cells.append(f"{_cell(f['value'])}" if f["ratio"] is None else
                         f"{f['ratio']:.3f} / {_cell(f['cpu_ratio'])}")
        figure, goal = names.get(key, (key, None))
        lines.append(f"  {figure} [{key}] (goal {goal or 'report'}): {'; '.join(cells)}"
                     f" -> {'met in every run' if met else 'NOT met in every run'}")
    return lines


def write_json(path: Path, document: dict[str, Any]) -> None:
    path.write_text(json.dumps(document, indent=2) + "\n")


def _cell(value: float | None) -> str:
    if value is None:
        return "—"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}" if abs(value) < 10 else f"{value:,.1f}"


def _cpu_view(extra: dict[str, Any]) -> str:
    """The figure from CPU time: a ratio, seconds, or steps per second."""
    if "cpu_ratio" in extra:
        return f"{_cell(extra['cpu_ratio'])}x"
    if "cpu_s" in extra:
        return f"{extra['cpu_s']:.3f} s"
    if "cpu_steps_per_s" in extra:
        return f"{extra['cpu_steps_per_s']:,} steps/s"
    return "—"


def markdown_table(document: dict[str, Any]) -> str:
    """docs/benchmarks.md's results table (markdown) from a `results_document`."""
    m = document["machine"]
    lines = [
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB RAM, {m['os']}; "
        f"Python {m['python']} ({m['implementation']}); {m['date_utc']} UTC; scale "
        f"`{document['scale']}`; load average at the end {m['load_average'][0]:.1f}; batch "
        f"scans: {m.get('batch_scan', 'pure Python')}.",
        "",
        "| figure | workload | value | baseline (same run) | ratio | CPU view | goal | met? |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for f in document["figures"]:
        base = "—" if f["baseline"] is None else f"{_cell(f['baseline'])} ({f['baseline_name']})"
        value = f"{_cell(f['value'])} {f['unit']}"
        if "records_per_s" in f["extra"]:
            value += f" ({f['extra']['records_per_s']:,} records/s)"
        met = {None: "—", True: "yes", False: "**no**"}[f["met"]]
        lines.append(
            f"| {f['figure']} | {f['workload']} | {value} | {base} | "
            f"{_cell(f['ratio'])} | {_cpu_view(f['extra'])} | {f['goal'] or 'report'} | {met} |")
    return "\n".join(lines) + "\n"
