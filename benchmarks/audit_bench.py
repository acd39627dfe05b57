"""Fleet audit numbers: split vs unsplit, local[1] vs local[2], vs `verify` in a loop.

    python -m kafkalog.benchmarks.audit_bench [--only split,scaling,verify,critical]
        [--big-mib 512]
        [--reps 2] [--json out/bench/audit.json]

- **split**: one large partition (`--big-mib` of 16 MiB segments, 16 KB batches) plus 40
  partitions of 1 MiB, audited at local[2] with the large one split into 32 MiB pieces and
  unsplit, shallow and `--deep` (alternating, `--reps` each): job wall time of each.
- **scaling**: 1,040 partitions (20 copies of a real broker directory, as in the test suite)
  plus the split fleet, audited at local[1] and at local[2]: partitions/s and MiB/s.
- **critical**: CPU seconds of the large partition unsplit vs its longest piece (and all
  pieces plus the merge), in one process: what bounds the wall time when cores are free.
- **verify**: the same fleets through `kafkalog verify DIR` once per log directory (a process
  each, as an operator's shell loop would) and through `verify_log_dir` in one process.

A control, measured before and after the Spark runs: the speedup of two plain Python processes
over one on the same loop (on an idle 2-core machine ~1.9; 1.0 means no second core was free).
Each master runs in its own process (one SparkSession, as the CLI), with a warm-up audit first so
session start and first-job JIT are not counted. Planning (listing, root files) is timed apart
from the Spark job. A shared 2-core VM is noisy: the load average is recorded with each number.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TEMPLATE = "k2.1-zk-clean-many-partitions"
FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "kafka-logdirs"


def make_fleets(root: Path, big_mib: int) -> dict[str, Path]:
    """`small`: 20 copies of a real 52-partition broker dir; `big`: one large partition and 40
    small ones, written by kafkalog.impl."""
    from kafkalog.conformance.audit.fleet import write_log_dir

    small = root / "small"
    for broker in range(20):
        shutil.copytree(FIXTURES / TEMPLATE, small / f"broker-{broker}" / "data")
    sizes = {f"small-{n}": 1 << 20 for n in range(40)} | {"big-0": big_mib << 20}
    write_log_dir(root / "big" / "broker-0", sizes, segment_bytes=16 << 20,
                  record_bytes=1000, records_per_batch=16)  # 16 KB batches (batch.size)
    return {"small": small, "big": root / "big"}


def child(master: str, fleets: dict[str, str], modes: list[str], reps: int) -> dict[str, Any]:
    """In a fresh process: one session at `master`, a warm-up, then each mode `reps` times."""
    from kafkalog.conformance.audit.job import find_log_dirs, plan_units, run_audit
    from kafkalog.conformance.audit.split import SplitPolicy
    from kafkalog.conformance.campaign.job import build_session

    policies = {"split": SplitPolicy(max_bytes=32 << 20, max_segments=100),
                "unsplit": SplitPolicy(max_bytes=1 << 60, max_segments=1 << 30)}
    started = time.monotonic()
    spark = build_session(master, app_name="audit-bench")
    out: dict[str, Any] = {"session_s": round(time.monotonic() - started, 2)}
    work = Path(tempfile.mkdtemp(prefix="audit-bench-out-"))
    try:
        warm = plan_units(find_log_dirs([fleets["small"] + "/broker-0"]), "w")
        run_audit(spark, *warm, str(work / "warm"), "w", False)
        for rep in range(reps):
            for mode in modes:
                fleet, policy, *deep = mode.split(":")
                t0 = time.monotonic()
                units, roots = plan_units(find_log_dirs([fleets[fleet]]), "b")
                planned = time.monotonic() - t0
                target = str(work / f"{mode.replace(':', '-')}-{rep}")
                n, _, wall = run_audit(spark, units, roots, target, "b", bool(deep),
                                       policy=policies[policy])
                mib = sum(u.bytes for u in units) / (1 << 20)
                out.setdefault(mode, []).append({
                    "partitions": n, "mib": round(mib, 1), "plan_s": round(planned, 3),
                    "job_s": round(wall, 3), "partitions_per_s": round(n / wall, 1),
                    "mib_per_s": round(mib / wall, 1), "load": os.getloadavg()[0]})
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    return out


def critical_path(fleet: Path) -> dict[str, Any]:
    """CPU seconds (process time, so the VM's load does not inflate them) of the large
    partition's work unsplit vs split into 32 MiB pieces: the longest task bounds the job's
    wall time once there are free cores, and the split shrinks it."""
    import pickle

    from kafkalog.conformance.audit.job import find_log_dirs, plan_units
    from kafkalog.conformance.audit.split import SplitPolicy, audit_piece, merge_pieces, split_units
    from kafkalog.conformance.audit.unit import audit_unit

    units, _ = plan_units(find_log_dirs([str(fleet)]), "c")
    big = max(units, key=lambda unit: unit.bytes)
    _, pieces = split_units([big], SplitPolicy(max_bytes=32 << 20, max_segments=100))
    out: dict[str, Any] = {"mib": round(big.bytes / (1 << 20), 1), "pieces": len(pieces)}
    for deep in (False, True):
        t0 = time.process_time()
        audit_unit(big, "c", deep)
        whole = time.process_time() - t0
        costs, results = [], []
        for piece in pieces:
            t0 = time.process_time()
            results.append(pickle.loads(pickle.dumps((piece, audit_piece(piece, deep)))))
            costs.append(time.process_time() - t0)
        t0 = time.process_time()
        merge_pieces(results, "c")
        merge = time.process_time() - t0
        out["deep" if deep else "shallow"] = {
            "unsplit_task_cpu_s": round(whole, 3), "longest_piece_cpu_s": round(max(costs), 3),
            "pieces_cpu_s": round(sum(costs), 3), "merge_cpu_s": round(merge, 3)}
    return out


def verify_loop(fleets: dict[str, Path]) -> dict[str, Any]:
    """Each fleet's log directories through the CLI (a process each) and in one process."""
    from kafkalog.conformance.audit.job import find_log_dirs
    from kafkalog.impl.fs.file_system import FileSystem
    from kafkalog.impl.verify.verifier import verify_log_dir

    cli = Path(sys.executable).with_name("kafkalog")
    out: dict[str, Any] = {}
    for name, fleet in fleets.items():
        dirs = find_log_dirs([str(fleet)])
        t0 = time.monotonic()
        for log_dir in dirs:
            subprocess.run([str(cli), "verify", str(log_dir)], capture_output=True, check=False)
        processes = time.monotonic() - t0
        t0 = time.monotonic()
        partitions = sum(len(verify_log_dir(FileSystem(), d).partitions) for d in dirs)
        in_process = time.monotonic() - t0
        mib = sum(f.stat().st_size for f in fleet.rglob("*.log")) / (1 << 20)
        out[name] = {"partitions": partitions, "mib": round(mib, 1),
                     "cli_loop_s": round(processes, 3), "in_process_s": round(in_process, 3),
                     "cli_partitions_per_s": round(partitions / processes, 1),
                     "cli_mib_per_s": round(mib / processes, 1),
                     "in_process_partitions_per_s": round(partitions / in_process, 1),
                     "in_process_mib_per_s": round(mib / in_process, 1),
                     "load": os.getloadavg()[0]}
    return out


def _burn(n: int) -> int:
    x = 0
    for i in range(n):
        x = (x * 31 + i) & 0xFFFFFFFF
    return x


def parallel_control(n: int = 4_000_000) -> float:
    """Speedup of two plain processes over one on the same CPU work, measured now: what the
    VM's other tenants leave of its second core (1.0: none; 2.0: all of it)."""
    from multiprocessing import Pool

    t0 = time.monotonic()
    _burn(n), _burn(n)
    serial = time.monotonic() - t0
    with Pool(2) as pool:
        t0 = time.monotonic()
        pool.map(_burn, [n, n])
        parallel = time.monotonic() - t0
    return round(serial / parallel, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="split,scaling,verify,critical")
    parser.add_argument("--big-mib", type=int, default=512)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--json", default=None)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        master, fleets, modes = json.loads(args.child)
        print(json.dumps(child(master, fleets, modes, args.reps)))
        return
    only = set(args.only.split(","))
    root = Path(tempfile.mkdtemp(prefix="audit-bench-"))
    results: dict[str, Any] = {}
    try:
        fleets = make_fleets(root, args.big_mib)
        paths = {name: str(path) for name, path in fleets.items()}
        runs = []
        if "split" in only:
            runs.append(("local[2]", ["big:split", "big:unsplit", "big:split:deep",
                                      "big:unsplit:deep"]))
        if "scaling" in only:
            runs += [(m, ["small:unsplit", "big:split"]) for m in ("local[1]", "local[2]")]
        results["parallel_control_before"] = parallel_control()
        for master, modes in runs:
            spec = json.dumps([master, paths, modes])
            done = subprocess.run([sys.executable, "-m", "kafkalog.benchmarks.audit_bench",
                                   "--reps", str(args.reps), "--child", spec],
                                  capture_output=True, text=True, check=True)
            results.setdefault(master, []).append(json.loads(done.stdout.splitlines()[-1]))
        if "verify" in only:
            results["verify"] = verify_loop(fleets)
        results["parallel_control_after"] = parallel_control()
        if "critical" in only:
            results["critical_path"] = critical_path(fleets["big"])
    finally:
        shutil.rmtree(root, ignore_errors=True)
    text = json.dumps(results, indent=2)
    print(text)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
