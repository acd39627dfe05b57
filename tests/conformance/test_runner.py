"""`run_seed`, the unit of work of `check` and campaigns, and the machine's argument picks."""

from __future__ import annotations

import pytest
from kafkalog.conformance.check.runner import RunOutcome, run_seed
from kafkalog.conformance.gen import picks
from kafkalog.conformance.gen.configs import CONFIG_FAMILIES
from kafkalog.conformance.traces.trace import loads_trace
from kafkalog.model import values as v


@pytest.mark.parametrize("family", sorted(CONFIG_FAMILIES))
def test_run_seed__model_against_itself__conforms_in_every_family(family: str) -> None:
    """The sanity run: the model driven as the implementation never diverges from itself."""
    outcome = run_seed(11, steps=30, config_family=family, adapter="model")
    assert outcome.outcome == "conformed", outcome.signature
    assert outcome.steps_executed == 30
    assert sum(outcome.actions.values()) == 30
    assert outcome.config == run_seed(11, steps=1, config_family=family, adapter="model").config


def test_run_seed__same_seed__same_run() -> None:
    """Deterministic from the seed alone: same actions, same rules, same outcome."""
    first = run_seed(5, steps=25, config_family="tiny", adapter="model")
    again = run_seed(5, steps=25, config_family="tiny", adapter="model")
    other = run_seed(6, steps=25, config_family="tiny", adapter="model")
    assert (first.actions, first.rules) == (again.actions, again.rules)
    assert first.outcome == again.outcome
    assert first.actions != other.actions


def test_run_seed__divergence__returns_a_shrunk_trace_with_header_and_signature() -> None:
    """A broken implementation yields `diverged`, a signature and a replayable trace."""
    outcome = next(
        o for seed in range(10)
        if (o := run_seed(seed, steps=30, config_family="tiny",
                          broken="truncate_fully_keeps_hw")).outcome == "diverged"
    )
    assert outcome.signature is not None
    action, _model_code, _impl_code, _what, _rule = outcome.signature.split("|")
    assert outcome.trace_jsonl is not None
    trace = loads_trace(outcome.trace_jsonl)
    assert trace.header.seed == outcome.seed and trace.header.broken == "truncate_fully_keeps_hw"
    assert trace.steps[-1].action == action and trace.steps[-1].divergence is not None
    assert all(step.divergence is None for step in trace.steps[:-1])
    assert len(trace.steps) <= 8


@pytest.mark.parametrize(
    ("kwargs", "kind"),
    [
        ({"config_family": "enormous"}, "UnknownConfigFamilyError"),
        ({"config_family": "tiny", "broken": "no_such_bug"}, "UnknownBrokenImplError"),
        ({"config_family": "tiny", "adapter": "model", "broken": "truncate_keeps_hw"},
         "ValueError"),
    ],
)
def test_run_seed__bad_arguments__never_raise_but_report_adapter_error(
    kwargs: dict[str, str], kind: str
) -> None:
    """run_seed never raises: a bad family or broken name comes back as an adapter_error row."""
    outcome = run_seed(0, steps=5, **kwargs)  # type: ignore[arg-type]
    assert isinstance(outcome, RunOutcome)
    assert outcome.outcome == "adapter_error"
    assert outcome.signature is not None and kind in outcome.signature


def test_run_seed__time_limit__stops_between_steps() -> None:
    """A run past its time limit stops early and reports what it executed."""
    outcome = run_seed(2, steps=5_000, config_family="roomy", adapter="model", time_limit_s=0.5)
    assert outcome.outcome in ("conformed", "diverged")  # diverged only if the model breaks
    assert 0 < outcome.steps_executed < 5_000
    assert outcome.duration_s < 5


def test_run_seed__row__is_plain_data_for_spark() -> None:
    """`to_dict` gives JSON-ready columns: ints, strings, lists and dicts only."""
    row = run_seed(4, steps=10, config_family="tiny", adapter="model").to_dict()
    assert set(row) == {"seed", "config_family", "config", "adapter", "steps_executed", "actions",
                        "rules", "duration_s", "outcome", "signature", "trace_jsonl", "crashes",
                        "crash_images", "crash_s", "crash_idempotence", "crash_in_load",
                        "crash_in_clean"}
    assert row["config"]["segment_bytes"] == 400
    assert row["rules"] == sorted(row["rules"]) and row["rules"]


def test_batch_size__one_four_byte_record__is_72_bytes() -> None:
    """The size function the machine aims with matches FMT-49 (72 bytes)."""
    assert picks.batch_size((v.Record(None, b"test", 5),)) == 72
    assert picks.batch_size(()) == 0


@pytest.mark.parametrize("target", [69, 72, 100, 127, 128, 129, 200, 400])
def test_fit_value__aims_a_batch_at_a_target_size(target: int) -> None:
    """fit_value makes a one-record batch exactly `target` bytes (smallest is 68 + 0)."""
    base = [v.Record(None, b"", 1_700_000_000_000)]
    record = v.Record(None, picks.fit_value(base, target), 1_700_000_000_000)
    assert picks.batch_size((record,)) == target


def test_resolve_offset__anchors_and_deltas__name_offsets_of_the_current_state() -> None:
    """Picks are symbolic: log_end-1, the second segment's base, a seen offset."""
    view = v.LogStateView(2, 4, 9, 3, (v.SegmentView(2, 100, 5), v.SegmentView(5, 50, 9)), ())
    assert picks.resolve_offset(("log_end", 0, -1), view, []) == 8
    assert picks.resolve_offset(("segment_base", 1, 0), view, []) == 5
    assert picks.resolve_offset(("seen", 3, 1), view, [10, 20]) == 21
    assert picks.resolve_offset(("zero", 0, -1), view, []) == -1
