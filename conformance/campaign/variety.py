"""What else besides its config family a campaign run varies: Kafka profile and crash mode.

A campaign that ran every seed against one Kafka profile in one crash mode never met the rules
of the other profiles (KL-VERSION-*) or of the kafka crash mode, nor crashes inside loads
(KL-CRASH-14). So the default campaign against the built-in implementation cycles them: each is a
pure function of the seed, like the family, so a row's run replays from its seed alone, and the
strides differ so that every family meets every profile and both modes.

Kafka mode runs the implementation with Kafka's fsync choices put back (broken/
kafka_durability.py) against the model's kafka allowed set; crash-in-load runs sweep crashes
inside the loads a crash step makes (strict mode only, where the loads are fsynced).
"""

from __future__ import annotations

from dataclasses import dataclass

STRICT, KAFKA = "strict", "kafka"
CRASH_MODES = (STRICT, KAFKA)
#: One block of runs in KAFKA_MODE_EVERY in kafka mode; one run in IN_LOAD_EVERY with crashes
#: inside loads, which costs about 80 times a crash step's CPU, so it stays a small share.
KAFKA_MODE_EVERY = 4
IN_LOAD_EVERY = 100


@dataclass(frozen=True)
class Variety:
    """The cycles a campaign draws each run's profile and crash mode from."""

    profiles: tuple[str, ...]  # Kafka profiles, each run checks one (KL-VERSION-1)
    kafka_mode_every: int = 0  # 0: strict mode only; n: one block of seeds in n is kafka
    in_load_every: int = 0  # 0: never; n: one strict run in n sweeps inside loads

    def __post_init__(self) -> None:
        assert self.profiles, "a campaign checks at least one profile"
        assert self.kafka_mode_every >= 0 and self.in_load_every >= 0


@dataclass(frozen=True)
class RunVariant:
    """One run's draw: the profile it is checked against and how it crashes."""

    kafka_version: str
    crash_mode: str  # STRICT or KAFKA
    crash_in_load: bool


def variant_for_seed(seed: int, families: int, variety: Variety) -> RunVariant:
    """The run variant of `seed` when the family cycle has `families` entries.

    The family is `seed % families`; the profile steps once per family cycle, and the crash
    mode once per block of `families * profiles` seeds (one block in `kafka_mode_every` is
    kafka), so every (family, profile) pair meets every mode. Crashes inside loads fall on one
    strict run in `in_load_every`. Pure: O(1).
    """
    family_cycle = seed // max(families, 1)
    profile = variety.profiles[family_cycle % len(variety.profiles)]
    block = family_cycle // len(variety.profiles)
    every = variety.kafka_mode_every
    kafka = every > 0 and block % every == every - 1
    in_load = (not kafka and variety.in_load_every > 0
               and (seed + block) % variety.in_load_every == 0)
    return RunVariant(profile, KAFKA if kafka else STRICT, in_load)


def fixed(profile: str) -> Variety:
    """One profile, strict mode, no crashes inside loads: what a campaign with options runs."""
    return Variety((profile,))
