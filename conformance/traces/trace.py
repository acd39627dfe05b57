"""Trace files (specs/trace-format.md): a header line, then one JSON line per step.

A trace is what a failing run hands back: the configuration, the seed and the adapter on the
header, then each action with its arguments and both sides' results. Reading is strict and every
problem is a `TraceFormatError` naming the file and line, since traces come from outside.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalog.conformance.adapter.json_codec import Json, decode, decode_args, decode_error, encode
from kafkalog.conformance.errors import TraceFormatError, WireFormatError
from kafkalog.model import values as v

from kafkalog import __version__

TRACE_FORMAT_VERSION = 1
_HEADER_KEYS = {
    "kafkalog_trace", "kafkalog_version", "commit", "seed", "config_family", "config", "now_ms",
    "log_start_offset", "adapter", "broken", "outcome", "signature", "finding",
    "swarm_off",
}
# `state` is the expected state() after the step in a conformance vector (specs/vectors.md).
_STEP_KEYS = {"step", "action", "args", "model", "impl", "divergence", "choice", "state"}


@dataclass(frozen=True)
class TraceHeader:
    """The first line: where the trace came from and how to rebuild the starting log."""

    config: v.LogConfig
    seed: int | None = None
    config_family: str | None = None
    now_ms: int = 0
    log_start_offset: int = 0
    adapter: str = "builtin"  # "builtin", or the adapter command line
    broken: str | None = None  # a conformance.broken name when the run used a broken impl
    outcome: str | None = None  # the run's outcome when the trace was written
    signature: str | None = None
    # The broker this divergence is a finding in (e.g. "tansu 0.6.0"), not a kafkalog bug:
    # the regression corpus replays it against the model only (specs/trace-format.md).
    finding: str | None = None
    kafkalog_version: str = __version__
    commit: str = "unknown"
    swarm_off: tuple[str, ...] = ()  # the machine rules the run left out (swarm.py)


@dataclass(frozen=True)
class TraceStep:
    """One action with its arguments and what each side answered, as the JSON codec writes them."""

    action: str
    args: dict[str, Json]
    model: Json = None  # {"ok": ...} | {"error": {...}}
    impl: Json = None  # {"ok": ...} | {"error": {...}} | {"unsupported": {...}}
    divergence: str | None = None  # set on the step where the sides first disagreed
    # The Kafka-legal choices (KL-ALLOW-1) the model took to match the implementation, e.g.
    # "roll_jitter=1"; None when kafkalog's own choices matched.
    choice: str | None = None


@dataclass(frozen=True)
class Trace:
    header: TraceHeader
    steps: tuple[TraceStep, ...] = field(default=())


def git_commit() -> str:
    """The repository's HEAD commit, or "unknown" outside a git checkout."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return done.stdout.strip() if done.returncode == 0 else "unknown"


def with_kafka_version(trace: Trace, version: str) -> Trace:
    """The same trace checked against another Kafka version profile (KL-VERSION-1)."""
    from dataclasses import replace

    config = replace(trace.header.config, kafka_version=version)
    return Trace(replace(trace.header, config=config), trace.steps)


def header_json(header: TraceHeader) -> dict[str, Json]:
    return {
        "kafkalog_trace": TRACE_FORMAT_VERSION,
        "kafkalog_version": header.kafkalog_version,
        "commit": header.commit,
        "seed": header.seed,
        "config_family": header.config_family,
        "config": encode(header.config),
        "now_ms": header.now_ms,
        "log_start_offset": header.log_start_offset,
        "adapter": header.adapter,
        "broken": header.broken,
        "outcome": header.outcome,
        "signature": header.signature,
        **({"finding": header.finding} if header.finding is not None else {}),
        **({"swarm_off": list(header.swarm_off)} if header.swarm_off else {}),
    }


def step_json(index: int, step: TraceStep) -> dict[str, Json]:
    out: dict[str, Json] = {"step": index, "action": step.action, "args": step.args,
                            "model": step.model, "impl": step.impl}
    if step.divergence is not None:
        out["divergence"] = step.divergence
    if step.choice is not None:
        out["choice"] = step.choice
    return out


def dumps_trace(trace: Trace) -> str:
    """The trace as JSON Lines text (header first, one step per line, final newline)."""
    lines = [json.dumps(header_json(trace.header), separators=(",", ":"))]
    lines += [
        json.dumps(step_json(i, step), separators=(",", ":"))
        for i, step in enumerate(trace.steps, start=1)
    ]
    return "\n".join(lines) + "\n"


def write_trace(trace: Trace, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps_trace(trace), encoding="utf-8")
    return path


def read_trace(path: Path) -> Trace:
    """Read a trace file; raises TraceFormatError (naming file and line) for a bad one."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise TraceFormatError(f"cannot read trace: {error}", where=str(path)) from None
    return loads_trace(text, source=str(path))


def loads_trace(text: str, source: str = "<trace>") -> Trace:
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not lines:
        raise TraceFormatError("empty trace: a header line is required", where=source)
    header = _parse_header(_load(lines[0][1], source, lines[0][0]), f"{source}:{lines[0][0]}")
    steps = [
        _parse_step(_load(line, source, n), f"{source}:{n}", expected)
        for expected, (n, line) in enumerate(lines[1:], start=1)
    ]
    return Trace(header, tuple(steps))


def _load(line: str, source: str, line_no: int) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as error:
        raise TraceFormatError(f"not JSON: {error.msg}", where=f"{source}:{line_no}") from None
    except (ValueError, RecursionError) as error:
        # json raises these for integers past Python's digit limit and for very deep nesting.
        raise TraceFormatError(f"not readable JSON: {type(error).__name__}: "
                               f"{str(error)[:120]}", where=f"{source}:{line_no}") from None
    if not isinstance(value, dict):
        raise TraceFormatError("each line must be a JSON object", where=f"{source}:{line_no}")
    return value


def _parse_header(data: dict[str, Any], where: str) -> TraceHeader:
    version = data.get("kafkalog_trace")
    if version != TRACE_FORMAT_VERSION:
        raise TraceFormatError(
            f"not a kafkalog trace header (kafkalog_trace={version!r}, expected "
            f"{TRACE_FORMAT_VERSION})",
            where=where,
        )
    unknown = set(data) - _HEADER_KEYS
    if unknown:
        raise TraceFormatError(f"unknown header field(s) {sorted(unknown)}", where=where)
    if "config" not in data:
        raise TraceFormatError("header without config", where=where)
    try:
        return TraceHeader(
            config=decode(v.LogConfig, data["config"], "config"),
            seed=decode(int | None, data.get("seed"), "seed"),
            config_family=decode(str | None, data.get("config_family"), "config_family"),
            now_ms=decode(int, data.get("now_ms", 0), "now_ms"),
            log_start_offset=decode(int, data.get("log_start_offset", 0), "log_start_offset"),
            adapter=decode(str, data.get("adapter", "builtin"), "adapter"),
            broken=decode(str | None, data.get("broken"), "broken"),
            outcome=decode(str | None, data.get("outcome"), "outcome"),
            signature=decode(str | None, data.get("signature"), "signature"),
            finding=decode(str | None, data.get("finding"), "finding"),
            kafkalog_version=decode(str, data.get("kafkalog_version", "unknown"), "version"),
            commit=decode(str, data.get("commit", "unknown"), "commit"),
            swarm_off=decode(tuple[str, ...], data.get("swarm_off", []), "swarm_off"),
        )
    except WireFormatError as error:
        raise TraceFormatError(str(error), where=where) from None


def _parse_step(data: dict[str, Any], where: str, expected: int) -> TraceStep:
    unknown = set(data) - _STEP_KEYS
    if unknown:
        raise TraceFormatError(f"unknown step field(s) {sorted(unknown)}", where=where)
    if data.get("step") != expected:
        raise TraceFormatError(f"step number {data.get('step')!r}, expected {expected}",
                               where=where)
    action, args = data.get("action"), data.get("args", {})
    if args is None:
        args = {}  # as the adapter protocol reads it: no arguments
    if not isinstance(action, str):
        raise TraceFormatError("step without an action name", where=where)
    try:
        decode_args(action, args, where="args")  # validates names and types now, not mid-replay
        for side in ("model", "impl"):
            _check_result(data.get(side), side)
    except WireFormatError as error:
        raise TraceFormatError(str(error), where=where) from None
    except TraceFormatError as error:
        raise TraceFormatError(error.message, where=where) from None
    except Exception as error:  # UnknownActionError: an action outside the vocabulary
        raise TraceFormatError(str(error), where=where) from None
    divergence = data.get("divergence")
    if divergence is not None and not isinstance(divergence, str):
        raise TraceFormatError("divergence must be a string", where=where)
    choice = data.get("choice")
    if choice is not None and not isinstance(choice, str):
        raise TraceFormatError("choice must be a string", where=where)
    return TraceStep(action, args, data.get("model"), data.get("impl"), divergence, choice)


def _check_result(value: Json, side: str) -> None:
    """A recorded result is null (not run), {"ok": v}, {"error": {...}} or {"unsupported": {}}."""
    if value is None:
        return
    if not isinstance(value, dict) or len(value) != 1:
        raise TraceFormatError(f"{side}: a result is an object with one key")
    (kind, body), = value.items()
    if kind == "error":
        if isinstance(body, dict) and body.get("code") == "UnexpectedException":
            return
        decode_error(body, where=f"{side}.error")
    elif kind not in ("ok", "unsupported"):
        raise TraceFormatError(f"{side}: unknown result kind {kind!r}")
