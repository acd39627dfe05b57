"""`kafkalog check` end to end, and the machine under pytest's Hypothesis profile.

Check against the built-in implementation passes in-process and through
`kafkalog serve-adapter`. These runs use the CI-sized settings: one run per config family.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from click.testing import CliRunner
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test
from kafkalog.conformance.adapter.json_codec import FEATURES
from kafkalog.conformance.check.session import Session
from kafkalog.conformance.check.sut import ModelSut
from kafkalog.conformance.gen.configs import CONFIG_FAMILIES
from kafkalog.conformance.gen.machines import make_machine

from kafkalog.cli.conformance_cmds import check, replay

KAFKALOG = shlex.quote(str(Path(sys.executable).parent / "kafkalog"))
FAMILIES = len(CONFIG_FAMILIES)


def run_check(*args: str, out: Path) -> tuple[int, str]:
    result = CliRunner().invoke(check, [*args, "--out", str(out)])
    return result.exit_code, result.output


def test_check__model_against_itself__exits_0_with_a_coverage_summary(tmp_path: Path) -> None:
    """The sanity run passes and the summary names runs, steps, actions and rules."""
    code, output = run_check("--adapter", "model", "--examples", "3", "--steps", "20",
                             out=tmp_path)
    assert code == 0, output
    assert "runs: 3  steps: 60" in output
    assert "append_as_leader" in output
    assert "spec rules never exercised" in output
    assert "all runs conformed" in output


def test_check__builtin_in_process__conforms_in_every_family(tmp_path: Path) -> None:
    """The built-in implementation conforms with the model (one run per family)."""
    code, output = run_check("--examples", str(FAMILIES), "--steps", "30", out=tmp_path)
    assert code == 0, output + "".join(p.read_text() for p in tmp_path.glob("*.jsonl"))


def test_check__builtin_through_serve_adapter__conforms(tmp_path: Path) -> None:
    """The same implementation, driven over the JSON-lines protocol, conforms too."""
    code, output = run_check("--adapter", f"{KAFKALOG} serve-adapter", "--examples", "3",
                             "--steps", "20", out=tmp_path)
    assert code == 0, output + "".join(p.read_text() for p in tmp_path.glob("*.jsonl"))


def test_replay_cli__saved_failure__exits_1_and_marks_the_divergence(tmp_path: Path) -> None:
    """A trace saved by `check --broken` replays to the same divergence (exit 1)."""
    code, _ = run_check("--broken", "truncate_fully_keeps_hw", "--examples", "6", "--steps", "30",
                        "--family", "tiny", "--time-limit", "8", out=tmp_path)
    assert code == 1
    saved = sorted(tmp_path.glob("*.jsonl"))
    assert saved
    result = CliRunner().invoke(replay, [str(saved[0])])
    assert result.exit_code == 1
    assert "FIRST DIVERGENCE" in result.output


def test_replay_cli__bad_trace__is_one_typed_error(tmp_path: Path) -> None:
    """A file that is not a trace raises TraceFormatError (the CLI prints one line, exit 2)."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"hello": 1}\n')
    result = CliRunner().invoke(replay, [str(bad)])
    assert type(result.exception).__name__ == "TraceFormatError"


def test_machine__under_the_active_hypothesis_profile__model_conforms_with_itself() -> None:
    """The machine runs as an ordinary Hypothesis test too (dev/ci profiles of conftest)."""
    session = Session(CONFIG_FAMILIES["tiny"], ModelSut, frozenset(FEATURES))
    run_state_machine_as_test(make_machine(session),
                              settings=settings(settings.default, stateful_step_count=30))
    assert session.steps_executed > 0 and not session.failed
