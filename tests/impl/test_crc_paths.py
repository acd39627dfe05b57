"""Every CRC-32C path of the C extension agrees with the `crc32c` package (FMT-46).

The extension picks its path once, at import: VPCLMULQDQ folding where the CPU and OS support
AVX-512, else the SSE4.2 crc32 instruction, else a byte table; KAFKALOG_SCAN_NO_VPCLMUL and
KAFKALOG_SCAN_NO_HW step down. Each path is checked in a child interpreter over lengths around
every fold boundary (64-byte blocks, 256-byte rounds), odd alignments and a continued CRC.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from kafkalog.impl.records import batch_scan

_CHECK = """
import random, sys
from crc32c import crc32c
from kafkalog.impl.records import _scan
rng = random.Random(17)
lengths = [*range(0, 80), *range(250, 330), 511, 512, 513, 1023, 1024, 1025, 4095, 16366,
           16387, 65_599, 1_048_576 + 13]
for n in lengths:
    data = rng.randbytes(n + 9)
    for skew in (0, 1, 5, 8):
        view = data[skew:skew + n]
        for start in (0, 0xDEADBEEF):
            assert _scan.crc32c(view, start) == crc32c(view, start), (n, skew, start)
print(_scan.CRC_IMPLEMENTATION)
"""


def _path_name(env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-c", _CHECK], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


@pytest.mark.skipif(not batch_scan.COMPILED, reason="the C extension records._scan is not "
                    "built here: the pure-Python scans use the crc32c package itself")
@pytest.mark.parametrize("env, allowed", [
    ({}, {"avx512-vpclmulqdq", "sse4.2", "table"}),
    ({"KAFKALOG_SCAN_NO_VPCLMUL": "1"}, {"sse4.2", "table"}),
    ({"KAFKALOG_SCAN_NO_HW": "1"}, {"table"}),
])
def test_crc32c__every_selectable_path__matches_the_crc32c_package(
    env: dict[str, str], allowed: set[str],
) -> None:
    assert _path_name(env) in allowed
