"""Memory is bounded: `verify`'s peak RSS, measured in a child process, stays under
100 MiB on a 1 GiB sparse index, a 1.5 GiB sparse producer snapshot and 1.5 GiB decompression
bombs (legacy and v2), and so does the adapter driving a log with segment_index_bytes = Int.MAX
through appends, reopen and verify."""

from __future__ import annotations

import pytest
from kafkalog.conformance.fuzz.rss import BOUND_MIB, SCENARIOS, measure


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_verify_peak_rss__hostile_scenario__under_100_mib(name: str) -> None:
    """Index reads are chunked and inflation is capped, so RSS does not follow the input."""
    mib, code = measure(SCENARIOS[name])
    assert mib < BOUND_MIB, f"{name}: {mib} MiB"
    assert code == (0 if "baseline" in name or "adapter" in name else 1)
