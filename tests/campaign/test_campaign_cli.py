"""`kafkalog campaign` and `kafkalog report` from the command line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from in_process_cli import entry_point
from kafkalog.conformance.campaign.errors import JavaMissingError
from kafkalog.conformance.campaign.job import require_java

from kafkalog.cli.main import cli

SYNTHETIC = "kafkalog.conformance.campaign.synthetic:synthetic_run_seed"


def kafkalog(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real entry point (its error handling included) in a subprocess."""
    code = "from kafkalog.cli.main import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=os.environ | (env or {}),
        timeout=120,
    )


def test_require_java__absent__says_in_one_line_how_to_install(tmp_path: Path) -> None:
    """No java at JAVA_HOME: a typed error pointing at scripts/setup.sh."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
        with pytest.raises(JavaMissingError, match=r"Java 17\+.*scripts/setup\.sh"):
            require_java()


def test_require_java__too_old__names_the_version(tmp_path: Path) -> None:
    """A Java 11 on the path is refused with its version in the message."""
    fake = tmp_path / "jdk" / "bin" / "java"
    fake.parent.mkdir(parents=True)
    fake.write_text("#!/bin/sh\necho 'openjdk version \"11.0.2\" 2019-01-15' >&2\n")
    fake.chmod(0o755)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
        with pytest.raises(JavaMissingError, match="is Java 11"):
            require_java()


def test_campaign_cli__no_java__exit_2_with_one_line(tmp_path: Path) -> None:
    """The CLI turns a missing Java into one line on stderr and exit status 2, no traceback."""
    done = kafkalog("campaign", "--runs", "1", env={"JAVA_HOME": str(tmp_path / "none")})
    assert done.returncode == 2
    assert done.stderr.startswith("kafkalog: JavaMissingError: Spark needs Java 17+")
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--campaign-id", "../escape"], "CampaignOptionsError: a campaign id is"),
        (["--config-mix", "tiny,huge"], "UnknownConfigFamilyError: unknown config family 'huge'"),
        (["--broken", "no_such_bug"], "UnknownBrokenImplError: unknown broken implementation"),
        (["--broken", "truncate_keeps_hw", "--adapter", "model"], "cannot be combined"),
        (["--campaign-id", "runs"], "CampaignOptionsError: 'runs' is reserved"),
        (["--master", "lokal[2]"], "CampaignOptionsError: not a Spark master"),
        (["--master", "local[0]"], "CampaignOptionsError: not a Spark master"),
        (["--out", "/dev/null"], "CampaignOptionsError: --out exists and is not a directory"),
        (["--adapter", "sh -c 'echo nonsense; exit 3'"], "the adapter failed its handshake"),
    ],
)
def test_campaign_cli__bad_option__exit_2_with_one_line(args: list[str], message: str) -> None:
    """Bad options are rejected before Spark starts, in one line naming the option."""
    done = kafkalog("campaign", "--runs", "1", *args)
    assert done.returncode == 2 and message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.spark
def test_campaign_cli__failing_runs__exit_1_with_report_traces_and_rebuild(
    spark: Any, out_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A campaign with divergences exits 1, writes report and traces; `report` rebuilds them."""
    args = ["campaign", "--runs", "30", "--steps", "6", "--out", str(out_dir)]
    args += ["--campaign-id", "cli1", "--run-fn", SYNTHETIC, "--config-mix", "tiny"]
    assert entry_point(args) == 1  # the real entry point, as the shell sees it
    output = capsys.readouterr().out
    assert "30 runs in" in output and "failure buckets" in output
    assert "wave 1: 24 runs in" in output and "wave 2: 6 runs in" in output  # not a terminal
    assert "30/30 done" in output and "1 Parquet file(s)" in output
    report = out_dir / "cli1" / "report.html"
    traces = sorted(p.name for p in (out_dir / "cli1" / "traces").iterdir())
    assert len(traces) == 2 and report.is_file()
    first = report.read_text()
    report.unlink()
    rebuilt = CliRunner().invoke(cli, ["report", str(out_dir)])
    assert rebuilt.exit_code == 0, rebuilt.output
    assert _without_timestamp(report.read_text()) == _without_timestamp(first)
    again = kafkalog(*args[:-2], "--config-mix", "tiny")  # a fresh process: no Spark, exit 1
    assert again.returncode == 1, again.stderr
    assert "nothing to run, all 30 seeds are recorded (Spark not started)" in again.stdout
    assert "failure buckets" in again.stdout and "Spark 4" not in again.stdout


def _without_timestamp(page: str) -> str:
    return page.split("<p><small>Generated")[0]
