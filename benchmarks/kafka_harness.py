"""The JVM side of the Kafka-peer rows: Kafka's own log timed in a child JVM, one repetition a call.

`KafkaHarness.start(version, scratch)` builds (once, cached) the adapter's Maven project for a
Kafka release (conformance/jvm/kafka_adapter.py) and starts its `kafkalog.adapter.Bench` main
class. That is not the adapter protocol: each `run(op, ...)` sends one JSON line naming a whole
repetition of a workload (adapters/kafka/src/kafka/.../BenchWorkloads.java) and gets back the
wall and CPU nanoseconds the JVM measured around it, so `core.paired` can interleave Kafka's
repetitions with kafkalog's exactly as it interleaves any baseline.

The JVM runs with Kafka's broker settings (kafka-run-class.sh's G1 options; a 2 GiB heap holds
the 256 MiB of pre-built 1 MiB buffers with room to spare) and the full JIT, unlike the
adapter's fast-start flags. `warm_up` is the one rule every Kafka-peer row uses on both sides
before measuring: repeat until the CPU times of three consecutive runs agree within
`WARMUP_TOLERANCE`, so the JIT's compilation is paid before timing starts and its cost is
reported on its own.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from kafkalog.conformance.errors import AdapterError
from kafkalog.conformance.jvm import kafka_adapter

from .core import Sample

#: The release the Kafka-peer rows measure by default: the newest line the adapter supports.
DEFAULT_KAFKA = "4.4"
BENCH_CLASS = "kafkalog.adapter.Bench"
#: Kafka's broker JVM (bin/kafka-run-class.sh KAFKA_JVM_PERFORMANCE_OPTS) with a 2 GiB heap.
JVM_OPTIONS: tuple[str, ...] = (
    "-server", "-Xms2g", "-Xmx2g", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true",
)
WARMUP_TOLERANCE = 0.10  # three consecutive runs within 10% of each other count as stable
WARMUP_MIN_RUNS = 3
WARMUP_MAX_RUNS = 12


class KafkaHarnessError(AdapterError):
    """The benchmark JVM failed a command or died; `where` names the command."""


class HarnessUnavailable(Exception):
    """The harness cannot start here (no java/mvn, or the adapter does not build); the message
    is the reason a skipped row states."""


class KafkaHarness:
    """A running benchmark JVM for one Kafka release; close it (or use `with`)."""

    def __init__(self, process: subprocess.Popen[str], release: str, scratch: Path,
                 stderr: IO[str]) -> None:
        self._process = process
        self._stderr = stderr
        self.release = release
        self.scratch = scratch  # the JVM's temporary directory
        self.label = f"Kafka {release} UnifiedLog (JVM, same run)"

    @classmethod
    def start(cls, version: str, scratch: Path) -> KafkaHarness:
        """Build if needed and start the JVM; its temporary files go under `scratch`.

        Raises HarnessUnavailable (with the skip reason) when java or mvn is missing or the
        adapter cannot be built for `version`.
        """
        try:
            java, _ = kafka_adapter.require_tools()
            built = kafka_adapter.build(version)
        except AdapterError as error:
            raise HarnessUnavailable(str(error)) from None
        classpath = f"{built / 'kafka-adapter.jar'}:{(built / 'classpath.txt').read_text().strip()}"
        argv = [java, *JVM_OPTIONS, f"-Djava.io.tmpdir={scratch}", "-cp", classpath, BENCH_CLASS]
        # stderr goes to a file (a pipe nobody reads could fill up and stall the JVM) that
        # lives as long as the harness: `close` closes it.
        stderr = tempfile.TemporaryFile("w+", dir=scratch)  # noqa: SIM115
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=stderr, text=True, bufsize=1)
        return cls(process, built.name, scratch, stderr)

    def run(self, op: str, **args: Any) -> dict[str, Any]:
        """One repetition of workload `op` in the JVM; its answer (wall_ns, cpu_ns, checks)."""
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(json.dumps({"op": op, **args}) + "\n")
            process.stdin.flush()
        except BrokenPipeError:
            raise KafkaHarnessError(f"the benchmark JVM exited: {self._stderr_tail()}",
                                    where=op) from None
        line = process.stdout.readline()
        if not line:
            raise KafkaHarnessError(f"the benchmark JVM exited: {self._stderr_tail()}", where=op)
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise KafkaHarnessError(f"Kafka failed: {answer['error']}", where=op)
        return dict(answer["ok"])

    def repetition(self, op: str, **args: Any) -> Callable[[], tuple[Sample, dict[str, Any]]]:
        """Each call runs one repetition of `op` in the JVM: its Sample and the whole answer."""
        def one() -> tuple[Sample, dict[str, Any]]:
            answer = self.run(op, **args)
            return Sample(answer["wall_ns"] / 1e9, answer["cpu_ns"] / 1e9), answer
        return one

    def _stderr_tail(self) -> str:
        self._stderr.seek(0)
        lines = [ln for ln in self._stderr.read().splitlines() if ln.strip()]
        return " | ".join(lines[-3:])[-500:] or "no output"

    def close(self) -> None:
        """Ends the JVM (EOF on stdin makes it close its logs and exit)."""
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()
        self._stderr.close()

    def __enter__(self) -> KafkaHarness:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class WarmUp:
    """The runs `warm_up` made before measuring, and whether they settled."""

    runs: tuple[Sample, ...]
    stable: bool

    def to_dict(self) -> dict[str, Any]:
        return {"runs_s": [round(r.wall, 6) for r in self.runs],
                "cpu_runs_s": [round(r.cpu, 6) for r in self.runs], "stable": self.stable,
                "total_s": round(sum(r.wall for r in self.runs), 6)}


def warm_up(fn: Callable[[], Sample]) -> WarmUp:
    """Run `fn` until three consecutive runs' CPU times agree within WARMUP_TOLERANCE (at least
    WARMUP_MIN_RUNS, at most WARMUP_MAX_RUNS runs); none of them is a measurement.

    The same rule for kafkalog and Kafka on every row, so JIT compilation (and, for CPython,
    cold caches) is excluded alike and reported beside the figure.
    """
    runs = [fn() for _ in range(WARMUP_MIN_RUNS)]
    while not _settled(runs) and len(runs) < WARMUP_MAX_RUNS:
        runs.append(fn())
    return WarmUp(tuple(runs), _settled(runs))


def _settled(runs: list[Sample]) -> bool:
    # Judged on CPU time: compilation shows there (the JIT's threads count), while wall time
    # on a shared machine also moves with the neighbours.
    last = [r.cpu for r in runs[-3:]]
    return max(last) <= (1 + WARMUP_TOLERANCE) * min(last)
