"""Conformance vectors: a versioned corpus of traces with expected results (specs/vectors.md).

`export(dir)` writes, for every spec rule, a minimal vector from the catalogue (catalogue.py)
run on the model and the built-in implementation in lockstep; one more vector per Kafka version
profile where the model's expected answers differ; and one vector per broken implementation (the
regression trace that pins it, checked to still catch it). Each vector is a trace file
(specs/trace-format.md) whose step lines carry the expected answer (`model`) and the expected
`state` after the step; `manifest.json` lists them, `vectors.schema.json` describes both.
`run(dir, adapter)` replays every vector against an adapter through the usual lockstep checks.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalog.conformance.adapter.json_codec import ACTIONS, decode_args, encode, encode_args
from kafkalog.conformance.check.session import START_MS
from kafkalog.conformance.check.sut import StepResult
from kafkalog.conformance.errors import TraceFormatError
from kafkalog.conformance.gen.configs import config_family
from kafkalog.conformance.traces.scripted import Call, scripted_trace
from kafkalog.conformance.traces.trace import (
    Trace,
    TraceHeader,
    TraceStep,
    dumps_trace,
    git_commit,
    read_trace,
)
from kafkalog.conformance.vectors import catalogue as vector_catalogue
from kafkalog.model import log
from kafkalog.model.choices import outcomes
from kafkalog.model.errors import KafkalogError
from kafkalog.model.local_log import fire_pending_flushes
from kafkalog.model.versions import DEFAULT_PROFILE, PROFILES

from kafkalog import __version__

VECTORS_FORMAT = 1
ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = ROOT / "specs" / "vectors.schema.json"
REGRESSIONS = ROOT / "tests" / "regressions"


@dataclass
class Vector:
    """One manifest entry and its trace."""

    id: str
    kind: str  # "rule" | "profile" | "broken"
    rules: list[str]
    trace: Trace
    states: list[Any]
    extra: dict[str, Any] = field(default_factory=dict)

    def entry(self) -> dict[str, Any]:
        features = sorted({ACTIONS[s.action].feature for s in self.trace.steps}
                          | {f for s in self.trace.steps for f in argument_features(s.args)})
        return {"id": self.id, "file": f"vectors/{self.id}.jsonl", "kind": self.kind,
                "rules": self.rules, "kafka_version": self.trace.header.config.kafka_version,
                "steps": len(self.trace.steps), "features": features,
                "nondeterministic_steps": nondeterministic_steps(self.trace), **self.extra}


def argument_features(args: Any) -> set[str]:
    """Features a step needs beyond its action's: producer fields (`producer_state`), and
    transactional or control batches and read_committed (`transactions`)."""
    found = set()
    batches = args.get("batches") or []
    if args.get("producer_id", -1) != -1 or any(b.get("producer_id", -1) != -1 for b in batches):
        found.add("producer_state")
    if (args.get("is_transactional") or args.get("isolation") == "txn_committed"
            or any(b.get("is_transactional") or b.get("is_control") for b in batches)):
        found.add("transactions")
    return found


def _model_run(config: Any, calls: list[Call],
               now_ms: int = START_MS) -> tuple[list[TraceStep], list[Any]]:
    """The model's answers and states for `calls` (the expected results of a vector)."""
    state = log.empty_log(config, now_ms)
    steps, states = [], []
    for action, args in calls:
        try:
            state, value = getattr(log, action)(state, **args)
            answer = StepResult(value=value)
        except KafkalogError as error:
            answer = StepResult(code=error.code, message=str(error))
        steps.append(TraceStep(action, encode_args(action, args), answer.to_json(), None))
        states.append(encode(log.view(state)))
    return steps, states


def nondeterministic_steps(trace: Trace) -> list[int]:
    """Steps where the model allows more than one answer or state (KL-ALLOW-1), 1-based."""
    state = log.empty_log(trace.header.config, trace.header.now_ms)
    found = []
    for number, step in enumerate(trace.steps, start=1):
        args = decode_args(step.action, step.args)
        function = getattr(log, step.action)

        def run(s: Any, function: Callable[..., Any] = function,
                args: dict[str, Any] = args) -> Any:
            after, value = function(fire_pending_flushes(s), **args)
            return fire_pending_flushes(after), value  # as the checker runs it (allowed.py)

        seen = set()
        for outcome in outcomes(run, state):
            if outcome.error is not None:
                seen.add(("error", outcome.error.code))
            else:
                seen.add((repr(outcome.value[1]), repr(log.view(outcome.value[0]))))
        if len(seen) > 1:
            found.append(number)
        with contextlib.suppress(KafkalogError):  # an error leaves the state unchanged
            state, _ = function(state, **args)
    return found


def _rule_groups() -> list[tuple[list[str], str, list[Call]]]:
    """Catalogue entries with the same family and calls share one vector (e.g. invariants)."""
    groups: dict[str, tuple[list[str], str, list[Call]]] = {}
    for rule, (family, calls) in vector_catalogue.load().items():
        key = json.dumps([family, [(a, repr(args)) for a, args in calls]])
        groups.setdefault(key, ([], family, calls))[0].append(rule)
    return list(groups.values())


def _rule_vectors(verify: bool) -> list[Vector]:
    vectors = []
    for rules, family, calls in _rule_groups():
        config = config_family(family)
        steps, states = _model_run(config, calls)
        if verify:  # the built-in implementation must pass its own corpus
            trace = scripted_trace(config, calls)
            if trace.header.outcome != "conformed":
                raise AssertionError(f"{rules[0]}: the built-in implementation diverges: "
                                     f"{trace.steps[-1].divergence}")
        base = Vector(rules[0], "rule", rules, Trace(_header(config), tuple(steps)), states,
                      {"config_family": family})
        vectors.append(base)
        vectors += _profile_vectors(base, config, calls, steps, states)
    return vectors


def _profile_vectors(base: Vector, config: Any, calls: list[Call], steps: list[TraceStep],
                     states: list[Any], now_ms: int = START_MS) -> list[Vector]:
    """One vector per profile whose expected answers or states differ from the default's."""
    out = []
    for profile in PROFILES:
        if profile == DEFAULT_PROFILE:
            continue
        other = dataclasses.replace(config, kafka_version=profile)
        their_steps, their_states = _model_run(other, calls, now_ms)
        if [s.model for s in their_steps] == [s.model for s in steps] and their_states == states:
            continue
        trace = Trace(_header(other, now_ms), tuple(their_steps))
        family = base.extra.get("config_family")
        out.append(Vector(f"{base.id}@{profile}", "profile", base.rules, trace, their_states,
                          {"config_family": family} if family else {}))
    return out


def _broken_vectors() -> list[Vector]:
    """The regression trace of each broken implementation, still catching it (re-run here)."""
    from kafkalog.conformance.broken.registry import BROKEN

    if not REGRESSIONS.is_dir():
        raise TraceFormatError("the regression corpus is missing", where=str(REGRESSIONS))
    vectors, seen = [], set()
    for path in sorted(REGRESSIONS.glob("*.jsonl")):
        recorded = read_trace(path)
        name = recorded.header.broken
        if name is None or name in seen or name not in BROKEN:
            continue
        calls = [(s.action, decode_args(s.action, s.args)) for s in recorded.steps]
        caught = scripted_trace(recorded.header.config, calls, broken=name,
                                now_ms=recorded.header.now_ms)
        if caught.header.outcome != "diverged" or len(caught.steps) != len(calls):
            raise AssertionError(f"{path.name} no longer catches {name}")
        now_ms = recorded.header.now_ms
        steps, states = _model_run(recorded.header.config, calls, now_ms)
        trace = Trace(dataclasses.replace(_header(recorded.header.config, now_ms), broken=name),
                      tuple(steps))
        seen.add(name)
        base = Vector(f"broken-{name}", "broken", [BROKEN[name].rule], trace, states,
                      {"broken": name, "bug": BROKEN[name].bug, "diverges_at": len(calls),
                       "signature": caught.header.signature})
        vectors.append(base)
        vectors += _profile_vectors(base, recorded.header.config, calls, steps, states, now_ms)
    missing = sorted(set(BROKEN) - seen)
    if missing:
        raise TraceFormatError(f"no regression trace for broken implementation(s) {missing}",
                               where=str(REGRESSIONS))
    return vectors


def _header(config: Any, now_ms: int = START_MS) -> Any:
    return TraceHeader(config=config, now_ms=now_ms, commit=git_commit(), outcome="conformed")


def vector_text(vector: Vector) -> str:
    """The vector file: a trace whose step lines also carry the expected `state`."""
    lines = dumps_trace(vector.trace).splitlines()
    out = [lines[0]]
    for line, state in zip(lines[1:], vector.states, strict=True):
        data = json.loads(line)
        data.pop("impl", None)
        data["state"] = state
        out.append(json.dumps(data, separators=(",", ":")))
    return "\n".join(out) + "\n"


def export(directory: Path, *, verify: bool = True) -> dict[str, Any]:
    """Write the corpus into `directory` (replacing its `vectors/`); returns the manifest."""
    vectors = _rule_vectors(verify) + _broken_vectors()
    target = directory / "vectors"
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for vector in vectors:
        (target / f"{vector.id}.jsonl").write_text(vector_text(vector), encoding="utf-8")
    manifest = {
        "kafkalog_vectors": VECTORS_FORMAT,
        "kafkalog_version": __version__,
        "commit": git_commit(),
        "trace_format": 1,
        "profiles": list(PROFILES),
        "vectors": [vector.entry() for vector in vectors],
    }
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n",
                                             encoding="utf-8")
    shutil.copyfile(SCHEMA_PATH, directory / "vectors.schema.json")
    return manifest
