"""The report files and the terminal summary, from a hand-built CampaignSummary (no Spark)."""

from __future__ import annotations

import dataclasses
import html
import json
import re
import xml.dom.minidom
from pathlib import Path

from kafkalog.conformance.campaign.aggregate import (
    Bucket,
    CampaignSummary,
    RuntimeStats,
    natural_sorted,
)
from kafkalog.conformance.campaign.counterexample import counterexample, render_html
from kafkalog.conformance.campaign.report import render_terminal, ticks, write_report
from rich.console import Console

ROOT = Path(__file__).resolve().parents[2]
TRACE = '{"header": true}\n{"action": "roll"}\n{"action": "truncate_to"}\n'


def summary(buckets: tuple[Bucket, ...] = ()) -> CampaignSummary:
    histogram = tuple((i * 0.01, (i + 1) * 0.01, i % 3) for i in range(20))
    return CampaignSummary(
        campaign_id="c1",
        runs=120,
        duplicates_dropped=2,
        outcomes={"conformed": 120 - sum(b.count for b in buckets)}
        | {b.outcome: b.count for b in buckets},
        params={"steps": 60, "adapter": "builtin", "broken": None, "seed_min": 0, "seed_max": 119},
        steps_total=7000,
        run_time_total_s=12.5,
        wall_s=8.0,
        buckets=buckets,
        actions=(("append_as_leader", 3000, 120), ("roll", 400, 90)),
        rules=(("LOG-14", 120), ("SEG-6", 30)),
        runtime=RuntimeStats(0.1, 0.09, 0.15, 0.19, 0.2, histogram),
        throughput=((0.0, 10.0), (2.0, 16.5), (4.0, 15.0)),
        families={"tiny": 60, "index_full": 60},
        rules_known=3,
        rules_never=("KL-RET-7",),
    )


BUG = Bucket("diverged", "truncate_to:ok!=IllegalStateError:LOG-40", 7, 3, 11, 2, TRACE, None)
CRASH = Bucket("adapter_error", "adapter_error|RunTimedOut", 1, 50, 50, None, None, "RunTimedOut")


def test_write_report__bucket_trace_file_holds_the_shortest_trace(tmp_path: Path) -> None:
    """Each bucket with a trace gets traces/NN-<signature>-seed<S>.jsonl with that trace."""
    paths = write_report(summary((BUG, CRASH)), tmp_path)
    trace = paths[f"trace:{BUG.signature}"]
    assert trace.parent == tmp_path / "c1" / "traces"
    assert trace.name == "01-truncate_to_ok_IllegalStateError_LOG-40-seed11.jsonl"
    assert trace.read_text() == TRACE
    assert f"trace:{CRASH.signature}" not in paths  # no trace, no file


def test_write_report__html_is_self_contained_with_five_charts(tmp_path: Path) -> None:
    """No scripts, no external URLs; bucket, rule, action, throughput and run-time SVG charts."""
    page = write_report(summary((BUG,)), tmp_path)["report"].read_text()
    assert "<script" not in page.lower()
    urls = re.findall(r"(?:src|href)=\"([^\"]+)\"", page)
    assert urls == ["traces/01-truncate_to_ok_IllegalStateError_LOG-40-seed11.jsonl"]
    assert re.findall(r"https?://[^\"]+", page) == ["http://www.w3.org/2000/svg"] * 5
    for svg in re.findall(r"<svg.*?</svg>", page, re.S):
        xml.dom.minidom.parseString(svg)  # each chart is well-formed XML
    assert "truncate_to:ok!=IllegalStateError:LOG-40" in page and "SEG-6" in page
    assert "Never exercised (1 of 3 rules of specs/log.md): <code>KL-RET-7</code>" in page


def test_write_report__all_conformed__says_so(tmp_path: Path) -> None:
    """Without buckets the report states that every run conformed."""
    page = write_report(summary(), tmp_path)["report"].read_text()
    assert "All 120 runs conformed." in page


def test_write_report__summary_json_round_trips_the_aggregates(tmp_path: Path) -> None:
    """summary.json holds the same numbers the page shows."""
    data = json.loads(write_report(summary((BUG,)), tmp_path)["summary"].read_text())
    assert data["runs"] == 120 and data["buckets"][0]["shortest_seed"] == 11
    assert data["rules"] == [["LOG-14", 120], ["SEG-6", 30]]


def test_render_terminal__shows_totals_buckets_and_coverage() -> None:
    """The plain-text summary names the campaign, each bucket and each action."""
    console = Console(record=True, width=200)
    render_terminal(summary((BUG, CRASH)), console)
    text = console.export_text()
    assert "campaign c1" in text and "diverged 7" in text
    assert BUG.signature in text and "seed 11, 2 steps" in text and "RunTimedOut" in text
    assert "append_as_leader" in text and "spec rules exercised (2): LOG-14, SEG-6" in text
    assert "spec rules never exercised (1 of 3): KL-RET-7" in text


def test_render_terminal__kafka_mode_runs__say_which_leftovers_they_do_not_plant() -> None:
    """A campaign with kafka-mode runs says they plant no `cleaned_swap` or `swap_completed`
    leftover, and why; a strict-only one says nothing of it. Spec: KL-CRASH-3"""
    for modes, said in (({"strict": 90, "kafka": 30}, True), ({"strict": 120}, False)):
        console = Console(record=True, width=200)
        render_terminal(dataclasses.replace(summary(), crash_modes=modes), console)
        text = console.export_text()
        assert ("kafka-mode runs plant no cleaned_swap or swap_completed leftover" in text) \
            is said


def test_render_terminal__error_text_with_brackets__printed_verbatim() -> None:
    """Messages are data: `[bold]` or `['x.log']` in an error is not taken as rich markup."""
    odd = Bucket(
        "adapter_error", "adapter_error|X", 1, 0, 0, None, None, "[bold]y[/bold] ['a.log']"
    )
    console = Console(record=True, width=200)
    render_terminal(summary((odd,)), console)
    assert "[bold]y[/bold] ['a.log']" in console.export_text()


def test_write_report__long_signature__file_name_keeps_action_and_rule(tmp_path: Path) -> None:
    """A long signature is shortened in the middle, so the file still names action and rule."""
    long = "append_as_follower|IllegalArgumentError|IllegalArgumentError|state.segments|KL-APPEND-6"
    bucket = Bucket("diverged", long, 1, 4, 4, 2, TRACE, None)
    name = write_report(summary((bucket,)), tmp_path)[f"trace:{long}"].name
    assert name.startswith("01-append_as_follower") and name.endswith("KL-APPEND-6-seed4.jsonl")


def test_report__shows_crash_points_explored_per_fault_model(tmp_path: Path) -> None:
    """Charts (HTML) and a table (terminal) of crash points per fault model, the
    distinct images and crash points per minute per core."""
    import dataclasses

    crashed = dataclasses.replace(summary(), crashes=(("power_loss_torn", 41, 30),
                                                      ("process_crash", 12, 9)),
                                  crash_images=20, crash_cpu_s=0.53)
    page = write_report(crashed, tmp_path / "a")["report"].read_text()
    plain = write_report(summary(), tmp_path / "b")["report"].read_text()
    assert "Crash points explored per fault model" in page and "power_loss_torn" in page
    assert "20 distinct images" in page and "Crash points per minute per core" in page
    svg = "http://www.w3.org/2000/svg"
    assert page.count(svg) == plain.count(svg) + 2 and "--crash-weight 0" in plain
    console = Console(record=True, width=120)
    render_terminal(crashed, console)
    text = console.export_text()
    assert "crash points explored per fault model" in text
    assert re.search(r"power_loss_torn\W+41\W+30", text) and re.search(r"all\W+53", text)
    assert re.search(r"distinct images\W+20", text)
    assert "crash points per minute per core: 6,000 of crash-step CPU time" in text


REGRESSION = (ROOT / "tests" / "regressions" / "BUG-38-truncate_keeps_hw.jsonl").read_text()


def test_write_report__bucket_counterexample__steps_side_by_side_and_state_before(
    tmp_path: Path,
) -> None:
    """A real trace is rendered: every step, the diverging one side by side, the state before."""
    bucket = Bucket("diverged", "truncate_to|ok|ok|state.high_watermark", 3, 1, 1, 3, REGRESSION,
                    None, ("KL-TRUNC-2",))  # fmt: skip
    page = write_report(summary((bucket,)), tmp_path)["report"].read_text()
    assert "Counterexample 1: <code>truncate_to|ok|ok|state.high_watermark</code>" in page
    assert page.count("<tr class=div>") == 1 and "update_high_watermark(offset=2)" in page
    assert "Step 3 diverged: <b>state differs at high_watermark: model 1 | impl 2</b>" in page
    assert "<th>model</th><th>implementation</th>" in page
    state = re.search(r"State before step 3 \(model\)</summary><pre>(.*?)</pre>", page, re.S)
    assert state is not None and json.loads(html.unescape(state.group(1)))["high_watermark"] == 2


def test_counterexample__not_a_trace__says_why_instead_of_failing() -> None:
    """A text that is not a valid trace still renders, with the reason."""
    view = counterexample(TRACE)
    assert view.problem and view.problem.startswith("not a readable trace")
    assert "not a readable trace" in render_html(view)


def test_render_terminal__counterexample_lines_mark_the_diverging_step() -> None:
    """The terminal summary prints the shortest trace of a bucket with `>>` on the divergence."""
    bucket = Bucket("diverged", "truncate_to|ok|ok|state.high_watermark", 3, 1, 1, 3, REGRESSION,
                    None, ("KL-TRUNC-2",))  # fmt: skip
    console = Console(record=True, width=100)
    render_terminal(summary((bucket,)), console)
    text = console.export_text()
    assert ">>   3 truncate_to(offset=1) -> ok" in text
    assert "step 3: state differs at high_watermark: model 1 | impl 2" in text


def test_write_report__long_label_rules_and_axes__shown_whole_natural_and_ticked(
    tmp_path: Path,
) -> None:
    """Bucket labels are not cut, rules sort as numbers, axes carry several labelled ticks."""
    long = "append_as_follower|IllegalArgumentError|IllegalArgumentError|state.segments[].size"
    rules = (("KL-INV-10", 5), ("KL-INV-2", 5), ("KL-INV-1", 5))
    data = summary((Bucket("diverged", long, 1, 4, 4, 2, TRACE, None),))
    page = write_report(dataclasses.replace(data, rules=rules), tmp_path)["report"].read_text()
    assert f">{long}</text>" in page
    assert page.index(">KL-INV-1<") < page.index(">KL-INV-2<") < page.index(">KL-INV-10<")
    throughput_svg = re.findall(r"<svg.*?</svg>", page, re.S)[3]
    assert len(re.findall(r'text-anchor="middle">\d', throughput_svg)) >= 3  # x ticks
    assert ticks(16.5) == [0, 5, 10, 15] and ticks(0.2) == [0, 0.05, 0.1, 0.15, 0.2]


def test_natural_sorted__numbers_compare_as_numbers() -> None:
    """KL-INV-2 comes before KL-INV-10."""
    assert natural_sorted(["KL-INV-10", "KL-INV-2", "KL-APPEND-1"]) == [
        "KL-APPEND-1",
        "KL-INV-2",
        "KL-INV-10",
    ]
