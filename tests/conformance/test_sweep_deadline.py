"""A crash step's sweep stops at the run's time limit: one step with in-load sweeps can take
minutes, and a run that ran past its limit inside one was cut by the campaign's hard limit
(an adapter error, nothing recorded) instead of stopping itself with what it had checked."""

from __future__ import annotations

import time

import pytest
from kafkalog.conformance.check.deadline import TimeUp, check_deadline
from kafkalog.conformance.check.runner import run_seed


def test_check_deadline__raises_only_once_the_deadline_has_passed() -> None:
    check_deadline(None)
    check_deadline(time.monotonic() + 60)
    with pytest.raises(TimeUp):
        check_deadline(time.monotonic() - 1)


def test_run_seed__with_in_load_sweeps_past_its_limit__stops_itself_and_reports_what_it_checked(
) -> None:
    """Seed 101566 of the main job (`zero_retention`, crash sweeps inside loads): a crash step
    whose in-load sweep took over 60 s ran past the 180 s hard limit. With a 5 s limit the run
    stops inside that kind of step and conforms on the steps it finished."""
    started = time.monotonic()
    outcome = run_seed(101566, steps=60, config_family="zero_retention", crash_weight=2,
                       crash_sweep=True, crash_in_load=True, time_limit_s=5)
    elapsed = time.monotonic() - started
    assert outcome.outcome == "conformed", outcome.signature
    assert outcome.steps_executed < 60  # cut by the limit, not run to the end
    assert elapsed < 60, elapsed  # one crash point past the limit, not a whole sweep


def test_run_seed__kafka_mode_allowed_sets_past_its_limit__stop_the_run_between_states(
) -> None:
    """Seed 800315 of the main job (`producers_append_time`, kafka mode): one crash step's
    allowed sets (resurrectable layouts x epoch files x snapshot files x both loaders) took
    minutes, and the run met the 180 s hard limit. The limit is checked before each state's set:
    with a 20 s limit the run stops inside that step (before: over four minutes)."""
    from kafkalog.conformance.crash.kafka_gaps import CAMPAIGN_UNPLANTED

    started = time.monotonic()
    outcome = run_seed(800315, steps=60, config_family="producers_append_time",
                       broken="kafka_durability", kafka_version="4.2", crash_weight=2,
                       leftovers_off=CAMPAIGN_UNPLANTED, crash_sweep=True, time_limit_s=20)
    elapsed = time.monotonic() - started
    assert outcome.outcome == "conformed", outcome.signature
    assert outcome.steps_executed < 60
    assert elapsed < 120, elapsed
