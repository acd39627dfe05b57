"""Kafka version profiles: which released behaviour the model checks against (specs/log.md §19).

`LogConfig.kafka_version` names a profile. The default, `trunk`, is the reference's [TRUNK]
behaviour (every CHG-* row of kafka-log-reference.md §7 applied); the others are the released
lines whose log-layer behaviour was read from Apache Kafka's source at their tags. Each behaviour
that changed between them is a rule with its version range (KL-VERSION-2..6); this module only
answers "does profile P have behaviour B".
"""

from __future__ import annotations

from .errors import IllegalArgumentError

TRUNK = "trunk"
#: Oldest first. "3.9" means 3.9.0 (later 3.9.x backports are not modelled).
PROFILES: tuple[str, ...] = ("3.6", "3.7", "3.8", "3.9", TRUNK)


def check_profile(version: str) -> None:
    """KL-VERSION-1: an unknown profile is an IllegalArgumentError naming the known ones."""
    if version not in PROFILES:
        raise IllegalArgumentError(
            f"unknown kafka_version {version!r} (known: {', '.join(PROFILES)})",
            where="LogConfig.kafka_version",
        )


def at_least(version: str, oldest: str) -> bool:
    """True iff profile `version` is `oldest` or newer. Spec: KL-VERSION-1."""
    return PROFILES.index(version) >= PROFILES.index(oldest)


def read_reports_batch_base(version: str) -> bool:
    """KL-VERSION-3 (KAFKA-17803, CHG-1): a read's metadata offset is the batch base (trunk)."""
    return version == TRUNK


def index_entry_per_batch(version: str) -> bool:
    """KL-VERSION-4 (KAFKA-806, CHG-2): one index decision per batch (trunk), else per append."""
    return version == TRUNK


def follower_skips_newer_epochs(version: str) -> bool:
    """KL-VERSION-5 (KAFKA-18723, CHG-3): a follower drops batches from newer epochs (trunk)."""
    return version == TRUNK


def max_timestamp_searches_records(version: str) -> bool:
    """KL-VERSION-6 (KAFKA-16310): MAX_TIMESTAMP finds the record (3.8+), not the stored offset."""
    return at_least(version, "3.8")


def append_reports_offset_of_max_timestamp(version: str) -> bool:
    """KL-VERSION-2: trunk's LogAppendInfo has no offset of the max timestamp (CHG-2)."""
    return version != TRUNK


def unobserved_result_fields(version: str, action: str) -> frozenset[str]:
    """Fields of `action`'s answer that profile `version` does not define (any value conforms).

    Spec: KL-VERSION-2.
    """
    if action in ("append_as_leader", "append_as_follower") and not (
        append_reports_offset_of_max_timestamp(version)
    ):
        return frozenset({"offset_of_max_timestamp"})
    return frozenset()


def recovery_cut_deletes_asynchronously(version: str) -> bool:
    """KL-ALLOW-5: recovery's cut schedules the later segments' deletion in every profile.

    Read at `LogLoader.recoverLog` -> `removeAndDeleteSegmentsAsync(unflushedRemaining)`:
    3.6.2 LogLoader.scala:442, 3.7.1 :439, 3.8.0 :440, 3.9 branch (c821449) :440, trunk
    (1eb7644) LogLoader.java:491; already 0.11.0.0 Log.scala:432 (`asyncDeleteSegment`).
    """
    return at_least(version, PROFILES[0])
