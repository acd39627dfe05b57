"""No scratch directory outlives its replay, adapter session or campaign run, whatever ends it:
success, a typed error, an untyped one, or an interrupt (counted in a private scratch root)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kafkalog.conformance.adapter.json_codec import FEATURES
from kafkalog.conformance.adapter.server import serve
from kafkalog.conformance.campaign.task import TaskSpec, run_one
from kafkalog.conformance.check.impl_sut import ImplSut
from kafkalog.conformance.check.runner import run_seed
from kafkalog.conformance.check.sut import ModelSut
from kafkalog.conformance.traces.replay import replay_trace
from kafkalog.conformance.traces.trace import loads_trace

TRACE = ('{"kafkalog_trace":1,"config":{"segment_bytes":300,"index_interval_bytes":1}}\n'
         '{"step":1,"action":"append_as_leader","args":{"records":[{"key":null,"value":"eA==",'
         '"timestamp":5}],"leader_epoch":0}}\n'
         '{"step":2,"action":"roll","args":{}}\n'
         '{"step":3,"action":"close_and_reopen","args":{}}\n')
HANDSHAKE = '{"id":1,"action":"handshake","args":{"protocol_version":1}}'


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "scratch"
    root.mkdir()
    monkeypatch.setenv("KAFKALOG_SCRATCH", str(root))
    return root


def _entries(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir())


def _raiser(error: BaseException) -> Callable[..., Any]:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise error

    return fail


def _interrupted_close(self: ImplSut) -> None:
    """A close interrupted before it removes anything (an interrupt in the wrong place)."""
    raise KeyboardInterrupt


# --- replay ---


def test_replay__success__leaves_no_scratch_directory(scratch: Path) -> None:
    result = replay_trace(loads_trace(TRACE, "<test>"))
    assert result.conformed and _entries(scratch) == []


@pytest.mark.parametrize("config", [{"segment_bytes": 0}, {"segment_index_bytes": 2**63},
                                    {"kafka_version": "9.9"}])
def test_replay__config_refused__leaves_no_scratch_directory(
        scratch: Path, config: dict[str, Any]) -> None:
    """A config both sides refuse, and one only the model refuses (a checker setting the
    implementation ignores: its log was open when the model said no)."""
    header = json.dumps({"kafkalog_trace": 1, "config": config})
    trace = loads_trace(header + '\n{"step":1,"action":"roll","args":{}}\n', "<test>")
    result = replay_trace(trace)
    assert result.adapter_error is not None and not result.untyped
    assert _entries(scratch) == []


def test_replay__model_fails_untyped_at_start__leaves_no_scratch_directory(
        scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ModelSut, "__init__", _raiser(RuntimeError("model broke")))
    result = replay_trace(loads_trace(TRACE, "<test>"))
    assert result.untyped and _entries(scratch) == []


def test_replay__untyped_failure_in_a_step__leaves_no_scratch_directory(
        scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ImplSut, "roll", _raiser(RuntimeError("roll broke")))
    result = replay_trace(loads_trace(TRACE, "<test>"))
    assert result.diverged_at == 2 and _entries(scratch) == []


@pytest.mark.parametrize("where", ["roll", "close"])
def test_replay__interrupted__leaves_no_scratch_directory(
        scratch: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    if where == "roll":
        monkeypatch.setattr(ImplSut, "roll", _raiser(KeyboardInterrupt()))
    else:
        monkeypatch.setattr(ImplSut, "close", _interrupted_close)
    with pytest.raises(KeyboardInterrupt):
        replay_trace(loads_trace(TRACE, "<test>"))
    assert _entries(scratch) == []


# --- adapter sessions ---


def _serve(*lines: str) -> list[dict[str, Any]]:
    out = io.StringIO()
    serve(ImplSut, "impl", frozenset(FEATURES), stdin=io.StringIO("\n".join(lines) + "\n"),
          stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_serve__sessions_end_in_every_way__leave_no_scratch_directory(scratch: Path) -> None:
    """Opened and left open at end of input; reopened; refused (typed)."""
    replies = _serve(HANDSHAKE, '{"id":2,"action":"open","args":{}}',
                     '{"id":3,"action":"open","args":{}}', '{"id":4,"action":"roll"}',
                     '{"id":5,"action":"open","args":{"config":{"segment_bytes":0}}}')
    assert "error" in replies[-1] and _entries(scratch) == []


def test_serve__untyped_failure__leaves_no_scratch_directory(
        scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ImplSut, "state", _raiser(RuntimeError("state broke")))
    replies = _serve(HANDSHAKE, '{"id":2,"action":"open","args":{}}',
                     '{"id":3,"action":"state"}')
    assert replies[-1]["id"] == 3 and "error" in replies[-1]
    assert _entries(scratch) == []


@pytest.mark.parametrize("where", ["roll", "close"])
def test_serve__interrupted__leaves_no_scratch_directory(
        scratch: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    if where == "roll":
        monkeypatch.setattr(ImplSut, "roll", _raiser(KeyboardInterrupt()))
    else:
        monkeypatch.setattr(ImplSut, "close", _interrupted_close)
    with pytest.raises(KeyboardInterrupt):
        _serve(HANDSHAKE, '{"id":2,"action":"open","args":{}}', '{"id":3,"action":"roll"}')
    assert _entries(scratch) == []


# --- campaign runs ---


def test_run_seed__run_with_crashes__leaves_no_scratch_directory(scratch: Path) -> None:
    outcome = run_seed(1, steps=15, config_family="tiny", time_limit_s=30, crash_weight=2,
                       crash_sweep=True)
    assert outcome.signature is None and _entries(scratch) == []


def test_run_seed__untyped_failure__leaves_no_scratch_directory(
        scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ImplSut, "roll", _raiser(RuntimeError("roll broke")))
    run_seed(1, steps=20, config_family="tiny", time_limit_s=20, shrink_s=2)
    assert _entries(scratch) == []


def test_run_one__interrupted_close__row_written_and_no_scratch_directory(
        scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The campaign task turns the interrupt into a row; the scope removes the log it left."""
    monkeypatch.setattr(ImplSut, "close", _interrupted_close)
    row = run_one(1, TaskSpec("c", steps=10, families=("tiny",), time_limit_s=20,
                              crash_weight=0, crash_sweep=False))
    assert row["seed"] == 1 and _entries(scratch) == []
