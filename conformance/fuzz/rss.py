"""Peak memory of `kafkalog verify` on hostile directories, measured in a child process.

Each scenario builds a log directory, then runs the command (`python -m kafkalog ...`) in a
fresh interpreter whose small launcher reports `resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`
once it has exited, so the number is that command's peak resident set and nothing else.
`python -m kafkalog.conformance.fuzz.rss` prints the table the README's "Reliability" section
quotes; tests/fuzz asserts each stays under `BOUND_MIB`.
"""

from __future__ import annotations

import random
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from kafkalog.conformance.fuzz.builders import build_log_dir, legacy_gzip_bomb, sparse_file, v2_bomb

BOUND_MIB = 100  # the reliability goal for each scenario
GIB = 1 << 30
FIRST = "00000000000000000000"

# Linux carries a process's peak RSS across fork and exec (the child starts with its parent's
# high-water mark), so a child of a big process (pytest) would report the parent's size. A small
# launcher in between starts the measured command from a ~10 MiB process instead, and reads the
# command's peak from its own children's usage (the command is its only child).
_LAUNCHER = """
import resource, subprocess, sys
code = subprocess.run([sys.executable, "-m", "kafkalog", *sys.argv[1:]]).returncode
print("RSS_KIB", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, code, file=sys.stderr)
sys.exit(code)
"""


def _baseline(root: Path) -> list[str]:
    build_log_dir(root)
    return ["verify", str(root)]


def _sparse_index(root: Path) -> list[str]:
    build_log_dir(root)
    index = root / "t-0" / f"{FIRST}.index"
    sparse_file(index, GIB, index.read_bytes())
    return ["verify", str(root)]


def _legacy_bomb(root: Path) -> list[str]:
    build_log_dir(root)
    (root / "u-0").mkdir()
    (root / "u-0" / f"{FIRST}.log").write_bytes(legacy_gzip_bomb(0, 3 * GIB // 2))
    return ["verify", str(root)]


def _v2_bomb(root: Path) -> list[str]:
    build_log_dir(root)
    (root / "u-0").mkdir()
    (root / "u-0" / f"{FIRST}.log").write_bytes(v2_bomb(3 * GIB // 2, codec=1))
    return ["verify", "--deep", str(root)]


def _adapter_huge_index(root: Path) -> list[str]:
    """The adapter case: segment_index_bytes = Int.MAX (valid in Kafka), appends,
    close_and_reopen and verify; the index files are 2 GiB sparse preallocations."""
    lines = [b'{"id":1,"action":"handshake","args":{"protocol_version":1}}',
             b'{"id":2,"action":"open","args":{"config":{"segment_index_bytes":2147483647}}}']
    lines += [b'{"id":%d,"action":"append_as_leader","args":{"records":[{"key":null,'
              b'"value":"eA==","timestamp":%d}],"leader_epoch":0}}' % (i, i) for i in range(3, 40)]
    lines += [b'{"id":50,"action":"verify"}', b'{"id":51,"action":"close_and_reopen"}',
              b'{"id":52,"action":"roll"}', b'{"id":53,"action":"verify"}']
    root.mkdir(parents=True)
    (root / "stdin").write_bytes(b"\n".join(lines) + b"\n")
    return ["serve-adapter"]


def _sparse_snapshot(root: Path) -> list[str]:
    """A producer snapshot grown to 1.5 GiB (a hole after its entries): its CRC covers every
    byte, so the file is read through, a chunk at a time."""
    build_log_dir(root)
    snapshot = max((root / "t-0").glob("*.snapshot"))
    sparse_file(snapshot, 3 * GIB // 2, snapshot.read_bytes())
    return ["verify", str(root)]


def _dump_garbage_index(root: Path) -> list[str]:
    """`dump --json` of a 4 MiB `.index` of random bytes: 512K rows, streamed."""
    build_log_dir(root)
    index = root / "t-0" / f"{FIRST}.index"
    index.write_bytes(random.Random(13).randbytes(4 << 20))  # 512K entries
    return ["dump", "--json", str(index)]


SCENARIOS: dict[str, Callable[[Path], list[str]]] = {
    "verify, small clean dir (baseline)": _baseline,
    "verify, 1 GiB sparse .index": _sparse_index,
    "verify, 1.5 GiB legacy gzip wrapper (1.5 MB on disk)": _legacy_bomb,
    "verify --deep, 1.5 GiB v2 gzip batch": _v2_bomb,
    "verify, 1.5 GiB sparse .snapshot": _sparse_snapshot,
    "dump --json, 4 MiB garbage .index (512K rows)": _dump_garbage_index,
    "serve-adapter, segment_index_bytes=2147483647, appends, reopen, verify": _adapter_huge_index,
}


def measure(build: Callable[[Path], list[str]]) -> tuple[int, int]:
    """(peak RSS in MiB, exit status) of verify on the scenario `build` makes."""
    with tempfile.TemporaryDirectory(prefix="kafkalog-rss-") as tmp:
        root = Path(tmp) / "logs"
        argv = build(root)
        stdin = root / "stdin"
        adapter = argv == ["serve-adapter"]
        done = subprocess.run([sys.executable, "-c", _LAUNCHER, *argv], text=True,
                              timeout=600,
                              check=False, stderr=subprocess.PIPE,
                              stdout=subprocess.PIPE if adapter else subprocess.DEVNULL,
                              input=stdin.read_text() if stdin.exists() else None)
        if adapter and ('"error"' in done.stdout or not done.stdout):
            return 1 << 30, 3  # every request must have succeeded: fail the bound loudly
    line = next(x for x in done.stderr.splitlines() if x.startswith("RSS_KIB"))
    _, kib, code = line.split()
    return int(kib) // 1024, int(code)


def main() -> None:
    for name, build in SCENARIOS.items():
        mib, code = measure(build)
        print(f"{name}: peak RSS {mib} MiB (exit {code})")


if __name__ == "__main__":
    main()
