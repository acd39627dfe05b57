"""The campaign as a Spark job: a session tuned for this machine, seeds in waves, rows to Parquet.

Shape (docs/cluster.md has the picture): under the campaign id's lock, the driver computes which
seeds of `[seed_base, seed_base + runs)` have no row yet (resume), splits them into waves, and
for each wave runs one Spark job
`spark.range(len(wave), numPartitions=p).mapInArrow(partition_runner(spec, wave), SPARK_DDL)`
written into this invocation's own staging directory, then published into `<out>/runs/` by one
directory rename (store.py). So every wave is recorded exactly once or not at all: a
killed campaign loses only the wave in flight, and campaigns writing one `--out` at the same time
never share a temporary directory. At the end the campaign's small files are compacted and a
completeness check fails the command unless every seed of the range has exactly one row.
`mapInArrow` on `spark.range` runs on classic Spark and on Spark Connect alike.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kafkalog.conformance.campaign.aggregate import load_runs
from kafkalog.conformance.campaign.errors import (
    CampaignIncompleteError,
    CampaignOptionsError,
    JavaMissingError,
)
from kafkalog.conformance.campaign.store import (
    SUPERSEDES,
    CampaignLayout,
    CampaignLock,
    Store,
    campaign_params,
    check_params,
    is_local,
    local_seeds,
    new_attempt,
    publish,
    record_params,
    recover,
    store_for,
)
from kafkalog.conformance.campaign.task import TaskSpec
from kafkalog.conformance.campaign.waves import (  # noqa: F401 - re-exported for callers
    MAX_WAVE,
    WAVE_TARGET_S,
    ProgressFn,
    WaveDone,
    WaveFn,
    _cause,
    _next_wave_size,
    run_waves,
)

# Quiet log4j2: Spark counts PySpark as a shell and resets the root level to the
# PythonGatewayServer logger's level, so that logger must be set too (spark-and-machine-notes §2.4).
_LOG4J2_QUIET = """\
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{HH:mm:ss}} %p %c{{1}}: %m%n
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = {level}
"""
_FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"  # halves JVM CPU on 2 cores (notes §2.1)
ROWS_PER_FILE = 250_000  # compaction target: ~15 MB of Parquet per file


@dataclass(frozen=True)
class CampaignPlan:
    """What one `kafkalog campaign` invocation asks for."""

    spec: TaskSpec
    runs: int
    seed_base: int
    out: str  # a local directory or any Hadoop URI Spark can write (hdfs://, s3a://, ...)

    @property
    def runs_path(self) -> str:
        return self.out.rstrip("/") + "/runs"


@dataclass(frozen=True)
class CampaignProgress:
    """What a finished (or interrupted) invocation did."""

    already_recorded: int  # seeds of the range found in Parquet before this invocation
    executed: int  # runs executed and committed by this invocation
    waves: int
    wall_s: float  # from the first wave's start to the last wave's commit
    files: int = 0  # Parquet data files of the campaign after compaction


def require_java(minimum: int = 17) -> int:
    """The major version of the `java` Spark will use; raises JavaMissingError if absent or old."""
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home, "bin", "java")) if java_home else shutil.which("java")
    hint = "run `bash scripts/setup.sh` (or `apt-get install openjdk-17-jre-headless`)"
    if not java or not Path(java).exists():
        raise JavaMissingError(f"Spark needs Java {minimum}+ and no `java` was found; {hint}")
    probe = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    match = re.search(r'version "(\d+)(?:\.(\d+))?', probe.stderr + probe.stdout)
    major = 0 if match is None else int(match.group(2) if match.group(1) == "1" else match.group(1))
    if major < minimum:
        raise JavaMissingError(f"Spark needs Java {minimum}+ but {java} is Java {major}; {hint}")
    return major


def git_commit(root: Path | None = None) -> str:
    """The code's commit, computed on the driver and stamped on every row.

    `KAFKALOG_COMMIT` when set; else the source tree's `git rev-parse HEAD` (with `+dirty` when
    it has changes); else the commit `campaign_ship` baked into the zip it built (the
    spark-submit path, where the driver runs from the zip, outside any checkout); else "unknown".
    """
    if os.environ.get("KAFKALOG_COMMIT"):
        return os.environ["KAFKALOG_COMMIT"]
    found = _git_commit(root or Path(__file__).resolve().parents[2])
    if found == "unknown" and root is None:
        try:
            from kafkalog._build_commit import COMMIT  # type: ignore[import-not-found]
        except ImportError:
            return "unknown"
        return str(COMMIT)
    return found


def _git_commit(where: Path) -> str:
    """`git rev-parse HEAD` (+dirty) of the checkout at `where`, or "unknown"."""
    try:
        head = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        if head.returncode != 0:
            return "unknown"
        dirty = subprocess.run(
            ["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def build_session(
    master: str | None = "local[*]", *, verbose: bool = False, app_name: str = "kafkalog-campaign"
) -> Any:
    """A SparkSession tuned for short local campaigns (spark-and-machine-notes §2.4, §6).

    `master=None` keeps whatever spark-submit configured. Environment variables are set before the
    JVM starts, because the builder launches it and nothing read at startup can change later.
    """
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("PYTHONHASHSEED", "0")  # for children; executors get 0 from PySpark
    storage = os.environ.setdefault(
        "HYPOTHESIS_STORAGE_DIRECTORY", str(Path(tempfile.gettempdir(), "kafkalog-hypothesis"))
    )
    log4j = _write_log4j("INFO" if verbose else "ERROR")
    java_opts = f"-Dlog4j.configurationFile=file:{log4j} {_FAST_JVM}"
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # Aggregations run over thousands of rows: one shuffle partition per core, not 200.
        "spark.sql.shuffle.partitions": str(_cores(master)),
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",  # not legacy INT96
        "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
        "spark.driver.memory": os.environ.get("KAFKALOG_DRIVER_MEMORY", "2g"),
        "spark.driver.extraJavaOptions": java_opts,
        "spark.executor.extraJavaOptions": java_opts,
        "spark.executorEnv.HYPOTHESIS_STORAGE_DIRECTORY": storage,
        "spark.executorEnv.PYTHONHASHSEED": "0",
        "spark.speculation": "false",
    }
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("INFO" if verbose else "ERROR")
    return session


def _cores(master: str | None) -> int:
    """Cores of a local master (local[N]/local[*]); 2 when unknown (cluster or submitted)."""
    match = re.fullmatch(r"local\[(\*|\d+)(,\d+)?\]", master or "")
    if master == "local" or (match and match.group(1) == "1"):
        return 1
    if match and match.group(1) != "*":
        return max(1, int(match.group(1)))
    return max(2, os.cpu_count() or 2) if match else 2


def recorded_seeds(spark: Any, plan: CampaignPlan) -> set[int]:
    """Seeds already in Parquet for the campaign (an absent dataset records none)."""
    layout = CampaignLayout(plan.out, plan.spec.campaign_id)
    if is_local(plan.out):
        return set(local_seeds(layout) or ())
    frame = load_runs(spark, plan.runs_path, plan.spec.campaign_id, dedup=False)
    if frame is None:
        return set()
    return {row.seed for row in frame.select("seed").distinct().collect()}


def check_resume_compatible(spark: Any, plan: CampaignPlan, store: Store) -> None:
    """Refuse to mix runs of different parameters under one campaign id; record them once.

    The parameters live in `_campaigns/<id>/params.json`; a campaign written before that file
    existed is checked against its rows' steps/adapter/broken instead.
    """
    layout = CampaignLayout(plan.out, plan.spec.campaign_id)
    params = campaign_params(plan.spec)
    if not check_params(store, layout, params):
        return
    if is_local(plan.out) and local_seeds(layout) is None:
        frame = None  # a new campaign: no rows to compare, no Spark query
    else:
        frame = load_runs(spark, plan.runs_path, plan.spec.campaign_id, dedup=False)
    wanted = (plan.spec.steps, plan.spec.adapter or "builtin", plan.spec.broken)
    rows = [] if frame is None else frame.select("steps", "adapter", "broken").distinct().collect()
    for row in rows[:5]:
        found = (row.steps, row.adapter, row.broken)
        if found != wanted:
            raise CampaignOptionsError(
                f"campaign {plan.spec.campaign_id!r} was recorded with steps/adapter/broken "
                f"{found}, not {wanted}; resume with the same options or use a new --campaign-id",
                where=plan.runs_path,
            )
    record_params(store, layout, params)


def run_campaign(
    spark: Any,
    plan: CampaignPlan,
    on_progress: ProgressFn | None = None,
    first_wave: int = 0,
    on_wave: WaveFn | None = None,
) -> CampaignProgress:
    """Run every not-yet-recorded seed of the plan, wave by wave; returns what was done.

    Exactly once: under the campaign's lock, each wave is written to this invocation's staging
    directory and published by one rename (store.py); at the end the campaign's files
    are compacted and every seed of the range must have exactly one row, else
    CampaignIncompleteError. `first_wave` is the first wave's size (0: 4 runs per partition);
    later waves are sized from the measured rate to last about WAVE_TARGET_S each. `on_wave`
    hears of every published wave.
    """
    store = store_for(plan.out, spark)
    layout = CampaignLayout(plan.out, plan.spec.campaign_id)
    attempt = new_attempt()
    with CampaignLock(store, layout, attempt):
        recover(store, layout)
        check_resume_compatible(spark, plan, store)
        seeds = range(plan.seed_base, plan.seed_base + plan.runs)
        done = recorded_seeds(spark, plan)
        pending = [seed for seed in seeds if seed not in done]
        executed, waves, wall = run_waves(
            spark, plan, store, attempt, pending, on_progress, first_wave, on_wave
        )
        files = compact(spark, store, layout, attempt, len(done | set(pending)))
        check_complete(spark, plan)
        store.delete(f"{layout.meta}/staging")  # ours, and any a killed writer left
    return CampaignProgress(len(seeds) - len(pending), executed, waves, wall, files)


def compact(
    spark: Any, store: Store, layout: CampaignLayout, attempt: str, rows_hint: int = 0
) -> int:
    """Rewrite the campaign's rows as few, seed-sorted files; returns the data files after it.

    Runs only when there is more than one file; `rows_hint` (the distinct seeds, when the caller
    knows them) saves counting them. The new directory lists what it supersedes, is
    renamed in, and the superseded entries are deleted (recover() finishes that if killed).
    """
    entries = [name for name in store.children(layout.partition) if name[:1] not in "_."]
    files = sum(_data_files(store, f"{layout.partition}/{name}") for name in entries)
    if files <= 1:
        return files
    rows = load_runs(spark, layout.runs_path, layout.campaign_id)
    outputs = max(1, -(-(rows_hint or rows.count()) // ROWS_PER_FILE))
    staged = f"{layout.staging(attempt)}/compact"
    spark.sparkContext.setJobGroup(f"kafkalog-{layout.campaign_id}-{attempt}", "compaction")
    # One output needs no range sampling (an extra job): one partition, sorted.
    spread = rows.coalesce(1) if outputs == 1 else rows.repartitionByRange(outputs, "seed")
    spread.sortWithinPartitions("seed").write.partitionBy("campaign_id").parquet(staged)
    store.write_text(
        f"{staged}/campaign_id={layout.campaign_id}/{SUPERSEDES}", json.dumps({"dirs": entries})
    )
    publish(store, layout, staged, f"c-{attempt}")
    for name in entries:
        store.delete(f"{layout.partition}/{name}")
    return outputs


def check_complete(spark: Any, plan: CampaignPlan) -> None:
    """Every seed of the plan's range has exactly one row; else CampaignIncompleteError."""
    from pyspark.sql import functions as F

    last = plan.seed_base + plan.runs - 1
    if is_local(plan.out):  # pyarrow reads one column in milliseconds; no Spark job
        found = local_seeds(CampaignLayout(plan.out, plan.spec.campaign_id)) or []
        in_range = [seed for seed in found if plan.seed_base <= seed <= last]
        rows, seeds = len(in_range), len(set(in_range))
        frame = None
    else:
        frame = load_runs(spark, plan.runs_path, plan.spec.campaign_id, dedup=False)
        rows, seeds = 0, 0
    if frame is not None:
        got = (
            frame.where(F.col("seed").between(plan.seed_base, last))
            .agg(F.count("*").alias("rows"), F.countDistinct("seed").alias("seeds"))
            .first()
        )
        rows, seeds = int(got.rows), int(got.seeds)
    if rows != plan.runs or seeds != plan.runs:
        raise CampaignIncompleteError(
            f"campaign {plan.spec.campaign_id!r} has {rows} rows for {seeds} of the "
            f"{plan.runs} seeds {plan.seed_base}..{last}; resume with --campaign-id "
            f"{plan.spec.campaign_id} to run the missing ones",
            where=plan.runs_path,
        )


def with_commit(spec: TaskSpec) -> TaskSpec:
    """The spec stamped with the driver's git commit (executors may have no checkout)."""
    return replace(spec, commit=git_commit())


def _data_files(store: Store, path: str) -> int:
    """Parquet files in a published entry (a directory, or a loose file of the old layout)."""
    if path.endswith(".parquet"):
        return 1
    return sum(1 for name in store.children(path) if name.endswith(".parquet"))


def _write_log4j(level: str) -> Path:
    """Write the quiet log4j2 file once per process and return its path."""
    path = Path(tempfile.gettempdir(), f"kafkalog-log4j2-{level.lower()}.properties")
    text = _LOG4J2_QUIET.format(level=level.lower())
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path
