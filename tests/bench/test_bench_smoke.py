"""Smoke tests of the benchmark harness: `kafkalog bench --quick` produces every figure.

They check that the harness runs and that each figure is present and well formed (positive
numbers, a ratio beside every baseline, a verdict for every goal), never that a timing meets
its goal: timings on a shared CI machine are not assertions.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner
from kafkalog.benchmarks.core import Figure, Sample, paired
from kafkalog.benchmarks.read import write_full_index_segment
from kafkalog.benchmarks.suite import REQUIRED_KEYS
from kafkalog.model.errors import IllegalArgumentError

from kafkalog.cli.main import cli


@pytest.fixture(scope="module")
def quick_results(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One `kafkalog bench --quick --json FILE` run shared by the tests of this module."""
    out = tmp_path_factory.mktemp("bench") / "bench.json"
    result = CliRunner().invoke(cli, ["bench", "--quick", "--json", str(out)],
                                env={"COLUMNS": "220"}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return {"document": json.loads(out.read_text()), "output": result.output}


def test_bench_quick__json__has_every_figure_of_the_issue(quick_results: dict) -> None:
    """Every required figure appears exactly once in the JSON."""
    keys = [f["key"] for f in quick_results["document"]["figures"]]
    assert sorted(keys) == sorted(REQUIRED_KEYS)


def test_bench_quick__figures__are_positive_and_have_ratios_beside_baselines(
        quick_results: dict) -> None:
    """Each value is a positive finite number; a baseline always comes with a ratio."""
    for f in quick_results["document"]["figures"]:
        assert isinstance(f["value"], int | float) and math.isfinite(f["value"]), f
        assert f["value"] > 0, f
        if f["baseline"] is not None:
            assert f["baseline"] > 0 and f["baseline_name"], f
            if f["key"] != "memory.open_read":
                assert f["ratio"] is not None and f["ratio"] > 0, f


def test_bench_quick__goals__each_has_a_verdict(quick_results: dict) -> None:
    """A figure with a goal says whether it was met (True/False); one without says None."""
    for f in quick_results["document"]["figures"]:
        if f["goal"] is None:
            assert f["met"] is None, f
        else:
            assert isinstance(f["met"], bool), f


def test_bench_quick__json__names_machine_python_and_date(quick_results: dict) -> None:
    """The results record what ran them (the README table needs it)."""
    machine = quick_results["document"]["machine"]
    assert quick_results["document"]["scale"] == "quick"
    for field in ("cpu", "cores", "python", "date_utc"):
        assert machine[field], field


def test_bench_quick__table__lists_every_figure_group(quick_results: dict) -> None:
    """The printed table names each figure of the issue."""
    output = quick_results["output"]
    for name in ("append throughput", "follower append", "sequential read", "offset lookup",
                 "recovery", "clean open", "memory", "conformance"):
        assert name in output, name


def test_paired__zero_repetitions__raises_illegal_argument() -> None:
    """A benchmark with no measured repetition is a caller error, typed."""
    with pytest.raises(IllegalArgumentError):
        paired(0, lambda: Sample(0.0, 0.0), lambda: Sample(0.0, 0.0))


def test_paired__medians__are_taken_per_side_after_a_warm_up() -> None:
    """The warm-up run is discarded and each side's median is reported."""
    impl_times = iter([Sample(100.0, 100.0), Sample(3.0, 1.0), Sample(1.0, 1.0),
                       Sample(2.0, 1.0)])
    base_times = iter([Sample(100.0, 100.0), Sample(6.0, 4.0), Sample(4.0, 4.0),
                       Sample(5.0, 4.0)])
    result = paired(3, lambda: next(impl_times), lambda: next(base_times))
    assert (result.impl_s, result.base_s) == (2.0, 5.0)
    assert result.rate_ratio() == 2.5
    assert result.cpu_ratio() == 4.0


def test_write_full_index_segment__index__is_full_and_points_at_each_batch(
        tmp_path: Path) -> None:
    """The lookup fixture's index has one entry per batch, in Kafka's big-endian layout."""
    from kafkalog.impl.fs.file_system import FileSystem
    from kafkalog.impl.segment.log_segment import LogSegment
    from kafkalog.impl.time import MockTime
    from kafkalog.model.values import LogConfig

    entries = write_full_index_segment(tmp_path, 800)
    segment = LogSegment.open(FileSystem(), tmp_path, 0, LogConfig(segment_index_bytes=800),
                              MockTime(0), file_already_exists=True)
    try:
        assert entries == 100 and segment.offset_index.is_full()
        segment.check_indexes()
        assert segment.translate_offset(57).offset == 57
        assert segment.read_next_offset() == entries + 1
    finally:
        segment.close()


def test_figure__to_dict__round_trips_through_json() -> None:
    """A Figure serialises to plain JSON values."""
    f = Figure("k", "figure", "workload", "MiB/s", 1.5, "os.write", 3.0, 0.5, ">= 0.5x", True)
    assert json.loads(json.dumps(f.to_dict()))["ratio"] == 0.5


def test_markdown_table__quick_results__has_one_row_per_figure(quick_results: dict) -> None:
    """The README table renders every figure of the JSON, with the machine line first."""
    from kafkalog.benchmarks.suite import markdown_table

    document = quick_results["document"]
    text = markdown_table(document)
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) == 1 + len(document["figures"])  # header + figures
    assert text.startswith("Machine: ") and document["machine"]["python"] in text


def test_consecutive_document__one_run_misses_a_goal__is_not_met_in_every_run(
        quick_results: dict) -> None:
    """`--runs N` records every run's goal figures and flags a goal missed in any one run."""
    import copy

    from kafkalog.benchmarks.suite import GOAL_KEYS, consecutive_document, consecutive_lines

    first = quick_results["document"]
    second = copy.deepcopy(first)
    lookup = next(f for f in second["figures"] if f["key"] == "lookup.translate_offset")
    lookup["met"], lookup["ratio"], lookup["extra"]["cpu_ratio"] = False, 0.2, 0.2
    document = consecutive_document([first, second])
    summary = document["consecutive_runs"]
    assert len(summary["runs"]) == 2 and document["figures"] == second["figures"]
    assert set(summary["met_in_every_run"]) == set(GOAL_KEYS)
    assert summary["met_in_every_run"]["lookup.translate_offset"] is False
    assert summary["runs"][1]["figures"]["lookup.translate_offset"]["ratio"] == 0.2
    assert summary["runs"][1]["figures"]["lookup.translate_offset"]["met_cpu"] is False
    line = next(x for x in consecutive_lines(document) if "lookup.translate_offset" in x)
    assert "0.200 / " in line and line.endswith("NOT met in every run")


def test_bench__zero_runs__one_line_error_and_exit_2() -> None:
    """A bad `--runs` is a usage error, not a traceback."""
    result = CliRunner().invoke(cli, ["bench", "--quick", "--runs", "0"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "--runs" in result.output


def test_consecutive_document__wall_misses_but_cpu_view_meets__met_on_the_cpu_view(
        quick_results: dict) -> None:
    """Ratio goals are judged on the CPU view: a wall-clock miss alone is not a miss."""
    import copy

    from kafkalog.benchmarks.suite import consecutive_document

    run = copy.deepcopy(quick_results["document"])
    recovery = next(f for f in run["figures"] if f["key"] == "recovery.unclean")
    recovery["met"], recovery["ratio"] = False, 0.49
    recovery["extra"]["cpu_ratio"] = 0.6
    assert recovery["extra"]["goal_ratio"] == 0.5
    summary = consecutive_document([run, run])["consecutive_runs"]
    assert summary["met_in_every_run"]["recovery.unclean"] is True
