"""KL-CRASH-14: a crash inside a load (CRP-12's "crash during recovery") recovers the state of
the uninterrupted load; `kafkalog check --crash-in-load` checks it at every sweep.

The image of the regression is Kafka's own (test_recovery_cut_deletion.py): a roll whose flush
had not run when the power went (KL-ALLOW-3), so the rolled segment's last batch is torn while
the next segment is on disk. Recovery cuts the torn batch and removes the later segment. The
loader used to truncate first and remove after: a crash between the two left a now-valid cut
segment beside the later one, and the next load served its batches past a hole (LEO 6 instead
of 3). It now removes the later segments durably before it truncates.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafkalog.conformance.adapter.json_codec import FEATURES
from kafkalog.conformance.check import impl_sut
from kafkalog.conformance.check.impl_sut import TOPIC_PARTITION, ImplSut, scratch_dir
from kafkalog.conformance.check.session import START_MS, Session
from kafkalog.conformance.check.sut import ModelSut, UnsupportedError, execute
from kafkalog.conformance.crash.fault_fs import FaultModel
from kafkalog.conformance.crash.sweep import (
    IN_LOAD_SEEDS,
    Sweeper,
    in_load_difference,
    parse_in_load,
)
from kafkalog.conformance.gen.configs import CONFIG_FAMILIES
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.load.log_dir import LogDir
from kafkalog.impl.load.log_loader import LogLoader
from kafkalog.impl.time import MockTime
from kafkalog.model import values as v
from kafkalog.model.errors import IllegalArgumentError

T = 1700000000000
CONFIG = v.LogConfig(segment_bytes=150, segment_ms=600000, segment_jitter_ms=0,
                     index_interval_bytes=64, segment_index_bytes=48, retention_ms=-1,
                     retention_bytes=-1, max_message_bytes=140, file_delete_delay_ms=1000)
AFTER = 1 << 20
#: The first crash point of the old order that resurrects the later segment: the cut
#: segment's truncation done, the later segment's removal not yet.
OLD_ORDER_POINT = "18:process_crash:0"


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    logging.disable(logging.WARNING)  # recovery logs every cut it makes
    yield
    logging.disable(logging.NOTSET)


def _tear_rolled_segment(partition_dir: Path, kind: str = "", seed: int = 0,
                         index_interval_bytes: int = 4096) -> None:
    """The crash image of a roll whose flush had not run: the second-to-last segment's last
    byte flipped, so its last batch fails its CRC (as test_recovery_cut_deletion.py)."""
    logs = sorted(p for p in partition_dir.iterdir() if p.name.endswith(".log"))
    data = bytearray(logs[-2].read_bytes())
    data[-1] ^= 0xFF
    logs[-2].write_bytes(bytes(data))


def _six_batches() -> ImplSut:
    """Segments [0, 1] [2, 3] [4, 5], nothing flushed since the start."""
    sut = ImplSut(CONFIG, T)
    for _ in range(6):
        sut.begin_action()
        sut.append_as_leader((v.Record(None, b"test", T),), 0)
    return sut


@pytest.fixture
def torn_image() -> Iterator[Path]:
    """The page cache after six appends, with the rolled segment's last batch torn."""
    sut = _six_batches()
    image = Path(tempfile.mkdtemp(dir=scratch_dir()))
    try:
        sut.fs.materialise(image, sut.fs.crash_points(), FaultModel.PROCESS_CRASH, 0)  # type: ignore[attr-defined]
        _tear_rolled_segment(image / str(TOPIC_PARTITION))
        yield image
    finally:
        sut.close()
        shutil.rmtree(image, ignore_errors=True)


def _crash_in_load(image: Path) -> tuple[Any, Sweeper]:
    """`_crash_in_load_of` for the torn rolled segment: the load keeps [0, 2], LEO 3."""
    return _crash_in_load_of(image, leo=3, bases=[0, 2])


def _crash_in_load_of(image: Path, leo: int,
                      bases: list[int] | None = None) -> tuple[Any, Sweeper]:
    """Sweeper.crash_in_load on a copy of `image`, against a plain load of another copy
    (which must end at `leo`, with segments at `bases` when given)."""
    work = [Path(tempfile.mkdtemp(dir=scratch_dir())) for _ in range(3)]
    try:
        for copy in work[:2]:
            shutil.copytree(image, copy, dirs_exist_ok=True)
        first = LogDir.open(FileSystem(), work[0], CONFIG, MockTime(T)).log(TOPIC_PARTITION)
        state = first.state()
        assert state.log_end_offset == leo
        assert bases is None or [s.base_offset for s in state.segments] == bases
        sweeper = Sweeper(CONFIG, TOPIC_PARTITION, scratch_dir())
        return sweeper.crash_in_load(work[1], work[2], state, T), sweeper
    finally:
        for directory in work:
            shutil.rmtree(directory, ignore_errors=True)


def test_crash_inside_a_recovery_cut__every_point_and_fault__reloads_the_uninterrupted_state(
    torn_image: Path,
) -> None:
    """Spec: KL-CRASH-14, CRP-12, RCV-6 — every crash point of the load that cuts the torn
    segment, under every fault model, reloads to LEO 3 with the later segment gone."""
    failure, sweeper = _crash_in_load(torn_image)
    assert failure is None
    assert sweeper.in_load_images == 1 and sweeper.in_load_loads > 1
    assert sweeper.in_load_points > 20 * sum(IN_LOAD_SEEDS.values())


def test_crash_inside_a_recovery_cut__kafkas_order_put_back__caught_where_the_hole_opens(
    torn_image: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Spec: KL-CRASH-14 — with the old order (truncate, then remove) the check finds the
    resurrected segment: the reload ends at 6, past the hole at 3."""
    monkeypatch.setattr(LogLoader, "_strict_order", lambda self: False)
    failure, _ = _crash_in_load(torn_image)
    assert failure is not None and "log_end_offset" in failure.difference
    assert f"{failure.point}:{failure.fault}:{failure.seed}" == OLD_ORDER_POINT


@pytest.mark.parametrize("old_order", [False, True])
def test_crash_step_in_load_field__replays_the_crash_inside_the_load_on_impl_sut(
    monkeypatch: pytest.MonkeyPatch, old_order: bool,
) -> None:
    """Spec: KL-CRASH-14 — a crash step's `in_load` (specs/trace-format.md) crashes inside its
    own load and loads again: the real loader recovers LEO 3, the old order LEO 6."""
    monkeypatch.setattr(impl_sut, "plant_leftover", _tear_rolled_segment)
    if old_order:
        monkeypatch.setattr(LogLoader, "_strict_order", lambda self: False)
    sut = _six_batches()
    try:
        sut.crash(AFTER, "process_crash", 0, leftover="torn_tail", in_load=OLD_ORDER_POINT)
        if old_order:
            assert sut.in_load_finding is not None
            assert sut.in_load_finding[0] == "log_end_offset"
            assert sut.log.state().log_end_offset == 6
        else:
            assert sut.in_load_finding is None and sut.log.state().log_end_offset == 3
    finally:
        sut.close()


def test_crash_step_in_load__only_impl_sut_takes_it__other_adapters_answer_unsupported() -> None:
    """Spec: KL-CRASH-14 — the model (and any adapter) has no load journal to crash inside."""
    model = ModelSut(CONFIG, T)
    with pytest.raises(UnsupportedError):
        execute(model, "crash", {"point": 0, "fault": "process_crash", "seed": 0,
                                 "leftover": "none", "in_load": "0:process_crash:0"})


@pytest.mark.parametrize("bad", ["", "3", "x:power_loss:1", "3:meteor:1", "3:power_loss:1:2"])
def test_in_load_field__malformed__typed_error_naming_it(bad: str) -> None:
    """Spec: KL-CRASH-14 — a bad `in_load` is an IllegalArgumentError quoting the field."""
    with pytest.raises(IllegalArgumentError, match="in_load"):
        parse_in_load(bad)


def test_in_load_difference__names_the_first_field_that_differs() -> None:
    """Spec: KL-CRASH-14 — the verdict ignores producer state as KL-CRASH-7 does."""
    sut = _six_batches()
    try:
        state = sut.log.state()
    finally:
        sut.close()
    assert in_load_difference(state, state) is None
    from dataclasses import replace

    found = in_load_difference(state, replace(state, log_end_offset=9))
    assert found is not None and found[0] == "log_end_offset" and "KL-CRASH-14" in found[1]
    assert in_load_difference(state, replace(state, producers=())) is None


def test_lockstep_with_in_load__sweep_crashes_inside_each_distinct_load__real_log_passes(
) -> None:
    """Spec: KL-CRASH-14 — `--crash-in-load`: the sweep also crashes inside the load of every
    distinct image and counts those points; the real implementation conforms."""
    tiny = CONFIG_FAMILIES["tiny"]
    ls = Session(tiny, ImplSut, frozenset(FEATURES), crash_sweep=True,
                 crash_in_load=True).start()
    try:
        for _ in range(3):
            ls.step("append_as_leader", {"records": (v.Record(None, b"test", START_MS),),
                                         "leader_epoch": 0})
        ls.step("crash", {"point": AFTER, "fault": "power_loss_torn", "seed": 5,
                          "leftover": "none"})
        sweeper = ls.sut.sweeper  # type: ignore[attr-defined]
        assert sweeper.in_load and ls.crash_steps.in_load_points() == sweeper.in_load_points > 0
        assert sweeper.in_load_images >= 1
    finally:
        ls.sut.close()


def test_check_cli__crash_in_load_flag__summary_counts_the_points_inside_loads(
    tmp_path: Path,
) -> None:
    """Spec: KL-CRASH-14 — `kafkalog check --crash-in-load` runs the check through run_seed and
    reports how many crash points inside loads it explored; without the flag, no such line."""
    import re

    from click.testing import CliRunner

    from kafkalog.cli.conformance_cmds import check

    base = ["--examples", "1", "--steps", "12", "--family", "tiny", "--crash-weight", "4",
            "--seed", "4", "--out", str(tmp_path)]
    result = CliRunner().invoke(check, [*base, "--crash-in-load"])
    assert result.exit_code == 0, result.output
    found = re.search(r"crash points inside loads: (\d+)", result.output)
    assert found is not None and int(found[1]) > 0, result.output
    assert "--crash-in-load" in CliRunner().invoke(check, ["--help"]).output
    alone = CliRunner().invoke(check, [*base, "--crash-in-load", "--no-crash-sweep"])
    assert alone.exit_code == 2 and "needs --crash-sweep" in alone.output


def _plant_incomplete_split(partition_dir: Path) -> None:
    """KAFKA-6264's leftovers of a split cut short: `.cleaned` and, at the same base, a `.swap`
    holding only the segment's first batch (the split's output so far). The load must discard
    both (REC-2): the `.swap` is at or above the smallest `.cleaned` base."""
    from kafkalog.impl.records.memory_records import MemoryRecords

    last = sorted(p for p in partition_dir.iterdir() if p.name.endswith(".log"))[-1]
    data = last.read_bytes()
    first = next(iter(MemoryRecords(data).batches()))
    (partition_dir / f"{last.name}.cleaned").write_bytes(data)
    (partition_dir / f"{last.name}.swap").write_bytes(data[: first.size_in_bytes])


def test_crash_inside_the_discard_of_an_incomplete_split__never_swaps_the_split_in() -> None:
    """Spec: KL-CRASH-14, REC-2, REC-3 — a power loss that keeps the `.cleaned` deletion and
    loses the `.swap` one would let the next load swap the half-done split in (fewer batches);
    the `.swap` deletions are made durable first. The old order is caught."""
    sut = ImplSut(CONFIG, T)
    image = Path(tempfile.mkdtemp(dir=scratch_dir()))
    try:
        for _ in range(2):  # one segment of two batches
            sut.begin_action()
            sut.append_as_leader((v.Record(None, b"test", T),), 0)
        sut.flush()
        sut.fs.materialise(image, sut.fs.crash_points(), FaultModel.POWER_LOSS, 0)  # type: ignore[attr-defined]
        _plant_incomplete_split(image / str(TOPIC_PARTITION))
        outcomes = []
        for old_order in (False, True):
            with pytest.MonkeyPatch.context() as patch:
                if old_order:
                    patch.setattr(LogLoader, "_strict_order", lambda self: False)
                failure, _ = _crash_in_load_of(image, leo=2)
                outcomes.append(failure)
    finally:
        sut.close()
        shutil.rmtree(image, ignore_errors=True)
    assert outcomes[0] is None
    assert outcomes[1] is not None and outcomes[1].fault != "process_crash"
    assert "log_end_offset" in outcomes[1].difference


def _rewrite_active_log_in_place(self: LogLoader) -> None:
    """A loader defect only a crash inside the load shows: it rewrites the active segment's
    `.log` in place (truncate, then write the same bytes back) before its durability step. An
    uninterrupted load, and a crash right after it, see every byte; a crash between the two
    operations leaves the segment empty."""
    from kafkalog.impl.segment.log_segment import segment_file

    path = segment_file(self.dir, self.segments.active_segment().base_offset, ".log")
    data = self.fs.read_file(path)
    if data:
        handle = self.fs.open_file(path)
        try:
            handle.truncate(0)
            handle.pwrite(data, 0)
        finally:
            handle.close()
    _STRICT_STEP(self)


_STRICT_STEP = LogLoader._make_recovery_durable


def test_sweep_with_in_load__a_defect_only_a_crash_inside_the_load_shows__caught__replays(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Spec: KL-CRASH-14 — every image the sweep loads is allowed and reloads alike, but a crash
    inside its load is not: the crash step carries `in_load`, and its trace replays the
    failure alone with the defect and conforms without it."""
    import json

    from kafkalog.conformance.check.lockstep import DivergenceError
    from kafkalog.conformance.traces.replay import replay_trace
    from kafkalog.conformance.traces.trace import TraceHeader, header_json, loads_trace, step_json

    tiny = CONFIG_FAMILIES["tiny"]

    def run(in_load: bool) -> tuple[list[object], DivergenceError | None]:
        ls = Session(tiny, ImplSut, frozenset(FEATURES), crash_sweep=True,
                     crash_in_load=in_load).start()
        try:
            for _ in range(2):
                ls.step("append_as_leader", {"records": (v.Record(None, b"test", START_MS),),
                                             "leader_epoch": 0})
            ls.step("crash", {"point": AFTER, "fault": "process_crash", "seed": 1,
                              "leftover": "none"})
        except DivergenceError as error:
            return list(ls.steps), error
        finally:
            ls.sut.close()
        return list(ls.steps), None

    with monkeypatch.context() as patch:
        patch.setattr(LogLoader, "_make_recovery_durable", _rewrite_active_log_in_place)
        patch.setattr(LogLoader, "_strict_order", lambda self: True)
        assert run(in_load=False)[1] is None  # the sweep and KL-CRASH-7 alone miss it
        steps, caught = run(in_load=True)
    assert caught is not None
    assert caught.signature.startswith("crash|ok|ok|crash.in_load.")
    assert caught.signature.endswith("|KL-CRASH-14") and caught.step.args["in_load"]
    header = TraceHeader(config=tiny, now_ms=START_MS)
    lines = [header_json(header), *(step_json(i, s) for i, s in enumerate(steps, start=1))]
    trace = loads_trace("\n".join(json.dumps(line) for line in lines))
    assert replay_trace(trace).conformed
    with monkeypatch.context() as patch:
        patch.setattr(LogLoader, "_make_recovery_durable", _rewrite_active_log_in_place)
        patch.setattr(LogLoader, "_strict_order", lambda self: True)
        replayed = replay_trace(trace)
    assert not replayed.conformed and replayed.signature == caught.signature


def test_regression_trace__incomplete_split__replays_the_crash_inside_the_load(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Spec: KL-CRASH-14, REC-2 — tests/regressions' trace (a `cleaned_swap` leftover in a torn
    power-loss image, then a power loss inside its load keeping the `.cleaned` deletion and
    losing the `.swap` one) conforms; with the deletions in Kafka's order the reload swaps the
    torn `.swap` in and fails."""
    from kafkalog.conformance.traces.replay import replay_trace
    from kafkalog.conformance.traces.trace import read_trace

    trace = read_trace(Path(__file__).resolve().parents[1] / "regressions"
                       / "KL-CRASH-14-incomplete_split_swap_deletions_durable_first.jsonl")
    assert trace.steps[-1].args["in_load"]
    assert replay_trace(trace).conformed
    monkeypatch.setattr(LogLoader, "_strict_order", lambda self: False)
    replayed = replay_trace(trace)
    assert not replayed.conformed and replayed.signature is not None
    assert "CorruptRecordError" in replayed.signature


def test_leftover_crash_step_with_in_load__checker_finds_the_swap_order_bug__trace_replays(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Spec: KL-CRASH-14, KL-CRASH-9 — sweeps load images without leftovers, so under
    `--crash-in-load` a crash step that plants one has its own image's load crashed inside:
    with Kafka's deletion order the checker finds the swapped-in split itself, the step gets
    `in_load` and the trace replays the same signature; the real loader conforms."""
    import json

    from kafkalog.conformance.check.lockstep import DivergenceError
    from kafkalog.conformance.traces.replay import replay_trace
    from kafkalog.conformance.traces.trace import TraceHeader, header_json, loads_trace, step_json

    tiny = CONFIG_FAMILIES["tiny"]

    def run() -> tuple[list[object], DivergenceError | None]:
        ls = Session(tiny, ImplSut, frozenset(FEATURES), crash_sweep=True,
                     crash_in_load=True).start()
        try:
            for _ in range(2):
                ls.step("append_as_leader", {"records": (v.Record(None, b"test", START_MS),),
                                             "leader_epoch": 0})
            ls.step("crash", {"point": AFTER, "fault": "power_loss_torn", "seed": 0,
                              "leftover": "cleaned_swap"})
        except DivergenceError as error:
            return list(ls.steps), error
        finally:
            ls.sut.close()
        return list(ls.steps), None

    assert run()[1] is None
    monkeypatch.setattr(LogLoader, "_strict_order", lambda self: False)
    steps, caught = run()
    assert caught is not None and caught.step.args["in_load"]
    assert caught.signature == "crash|ok|CorruptRecordError|crash.in_load.load|KL-CRASH-14"
    header = TraceHeader(config=tiny, now_ms=START_MS)
    lines = [header_json(header), *(step_json(i, s) for i, s in enumerate(steps, start=1))]
    trace = loads_trace("\n".join(json.dumps(line) for line in lines))
    assert replay_trace(trace).signature == caught.signature


def test_regression_trace__offsets_back_emptying__torn_truncation_keeps_no_valid_prefix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Spec: KL-CRASH-14, RCV-6, FLT-4 — found by `kafkalog check --crash-in-load` (seed 510,
    `roomy`): recovery empties a segment whose offsets go back (`offsets_back`); a torn power
    loss inside that truncation kept its first CRC-valid batch and the reload served it (LEO 1,
    not 0). The loader now spoils the head durably first; without that the trace diverges."""
    from kafkalog.conformance.traces.replay import replay_trace
    from kafkalog.conformance.traces.trace import read_trace

    trace = read_trace(Path(__file__).resolve().parents[1] / "regressions"
                       / "KL-CRASH-14-offsets_back_emptying_spoils_the_head_first-seed510.jsonl")
    assert trace.steps[-1].args["leftover"] == "offsets_back" and trace.steps[-1].args["in_load"]
    assert replay_trace(trace).conformed
    monkeypatch.setattr(LogLoader, "_spoil_first_batch", lambda self, segment: None)
    replayed = replay_trace(trace)
    assert replayed.signature == "crash|ok|ok|crash.in_load.log_end_offset|KL-CRASH-14"


def test_same_after_reload__the_lso_may_differ_only_with_the_producer_table() -> None:
    """KL-CRASH-7 leaves the producer table free between a load and the next (a load may keep a
    producer the next drops), and the last stable offset follows the table's open
    transactions; with equal tables it must be equal (seed 8498, kafka mode)."""
    import dataclasses

    from kafkalog.conformance.crash.sweep import same_after_reload
    from kafkalog.model import values as v
    from kafkalog.model.log import empty_log, view

    base = dataclasses.replace(view(empty_log(v.LogConfig())), last_stable_offset=10,
                               producers=())
    moved = dataclasses.replace(base, last_stable_offset=11)
    kept = dataclasses.replace(base, producers=(v.ProducerView(7, 0, -1, 0, 4, ()),))
    assert same_after_reload(base, base)
    assert not same_after_reload(base, moved)
    assert same_after_reload(kept, moved)
    assert not same_after_reload(kept, dataclasses.replace(moved, log_end_offset=3))
