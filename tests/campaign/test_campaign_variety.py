"""The default campaign cycles profiles and crash modes by seed (campaign/variety.py)."""

from __future__ import annotations

from collections import Counter

from kafkalog.conformance.broken.kafka_durability import KAFKA_DURABILITY
from kafkalog.conformance.campaign.task import TaskSpec, _variant_options
from kafkalog.conformance.campaign.variety import (
    KAFKA,
    STRICT,
    RunVariant,
    Variety,
    fixed,
    variant_for_seed,
)

PROFILES = ("3.8", "3.9", "4.0")
DEFAULT_VARIETY = Variety(PROFILES, kafka_mode_every=4, in_load_every=8)


def test_variant_for_seed__thousand_seeds__every_family_meets_every_profile_and_mode() -> None:
    """Each (family, profile, crash mode) combination occurs among 1,000 consecutive seeds."""
    families = 11
    met = Counter((seed % families, variant_for_seed(seed, families, DEFAULT_VARIETY).kafka_version,
                   variant_for_seed(seed, families, DEFAULT_VARIETY).crash_mode)
                  for seed in range(1_000))
    assert len(met) == families * len(PROFILES) * 2


def test_variant_for_seed__shares__a_quarter_kafka_and_the_in_load_share() -> None:
    """Kafka mode on about one run in four; crashes inside loads on strict runs only."""
    variants = [variant_for_seed(seed, 11, DEFAULT_VARIETY) for seed in range(4_000)]
    kafka = sum(v.crash_mode == KAFKA for v in variants)
    in_load = [v for v in variants if v.crash_in_load]
    assert 800 <= kafka <= 1_200
    assert 3_000 // 8 * 0.7 <= len(in_load) <= 3_000 // 8 * 1.3
    assert all(v.crash_mode == STRICT for v in in_load)


def test_variant_for_seed__same_seed__same_variant() -> None:
    """A run replays from its seed alone: the draw is a pure function of it."""
    assert [variant_for_seed(s, 7, DEFAULT_VARIETY) for s in range(50)] == [
        variant_for_seed(s, 7, DEFAULT_VARIETY) for s in range(50)]


def test_fixed_variety__every_seed__one_profile_strict_no_in_load() -> None:
    """A campaign given one profile (or an adapter) checks that profile in strict mode only."""
    assert {variant_for_seed(s, 3, fixed("3.9")) for s in range(100)} == {
        RunVariant("3.9", STRICT, False)}


def test_variant_options__kafka_mode__runs_kafka_durability_with_the_profile() -> None:
    """A kafka-mode run is the built-in implementation with Kafka's fsync choices."""
    spec = TaskSpec(campaign_id="c", steps=10, families=("tiny",), crash_weight=2)
    options = _variant_options(spec, RunVariant("3.8", KAFKA, False))
    assert options["broken"] == KAFKA_DURABILITY
    assert options["kafka_version"] == "3.8"
    assert options["crash_sweep"] is True and "crash_in_load" not in options


def test_variant_options__in_load_without_sweep__not_requested() -> None:
    """Crashes inside loads ride on the sweep: without it the option is left out."""
    spec = TaskSpec(campaign_id="c", steps=10, families=("tiny",), crash_weight=2,
                    crash_sweep=False)
    options = _variant_options(spec, RunVariant("3.8", STRICT, True))
    assert "crash_in_load" not in options and options["broken"] is None


def test_variant_options__kafka_mode__plants_no_leftover_that_leads_only_into_a_named_gap() -> None:
    """The default campaign's kafka-mode runs leave out the leftovers whose kafka-mode clean-up
    a power loss turns into a named gap (kafka_gaps.py CAMPAIGN_UNPLANTED); strict runs, and
    `check --crash-mode kafka`, plant every leftover. Spec: KL-CRASH-3, KL-CRASH-9"""
    from kafkalog.conformance.crash.kafka_gaps import _LEFTOVER_GAPS, CAMPAIGN_UNPLANTED

    spec = TaskSpec(campaign_id="c", steps=10, families=("tiny",), crash_weight=2)
    assert _variant_options(spec, RunVariant("3.8", KAFKA, False))["leftovers_off"] == \
        CAMPAIGN_UNPLANTED == {"cleaned_swap", "swap_completed"}
    assert set(_LEFTOVER_GAPS) >= CAMPAIGN_UNPLANTED
    assert "offsets_back" not in CAMPAIGN_UNPLANTED  # the kafka set holds its batches back
    assert "leftovers_off" not in _variant_options(spec, RunVariant("3.8", STRICT, False))


def test_crash_rule__a_leftover_the_run_leaves_out__is_recorded_as_none() -> None:
    """The machine plants nothing in place of a left-out leftover, and records that, so the
    trace replays alone (conformance/gen/machine.py `crash_now`)."""
    from types import SimpleNamespace

    from kafkalog.conformance.gen.machine import LogMachine

    done: list[dict[str, object]] = []
    stub = SimpleNamespace(session=SimpleNamespace(features=frozenset({"crash"}),
                                                   leftovers_off=frozenset({"cleaned_swap"})),
                           do=lambda action, **args: done.append(args))
    LogMachine.crash_now(stub, 3, "power_loss", "cleaned_swap", 7)  # type: ignore[arg-type]
    LogMachine.crash_now(stub, 3, "power_loss", "offsets_back", 7)  # type: ignore[arg-type]
    assert [d["leftover"] for d in done] == ["none", "offsets_back"]
