"""What the CLI says around the campaign: replay of a broken trace, a bad adapter, bench output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from kafkalog.benchmarks.core import Figure

from kafkalog.cli.bench_cmd import QUICK_NOTE, results_lines
from kafkalog.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
BUG38 = ROOT / "tests" / "regressions" / "BUG-38-truncate_keeps_hw.jsonl"


def test_replay__regression_trace__names_the_broken_implementation_it_ran() -> None:
    """Replaying a BUG-* trace says it ran the trace's broken implementation, and why exit 1."""
    done = CliRunner().invoke(cli, ["replay", str(BUG38)])
    assert done.exit_code == 1
    first = done.output.splitlines()[0]
    assert first.startswith("replaying 3 steps against the broken implementation")
    assert "'truncate_keeps_hw' (BUG-38:" in first and "named in the trace" in first
    assert "--builtin replays it against the real one" in done.output
    real = CliRunner().invoke(cli, ["replay", "--builtin", str(BUG38)])
    assert real.exit_code == 0 and "against the built-in implementation" in real.output


def test_check__adapter_failing_its_handshake__one_line_once_exit_2() -> None:
    """A bad --adapter is reported once after the handshake, not once per run."""
    code = "from kafkalog.cli.main import main; main()"
    args = ["check", "--examples", "24", "--adapter", "sh -c 'echo garbage'"]
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "the adapter failed its handshake" in lines[0]


def test_bench_lines__quick__one_block_per_figure_and_no_verdict() -> None:
    """Off a terminal the results are blocks of short lines; a quick run judges no goal."""
    figure = Figure("append.leader", "append throughput", "1 KiB records", "rec/s", 1234.5,
                    "raw write", 2000.0, 0.62, ">= 0.5x", True)  # fmt: skip
    lines = results_lines([figure], quick=True)
    assert lines[0] == "append throughput: 1,234 rec/s" and max(map(len, lines)) < 80
    assert lines[-1].endswith("met: n/a (quick)") and "not timings" in QUICK_NOTE
