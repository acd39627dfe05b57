"""A non-Python adapter: examples/node-adapter/adapter.js driven by `kafkalog check` and vectors.

It declares only the `core` feature, so the checker never asks it for follower appends, epochs,
timestamps or reloads, and the vector runner skips the vectors that need them. Its seeded bug
(`--bug=size_roll_off_by_one`: a segment rolls when it would reach segment_bytes exactly) must be
caught. scripts/setup.sh installs Debian's `nodejs` when `node` is missing.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from kafkalog.conformance.adapter.subprocess_sut import AdapterProcess
from kafkalog.conformance.check.runner import run_seed
from kafkalog.conformance.vectors.corpus import export
from kafkalog.conformance.vectors.run import run

from kafkalog.cli.conformance_cmds import check

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed (scripts/setup.sh "
                                                      "installs Debian's nodejs)")
SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "node-adapter" / "adapter.js"
ADAPTER = f"node {shlex.quote(str(SCRIPT))}"
BUGGY = f"{ADAPTER} --bug=size_roll_off_by_one"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("vectors")
    export(directory, verify=False)
    return directory


def test_handshake__declares_only_the_core_feature() -> None:
    """Spec: KL-STATE-3 (feature negotiation is language-neutral)."""
    process = AdapterProcess(ADAPTER)
    try:
        assert process.features == frozenset({"core"})
    finally:
        process.close()


def test_check_cli__node_adapter__conforms(tmp_path: Path) -> None:
    """Spec: KL-STATE-3 (`kafkalog check --adapter "node adapter.js"` exits 0)."""
    result = CliRunner().invoke(check, ["--adapter", ADAPTER, "--examples", "4", "--steps", "30",
                                        "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "all runs conformed" in result.output


def test_check__node_adapter_with_its_seeded_bug__is_caught_on_a_size_roll() -> None:
    """Spec: KL-ROLL-1 (a 400-byte segment filled exactly must not roll)."""
    outcome = run_seed(7, steps=40, config_family="tiny", adapter=BUGGY)
    assert outcome.outcome == "diverged"
    assert outcome.signature is not None and outcome.signature.startswith("append_as_leader|")


def test_vectors_run__node_adapter__passes_core_vectors_and_skips_the_rest(corpus: Path) -> None:
    """Spec: KL-STATE-3 (vectors needing undeclared features are skipped, naming them)."""
    report = run(corpus, ADAPTER)
    skipped: list[Any] = [r for r in report.results if r.outcome == "skipped"]
    assert report.ok, [r for r in report.results if r.outcome == "failed"]
    assert report.count("passed") >= 40 and skipped
    assert all(r.detail.startswith("needs feature(s)") for r in skipped)


def test_vectors_run__node_adapter_with_its_seeded_bug__fails(corpus: Path) -> None:
    """Spec: KL-ROLL-1"""
    report = run(corpus, BUGGY)
    assert not report.ok and report.count("failed") >= 1
