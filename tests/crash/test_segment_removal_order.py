"""KL-CRASH-3, KL-CRASH-11: removing a segment never leaves its `.log`
without its index after a power loss.

A power loss keeps or loses each un-fsynced directory operation (FLT-5 WEAK). When a retention
pass renamed a segment's `.log` and `.index` to `.deleted` with no directory fsync between them,
a crash could keep the index's rename and lose the `.log`'s: the load then found a live `.log`
below the recovery point without its index, rebuilt it with a temporary producer-state manager
(Kafka's `LogLoader.recoverSegment`, PSR-7) and so deleted the snapshots above the segment and
wrote one at its end, which the strict crash model does not allow. kafkalog makes the `.log`'s
rename durable first (`LogSegment.change_file_suffixes`); these tests check every crash point.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from kafkalog.conformance.adapter.json_codec import decode_args
from kafkalog.conformance.check.impl_sut import CrashableFileSystem, ImplSut
from kafkalog.conformance.check.lockstep import Lockstep
from kafkalog.conformance.check.sut import ModelSut
from kafkalog.conformance.crash import crash_steps
from kafkalog.conformance.crash.fault_fs import FaultModel
from kafkalog.conformance.traces.trace import read_trace
from kafkalog.model.values import LogConfig, Record

NOW = 1_700_000_000_000
CONFIG = LogConfig(segment_bytes=150, index_interval_bytes=64, segment_index_bytes=48,
                   retention_bytes=72, retention_ms=-1, file_delete_delay_ms=1000)
TRACE = (Path(__file__).resolve().parents[1] / "regressions"
         / "KL-CRASH-11-retention_log_rename_durable_before_index_rename-seed367.jsonl")
SEEDS = range(16)  # at most four un-fsynced renames are pending at any point: 16 seeds cover them
_SEGMENT_FILE = re.compile(r"(\d{20})\.(log|index|timeindex)$")


@contextmanager
def log_with_batches(count: int) -> Iterator[ImplSut]:
    """A log of `count` 72-byte batches, two a segment (the last one active), HW at the LEO,
    flushed: every
    file and directory entry is durable before the action, as below a recovery point."""
    sut = ImplSut(CONFIG, NOW)
    try:
        for _ in range(count):
            sut.append_as_leader((Record(None, b"test", NOW),), leader_epoch=0)
        sut.update_high_watermark(count)
        sut.flush(count)
        yield sut
    finally:
        sut.close()


def live_segments_missing_an_index(sut: ImplSut, action: Callable[[], object]) -> list[str]:
    """Run `action`, then for every crash point inside it and every power-loss seed, the live
    `.log` files the crash image keeps without their `.index` or `.timeindex`."""
    fs = sut.fs
    assert isinstance(fs, CrashableFileSystem)
    sut.begin_action()
    mark = fs.crash_points()
    action()
    found: list[str] = []
    for point in range(mark, fs.crash_points() + 1):
        for seed in SEEDS:
            image = fs.crash_image(point, FaultModel.POWER_LOSS, seed)
            names = {m.groups() for path, _ in image.files if (m := _SEGMENT_FILE.search(path))}
            found += [f"point {point - mark} seed {seed}: {base}.log without .{kind}"
                      for base, suffix in names if suffix == "log"
                      for kind in ("index", "timeindex") if (base, kind) not in names]
    return found


def test_a_power_loss_inside_retention_never_keeps_a_log_whose_index_was_renamed() -> None:
    """Every crash point of a retention pass removing four segments: each segment is whole or
    its `.log` is gone (orphan indexes are the load's to delete, RCV-3)."""
    with log_with_batches(10) as sut:
        assert [s.base_offset for s in sut.state().segments] == [0, 2, 4, 6, 8]
        assert live_segments_missing_an_index(sut, sut.delete_old_segments) == []
        assert [s.base_offset for s in sut.state().segments] == [8]


def test_a_power_loss_inside_a_truncation_never_keeps_a_log_whose_index_was_renamed() -> None:
    """Every crash point of a truncation removing three segments (highest first)."""
    with log_with_batches(10) as sut:
        assert live_segments_missing_an_index(sut, lambda: sut.truncate_to(2)) == []
        assert sut.state().log_end_offset == 2


@pytest.mark.parametrize("fault", ["power_loss", "power_loss_prefix"])
def test_the_seed_367_retention_pass_conforms_at_every_crash_point(
        fault: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shrunk seed-367 trace, its crash swept (crash_steps.py `_sweep`): the image of every
    crash point of its retention pass, under `fault` with six seeds, recovers a state of the
    model's allowed set (a failing point would become the crash and raise DivergenceError)."""
    monkeypatch.setattr(crash_steps, "sweep_plan",
                        lambda _fault, _seed: [(fault, seed) for seed in range(6)])
    trace = read_trace(TRACE)
    header = trace.header
    lockstep = Lockstep(ModelSut(header.config, header.now_ms, header.log_start_offset),
                        ImplSut(header.config, header.now_ms, header.log_start_offset))
    lockstep.crash_steps.sweep = True
    try:
        for step in trace.steps:
            lockstep.step(step.action, decode_args(step.action, step.args))
        assert trace.steps[-2].action == "delete_old_segments"
        # every point of the pass, six seeds each
        assert lockstep.crash_steps.crashes[fault] >= 6 * 28
    finally:
        lockstep.sut.close()  # type: ignore[attr-defined]
