"""`--wire-broker tansu-sqlite`: Tansu 0.6.0 over its SQLite engine, started and stopped by PID.

The binary is built once from the Rust crate registry (40 minutes or more on 2 cores), so the
live test runs where it is built or named by $KAFKALOG_TANSU_SQLITE_BIN and says so otherwise;
the typed errors for a bad binary run everywhere. Spec: KL-WIRE-1, KL-WIRE-2.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from kafkalog.conformance.broker import tansu_sqlite
from kafkalog.conformance.broker.registry import broker_kind
from kafkalog.conformance.check.runner import run_seed
from kafkalog.conformance.errors import BrokerUnavailableError

from kafkalog.cli.wire_cmds import wire_adapter_command


def _built() -> bool:
    override = os.environ.get("KAFKALOG_TANSU_SQLITE_BIN")
    return bool(override) or (tansu_sqlite.cache_dir() / "bin" / "tansu").is_file()


def test_binary__override_not_executable__typed_error_naming_the_variable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKALOG_TANSU_SQLITE_BIN", str(tmp_path / "missing"))
    with pytest.raises(BrokerUnavailableError, match="KAFKALOG_TANSU_SQLITE_BIN"):
        tansu_sqlite.tansu_sqlite_binary()


def test_binary__override_of_another_version__refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "tansu"
    fake.write_text("#!/bin/sh\necho 'tansu 0.5.0'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("KAFKALOG_TANSU_SQLITE_BIN", str(fake))
    with pytest.raises(BrokerUnavailableError, match="not the pinned 0.6.0"):
        tansu_sqlite.tansu_sqlite_binary()


@pytest.mark.skipif(not _built(), reason="Tansu-SQLite is not built here: `kafkalog check "
                    "--wire-broker tansu-sqlite` builds it with cargo (40 minutes or more)")
def test_broker__started_by_pid__answers_a_run_and_stops(tmp_path: Path) -> None:
    """A short run over the SQLite engine reaches a recorded finding or conforms, never an
    adapter error at the start; the broker's process is gone after stop()."""
    kind = broker_kind("tansu-sqlite")
    broker = kind.start(tmp_path / "tansu-sqlite.log")
    try:
        assert broker.alive
        adapter = wire_adapter_command(broker.address, broker_log=broker.log_path,
                                       exclude=("maybe_increment_log_start_offset",
                                                "fetch_offset_by_timestamp"))
        outcome = run_seed(0, steps=6, config_family="tiny", adapter=adapter, time_limit_s=60)
        assert outcome.outcome in ("conformed", "diverged"), outcome.signature
        assert (tmp_path / "tansu-sqlite.log").read_text().startswith("tansu broker 0.6.0")
    finally:
        broker.stop()
    assert not broker.alive
