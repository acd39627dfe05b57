"""Run in a fresh interpreter by the memory figure: open a log, read all of it, report peak RSS.

Usage: `python -m kafkalog.benchmarks.memory_probe DIR '[lso, recovery_point, hw, segment_bytes]'`.
Prints one JSON line: peak and starting RSS in MiB (VmHWM), bytes read
and the segment count. A separate process keeps the harness's own allocations out of the figure.
"""

from __future__ import annotations

import json
import resource
import sys
from pathlib import Path

from kafkalog.impl.log.log import LogOffsets

from .read import consume
from .reopen import open_clean


def _rss_mib() -> float:
    """Peak RSS of this process image in MiB.

    `VmHWM` from /proc is reset by exec; `ru_maxrss` is not on Linux (a child starts with its
    parent's peak at fork time), so it is only the fallback where /proc is missing.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str]) -> int:
    directory = Path(argv[0])
    lso, recovery_point, hw, segment_bytes = json.loads(argv[1])
    start = _rss_mib()
    log = open_clean(directory, LogOffsets(lso, recovery_point, hw), segment_bytes)
    read = consume(log)
    segments = len(log.segments)
    log.close()
    print(json.dumps({"peak_rss_mib": round(_rss_mib(), 1), "start_rss_mib": round(start, 1),
                      "bytes_read": read, "segments": segments}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
