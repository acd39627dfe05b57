"""Shared pytest set-up: Hypothesis profiles and the location of the real Kafka fixtures."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT.parent / "shared" / "fixtures" / "kafka-logdirs"

# dev: quick local runs. ci: fixed seeds sized to the CI budget (selected by CI=true).
# long: nightly-style exploration.
settings.register_profile("dev", max_examples=30, deadline=None)
settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("long", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture(scope="session")
def kafka_fixtures() -> Path:
    """The read-only folder of real broker log directories; skips when it is not beside the repo."""
    if not FIXTURES.is_dir():
        pytest.skip(f"real Kafka fixtures not found at {FIXTURES} (../shared is absent)")
    return FIXTURES


@pytest.fixture(autouse=True)
def _no_scratch_left_behind() -> Iterator[None]:
    """A test that fails before closing the logs it opened does not leave their directories in
    the shared scratch root (/dev/shm); tests that count entries do so inside the test."""
    from kafkalog.conformance.check.scratch import scratch_scope

    with scratch_scope():
        yield
