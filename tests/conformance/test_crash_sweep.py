"""Crash sweeps: every point of the last action x every fault model x seeds, each
distinct image loaded once, every (point, fault, seed) counted, a failure replayable alone."""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafkalog.conformance.adapter.json_codec import CRASH_FAULTS, FEATURES
from kafkalog.conformance.broken.registry import broken_factory
from kafkalog.conformance.check.impl_sut import TOPIC_PARTITION, ImplSut, scratch_dir
from kafkalog.conformance.check.lockstep import DivergenceError, Lockstep
from kafkalog.conformance.check.session import START_MS, Session
from kafkalog.conformance.crash.fault_fs import FaultModel
from kafkalog.conformance.crash.sweep import SWEEP_SEEDS, idempotence_view, sweep_plan
from kafkalog.conformance.gen.configs import CONFIG_FAMILIES
from kafkalog.conformance.traces.replay import replay_trace
from kafkalog.conformance.traces.trace import TraceHeader, header_json, loads_trace, step_json
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.load.log_dir import LogDir
from kafkalog.impl.time import MockTime
from kafkalog.model import values as v

TINY = CONFIG_FAMILIES["tiny"]
AFTER = 1 << 20


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    logging.disable(logging.WARNING)  # recovery logs every cut it makes
    yield
    logging.disable(logging.NOTSET)


def start(factory: object = ImplSut, sweep: bool = True) -> Lockstep:
    return Session(TINY, factory, frozenset(FEATURES), crash_sweep=sweep).start()  # type: ignore[arg-type]


def append(ls: Lockstep, n: int = 1) -> None:
    for _ in range(n):
        ls.step("append_as_leader", {"records": (v.Record(None, b"test", START_MS),),
                                     "leader_epoch": 0})


def crash(ls: Lockstep, fault: str = "process_crash", seed: int = 7) -> None:
    ls.step("crash", {"point": AFTER, "fault": fault, "seed": seed, "leftover": "none"})


def test_sweep_plan__every_fault_model_with_its_seeds__drawn_pair_first_and_no_repeat() -> None:
    """The drawn (fault, seed) leads, so the crash step's own image is always swept."""
    plan = sweep_plan("power_loss_torn", 65535)
    assert plan[0] == ("power_loss_torn", 65535) and len(plan) == len(set(plan))
    assert len(plan) == sum(SWEEP_SEEDS.values()) and {f for f, _ in plan} == set(CRASH_FAULTS)
    assert ("power_loss_torn", 0) in plan  # derived seeds wrap inside the machine's seed range


def test_sweeper__each_distinct_image_loaded_once__outcome_equals_a_fresh_load() -> None:
    """A memoised outcome is what loading that (point, fault, seed)'s image afresh recovers."""
    sut = ImplSut(TINY, START_MS)
    try:
        for n in range(3):
            sut.begin_action()
            sut.append_as_leader((v.Record(None, b"x" * 40, START_MS),), 0)
            if n == 0:
                sut.flush()
        points = sut.crash_sweep(sweep_plan("power_loss", 3))
        digests = {p.image for p in points}
        assert sut.sweeper.loads == len(digests) < len(points)
        ops = points[0].ops_lost
        assert len(points) == (ops + 1) * sum(SWEEP_SEEDS.values())
        for p in points[:: max(1, len(points) // 12)]:
            scratch = Path(tempfile.mkdtemp(dir=scratch_dir()))
            try:
                sut.fs.materialise(scratch, sut.action_mark + ops - p.ops_lost,  # type: ignore[attr-defined]
                                   FaultModel(p.fault), p.seed)
                fresh = LogDir.open(FileSystem(), scratch, TINY,
                                    MockTime(START_MS)).log(TOPIC_PARTITION).state()
            finally:
                shutil.rmtree(scratch)
            assert p.recovered == fresh, (p.ops_lost, p.fault, p.seed)
    finally:
        sut.close()


def test_lockstep_sweep__counts_every_point_fault_and_seed_once__and_the_distinct_images() -> None:
    """The crash step's own image is among the swept ones, so it is not counted twice."""
    ls = start()
    try:
        append(ls, 2)
        ls.step("flush", {"offset": None})
        append(ls)
        ops = len(ls.sut.fs.journal())  # type: ignore[attr-defined]
        crash(ls)
        counted = ls.crash_steps
        assert sum(counted.crashes.values()) == (ops + 1) * sum(SWEEP_SEEDS.values())
        assert {f for f, n in counted.crashes.items() if n} == set(CRASH_FAULTS)
        assert 1 <= counted.distinct_images() < sum(counted.crashes.values())
        assert counted.crash_s > 0
    finally:
        ls.sut.close()


def test_lockstep_without_sweep__counts_one_point_and_one_image_per_crash_step() -> None:
    """`--no-crash-sweep`: a crash step is one (point, fault, seed)."""
    ls = start(sweep=False)
    try:
        append(ls, 2)
        crash(ls, "power_loss")
        counted = ls.crash_steps
        assert dict(counted.crashes) == {"power_loss": 1} and counted.distinct_images() == 1
    finally:
        ls.sut.close()


def test_sweep__bug_only_a_torn_power_loss_shows__caught_at_a_process_crash_step__replays() -> None:
    """A drawn process crash after the action cannot show a kept torn tail; the sweep's other
    fault models do, and the crash step becomes that (point, fault, seed): the trace replays
    the failure against the bug and conforms against the real implementation."""
    factory = broken_factory("recovery_keeps_torn_tail")
    quiet = start(factory, sweep=False)
    try:
        append(quiet, 2)
        crash(quiet)  # without the sweep the bug stays hidden
    finally:
        quiet.sut.close()
    ls = start(factory)
    try:
        append(ls, 2)
        with pytest.raises(DivergenceError) as caught:
            crash(ls)
        steps = tuple(ls.steps)
    finally:
        ls.sut.close()
    args = caught.value.step.args
    assert args["fault"] in ("power_loss_prefix", "power_loss_torn") and args["leftover"] == "none"
    header = TraceHeader(config=TINY, now_ms=START_MS)
    lines = [header_json(header), *(step_json(i, s) for i, s in enumerate(steps, start=1))]
    trace = loads_trace("\n".join(json.dumps(line) for line in lines))
    assert not replay_trace(trace, broken="recovery_keeps_torn_tail").conformed
    assert replay_trace(trace, adapter=None).conformed


def test_check_cli__sweeps_by_default__summary_counts_distinct_images_and_speed(
    tmp_path: Path,
) -> None:
    """Default `kafkalog check` sweeps every crash step; `--no-crash-sweep` counts one point per
    step (the summary's crash-point total equals its crash steps)."""
    import re

    from click.testing import CliRunner

    from kafkalog.cli.conformance_cmds import check

    base = ["--examples", "3", "--steps", "30", "--family", "tiny", "--crash-weight", "3",
            "--out", str(tmp_path)]
    swept = CliRunner().invoke(check, base)
    single = CliRunner().invoke(check, [*base, "--no-crash-sweep"])
    assert swept.exit_code == 0 and single.exit_code == 0, (swept.output, single.output)
    steps = int(re.search(r"crash\D+(\d+)", single.output.split("actions executed")[1])[1])
    assert f"crash points explored: {steps} " in single.output
    total = int(re.search(r"crash points explored: (\d+)", swept.output)[1])
    assert total > 2 * steps and "distinct crash images: " in swept.output
    assert "crash points per minute per core: " in swept.output
    checks = int(re.search(r"recovery idempotence checks: (\d+)", swept.output)[1])
    assert 0 < checks <= int(re.search(r"distinct crash images: (\d+)", swept.output)[1])


def test_sweep__every_distinct_image_that_loads__is_reloaded_after_a_crash_right_after_the_load(
) -> None:
    """KL-CRASH-7: each distinct image is checked once for idempotence, and the real log passes."""
    ls = start()
    try:
        append(ls, 3)
        ls.step("flush", {"offset": None})
        append(ls)
        crash(ls, "power_loss_torn")
        loaded = ls.sut.sweeper.loaded  # type: ignore[attr-defined]
        loads_ok = {d for (d, _), done in loaded.items() if not isinstance(done.recovered, str)}
        assert ls.crash_steps.crash_idempotence() == len(loads_ok) == ls.sut.sweeper.reloads > 0  # type: ignore[attr-defined]
        assert all(done.idempotent for done in loaded.values() if done.idempotent is not None)
    finally:
        ls.sut.close()


def test_sweep__load_that_persists_what_it_does_not_serve__caught_as_not_idempotent__replays(
) -> None:
    """Every single load of the bug is allowed; the reload differs, so the crash step carries
    `idempotence: true` and its trace replays the failure alone (real implementation: conforms)."""
    factory = broken_factory("recovery_point_persisted_ahead")
    ls = start(factory)
    try:
        append(ls, 2)
        with pytest.raises(DivergenceError) as caught:
            crash(ls)
        steps = tuple(ls.steps)
    finally:
        ls.sut.close()
    assert caught.value.signature.startswith("crash|ok|ok|crash.idempotence.recovery_point|")
    assert caught.value.step.args["idempotence"] is True
    header = TraceHeader(config=TINY, now_ms=START_MS)
    lines = [header_json(header), *(step_json(i, s) for i, s in enumerate(steps, start=1))]
    trace = loads_trace("\n".join(json.dumps(line) for line in lines))
    replayed = replay_trace(trace, broken="recovery_point_persisted_ahead")
    assert replayed.signature == caught.value.signature
    assert replay_trace(trace, adapter=None).conformed


def test_crash_args__idempotence_flag__omitted_when_false_and_never_reaches_the_log() -> None:
    """Old traces (no flag) decode as False; the flag is written only when set; `execute`
    strips it, so adapters never see it."""
    from kafkalog.conformance.adapter.json_codec import decode_args, encode_args
    from kafkalog.conformance.check.sut import execute

    old = {"point": 1, "fault": "power_loss", "seed": 3, "leftover": "none"}
    assert decode_args("crash", old)["idempotence"] is False
    assert "idempotence" not in encode_args("crash", decode_args("crash", old))
    assert encode_args("crash", {**old, "idempotence": True})["idempotence"] is True

    class Recorder:
        def crash(self, **kwargs: object) -> int:
            self.kwargs = kwargs
            return 0

    sut = Recorder()
    assert execute(sut, "crash", {**old, "idempotence": True}).ok  # type: ignore[arg-type]
    assert sut.kwargs == old


def _view(recovery_point: int, last_time_index: tuple[tuple[int, int], ...],
          below_time_index: tuple[tuple[int, int], ...] = ((START_MS, 0),)) -> v.LogStateView:
    below = v.SegmentView(0, 72, 1, (), below_time_index)
    last = v.SegmentView(1, 144, 3, (), last_time_index)
    return v.LogStateView(0, 0, 3, recovery_point, (below, last), ())


def test_idempotence_view__last_segment_indexes_left_out_only_when_the_recovery_point_is_the_leo(
) -> None:
    """A clean load keeps the live indexes, the unclean load after it rebuilds the segment
    holding the recovery point (the last one when rp = LEO): those entries may differ, Kafka's
    way (seed 1126); with rp below the LEO, and below the last segment, all are compared.
    Spec: KL-CRASH-7"""
    live, rebuilt = ((START_MS, 1), (START_MS + 1, 2)), ((START_MS + 1, 2),)
    assert idempotence_view(_view(3, live)) == idempotence_view(_view(3, rebuilt))
    assert idempotence_view(_view(2, live)) != idempotence_view(_view(2, rebuilt))
    assert idempotence_view(_view(3, live, ())) != idempotence_view(_view(3, live))
