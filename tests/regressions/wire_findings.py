"""What the make_*_findings.py scripts share: one scripted scenario recorded against a running
broker up to its first divergence, as a trace whose header names the broker in `finding`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafkalog.conformance.check.lockstep import DivergenceError
from kafkalog.conformance.check.runner import sut_factory
from kafkalog.conformance.check.session import Session
from kafkalog.conformance.gen.configs import CONFIG_FAMILIES
from kafkalog.conformance.traces.trace import Trace, TraceHeader, git_commit, write_trace
from kafkalog.model import values as v

from kafkalog.cli.wire_cmds import wire_adapter_command

Steps = list[tuple[str, dict[str, object]]]


def leader_steps(*timestamps: int, size: int = 4) -> Steps:
    """One-record batches of `size` value bytes, each followed by the HW step the checker adds
    (KL-WIRE-2)."""
    steps: Steps = []
    for i, ts in enumerate(timestamps, start=1):
        steps.append(("append_as_leader",
                      {"records": (v.Record(None, b"x" * size, ts),), "leader_epoch": 0}))
        steps.append(("update_high_watermark", {"offset": i}))
    return steps


def read_step(start_offset: int, max_bytes: int) -> tuple[str, dict[str, object]]:
    """A Fetch at HW isolation that returns at least one batch."""
    return ("read", {"start_offset": start_offset, "max_bytes": max_bytes,
                     "isolation": v.Isolation.HIGH_WATERMARK, "min_one_message": True})


def record_finding(family: str, steps: Any, address: str, log_path: Path, topic_prefix: str,
                   finding: str) -> Trace | None:
    """The trace of `steps` up to the broker's first divergence, or None when it conforms.
    The adapter runs with `topic_prefix`, which the header's adapter line repeats."""
    config = CONFIG_FAMILIES[family]
    factory, features, process = sut_factory(
        wire_adapter_command(address, topic_prefix=topic_prefix, broker_log=log_path), None)
    try:
        session = Session(config, factory, features)
        lockstep = session.start()
        for action, args in steps:
            try:
                lockstep.step(action, dict(args))
            except DivergenceError as divergence:
                header = TraceHeader(
                    config=config, config_family=family, now_ms=session.now_ms,
                    outcome="diverged", signature=divergence.signature, finding=finding,
                    commit=git_commit(),
                    adapter=f"kafkalog wire-adapter --bootstrap {address} "
                            f"--topic-prefix {topic_prefix}")
                return Trace(header, tuple(lockstep.steps))
        return None
    finally:
        process.close()


def record_scenario(name: str, family: str, steps: Any, broker: Any, topic_prefix: str,
                    finding: str, out: Path, stem: str) -> Trace | None:
    """Record one named scenario against `broker` and write it as out/WIRE-<stem>-<name>.jsonl
    when it diverges; say so when the broker conforms now (the finding was fixed)."""
    trace = record_finding(family, steps, broker.address, broker.log_path, topic_prefix, finding)
    if trace is None:
        print(f"{name}: conforms now")
        return None
    path = write_trace(trace, out / f"WIRE-{stem}-{name}.jsonl")
    print(f"{path.name}: {len(trace.steps)} steps  {trace.header.signature}")
    return trace
