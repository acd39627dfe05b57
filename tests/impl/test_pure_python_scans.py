"""The tests of recovery and checked reads once more on the pure-Python scans.

The suite runs on whichever batch scans `kafkalog.impl.records.batch_scan` picked (the C extension
when
it is built). The fallback must stay correct too, so this test runs the tests that drive those
paths (segment recovery, loading, offset lookups, hostile files, transaction index and
producer-state rebuild, the crash defects and the conformance regression traces) in a child
pytest with KAFKALOG_PURE_PYTHON=1. About 20 s of CI time on a quiet machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from kafkalog.impl.records import batch_scan

ROOT = Path(__file__).resolve().parents[2]
PURE_SUITE = (
    "tests/impl/test_batch_scan.py",
    "tests/impl/test_log_segment.py",
    "tests/impl/test_log_loader.py",
    "tests/impl/test_hostile_files.py",
    "tests/impl/test_file_records.py",
    "tests/impl/test_offset_index.py",
    "tests/impl/test_lookup_scan.py",
    "tests/impl/test_append_scan.py",
    "tests/impl/test_stamped_write.py",
    "tests/impl/test_transaction_index.py",
    "tests/impl/test_producer_snapshots.py",
    "tests/impl/test_cleaner.py",
    "tests/crash/test_defects.py",
    "tests/conformance/test_regressions.py",
)


@pytest.mark.skipif(not batch_scan.COMPILED, reason="this run already uses the pure-Python "
                    "scans (the C extension is not built), so every test above ran on them")
def test_recovery_and_read_tests__pass_on_the_pure_python_scans() -> None:
    """Both scan implementations pass the recovery, load and replay tests."""
    env = {**os.environ, "KAFKALOG_PURE_PYTHON": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *PURE_SUITE],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, f"pure-Python scans failed:\n{done.stdout[-4000:]}"
    assert " passed" in done.stdout.splitlines()[-1]
