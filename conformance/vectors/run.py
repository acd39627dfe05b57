"""`kafkalog vectors run DIR --adapter CMD`: replay an exported corpus against an implementation.

One adapter process serves every vector (a fresh `open` per vector). Each vector runs through
the usual lockstep checks (answers, `state()`, invariants, allowed sets); in addition the model's
answers and states must equal the ones recorded in the vector, so a corpus older than the model
is reported as stale rather than silently re-interpreted. A vector needing a feature the adapter
did not declare in its handshake is skipped, with the feature named.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalog.conformance.adapter.json_codec import FEATURES, decode_args, encode
from kafkalog.conformance.adapter.subprocess_sut import AdapterProcess, SubprocessSut
from kafkalog.conformance.check.impl_sut import ImplSut
from kafkalog.conformance.check.lockstep import DivergenceError, Lockstep
from kafkalog.conformance.check.sut import ModelSut, Sut
from kafkalog.conformance.errors import AdapterError, TraceFormatError
from kafkalog.conformance.traces.trace import loads_trace, with_kafka_version
from kafkalog.model import values as v
from kafkalog.model.versions import DEFAULT_PROFILE


@dataclass(frozen=True)
class VectorResult:
    id: str
    outcome: str  # "passed" | "failed" | "skipped"
    detail: str = ""


@dataclass
class RunReport:
    results: list[VectorResult] = field(default_factory=list)

    def count(self, outcome: str) -> int:
        return sum(r.outcome == outcome for r in self.results)

    @property
    def ok(self) -> bool:
        return self.count("failed") == 0


def read_manifest(directory: Path) -> dict[str, Any]:
    """The manifest, validated against the corpus's own JSON Schema (when jsonschema is
    installed; otherwise only its format version is checked)."""
    try:
        manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
        schema = json.loads((directory / "vectors.schema.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise TraceFormatError(f"not a vector corpus: {error}", where=str(directory)) from None
    if not isinstance(manifest, dict) or manifest.get("kafkalog_vectors") != 1:
        raise TraceFormatError("manifest: not kafkalog_vectors format 1", where=str(directory))
    try:
        import jsonschema
    except ImportError:  # an optional dependency; the format check above still ran
        return manifest
    try:
        jsonschema.validate(manifest, {**schema, "$ref": "#/$defs/Manifest"})
    except jsonschema.ValidationError as error:
        raise TraceFormatError(f"manifest: {error.message}", where=str(directory)) from None
    return manifest


class _Adapter:
    """Opens one log per vector: the built-in implementation, the model, or an adapter process."""

    def __init__(self, command: str | None) -> None:
        self.process: Any = None
        if command is None or command == "builtin":
            self.features, self._open = frozenset(FEATURES), ImplSut
        elif command == "model":
            self.features, self._open = frozenset(FEATURES), ModelSut
        else:
            self.process = AdapterProcess(command)
            self.features = self.process.features

            def open_log(config: v.LogConfig, now_ms: int, log_start_offset: int) -> Sut:
                return SubprocessSut(self.process, config, now_ms, log_start_offset)

            self._open = open_log

    def open(self, config: v.LogConfig, now_ms: int, log_start_offset: int) -> Sut:
        return self._open(config, now_ms, log_start_offset)  # type: ignore[no-any-return]

    def close(self) -> None:
        if self.process is not None:
            self.process.close()


def select(manifest: dict[str, Any], kafka_version: str) -> list[dict[str, Any]]:
    """The vectors of one profile: its own variants, and every base vector without a variant.

    Base vectors are recorded under the default profile (older corpora: under `trunk`)."""
    entries = manifest["vectors"]
    if kafka_version == DEFAULT_PROFILE:
        return [e for e in entries if e["kind"] != "profile"]
    variants = {e["id"].split("@")[0] for e in entries
                if e["kind"] == "profile" and e["kafka_version"] == kafka_version}
    return [e for e in entries
            if (e["kind"] == "profile" and e["kafka_version"] == kafka_version)
            or (e["kind"] != "profile" and e["id"] not in variants)]


def run(directory: Path, adapter: str | None = None,
        kafka_version: str = DEFAULT_PROFILE) -> RunReport:
    """Replay the vectors of profile `kafka_version` in `directory` against `adapter`."""
    manifest = read_manifest(directory)
    report = RunReport()
    sides = _Adapter(adapter)
    try:
        for entry in select(manifest, kafka_version):
            missing = sorted(set(entry["features"]) - sides.features)
            if missing:
                report.results.append(VectorResult(entry["id"], "skipped",
                                                   f"needs feature(s) {', '.join(missing)}"))
                continue
            report.results.append(_run_vector(directory, entry, sides, kafka_version))
    finally:
        sides.close()
    return report


def _run_vector(directory: Path, entry: dict[str, Any], sides: _Adapter,
                kafka_version: str) -> VectorResult:
    path = directory / entry["file"]
    text = path.read_text(encoding="utf-8")
    trace = with_kafka_version(loads_trace(text, source=str(path)), kafka_version)
    states = [json.loads(line).get("state") for line in text.splitlines()[1:] if line.strip()]
    header = trace.header
    try:
        sut = sides.open(header.config, header.now_ms, header.log_start_offset)
    except AdapterError as error:
        return VectorResult(entry["id"], "failed", f"open: {error.code}: {error}")
    lockstep = Lockstep(ModelSut(header.config, header.now_ms, header.log_start_offset), sut)
    try:
        for number, (step, state) in enumerate(zip(trace.steps, states, strict=True), start=1):
            problem = _step(lockstep, step.action, step.args, step.model, state)
            if problem:
                return VectorResult(entry["id"], "failed", f"step {number}: {problem}")
    except AdapterError as error:
        return VectorResult(entry["id"], "failed", f"adapter: {error.code}: {error}")
    finally:
        sut.close()
    return VectorResult(entry["id"], "passed")


def _step(lockstep: Lockstep, action: str, json_args: Any, expected: Any,
          expected_state: Any) -> str | None:
    """The problem with one step, or None: a divergence, or a model answer unlike the vector's."""
    try:
        done = lockstep.step(action, decode_args(action, json_args))
    except DivergenceError as divergence:
        return str(divergence)
    if done is None:
        return f"{action} answered unsupported although its feature was declared"
    model, _ = done
    chose = any(s.choice is not None for s in lockstep.steps)  # then the model follows the impl
    if not chose and model.to_json() != expected:
        return f"stale vector: the model now answers {model.to_json()}, the vector {expected}"
    if not chose and encode(lockstep.model.state()) != expected_state:
        return "stale vector: the model's state() differs from the vector's"
    return None
