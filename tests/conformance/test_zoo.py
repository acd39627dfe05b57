"""Every broken implementation of the bug zoo is caught by default `check`.

`python -m kafkalog.conformance.broken.zoo_bench` runs default `kafkalog check --broken NAME` for
each
one and records the first seed whose run saves a shrunk trace; SEEDS pins what it found. Here
each such run must still diverge, with a trace that diverges on the broken implementation and
conforms on the real one, so the catch (not just the saved trace in tests/regressions/) stays
true as the generator changes. Shrinking gets a small budget: the catch is the point here, the
time to a shrunk trace is the benchmark's.
"""

from __future__ import annotations

import dataclasses

import pytest
from kafkalog.conformance.broken.registry import BROKEN
from kafkalog.conformance.check.runner import run_seed
from kafkalog.conformance.gen.configs import DEFAULT_MIX
from kafkalog.conformance.traces.replay import replay_trace
from kafkalog.conformance.traces.trace import Trace, loads_trace
from test_broken import FAMILY

#: The first seed of default `kafkalog check` (100 runs of 40 steps, families by seed) that
#: catches each bug, found by zoo_bench; re-run it after a change of the machine's rules or
#: of the config families.
SEEDS = {
    "index_per_append": 4,
    "index_interval_inclusive": 2,
    "time_index_pairs_current_batch": 0,
    "index_resize_resets_entries": 0,
    "truncation_keeps_index_trimmed": 4,
    "time_index_no_reserved_slot": 1,
    "time_roll_wall_clock": 0,
    "roll_size_inclusive": 0,
    "rolled_indexes_not_trimmed": 0,
    "roll_keeps_hw_metadata": 5,
    "roll_without_flush": 3,
    "segment_read_ignores_max_position": 2,
    "read_without_bound_shortcut": 19,
    "read_bound_segment_to_end": 2,
    "hw_below_log_start": 14,
    "hw_increment_moves_back": 3,
    "log_start_above_hw": 21,
    "follower_below_leo_accepted": 0,
    "follower_epoch_above_request": 0,
    "size_retention_strict": 20,
    "time_retention_inclusive": 13,
    "log_start_retention_strict": 1,
    "retention_never_rolls": 13,
    "retention_one_past_hw": 36,
    "delete_without_delay": 1,
    "truncate_above_leo_keeps_epochs": 15,
    "end_offset_names_requested_epoch": 0,
    "earliest_is_first_segment": 1,
    "latest_is_last_offset": 1,
    "timestamp_search_exclusive": 3,
}


def test_zoo__with_the_original_ten__holds_at_least_thirty_bugs() -> None:
    """The zoo holds 30 or more; every log bug that test_broken.py does not pin
    by family (kafka_bugs.py, off_by_ones.py) has a pinned seed here."""
    assert len(BROKEN) >= 30
    assert set(SEEDS) == set(BROKEN) - set(FAMILY)
    assert all(seed < 100 for seed in SEEDS.values())  # within default check's 100 runs


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_default_check__zoo_bug__is_caught_with_a_trace_that_pins_it(name: str) -> None:
    """The run default check makes at the pinned seed diverges, and its trace pins the bug."""
    seed = SEEDS[name]
    outcome = run_seed(seed, steps=40, config_family=DEFAULT_MIX[seed % len(DEFAULT_MIX)],
                       broken=name, shrink_s=0.3)
    assert outcome.outcome == "diverged", (outcome.outcome, outcome.signature)
    trace = loads_trace(outcome.trace_jsonl or "")
    assert not replay_trace(trace).conformed
    real = Trace(dataclasses.replace(trace.header, broken=None), trace.steps)
    assert replay_trace(real).conformed
