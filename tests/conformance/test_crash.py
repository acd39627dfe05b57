"""Crash steps in the checker: in-process, over the adapter protocol, in traces."""

from __future__ import annotations

import io
import json
import logging
import shlex
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from kafkalog.conformance.adapter.json_codec import CRASH_FAULTS, CRASH_LEFTOVERS, FEATURES
from kafkalog.conformance.adapter.server import serve
from kafkalog.conformance.check.impl_sut import ImplSut
from kafkalog.conformance.check.lockstep import DivergenceError
from kafkalog.conformance.check.runner import run_seed
from kafkalog.conformance.check.session import START_MS, Session
from kafkalog.conformance.gen.configs import CONFIG_FAMILIES
from kafkalog.conformance.traces.replay import replay_trace
from kafkalog.conformance.traces.trace import Trace, TraceHeader, loads_trace
from kafkalog.model import values as v

from kafkalog.cli.conformance_cmds import check

TINY = CONFIG_FAMILIES["tiny"]
AFTER = 1 << 20  # a crash point past any action: the crash comes after the last action
SERVE = f"{shlex.quote(str(Path(sys.executable).parent / 'kafkalog'))} serve-adapter"


@pytest.fixture(autouse=True)
def _quiet() -> None:
    logging.disable(logging.WARNING)  # recovery logs every cut it makes
    yield
    logging.disable(logging.NOTSET)


def lockstep() -> object:
    return Session(TINY, ImplSut, frozenset(FEATURES), verify_every=1).start()


def append(step: object, n: int = 1, epoch: int = 0) -> None:
    for _ in range(n):
        step.step("append_as_leader", {"records": (v.Record(None, b"test", START_MS),),  # type: ignore[attr-defined]
                                       "leader_epoch": epoch})


@pytest.mark.parametrize("fault", CRASH_FAULTS)
@pytest.mark.parametrize("leftover", CRASH_LEFTOVERS)
def test_crash__after_appends_with_any_fault_and_leftover__recovers_a_state_the_model_allows(
    fault: str, leftover: str
) -> None:
    """KL-CRASH-1/2/9: flushed batches survive, the rest is a prefix; leftovers change nothing
    but offsets going back, which may empty the last segment (never fail the load)."""
    ls = lockstep()
    try:
        append(ls, 2)
        ls.step("flush", {"offset": None})
        append(ls, 2, epoch=1)
        for seed in range(3):
            model, impl = ls.step("crash", {"point": AFTER, "fault": fault, "seed": seed,
                                            "leftover": leftover})
            assert model.value == impl.value == 0
            state = ls.sut.state()
            emptied = state.log_end_offset == state.segments[-1].base_offset
            assert state.log_end_offset >= 2 or (leftover == "offsets_back" and emptied)  # F
            append(ls, 1, epoch=1)
    finally:
        ls.sut.close()


@pytest.mark.parametrize("flushed", [False, True])
def test_offsets_back_leftover__empties_the_last_segment_and_catches_an_escaping_offset_error(
    flushed: bool,
) -> None:
    """KL-CRASH-9, RCV-6 (KAFKA-905): batches whose offsets go back empty the recovered segment;
    a recovery that lets the InvalidOffsetError escape fails the load, a divergence."""
    from kafkalog.conformance.broken.registry import broken_factory

    crash = {"point": AFTER, "fault": "power_loss", "seed": 0, "leftover": "offsets_back"}
    ls = lockstep()
    try:
        append(ls, 3)
        if flushed:
            ls.step("flush", {"offset": None})
        ls.step("crash", crash)
        assert ls.sut.state().log_end_offset == 0  # the only segment, emptied
        append(ls, 1)
    finally:
        ls.sut.close()
    broken = Session(TINY, broken_factory("recovery_offset_error_escapes"), frozenset(FEATURES),
                     verify_every=1).start()
    try:
        append(broken, 3)
        with pytest.raises(DivergenceError) as caught:
            broken.step("crash", crash)
        assert caught.value.signature == "crash|ok|InvalidOffsetError|crash.load|KL-CRASH-1"
    finally:
        broken.sut.close()


def test_crash__inside_a_truncation__recovers_a_state_before_or_after_it() -> None:
    """KL-CRASH-8: every crash point of a truncation's operations is a member of the set."""
    for point in range(0, 40, 3):
        ls = lockstep()
        try:
            append(ls, 3)
            ls.step("roll", {"expected_next_offset": None})
            append(ls, 2)
            ls.step("truncate_to", {"offset": 1})
            model, impl = ls.step("crash", {"point": point, "fault": "power_loss_torn",
                                            "seed": point, "leftover": "none"})
            assert impl.value >= 0
        finally:
            ls.sut.close()


def test_crash__recovered_state_outside_the_set__is_a_divergence_naming_the_field() -> None:
    """The checker rejects a recovery the model does not allow (here: data invented)."""
    ls = lockstep()
    try:
        append(ls, 2)
        ls.model.partition_state, _ = __import__(
            "kafkalog.model.log", fromlist=["truncate_to"]).truncate_to(
            ls.model.partition_state, 1)
        with pytest.raises(DivergenceError, match="recovered state not allowed") as caught:
            ls.step("crash", {"point": AFTER, "fault": "process_crash", "seed": 0,
                              "leftover": "none"})
        assert caught.value.signature.startswith("crash|ok|ok|crash.state")
    finally:
        ls.sut.close()


def test_trace_with_crash_steps__replays_to_the_same_images() -> None:
    """specs/trace-format.md "Crash steps": point, fault, seed and leftover reproduce the image."""
    ls = lockstep()
    try:
        append(ls, 3)
        ls.step("crash", {"point": AFTER, "fault": "power_loss_torn", "seed": 5,
                          "leftover": "torn_tail"})
        steps = tuple(ls.steps)
    finally:
        ls.sut.close()
    header = TraceHeader(config=TINY, now_ms=START_MS)
    text = "\n".join(json.dumps(line) for line in _trace_lines(header, steps))
    again = replay_trace(loads_trace(text))
    assert again.conformed and [r.note for r in again.steps] == [None] * len(steps)


def _trace_lines(header: TraceHeader, steps: tuple) -> list[dict]:
    from kafkalog.conformance.traces.trace import header_json, step_json

    return [header_json(header), *(step_json(i, s) for i, s in enumerate(steps, start=1))]


def test_serve_adapter__speaks_version_2_with_crash_and_version_1_without() -> None:
    """Protocol versioning: a version-1 client never sees the crash features."""
    for version, crash in ((2, True), (1, False)):
        requests = json.dumps({"id": 1, "action": "handshake",
                               "args": {"protocol_version": version}}) + "\n"
        out = io.StringIO()
        serve(ImplSut, "impl", frozenset(FEATURES), io.StringIO(requests), out)
        reply = json.loads(out.getvalue())["ok"]
        assert reply["protocol_version"] == version
        assert ("crash" in reply["features"]) is crash


def test_check_over_serve_adapter__crashes_the_adapter_and_conforms() -> None:
    """The crash action over the protocol (feature `crash`) with fault injection."""
    for seed in range(9, 20):  # the first seed whose run draws a crash
        outcome = run_seed(seed, steps=30, config_family="tiny", adapter=SERVE, crash_weight=4)
        assert outcome.outcome == "conformed", outcome.signature
        if outcome.crashes:
            break
    assert sum(outcome.crashes.values()) > 0


def test_kill_only_adapter__gets_process_crashes_after_the_action_only() -> None:
    """Feature `crash_kill`: the checker sends only process crashes after the last action."""
    for seed in range(9, 20):  # the first seed whose run draws a crash
        outcome = run_seed(seed, steps=30, config_family="tiny",
                           adapter=f"{SERVE} --kill-only", crash_weight=4)
        assert outcome.outcome == "conformed", outcome.signature
        if outcome.crashes:
            break
    assert set(outcome.crashes) == {"process_crash"}


def test_check_cli__reports_crash_points_per_fault_model_and_weight_0_turns_them_off(
    tmp_path: Path,
) -> None:
    """`kafkalog check --crash-weight`: the summary counts crash points per fault model."""
    runner = CliRunner()
    base = ["--examples", "3", "--steps", "30", "--family", "tiny", "--out", str(tmp_path)]
    on = runner.invoke(check, [*base, "--crash-weight", "3"])
    off = runner.invoke(check, [*base, "--crash-weight", "0"])
    assert on.exit_code == 0 and off.exit_code == 0, (on.output, off.output)
    assert "crash points explored: 0" in off.output
    assert "crash points explored: 0" not in on.output


def test_trace_header__unchanged_version_1_reads_crash_steps() -> None:
    """A crash step is an ordinary step of format version 1 (its args are validated)."""
    header = TraceHeader(config=TINY)
    step = {"step": 1, "action": "crash", "args": {"point": 0, "fault": "power_loss", "seed": 1},
            "model": {"ok": 0}, "impl": {"ok": 0}}
    from kafkalog.conformance.traces.trace import header_json

    trace = loads_trace(json.dumps(header_json(header)) + "\n" + json.dumps(step))
    assert isinstance(trace, Trace) and trace.steps[0].args["fault"] == "power_loss"
