"""The peer-codec rows of `kafkalog bench`: present with or without the peer packages installed.

Timings are never asserted; only that each row is produced, compares like with like, and says
"skipped: <package> not installed" instead of failing when a peer is missing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from kafkalog.benchmarks import peer
from kafkalog.benchmarks.core import MIB, QUICK, Scale
from kafkalog.benchmarks.suite import REQUIRED_KEYS

from kafkalog.cli.bench_cmd import results_lines

TINY = Scale(**{**QUICK.__dict__, "reps": 1, "append_bytes": MIB})
PEER_MODULES = ("kafka.record.memory_records", "kafka.record.default_records",
                "aiokafka.record._crecords")


def test_peer_figures__peers_missing__rows_say_skipped_and_keep_kafkalogs_number(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without kafka-python and aiokafka every peer row is still there, marked skipped."""
    for module in PEER_MODULES:
        monkeypatch.setitem(sys.modules, module, None)  # makes `import` raise ImportError
    figures = peer.peer_figures(TINY, tmp_path)
    assert [f.key for f in figures] == [k for k in REQUIRED_KEYS if k.startswith("peer.")]
    for f in figures:
        package = "kafka-python" if f.key.endswith("kafka_python") else "aiokafka"
        assert f.extra["skipped"] == f"skipped: {package} not installed"
        assert f.value > 0 and f.baseline is None and f.ratio is None and f.met is None
    assert any("skipped: kafka-python not installed" in line for line in results_lines(figures))


@pytest.mark.parametrize("name", ["kafka-python", "aiokafka"])
def test_peer_figures__peer_installed__rows_have_a_ratio_to_the_peer(
        tmp_path: Path, name: str) -> None:
    """An installed peer gives each row a baseline named after it and kafkalog's ratio to it."""
    found = {p.package: p for p in peer.peers()}[name]
    if found.skipped:
        pytest.skip(f"{name} is not installed here")
    fixture = peer.read_fixture(TINY, tmp_path)
    try:
        figures = [peer.build_figure(TINY, found), peer.read_figure(TINY, fixture, found),
                   peer.append_figure(TINY, tmp_path, found)]
    finally:
        fixture.log.close()
    for f in figures:
        assert f.baseline_name and f.baseline_name.startswith(name) and f.ratio and f.ratio > 0
        assert "skipped" not in f.extra
