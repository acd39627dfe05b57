"""`kafkalog check`, `kafkalog replay` and `kafkalog serve-adapter`.

`check` runs `run_seed` once per example (seeds S, S+1, ...; config families cycled by seed),
shows a progress bar, and ends with a summary: runs, steps, steps/s, actions per kind, spec rules
exercised and never exercised, the rule pairs met in one run (combos.py), failures with the path
of each saved trace (written as soon as each run ends; `--max-failures` stops early). Exit 0 only
when every run conformed, 1 on any divergence or adapter error, 2 (one line) when the broker of
`--wire` / `--wire-broker` cannot be used at all. `--wire-broker NAME` starts a registered broker
(conformance/broker/registry.py) for the check and stops it by its PID afterwards; a run that
ends in an adapter error restarts it (a fresh process on a new port) before the next run.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from kafkalog.conformance.gen.configs import CONFIG_FAMILIES, DEFAULT_MIX
from kafkalog.model.versions import DEFAULT_PROFILE
from kafkalog.model.versions import PROFILES as KAFKA_PROFILES

PROFILES: dict[str, dict[str, int]] = {
    # About 8 s with the in-process implementation; enough seeds that each of the 39 broken
    # implementations is caught (the rule mix of a seed varies, so 24 seeds missed some).
    "ci": {"examples": 100, "steps": 40},
    "long": {"examples": 400, "steps": 100},
}


@click.command()
@click.option("--adapter", default=None, metavar="CMD",
              help="Adapter command speaking specs/adapter-protocol.md (default: built-in, "
                   "in-process; 'model' checks the model against itself).")
@click.option("--examples", type=click.IntRange(min=1), default=None, help="Number of runs.")
@click.option("--steps", type=click.IntRange(min=1), default=None, help="Steps per run.")
@click.option("--seed", type=int, default=0, show_default=True, help="First seed.")
@click.option("--profile", type=click.Choice(sorted(PROFILES)), default="ci", show_default=True)
@click.option("--family", "families", multiple=True, type=click.Choice(sorted(CONFIG_FAMILIES)),
              help="Config family (repeatable); default: the standard mix.")
@click.option("--broken", default=None, metavar="NAME",
              help="Check a deliberately broken implementation (see broken/registry.py).")
@click.option("--out", type=click.Path(path_type=Path), default=Path("out/conformance"),
              show_default=True, help="Where failing traces are written.")
@click.option("--time-limit", type=float, default=120.0, show_default=True,
              help="Seconds per run, shrinking included.")
@click.option("--max-failures", type=click.IntRange(min=0), default=10, show_default=True,
              help="Stop after this many failing runs (0: never stop early).")
@click.option("--kafka-version", type=click.Choice(KAFKA_PROFILES), default=None,
              help="Kafka version profile to check against (specs/log.md KL-VERSION-*; "
                   "default: the newest release, or the --wire-broker's release).")
@click.option("--kafka", "kafka_release", default=None, metavar="VERSION",
              help="Check Apache Kafka's own log (UnifiedLog) of this release or line (4.4.0, "
                   "4.4, 3.9: a line's newest served release) through the JVM adapter in "
                   "adapters/kafka/, built once with Maven, against the model profile of that "
                   "release.")
@click.option("--wire", default=None, metavar="HOST:PORT",
              help="Check a Kafka-compatible broker over Kafka's protocol (`wire-adapter`).")
@click.option("--wire-broker", default=None, metavar="NAME",
              help="Start a registered broker (kafka-3.9, kafka-4.2, kafka-4.4, tansu, kfake, "
                   "librdkafka-mock, kafka-wire, nafka: "
                   "conformance/broker/registry.py) on a free loopback port, check it as "
                   "--wire does, and stop it; its log is OUT/NAME.log. A run that ends in an "
                   "adapter error restarts it (OUT/NAME.<n>.log for the n-th start).")
@click.option("--broker-log", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="With --wire: the broker's log file, quoted when it crashes.")
@click.option("--wire-exclude", "wire_exclude", multiple=True, metavar="ACTION",
              help="With --wire: leave this action out (repeatable), to look past a finding.")
@click.option("--crash-weight", type=click.IntRange(min=0, max=8), default=1, show_default=True,
              help="Copies of the crash rule among the machine's rules (0: no crashes).")
@click.option("--crash-sweep/--no-crash-sweep", default=True, show_default=True,
              help="At each crash, also load and check every crash point of the last action "
                   "under every fault model (conformance/crash/sweep.py).")
@click.option("--crash-in-load", is_flag=True, default=False,
              help="With the sweep, also crash inside the load of every distinct image (after "
                   "each of the load's file operations, every fault model) and require the "
                   "reload to recover the uninterrupted load's state (KL-CRASH-14). Off by "
                   "default: about 80x the crash-step CPU (~430 crash points inside each "
                   "distinct image's load; benchmarks/crash_sweep_bench.py --in-load).")
@click.option("--crash-mode", type=click.Choice(["strict", "kafka"]), default="strict",
              show_default=True,
              help="kafka: check the implementation with Kafka's fsync choices put back against "
                   "the model's kafka crash mode (KL-CRASH-1, conformance/broken/"
                   "kafka_durability.py).")
@click.option("--kafka-loader", "kafka_loader", default=None, metavar="VERSION",
              help="With --crash-mode kafka: also load every distinct image the sweep loads "
                   "with Apache Kafka's own LogLoader of this release or line (the JVM adapter's "
                   "load_image) and count the images whose state is outside the model's "
                   "kafka-mode set (conformance/crash/kafka_loader.py); their images go to "
                   "OUT/kafka-loader/.")
@click.option("--kafka-loader-limit", type=click.IntRange(min=1), default=300,
              show_default=True, help="Images loaded by Kafka's loader per check, at most.")
def check(adapter: str | None, examples: int | None, steps: int | None, seed: int, profile: str,
          families: tuple[str, ...], broken: str | None, out: Path, time_limit: float,
          max_failures: int, kafka_version: str | None, kafka_release: str | None,
          wire: str | None, wire_broker: str | None, broker_log: Path | None,
          wire_exclude: tuple[str, ...], crash_weight: int, crash_sweep: bool,
          crash_in_load: bool, crash_mode: str, kafka_loader: str | None,
          kafka_loader_limit: int) -> None:
    """Run the conformance state machine against an implementation."""
    from kafkalog.conformance.broken.kafka_durability import KAFKA_DURABILITY

    if crash_in_load and not crash_sweep:
        raise click.UsageError("--crash-in-load crashes inside the loads a sweep runs; it "
                               "needs --crash-sweep")
    if kafka_loader is not None and (crash_mode != "kafka" or not crash_sweep):
        raise click.UsageError("--kafka-loader loads the images a kafka-mode sweep loads; it "
                               "needs --crash-mode kafka and --crash-sweep")
    if crash_mode == "kafka":
        if broken is not None or adapter is not None or wire is not None or wire_broker:
            raise click.UsageError("--crash-mode kafka checks the built-in implementation with "
                                   "Kafka's fsync choices; it replaces --broken and --adapter")
        broken = KAFKA_DURABILITY
    elif broken is not None and broken != KAFKA_DURABILITY:
        from kafkalog.conformance.broken.registry import broken_class

        broken_class(broken)  # a typed error for an unknown name, before any run starts
    if kafka_release is not None:
        if adapter is not None or broken is not None or wire is not None or wire_broker:
            raise click.UsageError("--kafka checks Kafka's own log through its JVM adapter; it "
                                   "replaces --adapter, --broken, --wire and --wire-broker")
        adapter, profile = kafka_adapter(kafka_release)
        kafka_version = kafka_version or profile
    if wire_broker is not None and (wire is not None or broker_log is not None):
        raise click.UsageError("--wire-broker starts its own broker: it replaces --wire and "
                               "--broker-log")
    with contextlib.ExitStack() as stack:
        mix = families or DEFAULT_MIX
        wire_options: tuple[str, ...] = ()
        restart: Callable[[], tuple[str, str]] | None = None
        if wire_broker is not None:
            started = _start_wire_broker(stack, wire_broker, out)
            running, kind = started.running, started.kind
            wire, broker_log, wire_options = running.address, running.log_path, kind.adapter_options
            kafka_version = kafka_version or kind.kafka_version
            restart = _restarter(started, wire_exclude)
        if wire is not None:
            from kafkalog.cli.wire_cmds import WIRE_MIX, wire_adapter_command
            from kafkalog.conformance.broker.adapter import probe_broker

            if adapter is not None or broken is not None:
                raise click.UsageError("--wire replaces --adapter and --broken")
            limits = probe_broker(wire)  # an unusable broker: one line and exit 2, once
            for line in limits:
                click.echo(line, err=True)
            adapter = wire_adapter_command(wire, broker_log=broker_log, exclude=wire_exclude,
                                           options=wire_options)
            auto_topics = any("CreateTopics" in line for line in limits)
            mix = families or (("kafka_defaults",) if auto_topics else WIRE_MIX)
        elif adapter is not None and adapter != "model":
            from kafkalog.conformance.campaign.preflight import check_adapter

            check_adapter(adapter)  # a bad adapter fails here once, not once per run
        if kafka_loader is not None:
            from kafkalog.conformance.crash import kafka_loader as loader_module

            stack.enter_context(loader_module.activated(loader_module.for_kafka(
                kafka_loader, kafka_loader_limit, out / "kafka-loader")))
        status = _run_check(adapter, runs=examples or PROFILES[profile]["examples"],
                            steps=steps or PROFILES[profile]["steps"], seed=seed, mix=mix,
                            out=out, time_limit=time_limit, broken=broken,
                            max_failures=max_failures,
                            kafka_version=kafka_version or DEFAULT_PROFILE,
                            crash=(crash_weight, crash_sweep, crash_in_load), restart=restart)
    sys.exit(status)


def _start_wire_broker(stack: contextlib.ExitStack, name: str, out: Path) -> Any:
    """Start the registered broker `name` (the one running stopped by PID when `stack` closes,
    also on Ctrl-C and SIGTERM); its log goes to OUT/NAME.log. A RestartableBroker."""
    from kafkalog.cli.main import unwind_on_sigterm
    from kafkalog.conformance.broker.registry import RestartableBroker, broker_kind

    kind = broker_kind(name)
    out.mkdir(parents=True, exist_ok=True)
    # `main` has done this already; a caller that runs the command without it (click's test
    # runner) still gets a broker stopped on SIGTERM as on Ctrl-C.
    unwind_on_sigterm()
    click.echo(f"starting {kind.describe} ...", err=True)
    started = RestartableBroker(kind, out)
    stack.callback(started.stop)
    running = started.running
    click.echo(f"{name} listens on {running.address} (pid {running.pid})", err=True)
    return started


def _restarter(started: Any, exclude: tuple[str, ...]) -> Callable[[], tuple[str, str]]:
    """What restarts the check's broker: (the adapter command for the fresh broker, the
    progress line saying so)."""
    from kafkalog.cli.wire_cmds import wire_adapter_command

    def restart() -> tuple[str, str]:
        old_pid = started.running.pid
        running = started.restart()
        command = wire_adapter_command(running.address, broker_log=running.log_path,
                                       exclude=exclude, options=started.kind.adapter_options)
        return command, (f"{started.kind.name} restarted after an adapter error: pid {old_pid} "
                         f"stopped, listens on {running.address} (pid {running.pid}), log "
                         f"{running.log_path}")

    return restart


def _run_check(adapter: str | None, *, runs: int, steps: int, seed: int, mix: tuple[str, ...],
               out: Path, time_limit: float, broken: str | None, max_failures: int,
               kafka_version: str, crash: tuple[int, bool, bool],
               restart: Callable[[], tuple[str, str]] | None = None) -> int:
    """Run `runs` seeds, show progress and the summary; the exit status (0: all conformed).

    `restart` (--wire-broker) replaces the broker after a run that ended in an adapter error, so
    a broker left broken by one run (a panic that ends its storage service) does not fail every
    later run; it answers the next runs' adapter command and a progress line.
    """
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from kafkalog.conformance.check.runner import ADAPTER_ERROR, run_seed
    from kafkalog.conformance.errors import BrokerUnavailableError

    crash_weight, crash_sweep, crash_in_load = crash
    console = Console(stderr=True)
    outcomes = []
    failures: list[tuple[object, Path | None]] = []
    started = time.monotonic()
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=False) as progress:
        task = progress.add_task("conformance", total=runs)
        for s in range(seed, seed + runs):
            family = mix[s % len(mix)]
            outcome = run_seed(s, steps=steps, config_family=family, adapter=adapter,
                               time_limit_s=time_limit, broken=broken,
                               kafka_version=kafka_version, crash_weight=crash_weight,
                               crash_sweep=crash_sweep, crash_in_load=crash_in_load)
            outcomes.append(outcome)
            failures.extend(_save_failures([outcome], out))  # saved as soon as it is shrunk
            progress.update(task, advance=1, description=f"conformance ({len(failures)} failed)")
            if max_failures and len(failures) >= max_failures:
                break
            if restart is not None and outcome.outcome == ADAPTER_ERROR and s + 1 < seed + runs:
                try:
                    adapter, line = restart()
                except BrokerUnavailableError as error:  # the runs so far still get a summary
                    progress.console.print(f"the broker did not restart: {error}; the check "
                                           "stops here", markup=False, highlight=False,
                                           soft_wrap=True)
                    break
                progress.console.print(f"seed {s}: {line}", markup=False, highlight=False,
                                       soft_wrap=True)
    elapsed = time.monotonic() - started
    _summary(console, outcomes, elapsed, failures)
    return 0 if not failures else 1


def _save_failures(outcomes: list, out: Path) -> list[tuple[object, Path | None]]:
    failures = []
    for o in outcomes:
        if o.outcome == "conformed":
            continue
        path = None
        if o.trace_jsonl:
            out.mkdir(parents=True, exist_ok=True)
            path = out / f"seed-{o.seed}-{o.config_family}.jsonl"
            path.write_text(o.trace_jsonl, encoding="utf-8")
        failures.append((o, path))
    return failures


def _summary(console: object, outcomes: list, elapsed: float, failures: list) -> None:
    from rich.table import Table

    from kafkalog.conformance.check.coverage import all_rule_ids

    steps = sum(o.steps_executed for o in outcomes)
    actions: Counter[str] = Counter()
    rules: set[str] = set()
    for o in outcomes:
        actions.update(o.actions)
        rules.update(o.rules)
    echo = console.print  # type: ignore[attr-defined]
    echo(f"runs: {len(outcomes)}  steps: {steps}  time: {elapsed:.1f} s  "
         f"steps/s: {steps / elapsed if elapsed else 0:.0f}")
    table = Table("action", "count", title="actions executed")
    for name, count in sorted(actions.items()):
        table.add_row(name, str(count))
    echo(table)
    crashes: Counter[str] = Counter()
    for o in outcomes:
        crashes.update(o.crashes)
    echo(f"crash points explored: {sum(crashes.values())}  "
         + "  ".join(f"{fault}: {n}" for fault, n in sorted(crashes.items())))
    crash_s = sum(o.crash_s for o in outcomes)
    if crash_s > 0:
        echo(f"distinct crash images: {sum(o.crash_images for o in outcomes)}  crash points per "
             f"minute per core: {60 * sum(crashes.values()) / crash_s:,.0f} (CPU time in crash "
             f"steps, {crash_s:.1f} s)")
        echo(f"recovery idempotence checks: {sum(o.crash_idempotence for o in outcomes)} "
             "(distinct images crashed right after the load and loaded again, KL-CRASH-7)")
        in_clean = sum(getattr(o, "crash_in_clean", 0) for o in outcomes)
        if in_clean:
            echo(f"crash points inside cleaning passes: {in_clean} (KL-CRASH-15)")
    in_load = sum(getattr(o, "crash_in_load", 0) for o in outcomes)
    if in_load:
        echo(f"crash points inside loads: {in_load} (KL-CRASH-14, --crash-in-load)")
    from kafkalog.conformance.crash import kafka_loader

    loader = kafka_loader.ACTIVE
    if loader is not None:
        echo(f"kafka_loader_images: {loader.images}  kafka_loader_outside: {loader.outside}  "
             f"(Kafka {loader.label}'s LogLoader on the sweep's images and {loader.planted} "
             f"with a planted leftover, against the kafka-mode set; {loader.load_s:.1f} s in "
             f"Kafka loads"
             + (f"; {loader.skipped} past the limit" if loader.skipped else "") + ")")
        if loader.errors:
            echo(f"  adapter failures (no verdict): {len(loader.errors)}; first: "
                 f"{loader.errors[0]}")
        classes = Counter(verdict.gap or "unknown" for _, _, verdict in
                          loader.outside_images.values())
        if classes:
            echo("  outside by class: " + "  ".join(f"{k}: {n}" for k, n in
                                                  sorted(classes.items())))
        shown: set[str] = set()
        for fault, inside, verdict in loader.outside_images.values():
            if verdict.where in shown:  # one line per kind of difference
                continue
            shown.add(verdict.where)
            echo(f"  outside ({fault}, {'inside' if inside else 'after'} the action): "
                 f"{verdict.describe()}")
    known = all_rule_ids()
    never = sorted(known - rules)
    echo(f"spec rules exercised: {len(rules & known) if known else len(rules)}"
         + (f" of {len(known)}" if known else ""))
    echo("  " + " ".join(sorted(rules)))
    from kafkalog.conformance.check.combos import rule_pairs

    echo(rule_pairs(o.rules for o in outcomes).describe())
    echo(f"spec rules never exercised: {len(never)}")
    if never:
        echo("  " + " ".join(never))
    for o, path in failures:
        where = str(path) if path else "(no trace)"
        echo(f"[red]{o.outcome}[/red] seed {o.seed} ({o.config_family}): {o.signature}  {where}")
    if not failures:
        echo("[green]all runs conformed[/green]")


def kafka_adapter(release: str) -> tuple[str, str]:
    """The JVM adapter's command for a Kafka release or line, and the model profile of it.

    Builds the adapter with Maven the first time (say so: it resolves Kafka's jars); raises
    AdapterError subclasses (no java or mvn, an unknown release) that the CLI prints as one line.
    """
    from kafkalog.conformance.jvm.kafka_adapter import (
        adapter_command,
        model_profile,
        resolve_version,
    )

    exact = resolve_version(release)
    click.echo(f"Apache Kafka {exact}: building or reusing its adapter (adapters/kafka/)",
               err=True)
    return adapter_command(exact), model_profile(exact)


@click.command()
@click.argument("trace_file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--adapter", default=None, metavar="CMD", help="Replay against this adapter.")
@click.option("--broken", default=None, metavar="NAME", help="Replay against a broken impl.")
@click.option("--builtin", is_flag=True,
              help="Replay against the real built-in implementation even if the trace names a "
                   "broken one.")
@click.option("--kafka-version", type=click.Choice(KAFKA_PROFILES), default=None,
              help="Check against this Kafka version profile instead of the trace's.")
@click.option("--kafka", "kafka_release", default=None, metavar="VERSION",
              help="Replay against Apache Kafka's own log of this release or line (the JVM "
                   "adapter), held to that release's profile unless --kafka-version names one.")
def replay(trace_file: Path, adapter: str | None, broken: str | None, builtin: bool,
           kafka_version: str | None, kafka_release: str | None) -> None:
    """Replay a trace step by step; exit 0 if it conforms, 1 at a divergence."""
    from kafkalog.conformance.traces.replay import print_replay, replay_trace
    from kafkalog.conformance.traces.trace import read_trace, with_kafka_version

    trace = read_trace(trace_file)
    if kafka_release is not None:
        if adapter is not None or broken is not None:
            raise click.UsageError("--kafka replaces --adapter and --broken")
        adapter, profile = kafka_adapter(kafka_release)
        kafka_version = kafka_version or profile
    if kafka_version is not None:
        trace = with_kafka_version(trace, kafka_version)
    if builtin:
        trace = type(trace)(header=_without_broken(trace.header), steps=trace.steps)
    target, from_trace = _replay_target(adapter, broken, trace.header.broken)
    click.echo(f"replaying {len(trace.steps)} steps against {target}")
    result = replay_trace(trace, adapter=adapter, broken=broken)
    print_replay(result, click.echo)
    if from_trace and not result.conformed:
        click.echo(
            "this trace names a deliberately broken implementation, so a divergence is what it "
            "demonstrates; --builtin replays it against the real one (which must conform)"
        )
    sys.exit(0 if result.conformed else 1)


def _replay_target(
    adapter: str | None, broken: str | None, named: str | None
) -> tuple[str, bool]:
    """What a replay runs against, in words, and whether the trace's header chose it."""
    from kafkalog.conformance.broken.registry import broken_class

    if adapter is not None:
        return f"the adapter {adapter!r}", False
    chosen = broken or named
    if chosen is None:
        return "the built-in implementation", False
    from kafkalog.conformance.broken.kafka_durability import KAFKA_DURABILITY

    if chosen == KAFKA_DURABILITY:  # a variant, not a bug: held to the kafka crash mode
        return "the implementation with Kafka's fsync choices (kafka crash mode)", False
    entry = broken_class(chosen)
    origin = "named in the trace" if broken is None else "--broken"
    return f"the broken implementation {chosen!r} ({entry.bug}: {entry.summary}; {origin})", (
        broken is None
    )


def _without_broken(header: object) -> object:
    import dataclasses

    return dataclasses.replace(header, broken=None)  # type: ignore[type-var]


@click.command(name="serve-adapter")
@click.option("--broken", default=None, metavar="NAME",
              help="Serve a deliberately broken implementation instead of the real one.")
@click.option("--model", "serve_model", is_flag=True, help="Serve the model itself.")
@click.option("--kill-only", is_flag=True,
              help="Declare `crash_kill` instead of `crash`: every crash is a process crash after "
                   "the last action, as an adapter that can only kill and reopen does.")
def serve_adapter(broken: str | None, serve_model: bool, kill_only: bool) -> None:
    """Serve the built-in log over the JSON-lines adapter protocol on stdin/stdout."""
    from kafkalog import __version__
    from kafkalog.conformance.adapter.json_codec import FEATURES
    from kafkalog.conformance.adapter.server import serve

    if serve_model:
        from kafkalog.conformance.check.sut import ModelSut

        factory, name = ModelSut, f"kafkalog-model {__version__}"
    elif broken is not None:
        from kafkalog.conformance.broken.registry import broken_factory

        factory, name = broken_factory(broken), f"kafkalog-impl {__version__} broken={broken}"
    else:
        from kafkalog.conformance.check.impl_sut import ImplSut

        factory, name = ImplSut, f"kafkalog-impl {__version__}"
    features = frozenset(FEATURES) - ({"crash"} if kill_only else {"crash_kill"})
    sys.exit(serve(factory, name, features))
