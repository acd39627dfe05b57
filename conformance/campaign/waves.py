"""A campaign's seeds as waves of Spark jobs, two in flight, each published once it is written.

One wave is one Spark job: `spark.range(len(wave)).mapInArrow(partition_runner(spec, wave))`
written into its own staging directory, then published by one rename (store.py).
Waves are sized to take about WAVE_TARGET_S each at the measured rate. Two waves run at once so
the cores stay busy while one wave's last, slow partitions (a failing run shrinks for seconds)
finish: Spark's FIFO scheduler gives the older wave's tasks priority and the younger one fills
the idle cores. Waves are published in the order they finish; a wave that fails is reported
after the other one in flight is published (or fails too), so at most the two waves in flight
are lost when a campaign is killed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from kafkalog.conformance.campaign.errors import CampaignJobError
from kafkalog.conformance.campaign.store import CampaignLayout, Store, publish
from kafkalog.conformance.campaign.task import SPARK_DDL, partition_runner

WAVE_TARGET_S = 20.0  # aim each wave (one Spark job) at this much wall time after the first
MAX_WAVE = 2000
IN_FLIGHT = 2  # waves running at once (with 2+ cores)
ProgressFn = Callable[[int, int], None]  # (runs finished so far, runs this invocation will do)


@dataclass(frozen=True)
class WaveDone:
    """One published wave (for per-wave progress lines)."""

    number: int
    runs: int
    wall_s: float
    executed: int  # runs published by this invocation so far
    total: int  # runs this invocation will do


WaveFn = Callable[[WaveDone], None]


def run_waves(
    spark: Any,
    plan: Any,
    store: Store,
    attempt: str,
    pending: list[int],
    on_progress: ProgressFn | None,
    first_wave: int,
    on_wave: WaveFn | None,
) -> tuple[int, int, float]:
    """Run and publish the pending seeds; returns (runs published, waves, wall seconds)."""
    layout = CampaignLayout(plan.out, plan.spec.campaign_id)
    cores = _parallelism(spark)
    partitions = cores * 3  # failing runs cost ~9x; more partitions balance them
    in_flight = IN_FLIGHT if cores > 1 else 1  # one core has no idle tail to fill
    progress = _Progress(len(pending), on_progress)
    size, offset, number = first_wave or partitions * 4, 0, 0
    published, waves, started = 0, 0, time.monotonic()
    running: dict[Future[float], tuple[int, list[int]]] = {}
    failure: tuple[int, int, str] | None = None  # (wave, runs, cause) of the first failed wave
    with ThreadPoolExecutor(in_flight, thread_name_prefix="kafkalog-wave") as pool:
        while running or (offset < len(pending) and failure is None):
            while offset < len(pending) and len(running) < in_flight and failure is None:
                number, wave = number + 1, pending[offset : offset + size]
                offset += len(wave)
                task = (spark, plan, layout, attempt, number, wave, partitions, progress)
                running[pool.submit(_run_wave, *task)] = (number, wave)
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in sorted(done, key=lambda f: running[f][0]):
                index, wave = running.pop(future)
                try:
                    wall = future.result()
                except Exception as error:  # a Spark job failure: lost worker, cancel, full disk
                    failure = failure or (index, len(wave), _cause(error))
                    continue
                publish(store, layout, _staged(layout, attempt, index), f"w-{attempt}-{index:05d}")
                published, waves = published + len(wave), waves + 1
                progress.published(index, len(wave))
                if on_wave is not None:
                    on_wave(WaveDone(index, len(wave), wall, published, len(pending)))
                # The measured rate is this wave's share of the cores (two waves share them), so
                # sizing from it makes each wave last ~WAVE_TARGET_S while the two overlap.
                size = _next_wave_size(len(wave), wall, partitions)
    if failure is not None:  # reported once the other wave in flight is published too
        index, runs, cause = failure
        raise CampaignJobError(
            f"wave {index} ({runs} runs) failed: {cause}; the {published} runs of published "
            f"waves are kept, resume with --campaign-id {plan.spec.campaign_id}",
            where=plan.runs_path,
        )
    return published, waves, time.monotonic() - started


def _run_wave(
    spark: Any,
    plan: Any,
    layout: CampaignLayout,
    attempt: str,
    number: int,
    wave: list[int],
    partitions: int,
    progress: _Progress,
) -> float:
    """One Spark job (in a pool thread): run the wave's seeds into its staging directory."""
    started = time.monotonic()
    group = f"kafkalog-{plan.spec.campaign_id}-{attempt}-{number}"
    with TaskProgress(spark, group, len(wave), lambda runs: progress.running(number, runs)):
        frame = spark.range(0, len(wave), 1, min(len(wave), partitions)).mapInArrow(
            partition_runner(plan.spec, wave), SPARK_DDL
        )
        staged = _staged(layout, attempt, number)
        frame.write.mode("errorifexists").partitionBy("campaign_id").parquet(staged)
    return time.monotonic() - started


def _staged(layout: CampaignLayout, attempt: str, number: int) -> str:
    return f"{layout.staging(attempt)}/wave-{number:05d}"


def _next_wave_size(last_size: int, last_s: float, partitions: int) -> int:
    """Size the next wave to last ~WAVE_TARGET_S at the rate just measured, in whole partitions."""
    rate = last_size / max(last_s, 0.001)
    runs = int(rate * WAVE_TARGET_S) // partitions * partitions
    return max(partitions * 2, min(MAX_WAVE, runs))


def _parallelism(spark: Any) -> int:
    """Cores Spark will use (classic: defaultParallelism; Spark Connect: 2, a safe floor)."""
    try:
        return max(1, int(spark.sparkContext.defaultParallelism))
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
        return 2


def _cause(error: Exception) -> str:
    """The informative line of a (often multi-line, Py4J-wrapped) Spark error."""
    import re

    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    named = [line for line in lines if re.search(r"(Exception|Error): ", line)]
    return ((named or lines or [type(error).__name__])[0])[:300]


class _Progress:
    """Runs finished so far: published waves plus the running waves' finished tasks."""

    def __init__(self, total: int, report: ProgressFn | None) -> None:
        self._total, self._report = total, report
        self._lock = threading.Lock()
        self._done = 0
        self._partial: dict[int, int] = {}

    def running(self, wave: int, runs: int) -> None:
        with self._lock:
            self._partial[wave] = runs
            self._emit()

    def published(self, wave: int, runs: int) -> None:
        with self._lock:
            self._partial.pop(wave, None)
            self._done += runs
            self._emit()

    def _emit(self) -> None:
        if self._report is not None:
            self._report(self._done + sum(self._partial.values()), self._total)


class TaskProgress:
    """Polls Spark's status tracker while a wave runs and reports runs finished within it.

    A task's rows are committed with its partition, so progress is counted in finished tasks
    (each worth wave/partitions runs). The job group (thread-local in PySpark's pinned-thread
    mode) scopes the tracker to this wave. On Spark Connect there is no tracker: nothing is
    reported until the wave ends.
    """

    def __init__(self, spark: Any, group: str, wave_runs: int, report: Callable[[int], None]):
        self._spark, self._group, self._runs, self._report = spark, group, wave_runs, report
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> TaskProgress:
        with suppress(Exception):  # Spark Connect: no SparkContext
            self._spark.sparkContext.setJobGroup(self._group, "kafkalog campaign wave")
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _poll(self) -> None:
        try:
            tracker = self._spark.sparkContext.statusTracker()
        except Exception:  # noqa: BLE001 - Spark Connect: no status tracker
            return
        while not self._stop.wait(0.5):
            for job_id in tracker.getJobIdsForGroup(self._group):
                job = tracker.getJobInfo(job_id)
                for stage_id in job.stageIds if job is not None else ():
                    info = tracker.getStageInfo(stage_id)
                    if info is not None and info.numTasks > 0:
                        share = info.numCompletedTasks / info.numTasks
                        self._report(min(self._runs - 1, int(share * self._runs)))
