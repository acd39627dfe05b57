"""The campaign's unit of work, without Spark: rows, the error paths, time limits, config mixes."""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from kafkalog.conformance.campaign.synthetic import DIVERGE_EVERY, synthetic_run_seed
from kafkalog.conformance.campaign.task import (
    ARROW_SCHEMA,
    SPARK_DDL,
    TaskSpec,
    family_for_seed,
    normalise_signature,
    parse_config_mix,
    partition_runner,
    run_one,
    trace_step_count,
)
from kafkalog.conformance.errors import UnknownConfigFamilyError

ROOT = Path(__file__).resolve().parents[2]


def spec(run_fn: Any = synthetic_run_seed, **changes: Any) -> TaskSpec:
    values: dict[str, Any] = {
        "campaign_id": "t",
        "steps": 12,
        "families": ("tiny", "index_full"),
        "run_fn": run_fn,
        "commit": "abc123",
    }
    return TaskSpec(**(values | changes))


def raising(error: BaseException) -> Any:
    def run(seed: int, **kwargs: Any) -> Any:
        raise error

    return run


def sleeping(seed: int, **kwargs: Any) -> Any:
    time.sleep(30)
    raise AssertionError("the hard time limit did not interrupt the run")


def swallowing_sleeper(seed: int, **kwargs: Any) -> Any:
    """A run that catches the first interrupt with a bare except and keeps sleeping."""
    try:
        time.sleep(30)
    except BaseException:
        time.sleep(30)
    raise AssertionError("the hard time limit did not interrupt the run")


def test_run_one__conformed_run__row_has_every_column_and_identity() -> None:
    """A returned RunOutcome becomes one row of ARROW_SCHEMA naming campaign, seed and commit."""
    row = run_one(1, spec())
    assert set(row) == set(ARROW_SCHEMA.names)
    assert (row["campaign_id"], row["seed"], row["config_family"]) == ("t", 1, "index_full")
    assert (row["outcome"], row["signature"], row["trace_jsonl"]) == ("conformed", None, None)
    assert (row["adapter"], row["kafkalog_commit"], row["steps"]) == ("builtin", "abc123", 12)
    assert sum(row["actions"].values()) == row["steps_executed"] == 12
    assert row["started_at"] <= row["finished_at"]
    pa.RecordBatch.from_pylist([row], schema=ARROW_SCHEMA)  # raises if a type is off


def test_run_one__diverged_run__keeps_signature_trace_and_its_step_count() -> None:
    """A divergence keeps its signature and trace; trace_steps counts the trace's step lines."""
    row = run_one(DIVERGE_EVERY * 3, spec())
    assert row["outcome"] == "diverged"
    assert row["signature"] and row["trace_jsonl"]
    assert row["trace_steps"] == row["steps_executed"]


@pytest.mark.parametrize(
    "error", [ValueError("boom"), KeyboardInterrupt(), SystemExit(3), MemoryError()]
)
def test_run_one__run_raises_anything__returns_adapter_error_row(error: BaseException) -> None:
    """run_one never raises: even BaseExceptions become an adapter_error row naming the type."""
    row = run_one(5, spec(raising(error)))
    name = type(error).__name__
    assert (row["outcome"], row["signature"]) == ("adapter_error", f"adapter_error|{name}")
    assert row["error"].startswith(name) and row["seed"] == 5
    pa.RecordBatch.from_pylist([row], schema=ARROW_SCHEMA)


def test_run_one__unknown_outcome_value__is_an_adapter_error() -> None:
    """A run function that reports an outcome outside the three is not trusted as a result."""

    def odd(seed: int, **kwargs: Any) -> Any:
        return dataclasses.replace(synthetic_run_seed(seed, **kwargs), outcome="passed")

    row = run_one(1, spec(odd))
    assert row["outcome"] == "adapter_error" and "passed" in row["error"]


def converting_sleeper(seed: int, **kwargs: Any) -> Any:
    """A run that turns the interrupt into its own adapter-error outcome, as run_seed does when
    Hypothesis, interrupted mid-example, reports FlakyStrategyDefinition instead."""
    try:
        time.sleep(30)
    except BaseException:
        time.sleep(2)  # the alarm re-fires: caught again below
    finally:
        outcome = dataclasses.replace(synthetic_run_seed(seed, **kwargs),
                                      outcome="adapter_error",
                                      signature="harness|FlakyStrategyDefinition|data differs")
    return outcome


@pytest.mark.parametrize("run_fn", [sleeping, swallowing_sleeper, converting_sleeper])
def test_run_one__hung_run__stopped_at_the_hard_time_limit(run_fn: Any) -> None:
    """A hang past time_limit_s + grace_s becomes an adapter_error row, even if caught once."""
    started = time.monotonic()
    row = run_one(2, spec(run_fn, time_limit_s=0.2, grace_s=0.1))
    assert time.monotonic() - started < 5
    assert (row["outcome"], row["signature"]) == ("adapter_error", "adapter_error|RunTimedOut")


def test_run_one__passes_the_spec_to_the_run_function() -> None:
    """The run function gets the seed's family, steps, adapter, broken, time limit and the
    crash weight and the sweep (campaigns crash and sweep by default)."""
    seen: dict[str, Any] = {}

    def record(seed: int, **kwargs: Any) -> Any:
        seen.update(kwargs, seed=seed)
        return synthetic_run_seed(seed, **kwargs)

    run_one(4, spec(record, adapter="./my-adapter", broken="bug36", time_limit_s=9.0))
    assert seen == {
        "seed": 4,
        "steps": 12,
        "config_family": "tiny",
        "adapter": "./my-adapter",
        "broken": "bug36",
        "time_limit_s": 9.0,
        "crash_weight": 2,
        "crash_sweep": True,
    }


def test_partition_runner__maps_range_ids_to_wave_seeds() -> None:
    """The mapInArrow function runs wave[id] for each input id and yields schema'd batches."""
    run = partition_runner(spec(), [100, 205, 307])
    ids = pa.RecordBatch.from_pydict({"id": pa.array([2, 0], pa.int64())})
    table = pa.Table.from_batches(list(run(iter([ids]))))
    assert table.schema == ARROW_SCHEMA
    assert table.column("seed").to_pylist() == [307, 100]


def test_parse_config_mix__weights_repeat_families_in_order() -> None:
    """`a=2,b` is the cycle (a, a, b); nothing means every known family once."""
    assert parse_config_mix("a=2,b", ["a", "b", "c"]) == ("a", "a", "b")
    assert parse_config_mix(None, ["a", "b"]) == ("a", "b")


@pytest.mark.parametrize("text", ["nope", "a=0", "a=x", "a,,b"])
def test_parse_config_mix__bad_entry__typed_error_naming_the_option(text: str) -> None:
    """An unknown family or a bad weight is a typed error that quotes --config-mix."""
    with pytest.raises(UnknownConfigFamilyError) as caught:
        parse_config_mix(text, ["a", "b"])
    assert caught.value.where == f"--config-mix {text!r}"


def test_family_for_seed__is_a_function_of_the_seed_alone() -> None:
    """Seeds cycle through the mix, so the same seed always runs the same family."""
    cycle = ("a", "a", "b")
    assert [family_for_seed(s, cycle) for s in range(6)] == ["a", "a", "b", "a", "a", "b"]


def test_trace_step_count__header_line_is_not_a_step() -> None:
    """A trace of a header and three steps has three steps; no trace has none."""
    assert trace_step_count('{"h":1}\n{"s":1}\n{"s":2}\n\n{"s":3}\n') == 3
    assert trace_step_count(None) is None


def test_spark_ddl__names_the_arrow_schema_columns_in_order() -> None:
    """The DDL given to mapInArrow and the Arrow schema the tasks produce list the same columns."""
    ddl_names = [part.strip().split(" ")[0] for part in re.split(r",(?![^<]*>)", SPARK_DDL)]
    assert ddl_names == ARROW_SCHEMA.names


def test_campaign_schema_doc__documents_every_column() -> None:
    """specs/campaign-schema.md has a table row for every Parquet column."""
    text = (ROOT / "specs" / "campaign-schema.md").read_text()
    missing = [name for name in ARROW_SCHEMA.names if f"| `{name}` |" not in text]
    assert missing == []


def test_adapter_timeout__wrapper_and_its_children__all_killed(tmp_path: Path) -> None:
    """A hung adapter started through a shell is killed as a process group, grandchild included."""
    from kafkalog.conformance.adapter.subprocess_sut import AdapterProcess
    from kafkalog.conformance.errors import AdapterTimeoutError

    marker = tmp_path / "pids"
    command = f"sh -c 'sleep 300 & echo $$ $! > {marker}; sleep 300'"
    started = time.monotonic()
    with pytest.raises(AdapterTimeoutError):
        AdapterProcess(command, timeout_s=0.5)
    assert time.monotonic() - started < 10
    pids = [int(pid) for pid in marker.read_text().split()]
    deadline = time.monotonic() + 5  # SIGKILL is sent; the kernel needs a moment to reap
    while alive(pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert alive(pids) == []  # neither the shell nor its background child is left


def alive(pids: list[int]) -> list[int]:
    """The pids that still exist and are not zombies (from /proc)."""
    found = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue  # gone
        if state not in "ZX":
            found.append(pid)
    return found


@pytest.mark.parametrize(
    "raw",
    [
        "adapter_error|AdapterCrashedError|adapter exited before answering request 3 (append) "
        "(exit status 1); stderr: Traceback (most recent call last): File /x/a.py, line 9",
        "adapter_error|AdapterCrashedError|adapter exited before answering request 17 (append) "
        "(exit status 1); stderr: boom at 0x7f3a2c",
    ],
)
def test_normalise_signature__free_text_of_one_cause__one_bucket(raw: str) -> None:
    """Request numbers and stderr are cut, so one crashing adapter gives one bucket."""
    assert normalise_signature(raw, "python /abs/dir/adapter.py") == (
        "adapter_error|AdapterCrashedError|adapter exited before answering request N (append) "
        "(exit status 1)"
    )


def test_normalise_signature__adapter_command_and_paths__replaced() -> None:
    """The adapter's command line (the row's `adapter` column) and absolute paths are dropped."""
    adapter = "python /home/u/work/adapter.py --fast"
    raw = (
        "adapter_error|ProtocolError|bad JSON in /tmp/pytest-3/x/reply.json "
        f"({adapter}: reply to request 4 (read))"
    )
    assert normalise_signature(raw, adapter) == (
        "adapter_error|ProtocolError|bad JSON in reply.json (<adapter>: reply to request N (read))"
    )
    divergence = "roll|ok|ok|verify|KL-FLUSH-3"
    assert normalise_signature(divergence, adapter) == divergence
