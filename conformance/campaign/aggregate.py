"""A campaign's summary, computed in Spark from its Parquet rows alone.

Everything the report and the terminal summary show comes from here: outcome counts, failure
buckets (count, first seed, the shortest trace), coverage per action and per spec rule, the
run-time distribution and the throughput over the campaign. Each aggregation is one small Spark
query over the de-duplicated rows; only the aggregated results (a few hundred values, plus one
trace per bucket) come back to the driver.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from kafkalog.conformance.campaign.errors import CampaignDataError
from kafkalog.conformance.campaign.kafka_summary import summary_fields, unexplained_images
from kafkalog.conformance.campaign.task import SPARK_DDL
from kafkalog.conformance.check.combos import rule_pairs
from kafkalog.conformance.check.coverage import all_rule_ids

HISTOGRAM_BINS = 20
THROUGHPUT_POINTS = 40


@dataclass(frozen=True)
class Bucket:
    """Failures sharing one (outcome, signature)."""

    outcome: str
    signature: str
    count: int
    first_seed: int
    shortest_seed: int  # the seed whose trace has the fewest steps (ties: lowest seed)
    shortest_steps: int | None
    trace_jsonl: str | None
    example_error: str | None  # the shortest run's `error` column (adapter errors)
    rules: tuple[str, ...] = ()  # rule IDs the bucket's divergences were caught by
    labels: tuple[str, ...] = ()  # Kafka divergences: "label (runs)" each (kafka_summary.py)


@dataclass(frozen=True)
class RuntimeStats:
    """Run durations in seconds; `histogram` is (bin start, bin end, runs) in equal-width bins."""

    mean: float
    p50: float
    p90: float
    p99: float
    max: float
    histogram: tuple[tuple[float, float, int], ...]


@dataclass(frozen=True)
class CampaignSummary:
    """The whole report's data; `asdict` of it is `summary.json`."""

    campaign_id: str
    runs: int
    duplicates_dropped: int
    outcomes: dict[str, int]
    params: dict[str, Any]  # steps, adapter, broken, families, seeds, versions, commits
    steps_total: int
    run_time_total_s: float
    wall_s: float  # first start to last finish (includes pauses between resumed invocations)
    buckets: tuple[Bucket, ...]
    actions: tuple[tuple[str, int, int], ...]  # (action, executions, runs using it), most first
    rules: tuple[tuple[str, int], ...]  # (rule id, runs exercising it), most first
    runtime: RuntimeStats
    throughput: tuple[tuple[float, float], ...]  # (seconds since start, runs/s in that bin)
    families: dict[str, int] = field(default_factory=dict)
    rules_known: int = 0  # rule IDs defined in specs/log.md (0 when the spec is not at hand)
    rules_never: tuple[str, ...] = ()  # defined there but exercised by no run of the campaign
    # (fault model, crash points explored, runs that crashed under it), most first
    crashes: tuple[tuple[str, int, int], ...] = ()
    crash_images: int = 0  # distinct crash images loaded, summed over runs
    crash_cpu_s: float = 0.0  # CPU seconds the runs spent in crash steps, sweeps included
    crash_idempotence: int = 0  # idempotence checks (KL-CRASH-7), summed over runs
    rule_pairs: int = 0  # distinct pairs of rules met in one run (combos.py)
    rule_pairs_possible: int = 0  # C(n, 2) over the rules not exercised by every run
    profiles: dict[str, int] = field(default_factory=dict)  # runs per Kafka profile
    crash_modes: dict[str, int] = field(default_factory=dict)  # runs per crash mode
    crash_in_load: int = 0  # crash points inside loads (KL-CRASH-14), summed over runs
    crash_in_clean: int = 0  # crash points inside cleaning passes (KL-CRASH-15), summed
    # (profile, rule pairs met in one run of that profile, pairs possible), oldest profile first
    rule_pairs_by_profile: tuple[tuple[str, int, int], ...] = ()
    kafka_labels: dict[str, int] = field(default_factory=dict)  # Kafka divergences per label
    recorded: int = 0  # of them, recorded findings and adapter limits (not failures)
    kafka_loader: dict[str, Any] = field(default_factory=dict)  # kafka_summary.loader_totals

    @property
    def failures(self) -> int:
        """Runs that did not conform and are no recorded Kafka finding or adapter limit, plus
        crash images Kafka's loader put outside the kafka-mode set in no triaged gap class."""
        unexplained = unexplained_images(self.kafka_loader)
        return self.runs - self.outcomes.get("conformed", 0) - self.recorded + unexplained

    @property
    def crash_points(self) -> int:
        return sum(total for _, total, _ in self.crashes)

    def crash_rates(self) -> tuple[float, float]:
        """Crash points per minute per core: of the CPU time spent in crash steps, and of the
        campaign's whole run time (each run is single-threaded, so run seconds are core seconds)."""
        of_crash = 60.0 * self.crash_points / self.crash_cpu_s if self.crash_cpu_s else 0.0
        of_runs = 60.0 * self.crash_points / self.run_time_total_s if self.run_time_total_s else 0.0
        return of_crash, of_runs

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> CampaignSummary:
        """The summary `to_json` wrote (summary.json), with its tuples restored."""
        data = json.loads(text)
        runtime = data["runtime"]
        runtime["histogram"] = tuple(tuple(entry) for entry in runtime["histogram"])
        buckets = tuple(
            Bucket(**(bucket | {"rules": tuple(bucket.get("rules", ())),
                                "labels": tuple(bucket.get("labels", ()))}))
            for bucket in data["buckets"]
        )
        return cls(
            **data
            | {
                "buckets": buckets,
                "runtime": RuntimeStats(**runtime),
                "actions": tuple(tuple(entry) for entry in data["actions"]),
                "rules": tuple(tuple(entry) for entry in data["rules"]),
                "throughput": tuple(tuple(entry) for entry in data["throughput"]),
                "rules_never": tuple(data.get("rules_never", ())),
                "rule_pairs_by_profile": tuple(
                    tuple(entry) for entry in data.get("rule_pairs_by_profile", ())),
            }
        )


def load_runs(spark: Any, runs_path: str, campaign_id: str | None, *, dedup: bool = True) -> Any:
    """The campaign's rows (all campaigns' if None), or None when the dataset does not exist.

    The schema is given explicitly, so a numeric-looking campaign id stays a string and files of
    another layout fail loudly. `dedup` keeps one row per (campaign_id, seed): runs are
    deterministic, so any copy of a retried or speculative run is as good as another.
    """
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    # One campaign is read from its own partition directory only, so listing never races with
    # other campaigns publishing or compacting under the same dataset.
    path = runs_path if campaign_id is None else f"{runs_path}/campaign_id={campaign_id}"
    try:
        frame = spark.read.schema(SPARK_DDL).option("basePath", runs_path).parquet(path)
    except AnalysisException as error:
        if "PATH_NOT_FOUND" in str(error) or "Path does not exist" in str(error):
            return None
        raise CampaignDataError(f"cannot read campaign rows: {error}", where=runs_path) from None
    if campaign_id is not None:
        frame = frame.where(F.col("campaign_id") == campaign_id)
    return frame.dropDuplicates(["campaign_id", "seed"]) if dedup else frame


def campaign_ids(spark: Any, runs_path: str) -> list[str]:
    """Every campaign id recorded in the dataset, oldest first."""
    from pyspark.sql import functions as F

    frame = load_runs(spark, runs_path, None, dedup=False)
    if frame is None:
        raise CampaignDataError("no campaign rows found (expected <dir>/runs/)", where=runs_path)
    rows = frame.groupBy("campaign_id").agg(F.min("started_at").alias("t")).orderBy("t").collect()
    return [row.campaign_id for row in rows]


def summarize(spark: Any, runs_path: str, campaign_id: str) -> CampaignSummary:
    """Aggregate one campaign's rows; raises CampaignDataError when it has none."""
    raw = load_runs(spark, runs_path, campaign_id, dedup=False)
    if raw is None:
        raise CampaignDataError("no campaign rows found", where=runs_path)
    frame = raw.dropDuplicates(["campaign_id", "seed"]).cache()
    try:
        totals = _totals(frame)
        if totals["runs"] == 0:
            raise CampaignDataError(f"campaign {campaign_id!r} has no rows", where=runs_path)
        rules = rule_coverage(frame)
        kafka = summary_fields(frame, failure_buckets(frame))
        return CampaignSummary(
            campaign_id=campaign_id,
            runs=totals["runs"],
            duplicates_dropped=raw.count() - totals["runs"],
            outcomes=_counts(frame, "outcome"),
            params=_params(frame),
            steps_total=totals["steps"],
            run_time_total_s=totals["run_time"],
            wall_s=totals["wall"],
            actions=action_coverage(frame),
            rules=rules,
            runtime=runtime_stats(frame),
            throughput=throughput(frame, totals["wall"]),
            families=_counts(frame, "config_family"),
            crashes=crash_coverage(frame),
            crash_images=totals["crash_images"],
            crash_cpu_s=totals["crash_s"],
            crash_idempotence=totals["crash_idempotence"],
            **_never_exercised(rules),
            **_pair_coverage(frame),
            **_variety(frame, totals),
            **kafka,
        )
    finally:
        frame.unpersist()


def failure_buckets(frame: Any) -> tuple[Bucket, ...]:
    """One bucket per (outcome, bucket key) of non-conformed runs, biggest first.

    The key of a divergence is its signature without the rule ID (`action|model|impl|what`),
    the same notion of "same bug" the minimiser uses (`minimise.same_bug`): one injected bug is
    often caught by different rules' checks from run to run, and splitting it by rule made two
    buckets of one cause. The rules seen are kept in `Bucket.rules`. Adapter errors are keyed by
    their (normalised) signature.
    """
    from pyspark.sql import functions as F

    signature = F.coalesce("signature", F.lit("(none)"))
    parts = F.split(signature, r"\|")
    diverged = (F.col("outcome") == "diverged") & (F.size(parts) >= 5)
    key = F.when(diverged, F.array_join(F.slice(parts, 1, 4), "|")).otherwise(signature)
    rule = F.when(diverged, F.element_at(parts, -1))
    shortest_key = F.struct(F.coalesce("trace_steps", F.lit(2**31 - 1)), F.col("seed"))
    rows = (
        frame.where(F.col("outcome") != "conformed")
        .groupBy("outcome", key.alias("signature"))
        .agg(
            F.count("*").alias("count"),
            F.min("seed").alias("first_seed"),
            F.sort_array(F.collect_set(rule)).alias("rules"),
            F.min_by(F.struct("seed", "trace_steps", "trace_jsonl", "error"), shortest_key).alias(
                "shortest"
            ),
        )
        .orderBy(F.desc("count"), "outcome", "signature")
        .collect()
    )
    return tuple(
        Bucket(
            outcome=row.outcome,
            signature=row.signature,
            count=row["count"],
            first_seed=row.first_seed,
            shortest_seed=row.shortest.seed,
            shortest_steps=row.shortest.trace_steps,
            trace_jsonl=row.shortest.trace_jsonl,
            example_error=row.shortest.error,
            rules=tuple(row.rules),
        )
        for row in rows
    )


def action_coverage(frame: Any) -> tuple[tuple[str, int, int], ...]:
    """(action, total executions, runs that executed it at least once), most executed first."""
    from pyspark.sql import functions as F

    rows = (
        frame.select(F.explode("actions").alias("action", "n"))
        .groupBy("action")
        .agg(F.sum("n").alias("total"), F.count_if(F.col("n") > 0).alias("runs"))
        .orderBy(F.desc("total"), "action")
        .collect()
    )
    return tuple((row.action, int(row.total), int(row.runs)) for row in rows)


def crash_coverage(frame: Any) -> tuple[tuple[str, int, int], ...]:
    """(fault model, crash points explored, runs that crashed under it), most explored first.

    Rows written before the `crashes` column existed read it as null and count nothing.
    """
    from pyspark.sql import functions as F

    rows = (
        frame.where(F.col("crashes").isNotNull())
        .select(F.explode("crashes").alias("fault", "n"))
        .groupBy("fault")
        .agg(F.sum("n").alias("total"), F.count_if(F.col("n") > 0).alias("runs"))
        .orderBy(F.desc("total"), "fault")
        .collect()
    )
    return tuple((row.fault, int(row.total), int(row.runs)) for row in rows)


def rule_coverage(frame: Any) -> tuple[tuple[str, int], ...]:
    """(rule id, runs exercising it), most exercised first."""
    from pyspark.sql import functions as F

    rows = frame.select(F.explode("rules").alias("rule")).groupBy("rule").count().collect()
    ordered = sorted(rows, key=lambda row: (-int(row["count"]), natural_key(row.rule)))
    return tuple((row.rule, int(row["count"])) for row in ordered)


def natural_key(text: str) -> tuple[Any, ...]:
    """Sort key in which numbers compare as numbers: KL-INV-2 before KL-INV-10."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def natural_sorted(items: Any) -> list[str]:
    """`items` in natural order (rule IDs: KL-INV-1, KL-INV-2, ..., KL-INV-10)."""
    return sorted(items, key=natural_key)


def runtime_stats(frame: Any) -> RuntimeStats:
    """Mean, percentiles, max and an equal-width histogram of run durations."""
    from pyspark.sql import functions as F

    stats = frame.agg(
        F.mean("duration_s").alias("mean"),
        F.percentile_approx("duration_s", [0.5, 0.9, 0.99], 10000).alias("p"),
        F.max("duration_s").alias("max"),
    ).first()
    top = float(stats["max"] or 0.0)
    width = top / HISTOGRAM_BINS if top > 0 else 1.0
    index = F.least(F.floor(F.col("duration_s") / width), F.lit(HISTOGRAM_BINS - 1))
    counts = {
        int(row.bin): int(row["count"])
        for row in frame.groupBy(index.alias("bin")).count().collect()
    }
    histogram = tuple((b * width, (b + 1) * width, counts.get(b, 0)) for b in range(HISTOGRAM_BINS))
    p50, p90, p99 = (float(v) for v in stats.p)
    return RuntimeStats(float(stats["mean"]), p50, p90, p99, top, histogram)


def throughput(frame: Any, wall_s: float) -> tuple[tuple[float, float], ...]:
    """Runs finished per second, in up to THROUGHPUT_POINTS bins since the first run started."""
    from pyspark.sql import functions as F

    width = max(1.0, math.ceil(wall_s / THROUGHPUT_POINTS))
    start = frame.agg(F.min(F.unix_micros("started_at")).alias("t0")).first().t0
    since = (F.unix_micros("finished_at") - F.lit(start)) / 1e6
    rows = frame.groupBy(F.floor(since / width).alias("bin")).count().collect()
    counts = {int(row.bin): int(row["count"]) for row in rows}
    # Bins without a finished run are zeros, not gaps, so pauses show as such.
    return tuple((b * width, counts.get(b, 0) / width) for b in range(max(counts, default=-1) + 1))


def _pair_coverage(frame: Any) -> dict[str, int]:
    """Rule pairs met in one run, from the distinct rule sets of the campaign's runs."""
    rows = frame.select("rules").distinct().collect()
    pairs = rule_pairs(row.rules or () for row in rows)
    return {"rule_pairs": pairs.covered, "rule_pairs_possible": pairs.possible}


def _variety(frame: Any, totals: dict[str, Any]) -> dict[str, Any]:
    """Runs per profile and crash mode, and rule pairs met per profile (variety.py's cycles)."""
    profiles = _counts(frame.fillna({"kafka_version": "unrecorded"}), "kafka_version")
    by_profile = []
    for profile in natural_sorted(profiles):
        rows = frame.where(frame.kafka_version == profile).select("rules").distinct().collect()
        pairs = rule_pairs(row.rules or () for row in rows)
        by_profile.append((profile, pairs.covered, pairs.possible))
    return {
        "profiles": profiles,
        "crash_modes": _counts(frame.fillna({"crash_mode": "unrecorded"}), "crash_mode"),
        "crash_in_load": totals["crash_in_load"],
        "crash_in_clean": totals["crash_in_clean"],
        "rule_pairs_by_profile": tuple(by_profile),
    }


def _never_exercised(rules: tuple[tuple[str, int], ...]) -> dict[str, Any]:
    """The spec's rule IDs (specs/log.md, read on the driver) that no run exercised."""
    known = all_rule_ids()
    seen = {rule for rule, _ in rules}
    return {"rules_known": len(known), "rules_never": tuple(natural_sorted(known - seen))}


def _totals(frame: Any) -> dict[str, Any]:
    """Run count, steps, summed run time and wall span of the rows."""
    from pyspark.sql import functions as F

    row = frame.agg(
        F.count("*").alias("runs"),
        F.sum("steps_executed").alias("steps"),
        F.sum("duration_s").alias("run_time"),
        F.sum("crash_images").alias("crash_images"),
        F.sum("crash_s").alias("crash_s"),
        F.sum("crash_idempotence").alias("crash_idempotence"),
        F.sum("crash_in_load").alias("crash_in_load"),
        F.sum("crash_in_clean").alias("crash_in_clean"),
        (F.unix_micros(F.max("finished_at")) - F.unix_micros(F.min("started_at"))).alias("span"),
    ).first()
    return {
        "runs": int(row.runs),
        "steps": int(row.steps or 0),
        "run_time": float(row.run_time or 0.0),
        "wall": float(row.span or 0) / 1e6,
        "crash_images": int(row.crash_images or 0),
        "crash_s": float(row.crash_s or 0.0),
        "crash_idempotence": int(row.crash_idempotence or 0),
        "crash_in_load": int(row.crash_in_load or 0),
        "crash_in_clean": int(row.crash_in_clean or 0),
    }


def _counts(frame: Any, column: str) -> dict[str, int]:
    """Rows per distinct value of one string column."""
    return {row[column]: int(row["count"]) for row in frame.groupBy(column).count().collect()}


def _params(frame: Any) -> dict[str, Any]:
    """The campaign's parameters as recorded in its rows (lists when a resume changed them)."""
    from pyspark.sql import functions as F

    row = frame.agg(
        F.sort_array(F.collect_set("steps")).alias("steps"),
        F.sort_array(F.collect_set("adapter")).alias("adapter"),
        F.sort_array(F.collect_set("broken")).alias("broken"),
        F.sort_array(F.collect_set("kafkalog_version")).alias("versions"),
        F.sort_array(F.collect_set("kafkalog_commit")).alias("commits"),
        F.min("seed").alias("seed_min"),
        F.max("seed").alias("seed_max"),
    ).first()
    return {key: _single(row[key]) for key in row.asDict()}


def _single(value: Any) -> Any:
    """A one-element list as its element (the usual case), an empty one as None."""
    if isinstance(value, list) and len(value) <= 1:
        return value[0] if value else None
    return value
