"""The subprocess adapter: real `kafkalog serve-adapter` peers and adapters that misbehave."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
from kafkalog.conformance.adapter.subprocess_sut import AdapterProcess, SubprocessSut
from kafkalog.conformance.check.runner import run_seed
from kafkalog.conformance.errors import (
    AdapterCrashedError,
    AdapterError,
    AdapterTimeoutError,
    ProtocolError,
)
from kafkalog.conformance.gen.configs import CONFIG_FAMILIES
from kafkalog.model import values as v

HERE = Path(__file__).resolve().parent
KAFKALOG = shlex.quote(str(Path(sys.executable).parent / "kafkalog"))
MISBEHAVING = f"{shlex.quote(sys.executable)} {shlex.quote(str(HERE / 'misbehaving_adapter.py'))}"
CONFIG = CONFIG_FAMILIES["tiny"]


def test_serve_adapter__model_over_the_adapter_protocol__conforms_with_the_model() -> None:
    """The model served by `kafkalog serve-adapter --model` must conform (a sanity run)."""
    outcome = run_seed(3, steps=25, config_family="tiny",
                       adapter=f"{KAFKALOG} serve-adapter --model")
    assert outcome.outcome == "conformed", outcome.signature
    assert outcome.steps_executed == 25


def test_serve_adapter__builtin_impl__answers_actions_with_typed_values() -> None:
    """The built-in implementation behind the protocol appends and reports its state."""
    process = AdapterProcess(f"{KAFKALOG} serve-adapter")
    try:
        assert {"core", "leader_epochs", "reopen", "verify"} <= process.features
        sut = SubprocessSut(process, CONFIG, 1_700_000_000_000, 0)
        info = sut.append_as_leader(records=(v.Record(None, b"test", 1_700_000_000_000),),
                                    leader_epoch=0)
        assert info.valid_bytes == 72
        assert sut.state().log_end_offset == 1
        with pytest.raises(Exception) as raised:
            sut.truncate_to(offset=-1)
        assert type(raised.value).__name__ == "IllegalArgumentError"
        sut.close()
    finally:
        process.close()


def test_serve_adapter__broken_impl__is_caught_through_the_subprocess() -> None:
    """A bug served over the protocol is found as a divergence, with a short trace."""
    adapter = f"{KAFKALOG} serve-adapter --broken truncate_fully_keeps_hw"
    outcomes = [run_seed(seed, steps=30, config_family="tiny", adapter=adapter, time_limit_s=20)
                for seed in range(4)]
    assert all(o.outcome != "adapter_error" for o in outcomes)
    outcome = next(o for o in outcomes if o.outcome == "diverged")
    assert outcome.trace_jsonl is not None
    assert len(outcome.trace_jsonl.splitlines()) - 1 <= 8


@pytest.mark.parametrize(
    ("mode", "error"),
    [
        ("crash", AdapterCrashedError),
        ("garbage", ProtocolError),
        ("wrong_id", ProtocolError),
        ("unknown_action", ProtocolError),
    ],
)
def test_adapter__misbehaving_on_open__raises_the_matching_adapter_error(
    mode: str, error: type[AdapterError]
) -> None:
    """Crash, non-JSON, a wrong id or a protocol error code are typed adapter errors."""
    process = AdapterProcess(f"{MISBEHAVING} {mode}")
    try:
        with pytest.raises(error):
            SubprocessSut(process, CONFIG)
    finally:
        process.close()


def test_adapter__crash__quotes_the_stderr_tail() -> None:
    """The crash message carries what the adapter said on stderr and its exit status."""
    process = AdapterProcess(f"{MISBEHAVING} crash")
    try:
        with pytest.raises(AdapterCrashedError, match="adapter going down") as raised:
            SubprocessSut(process, CONFIG)
        assert "exit status 3" in str(raised.value)
    finally:
        process.close()


def test_adapter__no_reply_within_the_timeout__raises_timeout() -> None:
    """A hanging adapter is an AdapterTimeoutError after `timeout_s`."""
    process = AdapterProcess(f"{MISBEHAVING} hang", timeout_s=0.5)
    try:
        with pytest.raises(AdapterTimeoutError):
            SubprocessSut(process, CONFIG)
    finally:
        process.close()


def test_adapter__handshake_without_core__is_refused() -> None:
    """An adapter must list the `core` feature."""
    with pytest.raises(ProtocolError, match="core"):
        AdapterProcess(f"{MISBEHAVING} no_core")


def test_adapter__command_that_does_not_exist__is_a_crash() -> None:
    """A command that cannot start is AdapterCrashedError, not an OSError."""
    with pytest.raises(AdapterCrashedError):
        AdapterProcess("/nonexistent/adapter --serve")


@pytest.mark.parametrize("mode", ["crash", "bad_result", "hang"])
def test_run_seed__misbehaving_adapter__is_an_adapter_error_never_a_divergence(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Adapter failures end the run as adapter_error with the error kind in the signature."""
    monkeypatch.setenv("KAFKALOG_ADAPTER_TIMEOUT_S", "1")
    outcome = run_seed(0, steps=10, config_family="tiny", adapter=f"{MISBEHAVING} {mode}",
                       time_limit_s=20)
    assert outcome.outcome == "adapter_error"
    assert outcome.signature is not None and outcome.signature.startswith("adapter_error|")
    assert outcome.trace_jsonl is None
