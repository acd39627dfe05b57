"""A campaign's report: one self-contained HTML file with inline SVG charts, bucket trace files,
`summary.json`, and the same summary as plain-text tables for the terminal (rich).

The HTML needs no network and no JavaScript: every chart is an inline `<svg>`, every style is in
one `<style>` block, so it opens from a CI artifact or an e-mail attachment. Everything here is
a pure function of a `CampaignSummary` (aggregate.py), so `kafkalog report` rebuilds the
same files from the Parquet rows alone.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from kafkalog.conformance.campaign.aggregate import CampaignSummary, natural_key, natural_sorted
from kafkalog.conformance.campaign.counterexample import counterexample, render_lines
from kafkalog.conformance.campaign.counterexample import render_html as render_counterexample
from kafkalog.conformance.campaign.kafka_summary import summary_lines
from kafkalog.conformance.check.coverage import UNREACHABLE_BY_GENERATION
from kafkalog.conformance.crash.kafka_gaps import CAMPAIGN_UNPLANTED
from rich.console import Console
from rich.table import Table
from rich.text import Text

_WIDTH = 760
_LABEL_W = 300
_ROW_H = 18
_TERMINAL_TRACES = 3  # buckets whose counterexample the terminal summary prints
_COLOURS = {"conformed": "#2e7d32", "diverged": "#c62828", "adapter_error": "#ef6c00"}
CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:820px;color:#222}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:13px}td,th{padding:2px 10px;text-align:left}
th{background:#f3f3f3}td.n{text-align:right;font-variant-numeric:tabular-nums}
code{font-size:12px}svg text{font:11px system-ui,sans-serif}.ok{color:#2e7d32}.bad{color:#c62828}
tr.div td{background:#fdecea}table.side{width:100%;table-layout:fixed}
table.side td{vertical-align:top}
pre{font-size:12px;margin:0;white-space:pre-wrap;word-break:break-all}svg .grid{stroke:#eee}
"""


def campaign_dir(root: Path, campaign_id: str) -> Path:
    """Where a campaign's report, summary and traces go: `<out>/<campaign_id>/`."""
    return root / campaign_id


def write_report(summary: CampaignSummary, root: Path) -> dict[str, Path]:
    """Write report.html, summary.json and one trace per bucket; returns their paths by name.

    Bucket traces are `traces/NN-<signature>-seed<S>.jsonl`, the shortest trace of each bucket,
    ready for `kafkalog replay` and for copying into tests/regressions/.
    """
    target = campaign_dir(root, summary.campaign_id)
    (target / "traces").mkdir(parents=True, exist_ok=True)
    paths = {"report": target / "report.html", "summary": target / "summary.json"}
    for index, bucket in enumerate(summary.buckets, start=1):
        if bucket.trace_jsonl:
            name = f"{index:02d}-{_slug(bucket.signature)}-seed{bucket.shortest_seed}.jsonl"
            paths[f"trace:{bucket.signature}"] = target / "traces" / name
            paths[f"trace:{bucket.signature}"].write_text(bucket.trace_jsonl)
    paths["summary"].write_text(summary.to_json() + "\n")
    paths["report"].write_text(render_html(summary, paths, target))
    return paths


def render_html(summary: CampaignSummary, paths: dict[str, Path], base: Path) -> str:
    """The whole report page."""
    title = f"kafkalog campaign {summary.campaign_id}"
    sections = [
        f"<h1>{_e(title)}</h1>",
        _overview(summary),
        "<h2>Failure buckets</h2>",
        _buckets(summary, paths, base),
        "<h2>Coverage per spec rule (runs exercising it)</h2>",
        hbar_chart(by_count_then_name(summary.rules), summary.runs),
        _never_html(summary),
        "<h2>Coverage per action (executions)</h2>",
        hbar_chart([(name, total) for name, total, _ in summary.actions], None),
        "<h2>Crash points explored per fault model</h2>",
        hbar_chart([(fault, total) for fault, total, _ in summary.crashes], None)
        if summary.crashes else "<p>No crash steps ran (<code>--crash-weight 0</code>).</p>",
        _crash_speed_html(summary),
        "<h2>Runs per second over the campaign</h2>",
        line_chart(summary.throughput, "seconds since start", "runs/s"),
        "<h2>Run-time histogram</h2>",
        column_chart(summary.runtime.histogram),
        _runtime_table(summary),
    ]
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    body = "\n".join(sections) + f"<p><small>Generated {generated} from Parquet.</small></p>"
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
        f"<style>{CSS}</style></head><body>\n{body}\n</body></html>\n"
    )


def by_count_then_name(items: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
    """Most first; ties in natural order (KL-INV-2 before KL-INV-10)."""
    return sorted(items, key=lambda item: (-item[1], natural_key(item[0])))


def hbar_chart(items: Sequence[tuple[str, int]], whole: int | None) -> str:
    """Horizontal bars, one per (label, value); `whole` adds a percentage of it to each label."""
    if not items:
        return "<p><em>none</em></p>"
    top = max(value for _, value in items) or 1
    # Labels are shown whole: the label column grows with the longest (~6.2 px a character).
    label_w = max(_LABEL_W, int(6.2 * max(len(label) for label, _ in items)) + 12)
    bar_room = _WIDTH - _LABEL_W - 90
    rows = []
    for index, (label, value) in enumerate(items):
        y = index * _ROW_H
        width = max(1.0, bar_room * value / top)
        share = f" ({100 * value / whole:.0f}%)" if whole else ""
        rows.append(
            f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end">{_e(label)}</text>'
            f'<rect x="{label_w}" y="{y + 3}" width="{width:.1f}" height="{_ROW_H - 5}" '
            f'fill="#1565c0"><title>{_e(label)}: {value}</title></rect>'
            f'<text x="{label_w + width + 4:.1f}" y="{y + 13}">{value}{share}</text>'
        )
    return _svg(len(items) * _ROW_H + 4, "".join(rows), label_w + bar_room + 90)


def line_chart(points: Sequence[tuple[float, float]], x_label: str, y_label: str) -> str:
    """A polyline of (x, y) points with labelled axes."""
    if not points:
        return "<p><em>no data</em></p>"
    height, left, bottom = 230, 50, 40
    x_max = max(x for x, _ in points) or 1.0
    y_max = max(y for _, y in points) or 1.0
    plot_w, plot_h = _WIDTH - left - 20, height - bottom - 10

    def xy(x: float, y: float) -> str:
        return f"{left + plot_w * x / x_max:.1f},{10 + plot_h * (1 - y / y_max):.1f}"

    line = " ".join(xy(x, y) for x, y in points)
    dots = "".join(
        f'<circle cx="{xy(x, y).split(",")[0]}" cy="{xy(x, y).split(",")[1]}" r="2.5" '
        f'fill="#1565c0"><title>{x:.0f} s: {y:.2f} {_e(y_label)}</title></circle>'
        for x, y in points
    )
    x_ticks = [(t, f"{t:g}") for t in ticks(x_max)]
    y_ticks = [(t, f"{t:g}") for t in ticks(y_max)]
    return _svg(
        height,
        _axes(left, 10, plot_w, plot_h, (x_max, x_ticks), (y_max, y_ticks), x_label, y_label)
        + f'<polyline points="{line}" fill="none" stroke="#1565c0" stroke-width="1.5"/>{dots}',
    )


def column_chart(bins: Sequence[tuple[float, float, int]]) -> str:
    """Columns for a histogram of (start, end, count) bins; x in seconds."""
    if not bins or not any(count for _, _, count in bins):
        return "<p><em>no data</em></p>"
    height, left, bottom = 230, 50, 40
    plot_w, plot_h = _WIDTH - left - 20, height - bottom - 10
    top = max(count for _, _, count in bins)
    step = plot_w / len(bins)
    columns = []
    for index, (start, end, count) in enumerate(bins):
        bar = plot_h * count / top
        columns.append(
            f'<rect x="{left + index * step + 1:.1f}" y="{10 + plot_h - bar:.1f}" '
            f'width="{step - 2:.1f}" height="{bar:.1f}" fill="#6a1b9a">'
            f"<title>{_seconds(start)}–{_seconds(end)}: {count} runs</title></rect>"
        )
    x_max = bins[-1][1] or 1.0
    x_ticks = [(t, _seconds(t) if t else "0") for t in ticks(x_max)]
    y_ticks = [(t, f"{t:g}") for t in ticks(top)]
    axes = _axes(left, 10, plot_w, plot_h, (x_max, x_ticks), (top, y_ticks), "run time", "runs")
    return _svg(height, axes + "".join(columns))


def render_terminal(
    summary: CampaignSummary, console: Console, paths: dict[str, Path] | None = None
) -> None:
    """The summary as plain-text tables: totals, outcomes, buckets, coverage, run times."""
    paths = paths or {}
    console.print(_totals_table(summary))
    if summary.buckets:
        console.print(_buckets_table(summary))
        traces = {path.parent for key, path in paths.items() if key.startswith("trace:")}
        for folder in sorted(traces):
            console.print(Text(f"shortest trace of each bucket: {folder}/ (kafkalog replay FILE)"))
        for index, bucket in enumerate(summary.buckets[:_TERMINAL_TRACES], start=1):
            if bucket.trace_jsonl:
                console.print(Text(f"counterexample {index}: {bucket.signature}"), soft_wrap=True)
                for line in render_lines(counterexample(bucket.trace_jsonl)):
                    console.print(Text(line), soft_wrap=True)
    coverage = Table(title="coverage per action", title_justify="left")
    for name in ("action", "executions", "runs"):
        coverage.add_column(name, justify="left" if name == "action" else "right")
    for action, total, runs in summary.actions:
        coverage.add_row(Text(action), str(total), str(runs))
    console.print(coverage)
    crashes = Table(title="crash points explored per fault model", title_justify="left")
    for name in ("fault model", "crash points", "runs"):
        crashes.add_column(name, justify="left" if name == "fault model" else "right")
    for fault, total, runs in summary.crashes:
        crashes.add_row(Text(fault), str(total), str(runs))
    crashes.add_row(Text("all"), str(summary.crash_points), "")
    crashes.add_row(Text("distinct images"), str(summary.crash_images), "")
    crashes.add_row(Text("idempotence checks"), str(summary.crash_idempotence), "")
    console.print(crashes)
    if summary.crash_points:
        of_crash, of_runs = summary.crash_rates()
        console.print(Text(f"crash points per minute per core: {of_crash:,.0f} of crash-step CPU "
                           f"time ({summary.crash_cpu_s:.1f} s), {of_runs:,.0f} of run time"))
    rules = ", ".join(natural_sorted(rule for rule, _ in summary.rules)) or "none"
    console.print(Text(f"spec rules exercised ({len(summary.rules)}): {rules}"), soft_wrap=True)
    if summary.rules_known:
        _print_never_exercised(console, summary)
    if summary.rule_pairs_possible:
        share = 100.0 * summary.rule_pairs / summary.rule_pairs_possible
        console.print(Text(f"rule pairs met in one run: {summary.rule_pairs} of "
                           f"{summary.rule_pairs_possible} ({share:.1f}%)"))
    for profile, covered, possible in summary.rule_pairs_by_profile:
        share = 100.0 * covered / possible if possible else 0.0
        console.print(Text(f"  profile {profile} ({summary.profiles.get(profile, 0)} runs): "
                           f"{covered} of {possible} ({share:.1f}%)"))
    if summary.crash_modes:
        modes = ", ".join(f"{mode} {runs}" for mode, runs in sorted(summary.crash_modes.items()))
        console.print(Text(f"runs per crash mode: {modes}; crash points inside loads: "
                           f"{summary.crash_in_load:,}; inside cleaning passes: "
                           f"{summary.crash_in_clean:,}"))
    if summary.crash_modes.get("kafka"):  # why those runs plant fewer leftovers than `check`
        console.print(Text(f"kafka-mode runs plant no {' or '.join(sorted(CAMPAIGN_UNPLANTED))} "
                           "leftover: a power loss turns their unsynced clean-up into a named "
                           "gap only (docs/durability.md)"))
    for line in summary_lines(summary):
        console.print(Text(line), soft_wrap=True)


def _print_never_exercised(console: Console, summary: CampaignSummary) -> None:
    """The rules no run exercised, each with the reason when no generated input can reach it."""
    line = (f"spec rules never exercised ({len(summary.rules_never)} of "
            f"{summary.rules_known}): {', '.join(summary.rules_never) or 'none'}")
    console.print(Text(line), soft_wrap=True)
    for rule in summary.rules_never:
        reason = UNREACHABLE_BY_GENERATION.get(rule, "not met by these runs: run more seeds")
        console.print(Text(f"  {rule}: {reason}"), soft_wrap=True)


def _buckets_table(summary: CampaignSummary) -> Table:
    """One line per failure bucket; the signature column folds, the numbers stay narrow."""
    table = Table(title="failure buckets", title_justify="left")
    for name in ("runs", "first seed", "shortest trace", "outcome", "signature"):
        numeric = name in ("runs", "first seed")
        table.add_column(name, justify="right" if numeric else "left", overflow="fold")
    for bucket in summary.buckets:
        shortest = f"seed {bucket.shortest_seed}, {_steps(bucket.shortest_steps)}"
        signature = bucket.signature
        if bucket.labels:
            signature += " [" + "; ".join(bucket.labels) + "]"
        if bucket.trace_jsonl is None and bucket.example_error:
            signature += f" ({bucket.example_error})"
        cells = (str(bucket.count), str(bucket.first_seed), shortest, bucket.outcome, signature)
        table.add_row(*(Text(cell) for cell in cells))  # data, never rich markup
    return table


def _totals_table(summary: CampaignSummary) -> Table:
    """Campaign id, parameters, outcome counts and speed as a two-column table."""
    table = Table(title=f"campaign {summary.campaign_id}", title_justify="left", show_header=False)
    table.add_column("what")
    table.add_column("value")
    params = summary.params
    rate = summary.runs / summary.wall_s if summary.wall_s > 0 else 0.0
    rows = [
        ("runs", f"{summary.runs} (seeds {params.get('seed_min')}..{params.get('seed_max')})"),
        ("outcomes", ", ".join(f"{k} {v}" for k, v in sorted(summary.outcomes.items()))),
        ("steps", f"{summary.steps_total} executed, {params.get('steps')} requested per run"),
        ("adapter", f"{params.get('adapter')} (broken: {params.get('broken') or 'no'})"),
        ("config families", ", ".join(f"{k} {v}" for k, v in sorted(summary.families.items()))),
        ("run time", _runtime_line(summary)),
        ("throughput", f"{rate:.1f} runs/s over {summary.wall_s:.1f} s wall"),
        ("kafkalog", f"{params.get('versions')} @ {params.get('commits')}"),
    ]
    if summary.duplicates_dropped:
        rows.append(("duplicates dropped", str(summary.duplicates_dropped)))
    for key, value in rows:
        table.add_row(key, Text(str(value)))
    return table


def _crash_speed_html(summary: CampaignSummary) -> str:
    """Distinct images and crash points per minute per core, as a line and a chart."""
    if not summary.crash_points:
        return ""
    of_crash, of_runs = summary.crash_rates()
    chart = hbar_chart([("per CPU-minute of crash steps", round(of_crash)),
                        ("per core-minute of run time", round(of_runs))], None)
    return (
        f"<p>{summary.crash_points:,} crash points, {summary.crash_images:,} distinct images "
        f"(each loaded once), {summary.crash_idempotence:,} idempotence checks (a crash right "
        f"after the load, loaded again: KL-CRASH-7), {summary.crash_cpu_s:.1f} CPU seconds in "
        f"crash steps.</p>"
        f"<h3>Crash points per minute per core</h3>{chart}"
    )


def _overview(summary: CampaignSummary) -> str:
    """The totals as an HTML table plus a coloured outcome line."""
    outcome_spans = " · ".join(
        f'<b style="color:{_COLOURS.get(name, "#333")}">{_e(name)} {count}</b>'
        for name, count in sorted(summary.outcomes.items())
    )
    table = _totals_table(summary)
    cells = zip(table.columns[0].cells, table.columns[1].cells, strict=True)
    rows = "".join(f"<tr><th>{_e(str(k))}</th><td>{_e(str(v))}</td></tr>" for k, v in cells)
    return f"<p>{outcome_spans}</p><table>{rows}</table>"


def _buckets(summary: CampaignSummary, paths: dict[str, Path], base: Path) -> str:
    """The bucket chart and table (or a line saying every run conformed)."""
    if not summary.buckets:
        return f'<p class="ok">All {summary.runs} runs conformed.</p>'
    chart = hbar_chart([(b.signature, b.count) for b in summary.buckets], summary.runs)
    rows = []
    for bucket in summary.buckets:
        trace = paths.get(f"trace:{bucket.signature}")
        link = f'<a href="{_e(str(trace.relative_to(base)))}">trace</a>' if trace else "-"
        rules = ", ".join(natural_sorted(bucket.rules)) or "-"
        labels = f"<br>{_e('; '.join(bucket.labels))}" if bucket.labels else ""
        rows.append(
            f"<tr><td>{_e(bucket.outcome)}</td><td><code>{_e(bucket.signature)}</code>{labels}</td>"
            f"<td>{_e(rules)}</td>"
            f'<td class="n">{bucket.count}</td><td class="n">{bucket.first_seed}</td>'
            f"<td>seed {bucket.shortest_seed}, {_steps(bucket.shortest_steps)}</td><td>{link}</td>"
            f"<td>{_e((bucket.example_error or '')[:200])}</td></tr>"
        )
    head = (
        "<tr><th>outcome</th><th>bucket</th><th>rules</th><th>runs</th><th>first seed</th>"
        "<th>shortest trace</th><th>file</th><th>error</th></tr>"
    )
    return chart + f"<table>{head}{''.join(rows)}</table>" + _counterexamples(summary)


def _counterexamples(summary: CampaignSummary) -> str:
    """Each bucket's shortest trace rendered: steps, the diverging step side by side, state."""
    parts = []
    for index, bucket in enumerate(summary.buckets, start=1):
        if bucket.trace_jsonl:
            view = counterexample(bucket.trace_jsonl)
            parts.append(
                f"<h3>Counterexample {index}: <code>{_e(bucket.signature)}</code> "
                f"(seed {bucket.shortest_seed})</h3>{render_counterexample(view)}"
            )
    return "".join(parts)


def _never_html(summary: CampaignSummary) -> str:
    """The spec rules no run exercised (nothing when specs/log.md was not at hand)."""
    if not summary.rules_known:
        return ""
    never = ", ".join(f"<code>{_e(rule)}</code>" for rule in summary.rules_never) or "none"
    count = f"{len(summary.rules_never)} of {summary.rules_known}"
    return f"<p>Never exercised ({count} rules of specs/log.md): {never}</p>"


def _runtime_table(summary: CampaignSummary) -> str:
    """Mean and percentiles of run time."""
    stats = summary.runtime
    cells = [("mean", stats.mean), ("p50", stats.p50), ("p90", stats.p90), ("p99", stats.p99)]
    cells.append(("max", stats.max))
    head = "".join(f"<th>{name}</th>" for name, _ in cells)
    row = "".join(f'<td class="n">{_seconds(value)}</td>' for _, value in cells)
    return f"<table><tr>{head}</tr><tr>{row}</tr></table>"


def _runtime_line(summary: CampaignSummary) -> str:
    stats = summary.runtime
    return (
        f"mean {_seconds(stats.mean)}, p50 {_seconds(stats.p50)}, p90 {_seconds(stats.p90)}, "
        f"p99 {_seconds(stats.p99)}, max {_seconds(stats.max)}"
    )


def ticks(maximum: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least `maximum` (steps of 1, 2 or 5 times a power of 10)."""
    if maximum <= 0:
        return [0.0]
    raw = maximum / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return [round(i * step, 12) for i in range(int(maximum / step + 1e-9) + 1)]


Axis = tuple[float, list[tuple[float, str]]]  # (the value at the axis's end, (tick, label)s)


def _axes(
    left: int, top: int, width: float, height: float, x_axis: Axis, y_axis: Axis, x: str, y: str
) -> str:
    """Two axis lines with labelled ticks (and light grid lines) and their names."""
    bottom = top + height
    parts = [
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="#888"/>',
        f'<line x1="{left}" y1="{bottom}" x2="{left + width}" y2="{bottom}" stroke="#888"/>',
    ]
    x_end, x_ticks = x_axis
    for value, label in x_ticks:
        at = left + width * value / (x_end or 1)
        parts.append(
            f'<line x1="{at:.1f}" y1="{bottom}" x2="{at:.1f}" y2="{bottom + 4}" stroke="#888"/>'
            f'<text x="{at:.1f}" y="{bottom + 14}" text-anchor="middle">{_e(label)}</text>'
        )
    y_end, y_ticks = y_axis
    for value, label in y_ticks:
        at = bottom - height * value / (y_end or 1)
        parts.append(
            f'<line class="grid" x1="{left}" y1="{at:.1f}" x2="{left + width}" y2="{at:.1f}"/>'
            f'<line x1="{left - 4}" y1="{at:.1f}" x2="{left}" y2="{at:.1f}" stroke="#888"/>'
            f'<text x="{left - 6}" y="{at + 4:.1f}" text-anchor="end">{_e(label)}</text>'
        )
    parts.append(
        f'<text x="{left + width / 2}" y="{bottom + 28}" text-anchor="middle">{_e(x)}</text>'
        f'<text x="12" y="{top + height / 2}" transform="rotate(-90 12 {top + height / 2})" '
        f'text-anchor="middle">{_e(y)}</text>'
    )
    return "".join(parts)


def _svg(height: float, content: str, width: float = _WIDTH) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" role="img">{content}</svg>'
    )


def _seconds(value: float) -> str:
    """A duration with a unit that keeps 2-3 significant digits."""
    if value >= 1:
        return f"{value:.2f} s"
    if value >= 0.001:
        return f"{value * 1000:.1f} ms"
    return f"{value * 1e6:.0f} µs"


def _steps(count: int | None) -> str:
    if count is None:
        return "no trace"
    return f"{count} step" if count == 1 else f"{count} steps"


def _slug(text: str) -> str:
    """A file-name-safe form of a signature; long ones keep both ends (the action, the rule)."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "bucket"
    return safe if len(safe) <= 60 else f"{safe[:30]}--{safe[-28:]}"


def _e(text: str) -> str:
    return html.escape(text, quote=True)
