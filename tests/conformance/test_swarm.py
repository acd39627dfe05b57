"""Swarm testing (seeded rule subsets, in the trace header) and pair coverage."""

from __future__ import annotations

from kafkalog.conformance.check.combos import rule_pairs
from kafkalog.conformance.check.coverage import RUN_RULES
from kafkalog.conformance.check.runner import run_seed
from kafkalog.conformance.gen.machine import LogMachine
from kafkalog.conformance.gen.swarm import ALWAYS_ON, rule_names, swarm_off, without_rules
from kafkalog.conformance.traces.trace import dumps_trace, loads_trace


def test_swarm_off__is_seeded_varies_by_seed_and_keeps_append_one() -> None:
    """The same seed leaves out the same rules; seeds differ; append_one always stays."""
    names = rule_names(LogMachine)
    assert "read_at_high_watermark" in names and "append_one" in names
    runs = [swarm_off(seed, names) for seed in range(20)]
    assert runs[3] == swarm_off(3, names)
    assert len(set(runs)) > 10
    assert all(ALWAYS_ON.isdisjoint(off) for off in runs)
    assert all(0 < len(off) < len(names) for off in runs[:5])


def test_without_rules__disabled_rules_are_no_rules_but_still_callable() -> None:
    """A left-out rule is never chosen, yet scenario rules can still call it as a helper."""
    machine = without_rules(LogMachine, ["append_one", "roll"])
    assert "append_one" not in rule_names(machine) and "roll" not in rule_names(machine)
    assert callable(machine.append_one)
    assert "read" in rule_names(machine)


def test_run_seed__diverging_run__records_its_swarm_in_the_trace_header() -> None:
    """The header names the rules the run left out, and survives a round trip."""
    outcome = next(o for seed in range(10)
                   if (o := run_seed(seed, steps=30, config_family="tiny", shrink_s=0.3,
                                     broken="truncate_fully_keeps_hw")).trace_jsonl)
    trace = loads_trace(outcome.trace_jsonl or "")
    swarmed = [n for n in rule_names(LogMachine) if not n.startswith("crash")]  # weighted apart
    assert trace.header.swarm_off == swarm_off(outcome.seed, swarmed)
    assert loads_trace(dumps_trace(trace)).header.swarm_off == trace.header.swarm_off


def test_rule_pairs__counts_distinct_pairs_met_in_one_run_without_the_constant_rules() -> None:
    """Pairs come from single runs; rules every run exercises do not count."""
    runs = [["KL-APPEND-1", "KL-TRUNC-1", *RUN_RULES], ["KL-APPEND-1", "KL-RET-1"],
            ["KL-TRUNC-1", "KL-APPEND-1"]]
    coverage = rule_pairs(runs)
    assert coverage.covered == 2
    assert coverage.possible > coverage.covered
    assert "rule pairs met in one run: 2 of" in coverage.describe()
