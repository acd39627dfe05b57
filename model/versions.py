"""Kafka version profiles: which released behaviour the model checks against (specs/log.md §19).

`LogConfig.kafka_version` names a profile: a released Apache Kafka line whose log-layer
behaviour was read from that release's published source (the table in §19 names the exact
release of each). Each behaviour that changed between them is a rule with its version range
(KL-VERSION-2..8); this module only answers "does profile P have behaviour B". The default is
the newest release.
"""

from __future__ import annotations

from .errors import IllegalArgumentError

#: Oldest first. Each profile is one exact release (§19's table): "3.9" is 3.9.0, "3.9.2" the
#: newest 3.9 release (3.9.1's backports of KL-VERSION-2, 4 and 5 included), "4.0" is 4.0.2.
PROFILES: tuple[str, ...] = ("3.6", "3.7", "3.8", "3.9", "3.9.2", "4.0", "4.1", "4.2", "4.3", "4.4")
DEFAULT_PROFILE = "4.4"

#: Names older traces recorded, mapped to the profile with the same modelled behaviour. `trunk`
#: was the reference's reading of trunk 1eb7644 plus its CHG-1..3 rows, never a release; its
#: behaviour is KL-VERSION-2..6's 4.0 column and it has none of the later rules' newer sides.
ALIASES: dict[str, str] = {"trunk": "4.0"}


def canonical(version: str) -> str:
    """The profile `version` names: itself, or the profile an alias stands for. Spec:
    KL-VERSION-1."""
    return ALIASES.get(version, version)


def check_profile(version: str) -> None:
    """KL-VERSION-1: an unknown profile is an IllegalArgumentError naming the known ones."""
    if canonical(version) not in PROFILES:
        raise IllegalArgumentError(
            f"unknown kafka_version {version!r} (known: {', '.join(PROFILES)})",
            where="LogConfig.kafka_version",
        )


def at_least(version: str, oldest: str) -> bool:
    """True iff profile `version` is `oldest` or newer. Spec: KL-VERSION-1."""
    return PROFILES.index(canonical(version)) >= PROFILES.index(oldest)


def read_reports_batch_base(version: str) -> bool:
    """KL-VERSION-3 (KAFKA-17803): a read's metadata offset is the batch base from 4.0."""
    return at_least(version, "4.0")


def index_entry_per_batch(version: str) -> bool:
    """KL-VERSION-4 (KAFKA-806): one index decision per batch from 3.9.2 and 4.0 (4.0.2), else
    per append."""
    return at_least(version, "3.9.2")


def follower_skips_newer_epochs(version: str) -> bool:
    """KL-VERSION-5 (KAFKA-18723): a follower drops batches from newer epochs from 3.9.2 and 4.0
    (4.0.2)."""
    return at_least(version, "3.9.2")


def max_timestamp_searches_records(version: str) -> bool:
    """KL-VERSION-6 (KAFKA-16310): MAX_TIMESTAMP finds the record (3.8+), not the stored offset."""
    return at_least(version, "3.8")


def earliest_pending_upload_is_special(version: str) -> bool:
    """KL-VERSION-7: from 4.2 the target -6 (EARLIEST_PENDING_UPLOAD) is a special target that a
    log without remote storage answers (-1, -1, -1); before, it is a timestamp to search."""
    return at_least(version, "4.2")


def append_reports_offset_of_max_timestamp(version: str) -> bool:
    """KL-VERSION-2: from 3.9.2 and 4.0 (KAFKA-806) LogAppendInfo has no offset of the max
    timestamp."""
    return not at_least(version, "3.9.2")


def unobserved_result_fields(version: str, action: str) -> frozenset[str]:
    """Fields of `action`'s answer that profile `version` does not define (any value conforms).

    Spec: KL-VERSION-2.
    """
    if action in ("append_as_leader", "append_as_follower", "append_marker") and not (
        append_reports_offset_of_max_timestamp(version)
    ):
        return frozenset({"offset_of_max_timestamp"})
    return frozenset()


def recovery_cut_deletes_asynchronously(version: str) -> bool:
    """KL-ALLOW-5: recovery's cut schedules the later segments' deletion in every profile.

    Read at `LogLoader.recoverLog` -> `removeAndDeleteSegmentsAsync(unflushedRemaining)`:
    3.6.2 LogLoader.scala:442, 3.7.1 :439, 3.8.0 :440, 3.9 branch (c821449) :440, trunk
    (1eb7644) LogLoader.java:491, 4.0.2 :489, 4.1.2 :491, 4.2.1 and 4.3.1 :483, 4.4.0 (class
    file) `recoverLog`; already 0.11.0.0 Log.scala:432 (`asyncDeleteSegment`).
    """
    return at_least(version, PROFILES[0])
