"""One SparkSession for every Spark test of the session (starting one costs 5-25 s here).

Tests that need it are marked `spark`, so `pytest -m "not spark"` runs without a JVM. The
session is local[2] with the campaign's own tuning (campaign_job.build_session); Python workers
import kafkalog from the environment here, which is why test_campaign_submit.py ships the package
through spark-submit --py-files to an interpreter that cannot import it otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafkalog.conformance.campaign.errors import JavaMissingError
from kafkalog.conformance.campaign.job import build_session, require_java


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A tuned local[2] SparkSession shared by the whole test session; skips without Java 17+."""
    try:
        require_java()
    except JavaMissingError as error:
        pytest.skip(f"Spark tests need Java 17+: {error}")
    storage = tmp_path_factory.mktemp("hypothesis")
    os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(storage))
    session = build_session("local[2]", app_name="kafkalog-tests")
    yield session
    session.stop()


@pytest.fixture
def out_dir(tmp_path: Path) -> Path:
    """A fresh campaign --out directory."""
    return tmp_path / "campaigns"
