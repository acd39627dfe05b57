"""The `compact` family: the implementation's cleaner conforms, in-process and over
serve-adapter, and a cleaner with a seeded bug is caught.

Spec: KL-CLEAN-4, KL-CLEAN-6, KL-CLEAN-7, KL-CLEAN-12 (keyed appends, tombstones, producers,
transactions and cleaning passes are generated and compared on every step).
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from kafkalog.conformance.adapter.json_codec import FEATURES
from kafkalog.conformance.check.impl_sut import ImplSut
from kafkalog.conformance.check.lockstep import DivergenceError, Lockstep
from kafkalog.conformance.check.runner import run_seed
from kafkalog.conformance.check.session import START_MS, Session
from kafkalog.conformance.check.sut import ModelSut
from kafkalog.conformance.gen.configs import CONFIG_FAMILIES
from kafkalog.impl.cleaner import filter as impl_filter
from kafkalog.impl.cleaner.log_cleaner import LogCleaner
from kafkalog.model import values as v
from kafkalog.model.crash import inside as crash_inside


@pytest.mark.parametrize("seed", range(3))
def test_compact_family__in_process__conforms(seed: int) -> None:
    """Cleaning between appends, rolls, truncations and reopens: no divergence."""
    outcome = run_seed(seed, steps=60, config_family="compact", time_limit_s=60)
    assert outcome.outcome == "conformed", (outcome.signature, outcome.trace_jsonl)


def test_compact_family__over_serve_adapter__conforms() -> None:
    """The same family through the JSON-lines protocol (the `clean` feature)."""
    adapter = f"{shlex.quote(str(Path(sys.executable).parent / 'kafkalog'))} serve-adapter"
    outcome = run_seed(0, steps=40, config_family="compact", adapter=adapter, time_limit_s=60)
    assert outcome.outcome == "conformed", (outcome.signature, outcome.trace_jsonl)


def _sealed_duplicates(lockstep: Lockstep) -> None:
    """Keys k0..k3 written twice, rolled, the HW at the LEO: a pass has duplicates to remove."""
    for i in range(8):
        record = v.Record(b"k%d" % (i % 4), b"v", 0)
        lockstep.step("append_as_leader", {"records": (record,), "leader_epoch": 0})
    lockstep.step("roll", {})
    lockstep.step("update_high_watermark", {"offset": 8})


def test_lockstep__cleaner_without_dedupe__diverges_at_the_pass(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative control: a cleaner that keeps every record below the map's latest offset (no
    dedupe, CLN-31 step 5) diverges at its first pass."""
    monkeypatch.setattr(impl_filter, "_retain_record", lambda batch, record, facts: True)
    monkeypatch.setattr(impl_filter, "_retained_walked",
                        lambda batch, walk, facts: list(range(len(walk.offsets))))
    config = CONFIG_FAMILIES["compact"]
    lockstep = Lockstep(ModelSut(config), ImplSut(config))
    try:
        _sealed_duplicates(lockstep)
        with pytest.raises(DivergenceError):
            lockstep.step("clean", {})
    finally:
        lockstep.sut.close()


def test_lockstep__small_offset_map__is_accepted_as_another_kafka_choice(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An implementation whose map holds two entries ends its pass early: the checker finds
    that end offset among the model's outcomes, records the choice and continues from it
    (KL-ALLOW-1, KL-ALLOW-7)."""
    monkeypatch.setattr(ImplSut, "clean",
                        lambda self: LogCleaner(self.log, map_capacity=2).clean())
    config = CONFIG_FAMILIES["compact"]
    lockstep = Lockstep(ModelSut(config), ImplSut(config))
    try:
        _sealed_duplicates(lockstep)
        model, impl = lockstep.step("clean", {})
        assert model == impl and impl.value.end_offset == 2
        assert lockstep.steps[-1].choice == "clean_end_offset=2"
        lockstep.step("clean", {})  # the next pass starts where the short one ended
        assert lockstep.steps[-1].divergence is None
    finally:
        lockstep.sut.close()


@pytest.fixture
def passes_crashed_inside(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """One entry per crash the model judged inside a cleaning pass (`crash_inside_clean`)."""
    reached: list[str] = []
    original = crash_inside.crash_inside_clean

    def counted(*args: Any, **kwargs: Any) -> Any:
        reached.append("clean")
        return original(*args, **kwargs)

    monkeypatch.setattr(crash_inside, "crash_inside_clean", counted)
    return reached


def test_compact_family__crash_steps__reach_a_crash_inside_a_pass(
        passes_crashed_inside: list[str]) -> None:
    """Crash steps run for compacted logs (KL-CRASH-15): a fixed seed crashes inside `clean`
    (its sweep loads every point of the pass) and conforms."""
    outcome = run_seed(54, steps=40, config_family="compact", crash_weight=2,
                       crash_sweep=True, time_limit_s=60)
    assert outcome.outcome == "conformed", (outcome.signature, outcome.trace_jsonl)
    assert passes_crashed_inside and sum(outcome.crashes.values()) > 0
    assert 0 < outcome.crash_in_clean < sum(outcome.crashes.values())


def test_compact_family__kafka_mode__crashes_inside_a_pass(
        passes_crashed_inside: list[str]) -> None:
    """Kafka mode crashes compacted logs inside a pass too (KL-CRASH-1, KL-CRASH-15): the
    strict swap protocol's states under Kafka's other fsync choices (kafkalog's variant keeps its
    swap syncs; what Kafka's `replaceSegments` adds, GAP-3, is no model state). A fixed seed
    crashes right after a `clean`, whose sweep crashes inside it, and conforms."""
    outcome = run_seed(0, steps=60, config_family="compact", broken="kafka_durability",
                       crash_weight=4, crash_sweep=True, time_limit_s=60)
    assert outcome.outcome == "conformed", (outcome.signature, outcome.trace_jsonl)
    assert passes_crashed_inside and sum(outcome.crashes.values()) > 0
    assert 0 < outcome.crash_in_clean < sum(outcome.crashes.values())

def _put(lockstep: Lockstep, *keys: int) -> None:
    for key in keys:
        record = v.Record(b"k%d" % key, b"v", START_MS)
        lockstep.step("append_as_leader", {"records": (record,), "leader_epoch": 0})
    lockstep.step("roll", {})
    lockstep.step("update_high_watermark",
                  {"offset": lockstep.model.partition_state.log_end_offset})


def test_crash_sweep__every_point_of_a_two_group_pass__conforms() -> None:
    """Groups [0, 4) and [6, 10): the first group's cleaned segment ends at 4, so a crash
    between its `.deleted` renames leaves segment 4 beside it (KL-CRASH-15). The sweep loads
    every point of the pass under every fault model; each image's view carries the cleaner
    checkpoint like the live one (else the first point would already differ and end the
    sweep)."""
    session = Session(CONFIG_FAMILIES["compact"], ImplSut, frozenset(FEATURES),
                      crash_sweep=True)
    lockstep = session.start()
    try:
        _put(lockstep, 0, 1, 0, 1)
        _put(lockstep, 2, 3)
        _put(lockstep, 2, 3, 2, 3)
        lockstep.step("clean", {})
        lockstep.step("crash", {"point": 6, "fault": "process_crash", "seed": 3,
                                "leftover": "none"})
        swept = sum(lockstep.crash_steps.crashes.values())
        assert swept > 100  # every point of the pass, not the first alone
    finally:
        session.finish(lockstep)


@pytest.mark.parametrize("profile", ["3.9", "4.0", "4.3"])
def test_is_compact_config__under_every_profile__the_compaction_machine(profile: str) -> None:
    """A campaign rotates the Kafka profiles and `--kafka-version` sets one: the compaction
    machine (and its `clean` steps) must run under each, not only under the family's own.
    Spec: KL-CLEAN-1, KL-VERSION-1"""
    import dataclasses

    from kafkalog.conformance.gen.compaction import is_compact_config

    compact = dataclasses.replace(CONFIG_FAMILIES["compact"], kafka_version=profile)
    assert is_compact_config(compact)
    assert not is_compact_config(dataclasses.replace(CONFIG_FAMILIES["tiny"],
                                                     kafka_version=profile))
