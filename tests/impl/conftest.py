"""Fixtures of the Log (UnifiedLog) scenario tests: a mock clock and a log opener that closes
every log it opened."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.log.log import Log
from kafkalog.impl.time import MockTime
from kafkalog.model.values import LogConfig

FS = FileSystem()


@pytest.fixture
def time() -> MockTime:
    return MockTime(1_000_000)


@pytest.fixture
def open_log(tmp_path: Path, time: MockTime):  # type: ignore[no-untyped-def]
    logs: list[Log] = []

    def make(config: LogConfig | None = None, **kwargs: object) -> Log:
        log = Log.open(FS, tmp_path / "topic-0", config or LogConfig(), time, **kwargs)  # type: ignore[arg-type]
        logs.append(log)
        return log

    yield make
    for log in logs:
        log.close_handlers()
