"""The saved counterexamples (specs/counterexamples/) replay, and `kafkalog explain` prints them."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from kafkalog.conformance.errors import TraceFormatError
from kafkalog.model.errors import IllegalArgumentError
from kafkalog.model.replication.steps import replay

from kafkalog.cli.explain_cmd import (
    COUNTEREXAMPLES,
    TOPICS,
    explain,
    read_counterexample,
    write_counterexample,
)

SAVED = [name for names in TOPICS.values() for name in names]


@pytest.mark.parametrize("name", SAVED)
def test_saved_counterexample__replayed__breaks_its_invariant_at_the_last_step(name: str) -> None:
    """Each trace reproduces its violation under its policy, and only at the end."""
    example = read_counterexample(COUNTEREXAMPLES / name)
    outcomes = replay(example.steps, example.policy, example.replica_count)
    assert example.invariant in outcomes[-1].violated
    assert not any(o.violated for o in outcomes[:-1])


@pytest.mark.parametrize("name", SAVED)
def test_saved_counterexample__under_kip279__breaks_nothing(name: str) -> None:
    """The same steps under the KIP-279 policy keep every invariant."""
    example = read_counterexample(COUNTEREXAMPLES / name)
    assert not any(o.violated for o in replay(example.steps, "leader_epoch_kip279"))


@pytest.mark.parametrize("name", SAVED)
def test_saved_counterexample__explained_next_to_it(name: str) -> None:
    """Every trace has its prose explanation beside it, naming the published scenario."""
    example = read_counterexample(COUNTEREXAMPLES / name)
    prose = (COUNTEREXAMPLES / name).with_suffix(".md").read_text(encoding="utf-8")
    assert example.scenario.split(" (")[0] in prose


def test_write_then_read__counterexample__round_trips(tmp_path: Path) -> None:
    """Writing a counterexample and reading it back gives the same scenario."""
    example = read_counterexample(COUNTEREXAMPLES / SAVED[0])
    assert read_counterexample(write_counterexample(example, tmp_path / "x.jsonl")) == example


@pytest.mark.parametrize("text,message", [
    ("", "empty trace"),
    ('{"kafkalog_trace": 1, "config_family": "other"}\n', "not a replication trace"),
    ('{"kafkalog_trace": 1, "config_family": "replication-2", "broken": "p", "outcome": "o",'
     ' "signature": "s"}\n{"step": 1, "action": "replication.jump", "args": {}}\n',
     "unknown replication action"),
    ('{"kafkalog_trace": 1, "config_family": "replication-2", "broken": "p", "outcome": "o",'
     ' "signature": "s"}\nnot json\n', "not JSON"),
])
def test_read_counterexample__bad_file__raises_naming_file_and_line(
        tmp_path: Path, text: str, message: str) -> None:
    """Traces come from outside: every defect is a TraceFormatError with a location."""
    path = tmp_path / "bad.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TraceFormatError, match=message) as caught:
        read_counterexample(path)
    assert str(path) in str(caught.value)


@pytest.mark.parametrize("topic", sorted(TOPICS))
def test_explain__topic__prints_every_step_and_the_broken_invariant(topic: str) -> None:
    """`kafkalog explain` shows a table per scenario and where it first broke."""
    result = CliRunner().invoke(explain, [topic], terminal_width=200)
    assert result.exit_code == 0, result.output
    for name in TOPICS[topic]:
        example = read_counterexample(COUNTEREXAMPLES / name)
        assert f"{name}: {len(example.steps)} steps; first broken at step" in result.output
        assert example.invariant in result.output
    assert "replica 1" in result.output and "epochs" in result.output


def test_explain__with_fixed_policy__reports_nothing_broken() -> None:
    """Replaying the KAFKA-6361 steps under KIP-279 shows the fix."""
    result = CliRunner().invoke(explain, ["kip-279", "--policy", "leader_epoch_kip279"],
                                terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "no invariant broken" in result.output


def test_explain__unknown_policy__raises_typed_error_before_printing() -> None:
    """A bad --policy is the user's mistake: a typed error, and no half-printed table."""
    result = CliRunner().invoke(explain, ["kip-101", "--policy", "nope"])
    assert isinstance(result.exception, IllegalArgumentError)
    assert result.output == ""
