"""Proof that the checker finds bugs: every broken implementation is caught with a short trace.

Each broken implementation (broken/kafka_bugs.py) is the real one with one historical Kafka bug
put back. For each, `run_seed` over a few fixed seeds must diverge with a shrunk trace of at most
8 steps that (a) still diverges when replayed against the broken implementation and (b)
conforms when replayed against the real one, so the trace pins the reintroduced bug and not some
other difference.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from kafkalog.conformance.broken.base import defining_class, replacement
from kafkalog.conformance.broken.registry import BROKEN, broken_class, install, uninstall
from kafkalog.conformance.check.runner import run_seed
from kafkalog.conformance.errors import UnknownBrokenImplError
from kafkalog.conformance.traces.replay import replay_trace
from kafkalog.conformance.traces.trace import Trace, loads_trace

from kafkalog.cli.conformance_cmds import check

MAX_TRACE_STEPS = 8
# The CI budget per bug: up to 48 seeds of 40 steps, stopping at the first pinned trace. A seed
# that does not diverge costs ~0.1 s (no shrinking); the machine's swarm of enabled rules varies
# per seed (conformance/gen/swarm.py), so some seeds never run the rules a bug needs.
SEEDS = range(48)
# A seed whose shrunk trace also fails on the real implementation found a bug of the real
# implementation, not the reintroduced one; after this many the search gives up (and fails).
MAX_REAL_FAILURES = 2
# The family where each bug shows: time rolls need `time_roll`, index bugs an entry per batch,
# retention above a held-back HW two batches per segment (`hw_retention`).
FAMILY = {
    "retention_ignores_hw": "hw_retention",
    "truncate_fully_keeps_hw": "tiny",
    "truncate_keeps_hw": "tiny",
    "index_truncation_keeps_target": "index_full",
    "end_offset_undefined_is_latest": "tiny",
    "epoch_cache_non_monotonic": "tiny",
    "truncation_keeps_roll_clock": "time_roll",
    "log_start_retention_last": "tiny",
    "recovery_point_above_leo": "tiny",
    "max_timestamp_last_offset": "tiny",
}
SHRUNK_LENGTHS: dict[str, int] = {}
def caught(name: str) -> tuple[Trace, list[str]]:
    """The first seed's shrunk trace that pins bug `name`, and what each tried seed gave."""
    tried: list[str] = []
    real_failures = 0
    for seed in SEEDS:
        if real_failures >= MAX_REAL_FAILURES:
            break
        outcome = run_seed(seed, steps=40, config_family=FAMILY[name], broken=name,
                           time_limit_s=8)
        tried.append(f"seed {seed}: {outcome.outcome} {outcome.signature}")
        if outcome.outcome != "diverged" or outcome.trace_jsonl is None:
            continue
        trace = loads_trace(outcome.trace_jsonl)
        if len(trace.steps) > MAX_TRACE_STEPS:  # shrinking ran out of time: try the next seed
            tried[-1] += f" ({len(trace.steps)} steps)"
            continue
        if not replay_trace(trace).conformed:  # the trace reproduces on the broken impl
            real = replay_trace(_real(trace))
            if real.conformed:
                return trace, tried
            real_failures += 1
            tried[-1] += f" (also diverges on the real impl at step {real.diverged_at})"
    return Trace(header=None, steps=()), tried  # type: ignore[arg-type]


def _real(trace: Trace) -> Trace:
    import dataclasses

    return Trace(dataclasses.replace(trace.header, broken=None), trace.steps)


def test_broken_catalogue__has_at_least_eight_bugs_each_with_a_family() -> None:
    """At least eight; every one names its bug ID and a target family."""
    assert len(BROKEN) >= 8
    assert set(FAMILY) <= set(BROKEN)  # the zoo's bugs are pinned by test_zoo.py instead
    assert all(BROKEN[name].bug.startswith("BUG-") for name in FAMILY)


@pytest.mark.parametrize("name", sorted(FAMILY))
def test_check__broken_impl__is_caught_with_a_short_trace_that_pins_the_bug(name: str) -> None:
    """The bug is found, shrunk to <= 8 steps, and the real implementation passes that trace."""
    trace, tried = caught(name)
    assert trace.steps, f"{name} ({BROKEN[name].bug}) not pinned:\n" + "\n".join(tried)
    SHRUNK_LENGTHS[name] = len(trace.steps)
    assert len(trace.steps) <= MAX_TRACE_STEPS, [s.action for s in trace.steps]
    assert trace.header.broken == name
    print(f"{name}: {len(trace.steps)} steps, median so far "
          f"{statistics.median(SHRUNK_LENGTHS.values())}", file=sys.stderr)


def test_check_cli__broken_impl__exits_1_and_saves_the_trace(tmp_path: Path) -> None:
    """`kafkalog check --broken` fails (exit 1) and writes each failing trace to --out."""
    result = CliRunner().invoke(check, ["--broken", "truncate_fully_keeps_hw", "--examples", "4",
                                        "--steps", "30", "--family", "tiny", "--time-limit",
                                        "8", "--out", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert list(tmp_path.glob("seed-*-tiny.jsonl"))


def test_install__patch_is_removed_when_the_last_user_closes() -> None:
    """Broken patches are reference-counted, so the real code comes back."""
    entry = broken_class("truncate_keeps_hw")
    home = defining_class(entry)
    real = home.__dict__[entry.attribute]
    install("truncate_keeps_hw")
    install("truncate_keeps_hw")
    uninstall("truncate_keeps_hw")
    assert home.__dict__[entry.attribute] is replacement(entry)
    uninstall("truncate_keeps_hw")
    assert home.__dict__[entry.attribute] is real


def test_broken_class__unknown_name__is_a_typed_error_listing_the_known_ones() -> None:
    """A typo in --broken is one clear line, not a KeyError."""
    with pytest.raises(UnknownBrokenImplError, match="truncate_keeps_hw"):
        broken_class("truncate_keep_hw")
