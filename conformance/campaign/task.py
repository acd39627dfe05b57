"""The unit of work of a campaign: one seeded conformance run turned into one Parquet row.

This module runs inside Spark's Python workers, so it imports neither pyspark nor the driver's
state: a `TaskSpec` (plain values) travels to the executors inside the closure that
`partition_runner` builds, and each run is `run_one(seed, spec)`. `run_one` never raises: any
exception, a hang past the hard time limit, even `KeyboardInterrupt` becomes an `adapter_error`
row, because in local mode one uncaught exception fails the whole job and on a cluster it is
retried (the same seeds again) up to four times. The row layout is specs/campaign-schema.md.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import pyarrow as pa
from kafkalog.conformance.broken.kafka_durability import KAFKA_DURABILITY
from kafkalog.conformance.campaign.kafka_runs import loader_columns, loader_scope, run_adapter
from kafkalog.conformance.campaign.variety import (
    KAFKA,
    RunVariant,
    Variety,
    fixed,
    variant_for_seed,
)
from kafkalog.conformance.check.runner import run_seed
from kafkalog.conformance.check.scratch import scratch_scope
from kafkalog.conformance.crash.kafka_gaps import CAMPAIGN_UNPLANTED
from kafkalog.conformance.errors import UnknownConfigFamilyError
from kafkalog.model.versions import DEFAULT_PROFILE

from kafkalog import __version__

OUTCOMES = ("conformed", "diverged", "adapter_error")
BUILTIN_ADAPTER = "builtin"  # the `adapter` column when no --adapter command was given
_TEXT_LIMIT = 2000  # characters kept of an exception message in the `error` column
_BATCH_ROWS, _BATCH_S = 64, 1.0  # when a partition hands its rows to Spark's writer

# The Parquet row, in column order (specs/campaign-schema.md). `SPARK_DDL` is the same schema for
# `mapInArrow`; the two must stay equal, which tests/campaign/test_campaign_task.py checks.
ARROW_SCHEMA = pa.schema(
    [
        ("campaign_id", pa.string()),
        ("seed", pa.int64()),
        ("config_family", pa.string()),
        ("config_json", pa.string()),
        ("adapter", pa.string()),
        ("broken", pa.string()),
        ("steps", pa.int32()),
        ("kafkalog_version", pa.string()),
        ("kafkalog_commit", pa.string()),
        ("steps_executed", pa.int32()),
        ("actions", pa.map_(pa.string(), pa.int32())),
        ("rules", pa.list_(pa.string())),
        ("duration_s", pa.float64()),
        ("outcome", pa.string()),
        ("signature", pa.string()),
        ("trace_jsonl", pa.string()),
        ("trace_steps", pa.int32()),
        ("error", pa.string()),
        ("started_at", pa.timestamp("us", tz="UTC")),
        ("finished_at", pa.timestamp("us", tz="UTC")),
        ("worker", pa.string()),
        ("kafka_version", pa.string()),
        ("crashes", pa.map_(pa.string(), pa.int32())),
        ("crash_weight", pa.int32()),
        ("crash_images", pa.int32()),
        ("crash_s", pa.float64()),
        ("crash_idempotence", pa.int32()),
        ("crash_mode", pa.string()),
        ("crash_in_load", pa.int32()),
        ("crash_in_clean", pa.int32()),
        ("kafka_loader_images", pa.int32()),
        ("kafka_loader_outside", pa.int32()),
        ("kafka_loader_gaps", pa.map_(pa.string(), pa.int32())),
    ]
)
SPARK_DDL = (
    "campaign_id STRING, seed BIGINT, config_family STRING, config_json STRING, adapter STRING, "
    "broken STRING, steps INT, kafkalog_version STRING, kafkalog_commit STRING, "
    "steps_executed INT, actions MAP<STRING, INT>, rules ARRAY<STRING>, duration_s DOUBLE, "
    "outcome STRING, signature STRING, trace_jsonl STRING, trace_steps INT, error STRING, "
    "started_at TIMESTAMP, finished_at TIMESTAMP, worker STRING, kafka_version STRING, "
    "crashes MAP<STRING, INT>, crash_weight INT, crash_images INT, crash_s DOUBLE, "
    "crash_idempotence INT, crash_mode STRING, crash_in_load INT, crash_in_clean INT, "
    "kafka_loader_images INT, "
    "kafka_loader_outside INT, kafka_loader_gaps MAP<STRING, INT>"
)


class RunOutcomeLike(Protocol):
    """What `runner.run_seed` returns (its `RunOutcome`); duck-typed so tests can stand in."""

    seed: int
    config_family: str
    config: Mapping[str, Any]
    adapter: str | None
    steps_executed: int
    actions: Mapping[str, int]
    rules: Sequence[str]
    duration_s: float
    outcome: str
    signature: str | None
    trace_jsonl: str | None


RunFn = Callable[..., RunOutcomeLike]


@dataclass(frozen=True)
class TaskSpec:
    """Everything a task needs to turn a seed into a row; plain values, so it pickles anywhere."""

    campaign_id: str
    steps: int  # requested steps per run (the state machine may stop earlier)
    families: tuple[str, ...]  # the config-mix cycle: seed s runs family families[s % len]
    adapter: str | None = None  # an adapter command, or None for the built-in implementation
    broken: str | None = None  # a broken implementation's name (broken/registry.py), or None
    time_limit_s: float = 120.0  # passed to run_seed, which stops itself gracefully
    # The hard limit is time_limit_s + grace_s: a hang, not a slow run. The soft limit is
    # checked between steps, and one crash step with crashes inside its loads costs tens of
    # seconds on a loaded 2-core machine, so the grace covers a step, not a moment.
    grace_s: float = 60.0
    commit: str = "unknown"  # the driver's git commit; executors may have no git checkout
    run_fn: RunFn | None = None  # None: check.runner.run_seed
    kafka_version: str = DEFAULT_PROFILE  # the Kafka profile checked against (KL-VERSION-1)
    crash_weight: int = 2  # copies of the crash rule in the machine (0 = no crashes)
    crash_sweep: bool = True  # every crash also loads every crash point of its action
    # The profile and crash-mode cycles of each run (variety.py); None: kafka_version, strict.
    variety: Variety | None = None
    # The Kafka release whose LogLoader also loads the crash images of kafka-mode runs, through
    # the `adapter` command (a --kafka campaign); None: kafkalog's loader only.
    kafka_loader: str | None = None

    def __post_init__(self) -> None:
        assert self.families, "a campaign needs at least one config family"
        assert self.steps > 0 and self.time_limit_s > 0 and self.grace_s >= 0


def parse_config_mix(
    text: str | None, known: Sequence[str], default: Sequence[str] | None = None
) -> tuple[str, ...]:
    """`"tiny=3,retention"` -> the family cycle ("tiny", "tiny", "tiny", "retention").

    None or "" means `default` (the runner's DEFAULT_MIX), or every known family once. Raises
    UnknownConfigFamilyError naming the bad entry.
    """
    if not text:
        return tuple(default or known)
    cycle: list[str] = []
    for entry in (part.strip() for part in text.split(",")):
        name, _, weight_text = entry.partition("=")
        if name not in known:
            raise UnknownConfigFamilyError(
                f"unknown config family {name!r}; known: {', '.join(known)}",
                where=f"--config-mix {text!r}",
            )
        weight = _parse_weight(weight_text or "1", text)
        cycle.extend([name] * weight)
    return tuple(cycle)


def _parse_weight(text: str, whole: str) -> int:
    """A positive integer weight of one config-mix entry."""
    if not text.isdigit() or int(text) < 1:
        raise UnknownConfigFamilyError(
            f"weight {text!r} is not a positive integer", where=f"--config-mix {whole!r}"
        )
    return min(int(text), 100)  # a cycle longer than that buys nothing but memory


def family_for_seed(seed: int, families: Sequence[str]) -> str:
    """The config family of a seed: a pure function of the seed, so a run replays from it alone."""
    return families[seed % len(families)]


def run_one(seed: int, spec: TaskSpec) -> dict[str, Any]:
    """Run one seed and return its row (ARROW_SCHEMA's columns). Never raises."""
    family = family_for_seed(seed, spec.families)
    variant = variant_for_seed(seed, len(spec.families), spec.variety or fixed(spec.kafka_version))
    started = time.time()
    with scratch_scope():
        row = _run_one(seed, spec, family, variant, started)
    row.update(_identity(seed, family, variant, spec, started))
    return row


def _run_one(seed: int, spec: TaskSpec, family: str, variant: RunVariant,
             started: float) -> dict[str, Any]:
    """The row of one run, from its outcome or from whatever stopped it.

    The scratch scope around it closes only after `_hard_time_limit` has disarmed its alarm,
    which re-fires every second and could otherwise interrupt the run's own cleanup.
    """
    row: dict[str, Any] = {}
    try:
        extra = _variant_options(spec, variant)
        adapter = run_adapter(spec, variant)
        if adapter is not None and spec.run_fn is None:
            extra["keep_adapter"] = True  # one warm adapter process per worker (kafka_runs.py)
        with _hard_time_limit(spec.time_limit_s + spec.grace_s) as alarm, \
                loader_scope(spec, variant) as loader:
            outcome = _resolve(spec.run_fn)(
                seed,
                steps=spec.steps,
                config_family=family,
                adapter=adapter,
                time_limit_s=spec.time_limit_s,
                **extra,
            )
            row = _outcome_row(outcome, spec.adapter) | loader_columns(loader)
        if alarm.fired is not None and row["outcome"] == "adapter_error":
            # The interrupt surfaced as another error: Hypothesis, interrupted mid-example,
            # replays it, draws differently and reports FlakyStrategyDefinition.
            row = _error_row(alarm.fired, time.time() - started)
    except BaseException as error:  # noqa: BLE001 - the task must turn everything into a row
        row = _error_row(error, time.time() - started)
    finally:
        # A run that ended normally leaves its kept adapter idle and in step; any other end
        # may leave it mid-reply, so it goes too.
        _kill_leftover_adapters(spare_kept=row.get("outcome") in ("conformed", "diverged"))
    return row


def _variant_options(spec: TaskSpec, variant: RunVariant) -> dict[str, Any]:
    """run_seed's keyword options for one run: its broken implementation, profile and crashes.

    Options at their defaults are left out, so run functions without profiles or crashes (the
    pipeline's stand-ins) keep working. Kafka mode is the built-in implementation with Kafka's
    fsync choices, which only a campaign without `--broken` and `--adapter` cycles into.
    """
    extra: dict[str, Any] = {"broken": KAFKA_DURABILITY if variant.crash_mode == KAFKA
                             else spec.broken}
    if variant.kafka_version != DEFAULT_PROFILE:
        extra["kafka_version"] = variant.kafka_version
    if spec.crash_weight:
        extra["crash_weight"] = spec.crash_weight
        if variant.crash_mode == KAFKA:
            # Leftovers whose kafka-mode clean-up a power loss turns into a named gap only
            # (kafka_gaps.py CAMPAIGN_UNPLANTED): the run plants none in their place.
            extra["leftovers_off"] = CAMPAIGN_UNPLANTED
        if spec.crash_sweep:
            extra["crash_sweep"] = True
            if variant.crash_in_load:
                extra["crash_in_load"] = True
    return extra


def normalise_signature(signature: str | None, adapter: str | None = None) -> str | None:
    """An adapter-error signature reduced to its cause: one bucket per cause, not per run.

    The runner's `adapter_error|<code>|<message>` embeds free text that differs from run to run
    for one cause: request numbers, the adapter's stderr, its command line and absolute paths,
    addresses. Those are replaced (`request N`, `<adapter>`, a path's last part) or cut; the
    exception type and the rest of the message stay. Divergence signatures pass unchanged.
    """
    if signature is None or not signature.startswith(("adapter_error|", "harness|")):
        return signature
    text = signature.split("; stderr:", 1)[0]
    if adapter:
        text = text.replace(f" ({adapter})", "").replace(adapter, "<adapter>")
    text = re.sub(r"(?<![\w.])(?:/[^\s/:'\"()]+)+/([^\s/:'\"()]+)", r"\1", text)
    text = re.sub(r"\b(request|id|reply id|pid|line) \d+", r"\1 N", text)
    text = re.sub(r"0x[0-9a-fA-F]+", "0x?", text)
    return text.strip()[:300]


def partition_runner(
    spec: TaskSpec, seeds: Sequence[int]
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The `mapInArrow` function of one wave: input ids index `seeds`; one row out per run.

    Rows leave in Arrow batches of up to _BATCH_ROWS rows or _BATCH_S seconds of runs, so slow
    partitions stream to the writer while trivial runs do not pay one batch each. (Nothing is
    committed before the task ends anyway.)
    """
    wave = tuple(seeds)

    def run_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        _ensure_hypothesis_storage()
        # Workers have no logging set up, so Python's last-resort handler would print the log's
        # warnings (e.g. recovery notes) on the campaign's console; the rows carry the results.
        quiet = logging.getLogger("kafkalog")
        if not quiet.handlers:  # a reused worker keeps the handler of its previous task
            quiet.addHandler(logging.NullHandler())
        rows: list[dict[str, Any]] = []
        flushed = time.monotonic()
        for batch in batches:
            for index in batch.column(0).to_pylist():
                rows.append(run_one(wave[index], spec))
                if len(rows) >= _BATCH_ROWS or time.monotonic() - flushed > _BATCH_S:
                    yield pa.RecordBatch.from_pylist(rows, schema=ARROW_SCHEMA)
                    rows, flushed = [], time.monotonic()
        if rows:
            yield pa.RecordBatch.from_pylist(rows, schema=ARROW_SCHEMA)

    return run_batches


def trace_step_count(trace_jsonl: str | None) -> int | None:
    """Steps in a trace: its non-empty lines minus the header line (specs/trace-format.md)."""
    if trace_jsonl is None:
        return None
    return max(0, sum(1 for line in trace_jsonl.splitlines() if line.strip()) - 1)


class _RunTimedOut(BaseException):
    """Raised by SIGALRM past the hard limit.

    A BaseException on purpose: Hypothesis shrinks any `Exception` raised inside a test as if it
    were a failure, which would keep a hung run going; like KeyboardInterrupt, this one escapes.
    """


class _Alarm:
    """Whether the hard limit fired (the interrupt it raised), whatever the run made of it."""

    fired: _RunTimedOut | None = None


@contextlib.contextmanager
def _hard_time_limit(seconds: float) -> Iterator[_Alarm]:
    """Interrupt the body after `seconds` of wall time (main thread only, as Spark workers are)."""
    alarm = _Alarm()
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        yield alarm  # no signals off the main thread: run_seed's own time limit is the only guard
        return

    def on_alarm(signum: int, frame: object) -> None:
        alarm.fired = _RunTimedOut(f"run exceeded its hard time limit of {seconds:g} s")
        raise alarm.fired

    previous = signal.signal(signal.SIGALRM, on_alarm)
    # Re-fire every second in case the first interrupt is swallowed by a bare `except`.
    signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)
    try:
        yield alarm
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _resolve(run_fn: RunFn | None) -> RunFn:
    """The run function: the given one, or the conformance runner's `run_seed`."""
    if run_fn is not None:
        return run_fn

    return run_seed


def _outcome_row(outcome: RunOutcomeLike, adapter: str | None) -> dict[str, Any]:
    """The run-dependent columns of a row, from a RunOutcome (an adapter error's full text is
    kept in `error` when its signature was normalised)."""
    if outcome.outcome not in OUTCOMES:
        raise ValueError(f"run_seed returned outcome {outcome.outcome!r}, not one of {OUTCOMES}")
    signature = normalise_signature(outcome.signature, adapter)
    detail = outcome.signature if signature != outcome.signature else None
    return {
        "config_json": json.dumps(dict(outcome.config), sort_keys=True, default=str),
        "steps_executed": int(outcome.steps_executed),
        "actions": {str(name): int(count) for name, count in sorted(outcome.actions.items())},
        "rules": sorted(str(rule) for rule in outcome.rules),
        "duration_s": float(outcome.duration_s),
        "outcome": outcome.outcome,
        "signature": signature,
        "trace_jsonl": outcome.trace_jsonl,
        "trace_steps": trace_step_count(outcome.trace_jsonl),
        "error": None if detail is None else detail[:_TEXT_LIMIT],
        "crashes": {str(k): int(n) for k, n in sorted(getattr(outcome, "crashes", {}).items())},
        "crash_images": int(getattr(outcome, "crash_images", 0)),
        "crash_s": float(getattr(outcome, "crash_s", 0.0)),
        "crash_idempotence": int(getattr(outcome, "crash_idempotence", 0)),
        "crash_in_load": int(getattr(outcome, "crash_in_load", 0)),
        "crash_in_clean": int(getattr(outcome, "crash_in_clean", 0)),
    }


def _error_row(error: BaseException, duration_s: float) -> dict[str, Any]:
    """The run-dependent columns of a row for a run that raised instead of returning."""
    name = "RunTimedOut" if isinstance(error, _RunTimedOut) else type(error).__name__
    return {
        "config_json": "{}",
        "steps_executed": 0,
        "actions": {},
        "rules": [],
        "duration_s": duration_s,
        "outcome": "adapter_error",
        "signature": f"adapter_error|{name}",
        "trace_jsonl": None,
        "trace_steps": None,
        "error": f"{name}: {error}"[:_TEXT_LIMIT],
        "crashes": {},
        "crash_images": 0,
        "crash_s": 0.0,
        "crash_idempotence": 0,
        "crash_in_load": 0,
        "crash_in_clean": 0,
        **loader_columns(None),
    }


def _identity(seed: int, family: str, variant: RunVariant, spec: TaskSpec,
              started: float) -> dict[str, Any]:
    """The columns that name the run: campaign, seed, parameters, versions, times, worker."""
    return {
        "campaign_id": spec.campaign_id,
        "seed": seed,
        "config_family": family,
        "adapter": run_adapter(spec, variant) or BUILTIN_ADAPTER,
        "broken": spec.broken,
        "steps": spec.steps,
        "kafkalog_version": __version__,
        "kafkalog_commit": spec.commit,
        "started_at": datetime.fromtimestamp(started, UTC),
        "finished_at": datetime.now(UTC),
        "worker": f"{socket.gethostname()}:{os.getpid()}",
        "kafka_version": variant.kafka_version,
        "crash_weight": spec.crash_weight,
        "crash_mode": variant.crash_mode,
    }


def _kill_leftover_adapters(spare_kept: bool = False) -> None:
    """Kill the process group of any adapter a run left alive (a hang cut by the hard limit)."""
    import sys

    module = sys.modules.get("kafkalog.conformance.adapter.subprocess_sut")
    if module is not None:
        module.kill_all(spare_kept=spare_kept)


def _ensure_hypothesis_storage() -> None:
    """Point Hypothesis's cache at a writable temp dir when the executor env did not (a cluster)."""
    if "HYPOTHESIS_STORAGE_DIRECTORY" not in os.environ:
        path = os.path.join(tempfile.gettempdir(), "kafkalog-hypothesis")
        os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = path
