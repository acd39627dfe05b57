"""`run_seed`: one conformance run, the unit of work of `kafkalog check` and of Spark campaigns.

A run is one Hypothesis example of the state machine (machine.py) with `steps` steps, generated
from `seed` alone (no example database, no wall clock in the choices), followed by shrinking when
model and implementation disagree. It never raises: every outcome, including a crashed adapter or
a bug in the harness, comes back as a `RunOutcome` row.

Adapters: `None` is the built-in implementation in-process, `"model"` drives the model against
itself (a sanity run that must always conform), anything else is a command line that speaks the
JSON-lines protocol (specs/adapter-protocol.md), e.g. `kafkalog serve-adapter`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import time
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.stateful import run_state_machine_as_test
from kafkalog.conformance.adapter.json_codec import FEATURES, encode
from kafkalog.conformance.adapter.subprocess_sut import (
    AdapterProcess,
    SubprocessSut,
    drop_kept,
    kept_process,
)
from kafkalog.conformance.check.deadline import TimeUp
from kafkalog.conformance.check.impl_sut import ImplSut
from kafkalog.conformance.check.scratch import scratch_scope
from kafkalog.conformance.check.session import AdapterAbort, Session, SutFactory
from kafkalog.conformance.check.sut import ModelSut
from kafkalog.conformance.errors import AdapterError
from kafkalog.conformance.gen.configs import CONFIG_FAMILIES, DEFAULT_MIX, config_family
from kafkalog.conformance.gen.machine import LogMachine
from kafkalog.conformance.gen.machines import make_machine
from kafkalog.conformance.gen.swarm import rule_names, swarm_off
from kafkalog.conformance.traces.minimise import minimise_trace
from kafkalog.conformance.traces.trace import Trace, TraceHeader, dumps_trace, git_commit
from kafkalog.model import values as v
from kafkalog.model.log import validate_config

__all__ = ["CONFIG_FAMILIES", "DEFAULT_MIX", "RunOutcome", "run_seed"]

CONFORMED, DIVERGED, ADAPTER_ERROR = "conformed", "diverged", "adapter_error"
MINIMISE_S = 1.5  # seconds for dropping single steps from a shrunk trace (minimise.py)
# Seconds Hypothesis may shrink after the first failure (so a shrunk trace comes within
# seconds); what it has not shrunk by then, minimise.py drops step by step.
SHRINK_BUDGET_S = 2.5


@dataclass(frozen=True)
class RunOutcome:
    """One run's row (specs/campaign-schema.md): what ran, what it covered, how it ended."""

    seed: int
    config_family: str
    config: dict[str, Any]
    adapter: str | None
    steps_executed: int
    actions: dict[str, int]
    rules: list[str]
    duration_s: float
    outcome: str  # "conformed" | "diverged" | "adapter_error"
    signature: str | None  # action|model code|impl code|what differed|rule, or the adapter error
    trace_jsonl: str | None  # the shrunk trace of a divergence, else None
    crashes: dict[str, int] = dataclasses.field(default_factory=dict)  # crash points per fault
    crash_images: int = 0  # distinct crash images among them (a sweep loads each once)
    crash_idempotence: int = 0  # idempotence checks: crash right after a load, load again
    crash_s: float = 0.0  # CPU seconds spent in crash steps, sweeps included
    crash_in_load: int = 0  # crash points explored inside loads (KL-CRASH-14, opt-in)
    crash_in_clean: int = 0  # swept crash points inside cleaning passes (KL-CRASH-15)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@functools.cache
def _commit() -> str:
    return git_commit()


def run_settings(steps: int) -> settings:
    """Hypothesis settings of one run: one generated example, then shrinking; nothing stored."""
    return settings(
        max_examples=1,
        stateful_step_count=max(1, steps) + 1,  # the initialize step is not an action
        deadline=None,
        database=None,
        derandomize=False,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        report_multiple_bugs=False,
        print_blob=False,
    )


def run_seed(
    seed: int,
    *,
    steps: int,
    config_family: str,
    adapter: str | None = None,
    time_limit_s: float = 120,
    broken: str | None = None,
    crash_weight: int = 0,  # the commands default to 1 (--crash-weight); library calls opt in
    crash_sweep: bool = False,
    crash_in_load: bool = False,
    shrink_s: float = SHRINK_BUDGET_S,
    kafka_version: str | None = None,
    keep_adapter: bool = False,
    leftovers_off: frozenset[str] = frozenset(),
) -> RunOutcome:
    """Run the machine once from `seed`; see the module docstring. Never raises.

    `shrink_s` bounds Hypothesis' shrinking after the first failure and then the trace-level
    minimising (at most MINIMISE_S); tests that only need the catch pass a smaller budget.
    `kafka_version` names the Kafka profile checked against (KL-VERSION-1; default: the family's,
    which is the newest release); it travels in the config, so traces and campaign rows record it.
    `keep_adapter` runs on the adapter process kept across runs (subprocess_sut.kept_process),
    dropped when the run ends in an adapter error. `leftovers_off`: leftovers its crash steps
    never plant (the default campaign's kafka-mode runs, kafka_gaps.py CAMPAIGN_UNPLANTED).
    """
    started = time.monotonic()
    row = functools.partial(_outcome, seed, config_family, adapter, started)
    try:
        with scratch_scope():  # no log directory of the run outlives it, however it ends
            outcome = _run(seed, steps, config_family, adapter, time_limit_s, broken, row,
                           shrink_s, kafka_version, (crash_weight, crash_sweep, crash_in_load),
                           keep_adapter, leftovers_off)
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # noqa: BLE001 - the last line of defence of "never raises"
        outcome = row(None, None, ADAPTER_ERROR, f"harness|{type(error).__name__}|{error}", None)
    if keep_adapter and adapter is not None and outcome.outcome == ADAPTER_ERROR:
        drop_kept(adapter)  # it may be hung or mid-reply: the next run starts a fresh one
    return outcome


def _run(seed: int, steps: int, config_family: str, adapter: str | None, time_limit_s: float,
         broken: str | None, row: Any, shrink_s: float, kafka_version: str | None,
         crashes: tuple[int, bool, bool] = (0, False, False), keep_adapter: bool = False,
         leftovers_off: frozenset[str] = frozenset()) -> RunOutcome:
    process = None
    try:
        config = config_family_config(config_family)
        if kafka_version is not None:
            config = dataclasses.replace(config, kafka_version=kafka_version)
            validate_config(config)
        factory, features, process = sut_factory(adapter, broken, keep_adapter)
        session = Session(config, factory, features, time_limit_s=time_limit_s,
                          max_steps=steps, shrink_budget_s=shrink_s,
                          crash_weight=crashes[0], crash_sweep=crashes[1],
                          crash_in_load=crashes[2])
        session.swarm_off = _swarm_off(seed)
        session.leftovers_off = leftovers_off
    except (AdapterError, Exception) as error:
        _close(process)
        code = getattr(error, "code", type(error).__name__)
        return row(None, None, ADAPTER_ERROR, f"adapter_error|{code}|{error}", None)
    try:
        machine = hypothesis_seed(seed)(make_machine(session))
        run_state_machine_as_test(machine, settings=run_settings(steps))
        if session.best is None and session.close_error is not None:
            return row(config, session, ADAPTER_ERROR, f"teardown|close|{session.close_error}",
                       None)
        return _verdict(row, config, session, seed, config_family, adapter, broken)
    except AdapterAbort as abort:
        signature = f"adapter_error|{abort.error.code}|{abort.error}"
        return row(config, session, ADAPTER_ERROR, signature, None)
    except TimeUp:
        return _verdict(row, config, session, seed, config_family, adapter, broken)
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # noqa: BLE001 - a run never raises; the row says what broke
        if session.best is None:
            return row(config, session, ADAPTER_ERROR, f"harness|{type(error).__name__}|{error}",
                       None)
        return _verdict(row, config, session, seed, config_family, adapter, broken)
    finally:
        _close(process)


def _swarm_off(seed: int) -> tuple[str, ...]:
    """The rules run `seed` leaves out (swarm.py), unless KAFKALOG_SWARM=0 turns swarm off."""
    import os

    if os.environ.get("KAFKALOG_SWARM", "1") == "0":
        return ()
    # The crash rules are weighted by --crash-weight, not by the swarm; leaving them out of its
    # list keeps every seed's swarm what it was before crashes existed.
    names = tuple(n for n in rule_names(LogMachine) if not n.startswith("crash"))
    return swarm_off(seed, names)


def config_family_config(name: str) -> v.LogConfig:
    return config_family(name)


def sut_factory(adapter: str | None, broken: str | None,
                keep: bool = False) -> tuple[SutFactory, frozenset[str], Any]:
    """How to build the system under test for each example, its features, and the process the
    run must close (None for a kept one, `keep`, which outlives the run)."""
    if broken is not None:
        if adapter is not None:
            raise ValueError("--broken applies to the built-in implementation, not an adapter")
        from kafkalog.conformance.broken.kafka_durability import (
            KAFKA_DURABILITY,
            KafkaDurabilitySut,
        )
        from kafkalog.conformance.broken.registry import broken_factory

        if broken == KAFKA_DURABILITY:  # Kafka's fsync choices, held to the kafka crash mode
            return KafkaDurabilitySut, frozenset(FEATURES), None

        return broken_factory(broken), frozenset(FEATURES), None
    if adapter is None:
        return ImplSut, ImplSut.features, None
    if adapter == "model":
        return ModelSut, ModelSut.features, None

    process = kept_process(adapter) if keep else AdapterProcess(adapter)

    def open_log(config: v.LogConfig, now_ms: int, log_start_offset: int) -> SubprocessSut:
        return SubprocessSut(process, config, now_ms, log_start_offset)

    return open_log, process.features, None if keep else process


def _close(process: Any) -> None:
    if process is not None:
        process.close()


def _verdict(row: Any, config: v.LogConfig, session: Session, seed: int, family: str,
             adapter: str | None, broken: str | None) -> RunOutcome:
    """Diverged with the shortest trace seen, or conformed when no example failed."""
    if session.best is None:
        return row(config, session, CONFORMED, None, None)
    header = TraceHeader(
        config=config, seed=seed, config_family=family, adapter=adapter or "builtin",
        now_ms=session.now_ms, log_start_offset=session.log_start_offset,
        broken=broken, outcome=DIVERGED, signature=session.best_signature, commit=_commit(),
        swarm_off=session.swarm_off,
    )
    trace, signature = Trace(header, tuple(session.best)), session.best_signature or ""

    with contextlib.suppress(Exception):  # minimising is an extra: keep the shrunk trace
        budget = min(MINIMISE_S, session.shrink_budget_s or MINIMISE_S)
        trace, signature = minimise_trace(trace, signature, session.factory, session.features,
                                          time_limit_s=budget)
    # A step that crashed the checker (Lockstep.step's `harness|` signature) is no divergence
    # of the log: the row stays an adapter_error, but now carries the steps that reproduce it.
    outcome = ADAPTER_ERROR if signature.startswith("harness|") else DIVERGED
    trace = Trace(dataclasses.replace(header, signature=signature, outcome=outcome), trace.steps)
    return row(config, session, outcome, signature, dumps_trace(trace))


def _outcome(seed: int, family: str, adapter: str | None, started: float,
             config: v.LogConfig | None, session: Session | None, outcome: str,
             signature: str | None, trace_jsonl: str | None) -> RunOutcome:
    return RunOutcome(
        seed=seed,
        config_family=family,
        config=encode(config) if config is not None else {},
        adapter=adapter,
        steps_executed=session.steps_executed if session else 0,
        actions=dict(sorted(session.actions.items())) if session else {},
        rules=sorted(session.rules) if session else [],
        duration_s=round(time.monotonic() - started, 4),
        outcome=outcome,
        signature=signature,
        trace_jsonl=trace_jsonl,
        crashes=dict(sorted(session.crashes.items())) if session else {},
        crash_images=session.crash_images if session else 0,
        crash_idempotence=session.crash_idempotence if session else 0,
        crash_s=round(session.crash_s, 4) if session else 0.0,
        crash_in_load=(session.crash_in_load or 0) if session else 0,
        crash_in_clean=session.crash_in_clean if session else 0,
    )
