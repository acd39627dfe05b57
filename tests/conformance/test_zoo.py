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

#: A seed and family of a default `kafkalog check` run (40 steps) that catches each bug, found
#: by zoo_bench when the default mix held the plain families only; the family is named, so the
#: pin does not move with the mix. Re-run zoo_bench after a change of the machine's rules or of
#: the config families.
SEEDS: dict[str, tuple[int, str]] = {
    "index_per_append": (4, "hw_retention"),
    "index_interval_inclusive": (2, "size_retention"),
    "time_index_pairs_current_batch": (0, "tiny"),
    "index_resize_resets_entries": (0, "tiny"),
    "truncation_keeps_index_trimmed": (4, "hw_retention"),
    "time_index_no_reserved_slot": (1, "index_full"),
    "time_roll_wall_clock": (0, "tiny"),
    "roll_size_inclusive": (0, "tiny"),
    "rolled_indexes_not_trimmed": (0, "tiny"),
    "roll_keeps_hw_metadata": (5, "log_append_time"),
    "roll_without_flush": (3, "time_roll"),
    "segment_read_ignores_max_position": (2, "size_retention"),
    "read_without_bound_shortcut": (19, "time_roll"),
    "read_bound_segment_to_end": (2, "size_retention"),
    "hw_below_log_start": (14, "roomy"),
    "hw_increment_moves_back": (3, "time_roll"),
    "log_start_above_hw": (21, "log_append_time"),
    "follower_below_leo_accepted": (0, "tiny"),
    "follower_epoch_above_request": (0, "tiny"),
    "size_retention_strict": (20, "hw_retention"),
    "time_retention_inclusive": (13, "log_append_time"),
    "log_start_retention_strict": (1, "index_full"),
    "retention_never_rolls": (13, "log_append_time"),
    "retention_one_past_hw": (0, "hw_retention"),
    "delete_without_delay": (1, "index_full"),
    "truncate_above_leo_keeps_epochs": (15, "zero_retention"),
    "end_offset_names_requested_epoch": (0, "tiny"),
    "earliest_is_first_segment": (1, "index_full"),
    "latest_is_last_offset": (1, "index_full"),
    "timestamp_search_exclusive": (3, "time_roll"),
}


def test_zoo__with_the_original_ten__holds_at_least_thirty_bugs() -> None:
    """The zoo holds 30 or more; every log bug that test_broken.py does not pin
    by family (kafka_bugs.py, off_by_ones.py) has a pinned seed here."""
    assert len(BROKEN) >= 30
    assert set(SEEDS) == set(BROKEN) - set(FAMILY)
    assert all(seed < 100 for seed, _ in SEEDS.values())  # within default check's 100 runs


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_default_check__zoo_bug__is_caught_with_a_trace_that_pins_it(name: str) -> None:
    """The run default check makes at the pinned seed diverges, and its trace pins the bug."""
    seed, family = SEEDS[name]
    assert family in DEFAULT_MIX
    outcome = run_seed(seed, steps=40, config_family=family,
                       broken=name, shrink_s=0.3)
    assert outcome.outcome == "diverged", (outcome.outcome, outcome.signature)
    trace = loads_trace(outcome.trace_jsonl or "")
    assert not replay_trace(trace).conformed
    real = Trace(dataclasses.replace(trace.header, broken=None), trace.steps)
    assert replay_trace(real).conformed
