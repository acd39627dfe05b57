"""A finished swap whose renames a crash interrupted is completed into the same log (RCV-4).

The `swap_completed` leftover copies an earlier segment's files to `.swap` names with later
segments present; the load must delete only that segment's files and rename the copies in, so
the state after the crash is the model's, segment by segment (index entries included).
Spec: KL-CRASH-9.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from kafkalog.conformance.adapter.json_codec import CRASH_FAULTS, FEATURES
from kafkalog.conformance.check.impl_sut import ImplSut, plant_leftover
from kafkalog.conformance.check.session import START_MS, Session
from kafkalog.conformance.gen.configs import CONFIG_FAMILIES
from kafkalog.model import values as v

AFTER = 1 << 20  # a crash point past any action: the crash comes after the last action


@pytest.fixture(autouse=True)
def _quiet() -> None:
    logging.disable(logging.WARNING)  # recovery logs every cut it makes
    yield
    logging.disable(logging.NOTSET)


def _append(step: object, family: str, n: int, producer: int = -1) -> None:
    for i in range(n):
        args: dict[str, object] = {"records": (v.Record(None, b"test", START_MS),),
                                   "leader_epoch": 0}
        if producer >= 0:
            args |= {"producer_id": producer, "producer_epoch": 0, "base_sequence": i}
        step.step("append_as_leader", args)  # type: ignore[attr-defined]


@pytest.mark.parametrize("fault", CRASH_FAULTS)
@pytest.mark.parametrize("family", ["tiny", "transactions"])
def test_crash__finished_swap_of_an_earlier_segment__loads_the_same_log_segment_by_segment(
        fault: str, family: str) -> None:
    """Three or more segments, a flush, a crash planting the swap of one earlier segment: the
    load recovers what the model allows (lockstep compares every segment and index entry),
    and every segment is still there."""
    ls = Session(CONFIG_FAMILIES[family], ImplSut, frozenset(FEATURES), verify_every=1).start()
    try:
        _append(ls, family, 16, producer=7 if family == "transactions" else -1)
        ls.step("flush", {"offset": None})
        before = ls.sut.state()  # type: ignore[attr-defined]
        assert len(before.segments) >= 3
        for seed in range(3):
            model, impl = ls.step("crash", {"point": AFTER, "fault": fault, "seed": seed,  # type: ignore[attr-defined]
                                            "leftover": "swap_completed"})
            assert model.value == impl.value == 0
            after = ls.sut.state()  # type: ignore[attr-defined]
            assert [s.base_offset for s in after.segments] == [
                s.base_offset for s in before.segments]
    finally:
        ls.sut.close()  # type: ignore[attr-defined]


def test_plant_leftover__swap_completed__copies_an_earlier_segment_only(tmp_path: Path) -> None:
    """The plant names `.swap` copies of one segment below the last, keeping their mtimes."""
    for base in (0, 5, 9):
        for suffix in (".log", ".index", ".timeindex"):
            (tmp_path / f"{base:020d}{suffix}").write_bytes(b"x" * (base + 1))
    plant_leftover(tmp_path, "swap_completed", seed=1)
    swaps = sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".swap"))
    assert len(swaps) == 3
    stem = swaps[0].split(".")[0]
    assert stem != f"{9:020d}"
    for name in swaps:
        source = tmp_path / name[: -len(".swap")]
        assert (tmp_path / name).read_bytes() == source.read_bytes()
        assert (tmp_path / name).stat().st_mtime_ns == source.stat().st_mtime_ns
