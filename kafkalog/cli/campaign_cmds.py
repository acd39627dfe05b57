"""`kafkalog campaign` and `kafkalog report`: conformance campaigns on Spark.

`campaign` starts Spark itself (local mode by default, any `--master` otherwise; under
`spark-submit` it uses the submitted master), runs the seeds not yet recorded for the campaign id,
then aggregates, writes the report and prints the summary. Rows are specs/campaign-schema.md.
Exit status: 0 when every run of the campaign conformed, 1 when any diverged or hit an adapter
error, 2 for a usage error. In a `--kafka` campaign a divergence that is a recorded Kafka finding
or adapter limit (conformance/jvm/findings.py) is labelled so and does not fail it; a NEW one, or
a crash image Kafka's loader put outside the kafka-mode set in no triaged class, does.
`report` rebuilds the same report from the Parquet rows alone.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from kafkalog.conformance.campaign.errors import CampaignJobError, CampaignOptionsError

_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


@click.command()
@click.option(
    "--runs",
    type=click.IntRange(min=1),
    default=200,
    show_default=True,
    help="Seeds to run: seed-base .. seed-base + runs - 1.",
)
@click.option(
    "--steps",
    type=click.IntRange(min=1),
    default=60,
    show_default=True,
    help="State-machine steps per run.",
)
@click.option(
    "--master",
    default="local[*]",
    show_default=True,
    help="Spark master (ignored under spark-submit, which sets its own).",
)
@click.option("--adapter", default=None, help="Adapter command (default: the built-in log).")
@click.option("--kafka", "kafka_release", default=None, metavar="VERSION",
              help="Check Apache Kafka's own log of this release or line through the JVM "
                   "adapter (adapters/kafka/), against that release's model profile.")
@click.option("--broken", default=None,
              help="Run against a broken implementation (broken/registry.py).")
@click.option("--seed-base", type=click.IntRange(min=0), default=0, show_default=True)
@click.option(
    "--crash-weight",
    type=click.IntRange(min=0, max=8),
    default=2,
    show_default=True,
    help="Copies of the crash rule among the state machine's rules (0: no crashes). Two by "
    "default: a 1,000-run campaign then draws about 1,760 crash steps (976 with one), each "
    "sweeping about 70 crash points.",
)
@click.option(
    "--crash-sweep/--no-crash-sweep",
    default=True,
    show_default=True,
    help="At each crash, also load and check every crash point of the last action under every "
    "fault model (conformance/crash/sweep.py).",
)
@click.option(
    "--config-mix",
    default=None,
    help="Config families with weights, e.g. 'tiny=3,size_retention' (default: the runner's mix).",
)
@click.option(
    "--out",
    default="out/campaigns",
    show_default=True,
    help="Directory (or Hadoop URI) for the Parquet rows and the report.",
)
@click.option(
    "--kafka-version",
    default="all",
    show_default=True,
    help="The Kafka profile runs are checked against (KL-VERSION-1), or 'all' to cycle every "
    "profile by seed (the built-in implementation only; an adapter or --broken run checks the "
    "newest release unless one is named).",
)
@click.option(
    "--crash-mode",
    type=click.Choice(["strict", "kafka", "both"]),
    default="both",
    show_default=True,
    help="strict: kafkalog's promises; kafka: the built-in implementation with Kafka's fsync "
    "choices against the model's kafka allowed set; both: one run in four in kafka mode and one "
    "strict run in a hundred sweeping crashes inside loads (the built-in implementation only). "
    "With --kafka, the strict runs are Kafka's log in lockstep with the model, and the kafka-mode "
    "runs are built-in crash runs whose crash images Kafka's own LogLoader loads too.",
)
@click.option("--campaign-id", default=None, help="Resume or extend this campaign.")
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0.1),
    default=120.0,
    show_default=True,
    help="Seconds per run; then the run stops and reports what it found so far.",
)
@click.option(
    "--report-dir",
    default=None,
    help="Local directory for the report when --out is a URI (default: --out).",
)
@click.option(
    "--run-fn",
    default=None,
    hidden=True,
    help="module:function standing in for run_seed (pipeline tests, benchmarks).",
)
@click.option("--verbose", is_flag=True, help="Show Spark's own logging.")
def campaign(**options: Any) -> None:
    """Run a conformance campaign: many seeded runs on Spark, rows in Parquet, a report."""
    from kafkalog.conformance.campaign import preflight

    preflight.require_spark_extra("campaign")
    console = _console()
    plan = _plan(options)
    report_root = _report_root(options["out"], options["report_dir"])
    if "PYSPARK_GATEWAY_PORT" not in os.environ:  # under spark-submit its master wins
        preflight.check_master(options["master"])
    preflight.check_out(plan.out)
    preflight.check_adapter(plan.spec.adapter)
    recorded = preflight.recorded_summary(plan, report_root)
    if recorded is not None:  # every seed recorded, compacted and reported: no Spark at all
        _show_recorded(console, recorded, report_root)
        return
    from kafkalog.conformance.campaign.job import require_java, run_campaign

    require_java()
    spark = _start_spark(console, options["master"], options["verbose"])
    console.print(
        f"campaign [bold]{plan.spec.campaign_id}[/]: seeds {plan.seed_base}.."
        f"{plan.seed_base + plan.runs - 1}, {plan.spec.steps} steps, commit "
        f"{plan.spec.commit}, rows in {escape(plan.out)}"
    )
    try:
        with _progress(console) as (on_progress, on_wave):
            done = run_campaign(spark, plan, on_progress, on_wave=on_wave)
    except KeyboardInterrupt:
        _silence(spark)  # the JVM would log every task it aborts while shutting down
        console.print(
            f"interrupted: finished waves are kept; resume with --campaign-id "
            f"{plan.spec.campaign_id}"
        )
        raise
    rate = done.executed / done.wall_s if done.wall_s > 0 else 0.0
    console.print(
        f"{done.executed} runs in {done.wall_s:.1f} s ({rate:.1f} runs/s, "
        f"{done.waves} waves); {done.already_recorded} were already recorded; "
        f"{done.files} Parquet file(s)"
    )
    summary = _report(console, spark, plan.runs_path, plan.spec.campaign_id, report_root)
    if summary.failures:
        # SystemExit, not ctx.exit: the entry point runs click with standalone_mode=False, where
        # ctx.exit's code would be returned and dropped instead of becoming the exit status.
        sys.exit(1)


def _console() -> Console:
    """rich's console; in logs and pipes, lines are never wrapped (they would break grep)."""
    console = Console()
    return console if console.is_terminal else Console(soft_wrap=True)


def _show_recorded(console: Console, summary: Any, report_root: Path) -> None:
    """Print a finished campaign's saved summary (the no-op rerun); exit 1 if it had failures."""
    from kafkalog.conformance.campaign.report import campaign_dir, render_terminal

    console.print(
        f"campaign [bold]{summary.campaign_id}[/]: nothing to run, all {summary.runs} seeds are "
        "recorded (Spark not started)"
    )
    render_terminal(summary, console)
    console.print(f"report: {escape(str(campaign_dir(report_root, summary.campaign_id)))}")
    if summary.failures:
        sys.exit(1)


@click.command()
@click.argument("campaign_dir")
@click.option("--campaign-id", default=None, help="Only this campaign (default: every one).")
@click.option(
    "--report-dir", default=None, help="Local report directory when CAMPAIGN_DIR is a URI."
)
@click.option("--master", default="local[*]", show_default=True)
@click.option("--verbose", is_flag=True, help="Show Spark's own logging.")
def report(
    campaign_dir: str, campaign_id: str | None, report_dir: str | None, master: str, verbose: bool
) -> None:
    """Rebuild a campaign's report from its Parquet rows (CAMPAIGN_DIR is the campaign's --out)."""
    from kafkalog.conformance.campaign.preflight import check_master, require_spark_extra

    require_spark_extra("report")
    from kafkalog.conformance.campaign.aggregate import campaign_ids
    from kafkalog.conformance.campaign.job import require_java

    local = Path(campaign_dir)
    if not (local / "runs").is_dir() and (local.parent / "runs").is_dir():
        campaign_dir, campaign_id = str(local.parent), campaign_id or local.name  # <out>/<id>
    root = _report_root(campaign_dir, report_dir)
    console = _console()
    check_master(master)
    require_java()
    spark = _start_spark(console, master, verbose)
    runs_path = campaign_dir.rstrip("/") + "/runs"
    for each in [campaign_id] if campaign_id else campaign_ids(spark, runs_path):
        _report(console, spark, runs_path, each, root)


def _variety(options: dict[str, Any]) -> Any:
    """The profile and crash-mode cycles of the campaign's runs (conformance/campaign/variety.py),
    or None for a stand-in run function.

    Only the built-in implementation cycles: an adapter or a broken implementation is checked
    against one profile in strict mode, so a difference between profiles is not mistaken for
    its bug. Raises CampaignOptionsError for an unknown profile or a mode it cannot run in.
    """
    from kafkalog.conformance.campaign.variety import (
        IN_LOAD_EVERY,
        KAFKA_MODE_EVERY,
        Variety,
    )
    from kafkalog.model.errors import IllegalArgumentError
    from kafkalog.model.versions import DEFAULT_PROFILE, PROFILES, check_profile

    if options["run_fn"]:  # a stand-in run function (pipeline tests) has no profiles or modes
        return None
    builtin = options["adapter"] is None and options["broken"] is None
    # A --kafka campaign's kafka-mode runs are built-in crash runs whose images Kafka's loader
    # loads too (conformance/campaign/kafka_runs.py).
    kafka = options.get("kafka_profile") is not None
    version, mode = options["kafka_version"], options["crash_mode"]
    if version == "all" and kafka:
        version = options["kafka_profile"]
    if not builtin and not kafka and mode != "both" and mode != "strict":
        raise CampaignOptionsError("kafka crash mode runs the built-in implementation only",
                                   where=f"--crash-mode {mode}")
    if version == "all":
        profiles = tuple(PROFILES) if builtin else (DEFAULT_PROFILE,)
    else:
        try:
            check_profile(version)
        except IllegalArgumentError as error:
            raise CampaignOptionsError(str(error), where=f"--kafka-version {version}") from None
        profiles = (version,)
    if (not builtin and not kafka) or mode == "strict":
        return Variety(profiles)
    if mode == "kafka":
        return Variety(profiles, kafka_mode_every=1)
    crashes_in_load = builtin and options["crash_sweep"] and options["crash_weight"]
    in_load = IN_LOAD_EVERY if crashes_in_load else 0
    return Variety(profiles, kafka_mode_every=KAFKA_MODE_EVERY, in_load_every=in_load)


def _plan(options: dict[str, Any]) -> Any:
    """The campaign plan from the command's options; raises typed errors for bad ones."""
    from kafkalog.conformance.campaign.job import CampaignPlan, with_commit
    from kafkalog.conformance.campaign.store import check_campaign_id
    from kafkalog.conformance.campaign.task import TaskSpec, parse_config_mix

    campaign_id = options["campaign_id"] or datetime.now(UTC).strftime("c%Y%m%d-%H%M%S")
    if not _ID_PATTERN.fullmatch(campaign_id):
        raise CampaignOptionsError(
            "a campaign id is 1-100 letters, digits, '_', '.' or '-' (it names a directory)",
            where=f"--campaign-id {campaign_id!r}",
        )
    check_campaign_id(campaign_id)
    if options.get("kafka_release"):
        if options["adapter"] is not None or options["broken"] is not None:
            raise CampaignOptionsError("--kafka checks Kafka's own log through its JVM adapter; "
                                       "it replaces --adapter and --broken",
                                       where=f"--kafka {options['kafka_release']}")
        from kafkalog.cli.conformance_cmds import kafka_adapter
        from kafkalog.conformance.jvm.kafka_adapter import resolve_version

        options["adapter"], options["kafka_profile"] = kafka_adapter(options["kafka_release"])
        sweeps = options["crash_sweep"] and options["crash_weight"]
        if sweeps and options["crash_mode"] != "strict":
            options["kafka_loader"] = resolve_version(options["kafka_release"])
    _check_broken(options["broken"], options["adapter"])
    run_fn, known, default_mix = _run_function(options["run_fn"], options["config_mix"])
    spec = TaskSpec(
        campaign_id=campaign_id,
        steps=options["steps"],
        families=parse_config_mix(options["config_mix"], known, default_mix),
        adapter=options["adapter"],
        broken=options["broken"],
        time_limit_s=options["time_limit"],
        run_fn=run_fn,
        crash_weight=options["crash_weight"],
        crash_sweep=options["crash_sweep"],
        variety=_variety(options),
        kafka_loader=options.get("kafka_loader"),
    )
    return CampaignPlan(with_commit(spec), options["runs"], options["seed_base"], options["out"])


def _check_broken(broken: str | None, adapter: str | None) -> None:
    """A --broken name must exist and applies to the built-in implementation only."""
    if broken is None:
        return
    if adapter is not None:
        raise CampaignOptionsError(
            "--broken patches the built-in implementation; it cannot be combined with --adapter",
            where=f"--broken {broken}",
        )
    from kafkalog.conformance.broken.registry import broken_class

    broken_class(broken)  # raises UnknownBrokenImplError naming the known ones


def _run_function(name: str | None, mix: str | None) -> tuple[Any, list[str], tuple[str, ...]]:
    """(run function or None for run_seed, the config families it knows, its default mix)."""
    if name is None:
        from kafkalog.conformance.check.runner import CONFIG_FAMILIES
        from kafkalog.conformance.gen.configs import CAMPAIGN_MIX

        return None, list(CONFIG_FAMILIES), CAMPAIGN_MIX
    module, _, attribute = name.partition(":")
    try:
        function = getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError) as error:
        raise CampaignOptionsError(f"cannot load {name!r}: {error}", where="--run-fn") from None
    names = [entry.partition("=")[0].strip() for entry in (mix or "default").split(",")]
    return function, names, tuple(names)


def _report_root(out: str, report_dir: str | None) -> Path:
    """The local directory for report files: --report-dir, or --out when it is a local path."""
    if report_dir:
        return Path(report_dir)
    scheme = re.match(r"([a-z][a-z0-9+.-]*)://", out)
    if scheme and scheme.group(1) != "file":
        raise CampaignOptionsError(
            "the campaign data is at a URI, so give --report-dir for the report files", where=out
        )
    return Path(out.removeprefix("file://"))


def _start_spark(console: Console, master: str, verbose: bool) -> Any:
    """A session; under spark-submit (a gateway is already up) its master wins over --master."""
    from kafkalog.conformance.campaign.job import build_session

    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
    started = time.monotonic()
    with console.status(f"starting Spark ({'spark-submit' if submitted else master})"):
        try:
            spark = build_session(None if submitted else master, verbose=verbose)
        except Exception as error:  # Py4J/Java errors: one line, not two tracebacks
            from kafkalog.conformance.campaign.job import _cause

            raise CampaignJobError(f"Spark did not start: {_cause(error)}", where=master) from None
    console.print(
        f"Spark {spark.version} on {spark.sparkContext.master} "
        f"ready in {time.monotonic() - started:.1f} s"
    )
    return spark


def _silence(spark: Any) -> None:
    """Turn Spark's logging off (best effort: the gateway may already be gone)."""
    with suppress(Exception):
        spark.sparkContext.setLogLevel("OFF")


@contextmanager
def _progress(console: Console) -> Iterator[tuple[Any, Any]]:
    """(on_progress, on_wave) callbacks: a live bar on a terminal, one line per wave otherwise.

    Logs and CI output get a line per published wave (runs, time, rate, total so far), which is
    also the unit a killed campaign can lose.
    """
    if not console.is_terminal:

        def line(wave: Any) -> None:
            rate = wave.runs / wave.wall_s if wave.wall_s > 0 else 0.0
            console.print(
                f"wave {wave.number}: {wave.runs} runs in {wave.wall_s:.1f} s ({rate:.1f} runs/s), "
                f"{wave.executed}/{wave.total} done",
                highlight=False,
            )

        yield None, line
        return
    columns = (
        TextColumn("runs"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console) as progress:
        task = progress.add_task("runs", total=None)
        yield (lambda n, total: progress.update(task, completed=n, total=total)), None


def _report(console: Console, spark: Any, runs_path: str, campaign_id: str, root: Path) -> Any:
    """Aggregate one campaign, write its report files and print its summary."""
    from kafkalog.conformance.campaign.aggregate import summarize
    from kafkalog.conformance.campaign.report import render_terminal, write_report

    summary = summarize(spark, runs_path, campaign_id)
    paths = write_report(summary, root)
    render_terminal(summary, console, paths)
    console.print(f"report: {escape(str(paths['report']))}")
    return summary


@click.command()
@click.argument("sources", nargs=-1, required=True)
@click.option("--out", required=True, help="New local directory for the Parquet rows and report.")
@click.option("--master", default="local[*]", show_default=True)
@click.option("--deep", is_flag=True, help="Also decode every record of every batch.")
@click.option(
    "--workers", type=click.IntRange(min=1), default=None, help="Cores (local masters only)."
)
@click.option("--audit-id", default=None, help="Names this audit in the rows (default: a time).")
@click.option("--split-mib", type=click.IntRange(min=1), default=256, show_default=True,
              help="Split a partition with more .log MiB than this into tasks of this size.")
@click.option("--split-segments", type=click.IntRange(min=1), default=100, show_default=True,
              help="Split a partition with more segments than this into tasks of this many.")
@click.option("--verbose", is_flag=True, help="Show Spark's own logging.")
def audit(sources: tuple[str, ...], out: str, master: str, deep: bool, workers: int | None,
          audit_id: str | None, split_mib: int, split_segments: int,
          verbose: bool) -> None:  # fmt: skip
    """Verify many Kafka log directories in parallel on Spark; findings as Parquet, a report."""
    from kafkalog.conformance.campaign import preflight

    preflight.require_spark_extra("audit")
    import shutil
    import tempfile

    from kafkalog.conformance.audit.hadoop import is_hadoop_uri, plan_hadoop
    from kafkalog.conformance.audit.job import find_log_dirs, plan_units, run_audit
    from kafkalog.conformance.audit.report import (
        audit_lines,
        summarize_audit,
        write_audit_report,
    )
    from kafkalog.conformance.audit.split import SplitPolicy
    from kafkalog.conformance.campaign.job import require_java

    console = _console()
    if workers is not None and master.startswith("local"):
        master = f"local[{workers}]"
    preflight.check_master(master)
    preflight.check_out(out)
    ident = audit_id or datetime.now(UTC).strftime("a%Y%m%d-%H%M%S")
    hadoop = [source for source in sources if is_hadoop_uri(source)]
    local = [source for source in sources if not is_hadoop_uri(source)]
    log_dirs: list[Any] = find_log_dirs(local) if local else []
    units, roots = plan_units(log_dirs, ident)
    require_java()
    spark = _start_spark(console, master, verbose)
    listings: dict[str, Any] = {}
    if hadoop:  # listed through the JVM's Hadoop client, so after Spark starts
        mirror = Path(tempfile.mkdtemp(prefix="kafkalog-audit-roots-"))
        try:
            far_dirs, far_units, far_roots, listings = plan_hadoop(spark, hadoop, ident, mirror)
        finally:
            shutil.rmtree(mirror, ignore_errors=True)
        log_dirs, units, roots = [*log_dirs, *far_dirs], [*units, *far_units], [*roots, *far_roots]
    console.print(f"audit {ident}: {len(units)} partitions in {len(log_dirs)} log directories")
    reported = [0]

    def on_task(done: int) -> None:  # one line per newly finished batch of partitions
        if done > reported[0]:
            reported[0] = done
            console.print(f"partitions audited: {done}/{len(units)}", highlight=False)

    policy = SplitPolicy(max_bytes=split_mib << 20, max_segments=split_segments)
    def on_split(partitions: int, pieces: int) -> None:
        console.print(f"{partitions} large partitions split into {pieces} pieces by segment",
                      highlight=False)

    audited, findings, wall = run_audit(spark, units, roots, out, ident, deep, on_task, policy,
                                        listings, on_split)
    console.print(f"partitions audited: {audited}/{len(units)}; {findings} finding rows")
    summary = summarize_audit(spark, out, ident, wall)
    for line in audit_lines(summary):
        console.print(Text(line))
    console.print(f"report: {escape(str(write_audit_report(summary, Path(out))))}")
    if summary.problems:
        sys.exit(1)
